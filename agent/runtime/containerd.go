package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/kobune/kobune/agent/network"
	"github.com/kobune/kobune/api/core"
)

// Labels Kobune puts on its containerd containers, so that a restarted
// agent finds its pods again (adoption) from containerd alone.
const (
	LabelPodUID       = "kobune.io/pod-uid"
	LabelPodName      = "kobune.io/pod-name"
	LabelPodNamespace = "kobune.io/pod-namespace"
	LabelContainer    = "kobune.io/container"
	LabelInit         = "kobune.io/init"
	LabelEphemeral    = "kobune.io/ephemeral"
	LabelPodIP        = "kobune.io/pod-ip"
	LabelStarted      = "kobune.io/pod-started"
	// The attempt number of a restarted container, and how the attempt
	// before it ended (lastState in the pod status).
	LabelRestarts     = "kobune.io/restarts"
	LabelLastExitCode = "kobune.io/last-exit-code"
	LabelLastReason   = "kobune.io/last-reason"
	LabelLastStarted  = "kobune.io/last-started"
	LabelLastFinished = "kobune.io/last-finished"
	LabelLastMessage  = "kobune.io/last-message"
	LabelCgroup       = "kobune.io/cgroup"
	// An attempt whose process could not be started: the runtime's
	// message and when it failed (the container has no task then).
	LabelStartError  = "kobune.io/start-error"
	LabelStartFailed = "kobune.io/start-failed"
	// The image's repository and manifest digest (the status's imageID).
	LabelImageID = "kobune.io/image-id"
)

// ErrImageNeverPull is returned for an image that is missing while its
// pull policy is Never (the reason Kubernetes shows too).
var ErrImageNeverPull = errors.New("ErrImageNeverPull")

// ImageError says which container could not be had or made, with
// Kubernetes' waiting reason (InvalidImageName, ErrImageNeverPull,
// ErrImagePull, ImagePullBackOff, CreateContainerError), the reason of
// the event the kubelet records for it (empty: the runtime recorded it),
// the runtime's error as the message, and when a pull may be tried again.
type ImageError struct {
	Container string
	Reason    string
	Event     string
	Err       error
	RetryIn   time.Duration
}

func (e *ImageError) Error() string { return e.Err.Error() }
func (e *ImageError) Unwrap() error { return e.Err }

// Containerd runs pods on a containerd daemon: one containerd container
// per pod container, all joining the pod's network namespace.
type Containerd struct {
	client    *client.Client
	namespace string
	network   network.Network
	// config resolves a container's environment and mounts
	// (SetContainerConfig); nil: only the env values written in the spec.
	config func(ctx context.Context, pod *core.Pod, c *core.Container, podIP string) (ContainerConfig, error)
	// started says whether a running sidecar has started (SetStartGate);
	// nil: running is started.
	started func(podUID, containerID string) bool
	logDir  string
	// DNS and PodDir: each pod's resolv.conf is written under PodDir
	// (<state>/pods/<uid>/) and mounted at /etc/resolv.conf; empty PodDir:
	// the image's own.
	DNS         DNS
	PodDir      string
	snapshotter string
	exits       chan string
	// Observe, when set, receives how long each container is in its
	// "create" and "start" phases (for metrics and the pod start benchmark).
	Observe func(phase string, d time.Duration)
	// Record, when set, receives events about a pod with the kubelet's
	// reasons: Pulled, Created, Started, Failed.
	Record func(pod *core.Pod, typ, reason, message string)
	// Node is the node's name and IP and the path of its network
	// namespace (the agent's own): what hostNetwork pods share.
	Node HostNode
	// LogBinary is the program containerd's shim runs as each container's
	// logging process (package containerlog: kobune-agent itself), which
	// writes the log with a time on every line; empty: the shim writes
	// the bytes straight to the file, without times, and kobectl logs
	// --timestamps and --since have nothing to go by.
	LogBinary string
	// SeccompDir holds the node's seccomp profiles, for pods that name
	// one (seccompProfile type Localhost): <state>/seccomp.
	SeccompDir string

	pulls pullBackOff

	mu      sync.Mutex
	watched map[string]bool // container IDs whose task exit is awaited
}

// SetStartGate implements StartGate.
func (r *Containerd) SetStartGate(f func(podUID, containerID string) bool) { r.started = f }

// SetContainerConfig implements ConfigSetter.
func (r *Containerd) SetContainerConfig(f func(ctx context.Context, pod *core.Pod, c *core.Container, podIP string) (ContainerConfig, error)) {
	r.config = f
}

// NewContainerd connects to the containerd socket. Pods live in the
// containerd namespace ns; container logs go under logDir.
func NewContainerd(socket, ns, logDir string, net network.Network) (*Containerd, error) {
	c, err := client.New(socket, client.WithDefaultNamespace(ns))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w (is containerd running? start it or set --containerd)", socket, err)
	}
	return &Containerd{client: c, namespace: ns, network: net, logDir: logDir, snapshotter: "overlayfs",
		exits: make(chan string, 256), watched: map[string]bool{}}, nil
}

// Exits implements Runtime.
func (r *Containerd) Exits() <-chan string { return r.exits }

// watch reports the pod when the task exits. The wait channel must be
// obtained before the task starts (or the exit could be missed).
func (r *Containerd) watch(id, uid string, exited <-chan client.ExitStatus) {
	r.mu.Lock()
	if r.watched[id] {
		r.mu.Unlock()
		return
	}
	r.watched[id] = true
	r.mu.Unlock()
	go func() {
		<-exited
		r.mu.Lock()
		delete(r.watched, id)
		r.mu.Unlock()
		select {
		case r.exits <- uid:
		default: // the agent's periodic look catches it
		}
	}()
}

// OnEvent implements EventSource.
func (r *Containerd) OnEvent(record func(pod *core.Pod, typ, reason, message string)) {
	r.Record = record
}

func (r *Containerd) record(pod *core.Pod, typ, reason, message string) {
	if r.Record != nil {
		r.Record(pod, typ, reason, message)
	}
}

// HostNode is what a hostNetwork pod shares with its node.
type HostNode struct {
	Name, IP string
	// Netns is the node's network namespace, /proc/<agent pid>/ns/net:
	// the agent runs in it (in the lab, a namespace of its own per node).
	Netns string
}

// Close closes the connection.
func (r *Containerd) Close() error { return r.client.Close() }

func (r *Containerd) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.namespace)
}

// Version implements Runtime.
func (r *Containerd) Version(ctx context.Context) (string, error) {
	v, err := r.client.Version(r.ctx(ctx))
	if err != nil {
		return "", fmt.Errorf("containerd version: %w", err)
	}
	return "containerd://" + v.Version, nil
}

// LoadImages imports every OCI tarball (*.tar) in dir and unpacks it.
func (r *Containerd) LoadImages(ctx context.Context, dir string) ([]string, error) {
	ctx = r.ctx(ctx)
	files, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return names, err
		}
		imgs, err := r.client.Import(ctx, fh)
		fh.Close()
		if err != nil {
			return names, fmt.Errorf("import %s: %w", f, err)
		}
		for _, img := range imgs {
			if err := client.NewImage(r.client, img).Unpack(ctx, r.snapshotter); err != nil {
				return names, fmt.Errorf("unpack %s: %w", img.Name, err)
			}
			names = append(names, img.Name)
		}
	}
	return names, nil
}

var _ Runtime = (*Containerd)(nil)
