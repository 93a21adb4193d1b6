package runtime

import (
	"context"
	"time"

	"github.com/kobune/kobune/api/core"
)

// Runtime runs pods on a node.
type Runtime interface {
	// Name and version as the node reports them ("fake://0.1", "containerd://1.6.20").
	Version(ctx context.Context) (string, error)
	// RunPod makes sure the pod's sandbox exists and its containers run,
	// starting what is missing; calling it again for a running pod changes
	// nothing. The exited containers named in restart are replaced by a new
	// attempt (the agent decides when, by restart policy and back-off). It
	// returns what runs.
	RunPod(ctx context.Context, pod *core.Pod, restart []string) (PodState, error)
	// StopPod stops the pod's containers (SIGTERM, then SIGKILL after grace)
	// and removes its sandbox. Stopping a pod that is not there succeeds.
	StopPod(ctx context.Context, uid string, grace time.Duration) error
	// Pods lists the pods the runtime has, for adoption after an agent restart.
	Pods(ctx context.Context) ([]PodState, error)
	// Exits delivers the uid of a pod when one of its containers exits, so
	// the agent looks at it at once; nil if containers never exit.
	Exits() <-chan string
	// KillContainer stops one container (SIGTERM, SIGKILL after grace) and
	// leaves it to the restart policy: what a failed liveness probe does.
	KillContainer(ctx context.Context, podUID, container string, grace time.Duration) error
}

// EventSource is a runtime that reports events about pods (Pulled,
// Created, Started, Failed); the agent writes them.
type EventSource interface {
	OnEvent(record func(pod *core.Pod, typ, reason, message string))
}

// ContainerConfig is what the agent resolves for a container just before
// the runtime creates it.
type ContainerConfig struct {
	// Env is the container's whole environment ("NAME=value"), in order:
	// a later entry wins a name.
	Env []string
	// Mounts are the pod's volumes as this container mounts them.
	Mounts []Mount
	// Command and Args are the container's, with the $(VAR)s of Env
	// expanded.
	Command, Args []string
}

// Mount is a path of the node bound into a container.
type Mount struct {
	Source, Destination string
	ReadOnly            bool
}

// ConfigError is a container whose configuration cannot be resolved (a
// missing ConfigMap key, say): it waits with reason
// CreateContainerConfigError until it can.
type ConfigError struct {
	Container string
	Err       error
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ConfigSetter is a runtime that asks the agent for each container's
// environment and mounts (config), given the pod's address.
type ConfigSetter interface {
	SetContainerConfig(config func(ctx context.Context, pod *core.Pod, c *core.Container, podIP string) (ContainerConfig, error))
}

// StartGate is a runtime whose sidecars (init containers with
// restartPolicy Always) that have a startup probe hold back the init
// containers after them until the agent says the probe passed (started),
// as the kubelet waits; without a gate, or without a startup probe, a
// running sidecar counts as started.
type StartGate interface {
	SetStartGate(started func(podUID, containerID string) bool)
}

// SandboxCleaner is a runtime whose pod sandboxes can outlive their
// containers; the agent calls it once its pods are listed (the kubelet's
// housekeeping), keeping the sandboxes of the pods it knows (uids).
type SandboxCleaner interface {
	RemoveOrphanSandboxes(ctx context.Context, keep map[string]bool) (removed []string, err error)
}

// SandboxReleaser is a runtime that can give up a finished pod's sandbox
// while keeping its exited containers (the kubelet stops a terminated
// pod's sandbox at once: its address goes back to the node's range; the
// dead containers, with their writable layers and logs, stay for `logs`
// until the pod is deleted or disk pressure collects them).
type SandboxReleaser interface {
	ReleaseSandbox(ctx context.Context, uid string) error
}

// Resizer is a runtime that changes a running pod's cgroup limits in
// place (an in-place resize, the CRI's UpdateContainerResources): the
// pod's cgroup and the named running containers' are set from the pod's
// spec. A memory limit below what a container uses is refused
// (ErrMemoryInUse), as the kubelet refuses it, not written (the kernel
// would kill the container).
type Resizer interface {
	ResizeContainers(ctx context.Context, pod *core.Pod, containers []string) error
}

// PodState is what the runtime knows of one pod.
type PodState struct {
	UID        string
	Namespace  string
	Name       string
	IP         string
	StartedAt  time.Time
	Containers []ContainerState
}

// ContainerState is one container of a running pod.
type ContainerState struct {
	Name    string
	ID      string
	Image   string
	ImageID string
	Init    bool
	// Ephemeral: one of the pod's ephemeral containers (run once).
	Ephemeral bool
	Running   bool
	ExitCode  int32
	Reason    string
	// Message is the runtime's error when the process could not start.
	Message   string
	StartedAt time.Time
	// FinishedAt is set for containers that have exited.
	FinishedAt time.Time
	// Restarts counts earlier attempts; Last is how the previous one ended.
	Restarts int32
	Last     *ContainerState

	// lost: retired with its sandbox (reboot.go); bootID: the machine's
	// boot its process was started in.
	lost   bool
	bootID string
}
