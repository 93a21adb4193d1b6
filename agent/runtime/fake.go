package runtime

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

// Fake is a simulated runtime: RunPod records the pod as running at once,
// with an IP from the node's pod CIDR; init containers complete at once; a
// container whose command is ["exit", "N"] finishes at once with code N.
// Nothing is executed. It is named fake everywhere it appears (node status
// says "fake://"), because it only simulates nodes.
type Fake struct {
	mu   sync.Mutex
	pods map[string]*PodState
	cidr *net.IPNet
	next uint32
	used map[string]bool
	// config is the agent's hook (SetContainerConfig); configs what it
	// gave each container (pod uid → container → config), for tests.
	config  func(ctx context.Context, pod *core.Pod, c *core.Container, podIP string) (ContainerConfig, error)
	configs map[string]map[string]ContainerConfig
	// resized are the resources each container was last resized to (pod
	// uid → container), for tests.
	resized map[string]map[string]core.ResourceRequirements
}

// ResizeContainers implements Resizer: the fake remembers the resources
// (Resized); a memory limit under 1Mi counts as below the usage.
func (f *Fake) ResizeContainers(_ context.Context, pod *core.Pod, names []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		c := pod.Spec.Container(name)
		if c == nil {
			return fmt.Errorf("container %q is not in the pod's spec", name)
		}
		if lim, ok := c.Resources.Limits[resource.Memory]; ok && lim.Value() < 1<<20 {
			return fmt.Errorf("%w: attempting to set memory limit (%d) below current usage (%d)", ErrMemoryInUse, lim.Value(), 1<<20)
		}
		if f.resized == nil {
			f.resized = map[string]map[string]core.ResourceRequirements{}
		}
		if f.resized[pod.UID] == nil {
			f.resized[pod.UID] = map[string]core.ResourceRequirements{}
		}
		f.resized[pod.UID][name] = c.Resources
	}
	return nil
}

// Resized is what a container was last resized to.
func (f *Fake) Resized(uid, container string) (core.ResourceRequirements, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.resized[uid][container]
	return r, ok
}

// SetContainerConfig implements ConfigSetter: the fake resolves each
// container's environment and mounts as the real runtime does (nothing
// uses them) and remembers them for Config.
func (f *Fake) SetContainerConfig(h func(ctx context.Context, pod *core.Pod, c *core.Container, podIP string) (ContainerConfig, error)) {
	f.config = h
}

// Config is what the agent resolved for a container of a pod.
func (f *Fake) Config(uid, container string) (ContainerConfig, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.configs[uid][container]
	return c, ok
}

// NewFake returns a fake runtime that hands out IPs from cidr ("10.244.1.0/24").
func NewFake(cidr string) (*Fake, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil || n.IP.To4() == nil {
		return nil, fmt.Errorf("pod CIDR %q: must be an IPv4 CIDR such as 10.244.1.0/24", cidr)
	}
	return &Fake{pods: map[string]*PodState{}, cidr: n, next: 2, used: map[string]bool{}}, nil
}

// Version implements Runtime.
func (f *Fake) Version(context.Context) (string, error) { return "fake://0.1", nil }

// RunPod implements Runtime.
// Simulated containers never exit, so restart is never needed.
func (f *Fake) RunPod(ctx context.Context, pod *core.Pod, _ []string) (PodState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pods[pod.UID]; ok {
		return clone(p), nil
	}
	if f.config != nil {
		configs := map[string]ContainerConfig{}
		for _, list := range [][]core.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				cfg, err := f.config(ctx, pod, &list[i], pod.Status.PodIP)
				if err != nil {
					return PodState{}, &ConfigError{Container: list[i].Name, Err: err}
				}
				configs[list[i].Name] = cfg
			}
		}
		if f.configs == nil {
			f.configs = map[string]map[string]ContainerConfig{}
		}
		f.configs[pod.UID] = configs
	}
	ip := pod.Status.PodIP // adopt the address the pod already had (agent restart)
	if ip == "" || f.used[ip] {
		var err error
		if ip, err = f.allocate(); err != nil {
			return PodState{}, err
		}
	}
	f.used[ip] = true
	now := time.Now()
	if pod.Status.StartTime != nil {
		now = pod.Status.StartTime.Time
	}
	p := &PodState{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, IP: ip, StartedAt: now}
	for _, c := range pod.Spec.InitContainers {
		image := fakeImage(c.Image)
		cs := ContainerState{Name: c.Name, ID: "fake://" + pod.UID + "/" + c.Name, Image: image,
			ImageID: "fake://" + image, Init: true, Reason: "Completed", StartedAt: now, FinishedAt: now}
		if code, ok := simulatedExit(c.Command); ok && code != 0 {
			// A failed init container: nothing after it is made.
			cs.ExitCode, cs.Reason = code, "Error"
			p.Containers = append(p.Containers, cs)
			f.pods[pod.UID] = p
			return clone(p), nil
		}
		p.Containers = append(p.Containers, cs)
	}
	for _, c := range pod.Spec.Containers {
		image := fakeImage(c.Image)
		cs := ContainerState{Name: c.Name, ID: "fake://" + pod.UID + "/" + c.Name, Image: image,
			ImageID: "fake://" + image, Running: true, StartedAt: now}
		if code, ok := simulatedExit(c.Command); ok {
			cs.Running, cs.ExitCode, cs.FinishedAt, cs.Reason = false, code, now, "Completed"
			if code != 0 {
				cs.Reason = "Error"
			}
		}
		p.Containers = append(p.Containers, cs)
	}
	f.pods[pod.UID] = p
	return clone(p), nil
}

// fakeImage is the image a simulated node reports running: the name
// normalised as a real node's (nginx is docker.io/library/nginx:latest),
// or the name as written when it does not parse (a simulated node pulls
// nothing, so it has no InvalidImageName to report).
func fakeImage(name string) string {
	if n, err := NormalizeImage(name); err == nil {
		return n
	}
	return name
}

// simulatedExit reads the one command the fake runtime understands:
// ["exit", "N"] finishes the container at once with exit code N (jobs
// that succeed or fail on simulated nodes; an init container that fails
// so keeps the containers after it from being made). Any other command runs for
// ever, as before.
func simulatedExit(command []string) (int32, bool) {
	if len(command) != 2 || command[0] != "exit" {
		return 0, false
	}
	var code int32
	if _, err := fmt.Sscan(command[1], &code); err != nil {
		return 0, false
	}
	return code, true
}

func (f *Fake) allocate() (string, error) {
	ones, bits := f.cidr.Mask.Size()
	size := uint32(1) << (bits - ones)
	base := ipToUint(f.cidr.IP)
	for tries := uint32(0); tries < size; tries++ {
		n := f.next
		f.next++
		if f.next >= size-1 {
			f.next = 2
		}
		ip := uintToIP(base + n).String()
		if !f.used[ip] {
			return ip, nil
		}
	}
	return "", fmt.Errorf("pod CIDR %s is full", f.cidr)
}

// Exits implements Runtime: simulated containers never exit.
func (f *Fake) Exits() <-chan string { return nil }

// KillContainer implements Runtime: simulated containers have nothing to kill.
func (f *Fake) KillContainer(context.Context, string, string, time.Duration) error { return nil }

// StopPod implements Runtime.
func (f *Fake) StopPod(_ context.Context, uid string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pods[uid]; ok {
		delete(f.used, p.IP)
		delete(f.pods, uid)
	}
	delete(f.resized, uid)
	return nil
}

// ReleaseSandbox implements SandboxReleaser: the simulated address is free
// again; the pod's containers stay.
func (f *Fake) ReleaseSandbox(_ context.Context, uid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pods[uid]; ok && f.used[p.IP] {
		delete(f.used, p.IP)
	}
	return nil
}

// Pods implements Runtime.
func (f *Fake) Pods(context.Context) ([]PodState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]PodState, 0, len(f.pods))
	for _, p := range f.pods {
		out = append(out, clone(p))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

func clone(p *PodState) PodState {
	c := *p
	c.Containers = append([]ContainerState(nil), p.Containers...)
	return c
}

func ipToUint(ip net.IP) uint32 {
	v4 := ip.To4()
	return uint32(v4[0])<<24 | uint32(v4[1])<<16 | uint32(v4[2])<<8 | uint32(v4[3])
}

func uintToIP(v uint32) net.IP { return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)) }
