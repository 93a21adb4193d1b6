package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/kobune/kobune/agent/containerlog"
	"github.com/kobune/kobune/agent/network"
	"github.com/kobune/kobune/api/core"
)

// RunPod implements Runtime: sandbox (network namespace, CNI), then init
// containers one after another to completion (a sidecar only until it has
// started: it keeps running), then the containers.
func (r *Containerd) RunPod(ctx context.Context, pod *core.Pod, restart []string) (PodState, error) {
	ctx = r.ctx(ctx)
	st, err := r.podState(ctx, pod.UID)
	if err != nil {
		return PodState{}, err
	}
	retired := sandboxLost(pod, st, bootIDOnce()) // the machine rebooted, or the namespace was deleted
	if retired {
		if err := r.retire(ctx, pod); err != nil {
			return PodState{}, err
		}
		if st, err = r.podState(ctx, pod.UID); err != nil {
			return PodState{}, err
		}
	}
	// A retired pod of its own network needs a new sandbox; its containers
	// are still there, and start in it as their next attempts.
	// (Not for restartPolicy Never: nothing would start in it, and the pod
	// fails, as the kubelet's computePodActions decides.)
	remake := sandboxGone(pod, st) && pod.Spec.RestartPolicy != core.RestartPolicyNever
	if st.IP == "" && pod.Spec.HostNetwork {
		// The node's own network: no sandbox, no CNI; the pod's IP is the node's.
		st = PodState{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, IP: r.Node.IP, StartedAt: time.Now().UTC().Truncate(time.Second)}
	}
	if st.IP == "" || remake {
		// Images first: a pod whose image cannot be had gets no sandbox.
		for _, cs := range [][]core.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range cs {
				if _, _, err := r.ensureImage(ctx, pod, &cs[i]); err != nil {
					return PodState{}, err
				}
			}
		}
		started := time.Now().UTC().Truncate(time.Second)
		if remake {
			// (Torn down again on a failure: the next look begins clean.)
			_, ip, err := r.network.Setup(ctx, sandboxID(pod.UID), hostPorts(pod))
			if err != nil {
				r.teardownAfter(ctx, pod.UID)
				return PodState{}, &SandboxError{Err: err}
			}
			if err := r.relabelIP(ctx, pod.UID, ip); err != nil {
				r.teardownAfter(ctx, pod.UID)
				return PodState{}, err
			}
			st.IP = ip
		} else if ip, ok := r.network.Attached(ctx, sandboxID(pod.UID)); ok {
			// Containers gone, sandbox still there (someone removed them
			// behind the agent's back): the pod keeps its network identity.
			st = PodState{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, IP: ip, StartedAt: started}
		} else {
			// A new sandbox. If nothing of the pod starts, it is torn down
			// again, so that the next attempt begins clean.
			_, ip, err := r.network.Setup(ctx, sandboxID(pod.UID), hostPorts(pod))
			if err != nil {
				r.teardownAfter(ctx, pod.UID)
				return PodState{}, &SandboxError{Err: err}
			}
			st = PodState{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, IP: ip, StartedAt: started}
			defer func() {
				if left, _ := r.podState(context.WithoutCancel(ctx), pod.UID); len(left.Containers) == 0 {
					r.teardownAfter(ctx, pod.UID)
				}
			}()
		}
	}
	have := map[string]ContainerState{}
	for _, c := range st.Containers {
		have[c.Name] = c
	}
	if len(st.Containers) == 0 || retired || remake { // new, or its cgroup gone with a reboot
		if err := ensurePodCgroup(pod); err != nil {
			return PodState{}, err
		}
	}
	again := map[string]bool{}
	for _, name := range restart {
		again[name] = true
	}
	// ensure starts c unless it runs; an exited attempt is replaced when the
	// agent asked for a restart. It reports whether c is running or done.
	ensure := func(c *core.Container, init containerRole) (bool, error) {
		cs, ok := have[c.Name]
		switch {
		case ok && cs.Reason == reasonNeverStarted:
			// Made but never started: an agent killed between creating the
			// container and starting its task. Make it again, same attempt.
			if err := r.removeContainer(ctx, containerID(pod.UID, c.Name)); err != nil {
				return false, err
			}
			return false, r.start(ctx, pod, c, st, init, cs.Restarts, cs.Last)
		case ok && (cs.Running || !again[c.Name]):
			return true, nil
		case ok:
			if err := r.removeContainer(ctx, containerID(pod.UID, c.Name)); err != nil {
				return false, err
			}
			last := cs
			last.Last = nil
			return false, r.start(ctx, pod, c, st, init, cs.Restarts+1, &last)
		}
		return false, r.start(ctx, pod, c, st, init, 0, nil)
	}
	// Once a container of the pod exists, the pod was initialized: a
	// sidecar that exits later is restarted but holds nothing back.
	initialized := false
	for i := range pod.Spec.Containers {
		_, ok := have[pod.Spec.Containers[i].Name]
		initialized = initialized || ok
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs, ok := have[c.Name]
		if c.IsSidecar() {
			// A sidecar starts in its turn and keeps running; the next
			// init container waits until it has started.
			if _, err := ensure(c, initContainer); err != nil {
				return PodState{}, err
			}
			noProbe := c.StartupProbe == nil || r.started == nil
			if initialized || ok && cs.Running && (noProbe || r.started(pod.UID, cs.ID)) {
				continue
			}
			if !ok && noProbe {
				continue // just started, and nothing to wait for
			}
			return r.podState(ctx, pod.UID) // the next look continues once it has started
		}
		if ok && !cs.Running && !cs.FinishedAt.IsZero() && cs.ExitCode == 0 {
			continue // done
		}
		if _, err := ensure(c, initContainer); err != nil {
			return PodState{}, err
		}
		return r.podState(ctx, pod.UID) // the next look continues once it has exited
	}
	for i := range pod.Spec.Containers {
		if _, err := ensure(&pod.Spec.Containers[i], appContainer); err != nil {
			return PodState{}, err
		}
	}
	// Ephemeral containers run once each, beside the others; one that
	// has exited stays exited.
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		if _, ok := have[ec.Name]; ok {
			continue
		}
		if err := r.start(ctx, pod, &ec.Container, st, ephemeralContainer, 0, nil); err != nil {
			return PodState{}, err
		}
	}
	return r.podState(ctx, pod.UID)
}

// containerRole is which list of the pod's spec a container is from.
type containerRole int

const (
	appContainer containerRole = iota
	initContainer
	ephemeralContainer
)

// hostPorts lists the pod's hostPort mappings for the portmap plugin.
func hostPorts(pod *core.Pod) []network.PortMapping {
	var out []network.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				out = append(out, network.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort,
					Protocol: strings.ToLower(string(p.Protocol)), HostIP: p.HostIP})
			}
		}
	}
	return out
}

// teardownAfter removes a sandbox that nothing of its pod started in, also
// when ctx has ended (an agent stopping in the middle of RunPod): a
// cancelled context must not leave a network namespace behind.
func (r *Containerd) teardownAfter(ctx context.Context, uid string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = r.network.Teardown(ctx, sandboxID(uid))
}

// RemoveOrphanSandboxes implements SandboxCleaner: it tears down this
// node's sandboxes that belong to none of the pods in keep (uids) — what an
// agent killed between setting up a sandbox and starting its first
// container leaves behind — and returns their IDs.
func (r *Containerd) RemoveOrphanSandboxes(ctx context.Context, keep map[string]bool) ([]string, error) {
	ids, err := r.network.Sandboxes()
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for uid := range keep {
		kept[sandboxID(uid)] = true
	}
	var removed []string
	for _, id := range ids {
		if kept[id] {
			continue
		}
		if err := r.network.Teardown(ctx, id); err != nil {
			return removed, err
		}
		removed = append(removed, id)
	}
	return removed, nil
}

// ReleaseSandbox implements SandboxReleaser: the exited containers'
// tasks are deleted (their shims exit; containerd's CRI does the same when
// a container exits — the exit codes are in the pod's status by now), the
// pod's cgroup goes, then CNI DEL and the network namespace (the address
// is free again). The containers stay, with their writable layers and logs.
func (r *Containerd) ReleaseSandbox(ctx context.Context, uid string) error {
	ctx = r.ctx(ctx)
	ctrs, parents, err := r.podContainers(ctx, uid)
	if err != nil {
		return err
	}
	for _, ctr := range ctrs {
		task, err := ctr.Task(ctx, nil)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("task of %s: %w", ctr.ID(), err)
		}
		if st, err := task.Status(ctx); err != nil || st.Status != client.Stopped {
			continue // not exited: left to the pod's deletion
		}
		if _, err := task.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task %s: %w", ctr.ID(), err)
		}
	}
	for p := range parents {
		removePodCgroup(p)
	}
	return r.network.Teardown(ctx, sandboxID(uid))
}

func sandboxID(uid string) string {
	if len(uid) > 12 {
		return uid[:12]
	}
	return uid
}

// maxContainerID is containerd's limit on an identifier's length.
const maxContainerID = 76

// identifier is containerd's rule for an id (as containerd 1.6, which
// Debian 12 ships, checks it): alphanumeric components joined by single
// '.', '_' or '-'.
var identifier = regexp.MustCompile(`^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$`)

// containerID is the containerd id of a pod's container: "<pod uid>-<name>",
// or, when containerd would refuse that — longer than it allows (a name
// may have 63 characters, the uid has 36), or two dashes in a row (a name
// "a--b", or one cut after a dash) — the name's first characters, their
// runs of dashes made one, and a hash of the whole name in its place:
// still one id per name, found again after a restart of the agent.
func containerID(uid, name string) string {
	id := uid + "-" + name
	if len(id) <= maxContainerID && identifier.MatchString(id) {
		return id
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:4])
	keep := min(len(name), maxContainerID-len(uid)-2-len(hash))
	prefix := strings.Trim(dashes.ReplaceAllString(name[:keep], "-"), "-")
	if prefix == "" {
		return uid + "-" + hash
	}
	return uid + "-" + prefix + "-" + hash
}

var dashes = regexp.MustCompile(`-+`)

// start creates and starts one container in the pod's network namespace.
func (r *Containerd) start(ctx context.Context, pod *core.Pod, c *core.Container, st PodState, role containerRole, attempt int32, last *ContainerState) error {
	img, pulled, err := r.ensureImage(ctx, pod, c)
	if err != nil {
		return err
	}
	if pulled {
		r.record(pod, core.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q", c.Image))
	} else {
		r.record(pod, core.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", c.Image))
	}
	id := containerID(pod.UID, c.Name)
	netns, hostname := network.NetnsPath(sandboxID(pod.UID)), PodHostname(pod)
	if pod.Spec.HostNetwork {
		netns, hostname = r.Node.Netns, r.Node.Name // as the kubelet: the node's network and name
	}
	// /sys/fs/cgroup as containerd's CRI mounts it (read-only, writable
	// for a privileged container): the container's own cgroup, where it
	// reads its limits (runc binds each v1 hierarchy's directory of the
	// container; on v2 the container has its own cgroup namespace, below).
	opts := []oci.SpecOpts{oci.WithImageConfig(img), oci.WithHostname(hostname),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netns}),
		oci.WithMounts([]specs.Mount{{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}}})}
	var cfg ContainerConfig
	if r.config != nil {
		if cfg, err = r.config(ctx, pod, c, st.IP); err != nil {
			return &ConfigError{Container: c.Name, Err: err}
		}
	} else {
		for _, e := range c.Env {
			cfg.Env = append(cfg.Env, e.Name+"="+e.Value)
		}
		cfg.Command, cfg.Args = c.Command, c.Args
	}
	switch { // the command and args with their $(VAR)s expanded
	case len(cfg.Command) > 0:
		opts = append(opts, oci.WithProcessArgs(append(append([]string{}, cfg.Command...), cfg.Args...)...))
	case len(cfg.Args) > 0:
		opts = append(opts, oci.WithImageConfigArgs(img, cfg.Args))
	}
	if len(cfg.Env) > 0 {
		opts = append(opts, oci.WithEnv(cfg.Env))
	}
	var mounts []specs.Mount
	for _, m := range cfg.Mounts {
		o := []string{"rbind", "rprivate"}
		if m.ReadOnly {
			o = append(o, "ro")
		} else {
			o = append(o, "rw")
		}
		mounts = append(mounts, specs.Mount{Destination: m.Destination, Type: "bind", Source: m.Source, Options: o})
	}
	if len(mounts) > 0 {
		opts = append(opts, oci.WithMounts(mounts))
	}
	if c.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(c.WorkingDir))
	}
	terminationPath := ""
	if r.PodDir != "" {
		path, err := writeResolvConf(r.PodDir, pod, r.DNS)
		if err != nil {
			return fmt.Errorf("write resolv.conf: %w", err)
		}
		hostsFile, _ := os.ReadFile("/etc/hosts") // the node's, for hostNetwork pods
		hosts, err := writePodFile(r.PodDir, pod, "hosts", HostsFile(pod, st.IP, r.DNS.Domain, hostsFile))
		if err != nil {
			return fmt.Errorf("write hosts: %w", err)
		}
		// A container that mounts a volume at /etc/hosts or
		// /etc/resolv.conf keeps its own (the kubelet mounts its hosts
		// file only where the container mounts none).
		for _, m := range []specs.Mount{{Destination: "/etc/resolv.conf", Type: "bind", Source: path, Options: []string{"rbind", "rw"}},
			{Destination: "/etc/hosts", Type: "bind", Source: hosts, Options: []string{"rbind", "rw"}}} {
			if !slices.ContainsFunc(mounts, func(own specs.Mount) bool { return filepath.Clean(own.Destination) == m.Destination }) {
				opts = append(opts, oci.WithMounts([]specs.Mount{m}))
			}
		}
		if c.TerminationMessagePath != "" {
			if terminationPath, err = terminationFile(r.PodDir, pod, c.Name, attempt); err != nil {
				return fmt.Errorf("termination message file: %w", err)
			}
			opts = append(opts, oci.WithMounts([]specs.Mount{{Destination: c.TerminationMessagePath, Type: "bind", Source: terminationPath, Options: []string{"rbind", "rw"}}}))
		}
	}
	sec, err := r.securityOpts(ctx, pod, c, img)
	if err != nil {
		return &ConfigError{Container: c.Name, Err: err}
	}
	opts = append(opts, sec...)
	if role == ephemeralContainer {
		// An ephemeral container with a target sees the target's
		// processes: it joins that container's PID namespace.
		pidns, err := r.targetPIDNamespace(ctx, pod, c.Name)
		if err != nil {
			return &ConfigError{Container: c.Name, Err: err}
		}
		if pidns != "" {
			opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: pidns}))
		}
	}
	cgroup := podCgroup(pod) + "/" + id
	opts = append(opts, oci.WithCgroup(cgroup))
	if cgroupV2() {
		// A cgroup namespace of its own, as containerd's CRI gives on the
		// unified hierarchy: /sys/fs/cgroup in the container is its own
		// cgroup (cpu.max, memory.max), which the container can read.
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.CgroupNamespace}))
	}
	opts = append(opts, resourceOpts(c)...)
	labels := map[string]string{LabelPodUID: pod.UID, LabelPodName: pod.Name, LabelPodNamespace: pod.Namespace,
		LabelContainer: c.Name, LabelPodIP: st.IP, LabelStarted: st.StartedAt.Format(time.RFC3339), LabelCgroup: cgroup}
	switch role {
	case initContainer:
		labels[LabelInit] = "true"
	case ephemeralContainer:
		labels[LabelEphemeral] = "true"
	}
	logPath := r.LogPath(pod, c.Name, attempt)
	if terminationPath != "" {
		labels[LabelTerminationFile] = terminationPath
		if c.TerminationMessagePolicy == core.TerminationMessageFallbackToLogsOnError {
			labels[LabelTerminationLog] = logPath
		}
	}
	labels[LabelRestarts] = strconv.Itoa(int(attempt))
	if b := bootIDOnce(); b != "" {
		labels[LabelBootID] = b
	}
	labels[LabelImageID] = imageID(img.Name(), img.Target().Digest.String())
	if last != nil {
		labels[LabelLastExitCode] = strconv.Itoa(int(last.ExitCode))
		labels[LabelLastReason] = last.Reason
		if last.Message != "" {
			labels[LabelLastMessage] = truncate(last.Message, 4096)
		}
		labels[LabelLastStarted] = last.StartedAt.UTC().Format(time.RFC3339)
		labels[LabelLastFinished] = last.FinishedAt.UTC().Format(time.RFC3339)
	}
	created := time.Now()
	// An agent killed after containerd prepared this container's snapshot
	// and before it recorded the container leaves the snapshot behind;
	// every later create would fail on it ("snapshot already exists").
	// With no container of that id, the snapshot is nobody's: remove it.
	if _, lerr := r.client.LoadContainer(ctx, id); errdefs.IsNotFound(lerr) {
		if rerr := r.client.SnapshotService(r.snapshotter).Remove(ctx, id); rerr == nil {
			log.Printf("kobune-agent: removed snapshot %s left by an interrupted create", id)
		}
	}
	ctr, err := r.client.NewContainer(ctx, id, client.WithImage(img), client.WithNewSnapshot(id, img),
		client.WithNewSpec(opts...), client.WithContainerLabels(labels))
	if err != nil {
		err = fmt.Errorf("create container %s: %w", c.Name, err)
		r.record(pod, core.EventTypeWarning, "Failed", "Error: "+err.Error())
		return &ImageError{Container: c.Name, Reason: "CreateContainerError", Err: err}
	}
	r.observe("create", created)
	r.record(pod, core.EventTypeNormal, "Created", "Created container "+c.Name)
	started := time.Now()
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return err
	}
	output := cio.LogFile(logPath) // the bytes as written, without times
	if r.LogBinary != "" {
		output = cio.BinaryIO(r.LogBinary, map[string]string{containerlog.Mode: logPath})
	}
	task, err := ctr.NewTask(ctx, output)
	var exited <-chan client.ExitStatus
	if err == nil {
		if exited, err = task.Wait(context.WithoutCancel(ctx)); err == nil {
			err = task.Start(ctx)
		}
		if err != nil {
			_, _ = task.Delete(ctx, client.WithProcessKill)
		}
	}
	if err != nil {
		return r.startFailed(ctx, pod, c, ctr, err)
	}
	r.observe("start", started)
	r.record(pod, core.EventTypeNormal, "Started", "Started container "+c.Name)
	r.watch(id, pod.UID, exited)
	return nil
}

// startFailed keeps a container whose process could not start (a command
// that does not exist, say) as an attempt that ended at once, as
// Kubernetes shows it: terminated, reason StartError, exit code 128, the
// runtime's message. The restart policy and back-off then apply to it like
// to any exited container, and the pod's status says why.
func (r *Containerd) startFailed(ctx context.Context, pod *core.Pod, c *core.Container, ctr client.Container, cause error) error {
	msg := truncate(cause.Error(), 4096)
	r.record(pod, core.EventTypeWarning, "Failed", "Error: "+msg)
	_, err := ctr.SetLabels(ctx, map[string]string{LabelStartError: msg, LabelStartFailed: time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		_ = ctr.Delete(ctx, client.WithSnapshotCleanup)
		return fmt.Errorf("start container %s: %w", c.Name, cause)
	}
	r.exitNow(pod.UID)
	return nil
}

// exitNow tells the agent to look at the pod, as an exit would.
func (r *Containerd) exitNow(uid string) {
	select {
	case r.exits <- uid:
	default:
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// SandboxError is a pod whose network could not be set up (CNI); the
// agent reports it as the event FailedCreatePodSandBox.
type SandboxError struct{ Err error }

func (e *SandboxError) Error() string { return "create pod sandbox: " + e.Err.Error() }
func (e *SandboxError) Unwrap() error { return e.Err }

func (r *Containerd) observe(phase string, since time.Time) {
	if r.Observe != nil {
		r.Observe(phase, time.Since(since))
	}
}

// removeContainer deletes an exited container and its task.
func (r *Containerd) removeContainer(ctx context.Context, id string) error {
	ctr, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return stopContainer(ctx, ctr, 0)
}

// reasonNeverStarted is the waiting reason of a container whose process
// was never started (kubectl shows ContainerCreating): RunPod makes it again.
const reasonNeverStarted = "ContainerCreating"

// podState reads what containerd runs for a pod uid.
func (r *Containerd) podState(ctx context.Context, uid string) (PodState, error) {
	all, err := r.list(ctx, fmt.Sprintf("labels.%q==%s", LabelPodUID, uid))
	if err != nil || len(all) == 0 {
		return PodState{UID: uid}, err
	}
	return all[0], nil
}

// Pods implements Runtime.
func (r *Containerd) Pods(ctx context.Context) ([]PodState, error) {
	return r.list(r.ctx(ctx), fmt.Sprintf("labels.%q", LabelPodUID))
}

func (r *Containerd) list(ctx context.Context, filter string) ([]PodState, error) {
	ctrs, err := r.client.Containers(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	pods := map[string]*PodState{}
	for _, ctr := range ctrs {
		info := listed(ctx, ctr)
		l := info.Labels
		uid := l[LabelPodUID]
		p := pods[uid]
		if p == nil {
			started, _ := time.Parse(time.RFC3339, l[LabelStarted])
			p = &PodState{UID: uid, Name: l[LabelPodName], Namespace: l[LabelPodNamespace], IP: l[LabelPodIP], StartedAt: started}
			pods[uid] = p
		}
		p.Containers = append(p.Containers, r.containerState(ctx, ctr, info))
	}
	out := make([]PodState, 0, len(pods))
	for _, p := range pods {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

// listed is a container's record as the listing returned it. Reading it
// again (Labels, Info) is a second request, and a container another
// goroutine deletes in between (the restart of a crashing container)
// would fail it with "not found": a listing must not fail for the
// containers that come and go while it runs.
func listed(ctx context.Context, ctr client.Container) containers.Container {
	info, _ := ctr.Info(ctx, client.WithoutRefreshedMetadata) // never fails without a refresh
	return info
}

func (r *Containerd) containerState(ctx context.Context, ctr client.Container, info containers.Container) ContainerState {
	l := info.Labels
	cs := ContainerState{Name: l[LabelContainer], ID: "containerd://" + ctr.ID(), Init: l[LabelInit] == "true", Ephemeral: l[LabelEphemeral] == "true", Image: info.Image,
		ImageID: l[LabelImageID], StartedAt: info.CreatedAt}
	if n, err := strconv.Atoi(l[LabelRestarts]); err == nil {
		cs.Restarts = int32(n)
	}
	if code, err := strconv.Atoi(l[LabelLastExitCode]); err == nil {
		started, _ := time.Parse(time.RFC3339, l[LabelLastStarted])
		finished, _ := time.Parse(time.RFC3339, l[LabelLastFinished])
		cs.Last = &ContainerState{Name: cs.Name, ExitCode: int32(code), Reason: l[LabelLastReason], Message: l[LabelLastMessage], StartedAt: started, FinishedAt: finished}
	}
	cs.bootID = l[LabelBootID]
	if lost := l[LabelLost]; lost != "" {
		// Retired with its sandbox: the attempt ended, how is unknown.
		cs.lost, cs.ExitCode, cs.Reason = true, exitUnknown, ReasonUnknown
		cs.FinishedAt, _ = time.Parse(time.RFC3339Nano, lost)
		return cs
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil && l[LabelStartError] != "" {
		// The process never started: exit code 128, as containerd's CRI reports it.
		failed, _ := time.Parse(time.RFC3339Nano, l[LabelStartFailed])
		cs.ExitCode, cs.Reason, cs.Message, cs.StartedAt, cs.FinishedAt = 128, "StartError", l[LabelStartError], failed, failed
		return cs
	}
	if err != nil {
		cs.Reason = reasonNeverStarted
		return cs
	}
	st, err := task.Status(ctx)
	if err != nil {
		return cs
	}
	r.mu.Lock()
	known := r.watched[ctr.ID()]
	r.mu.Unlock()
	switch st.Status {
	case client.Created:
		if !known { // a task a killed agent made and never started
			cs.Reason = reasonNeverStarted
			return cs
		}
		cs.Running = true
	case client.Running, client.Paused:
		cs.Running = true
		if !known { // adopted after an agent restart
			if exited, err := task.Wait(context.WithoutCancel(ctx)); err == nil {
				r.watch(ctr.ID(), l[LabelPodUID], exited)
			}
		}
	case client.Stopped:
		cs.ExitCode = int32(st.ExitStatus)
		cs.FinishedAt = st.ExitTime
		cs.Reason = "Completed"
		if st.ExitStatus != 0 {
			cs.Reason = "Error"
		}
		if st.ExitStatus == 137 && oomKilled(l[LabelCgroup]) {
			cs.Reason = "OOMKilled"
		}
		cs.Message = terminationMessage(l, int(st.ExitStatus))
	}
	return cs
}

// StopPod implements Runtime: SIGTERM, up to grace, SIGKILL; then the
// tasks and containers are deleted, CNI DEL runs, the namespace goes.
func (r *Containerd) StopPod(ctx context.Context, uid string, grace time.Duration) error {
	ctx = r.ctx(ctx)
	ctrs, parents, err := r.podContainers(ctx, uid)
	if err != nil {
		return err
	}
	for _, ctr := range ctrs {
		if err := stopContainer(ctx, ctr, grace); err != nil {
			return err
		}
	}
	for p := range parents {
		removePodCgroup(p)
	}
	if err := r.network.Teardown(ctx, sandboxID(uid)); err != nil {
		return err
	}
	if r.PodDir != "" {
		// Only the runtime's own files: the pod's volumes (the agent's
		// volume manager) may be mounts, and a RemoveAll would reach
		// through them.
		for _, name := range []string{"resolv.conf", "hosts", "resolv.conf.tmp", "hosts.tmp"} {
			_ = os.Remove(filepath.Join(r.PodDir, uid, name))
		}
		_ = os.RemoveAll(filepath.Join(r.PodDir, uid, terminationDir)) // files only: never a mount
		_ = os.Remove(filepath.Join(r.PodDir, uid))                    // once empty
	}
	// The pod's log files go with it (namespace_name_uid).
	dirs, _ := filepath.Glob(filepath.Join(r.logDir, "*_"+uid))
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
	return nil
}

// podContainers lists a pod's containers and the pod cgroups they run
// in (to remove once they are gone).
func (r *Containerd) podContainers(ctx context.Context, uid string) ([]client.Container, map[string]bool, error) {
	ctrs, err := r.client.Containers(ctx, fmt.Sprintf("labels.%q==%s", LabelPodUID, uid))
	if err != nil {
		return nil, nil, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	parents := map[string]bool{}
	for _, ctr := range ctrs {
		if cg := listed(ctx, ctr).Labels[LabelCgroup]; cg != "" {
			parents[filepath.Dir(cg)] = true
		}
	}
	return ctrs, parents, nil
}

func stopContainer(ctx context.Context, ctr client.Container, grace time.Duration) error {
	task, err := ctr.Task(ctx, nil)
	if err == nil {
		exited, werr := task.Wait(ctx)
		if werr == nil {
			if st, _ := task.Status(ctx); st.Status != client.Stopped {
				_ = task.Kill(ctx, syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(grace):
					_ = task.Kill(ctx, syscall.SIGKILL)
					<-exited
				}
			}
		}
		if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task %s: %w", ctr.ID(), err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("task of %s: %w", ctr.ID(), err)
	}
	if err := ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete container %s: %w", ctr.ID(), err)
	}
	return nil
}

// LogPath is the log file of one attempt of a container: every attempt has
// its own, so the previous attempt's output survives a restart.
func (r *Containerd) LogPath(pod *core.Pod, container string, attempt int32) string {
	return filepath.Join(r.logDir, pod.Namespace+"_"+pod.Name+"_"+pod.UID, container, strconv.Itoa(int(attempt))+".log")
}

// targetPIDNamespace is the PID namespace of the running container an
// ephemeral container names as its target ("": it names none).
func (r *Containerd) targetPIDNamespace(ctx context.Context, pod *core.Pod, name string) (string, error) {
	target := ""
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name == name {
			target = ec.TargetContainerName
		}
	}
	if target == "" {
		return "", nil
	}
	ctr, err := r.client.LoadContainer(ctx, containerID(pod.UID, target))
	if err != nil {
		return "", fmt.Errorf("target container %s: %w", target, err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("target container %s is not running: %w", target, err)
	}
	return fmt.Sprintf("/proc/%d/ns/pid", task.Pid()), nil
}
