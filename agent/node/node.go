package node

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
)

// LeaseNamespace holds one Lease per node, renewed by its agent.
const LeaseNamespace = "kube-node-lease"

// Config is what the agent knows about its node.
type Config struct {
	Name           string
	Addresses      []core.NodeAddress
	Capacity       resource.List
	SystemReserved resource.List
	Labels         map[string]string
	Taints         []core.Taint
	PodCIDR        string
	RuntimeVersion string
	AgentVersion   string
	KernelVersion  string
	OSImage        string
	LeaseDuration  time.Duration // how long the Lease is valid (40 s by default)
	// AgentPort is where the agent serves logs and exec (0: not served).
	AgentPort int32
}

// Build returns the Node object for cfg, Ready.
func Build(cfg Config) *core.Node {
	labels := map[string]string{
		"kubernetes.io/hostname": cfg.Name,
		"kubernetes.io/os":       runtime.GOOS,
		"kubernetes.io/arch":     runtime.GOARCH,
	}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: cfg.Name, Labels: labels}}
	n.Spec.Taints = cfg.Taints
	if cfg.PodCIDR != "" {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = cfg.PodCIDR, []string{cfg.PodCIDR}
	}
	n.Status.Capacity = cfg.Capacity.DeepCopy()
	n.Status.Allocatable = Allocatable(cfg.Capacity, cfg.SystemReserved)
	n.Status.Addresses = cfg.Addresses
	n.Status.NodeInfo = core.NodeSystemInfo{
		KernelVersion: cfg.KernelVersion, OSImage: cfg.OSImage, ContainerRuntimeVersion: cfg.RuntimeVersion,
		KubeletVersion: cfg.AgentVersion, OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
	}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = cfg.AgentPort
	n.Status.Conditions = Conditions(nil, time.Now(), "", nil)
	return n
}

// Allocatable is capacity minus what is reserved for the system (never below zero).
func Allocatable(capacity, reserved resource.List) resource.List {
	out := capacity.DeepCopy()
	for name, r := range reserved {
		if c, ok := out[name]; ok {
			left := c.Sub(r)
			if left.Sign() < 0 {
				left = resource.NewQuantity(0, c.Format)
			}
			out[name] = left
		}
	}
	return out
}

// Conditions returns the node's conditions with a fresh heartbeat, keeping
// each condition's transition time when its status did not change. Ready
// is True unless notReady says why not (the kubelet's KubeletNotReady:
// "container runtime is down ..."). MemoryPressure, DiskPressure and
// PIDPressure are True where pressure says (the eviction manager's).
func Conditions(old []core.NodeCondition, now time.Time, notReady string, pressure map[core.NodeConditionType]bool) []core.NodeCondition {
	ready := core.NodeCondition{Type: core.NodeReady, Status: meta.ConditionTrue, Reason: "KubeletReady", Message: "kobune-agent is posting ready status"}
	if notReady != "" {
		ready = core.NodeCondition{Type: core.NodeReady, Status: meta.ConditionFalse, Reason: "KubeletNotReady", Message: notReady}
	}
	want := []core.NodeCondition{
		ready,
		{Type: core.NodeMemoryPressure, Status: meta.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kobune-agent has sufficient memory available"},
		{Type: core.NodeDiskPressure, Status: meta.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kobune-agent has no disk pressure"},
		{Type: core.NodePIDPressure, Status: meta.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kobune-agent has sufficient PID available"},
	}
	under := map[core.NodeConditionType][2]string{core.NodeMemoryPressure: {"KubeletHasInsufficientMemory", "kobune-agent has insufficient memory available"},
		core.NodeDiskPressure: {"KubeletHasDiskPressure", "kobune-agent has disk pressure"}, core.NodePIDPressure: {"KubeletHasInsufficientPID", "kobune-agent has insufficient PID available"}}
	for i := range want {
		if r, ok := under[want[i].Type]; ok && pressure[want[i].Type] {
			want[i].Status, want[i].Reason, want[i].Message = meta.ConditionTrue, r[0], r[1]
		}
	}
	t := meta.NewTime(now)
	for i := range want {
		want[i].LastHeartbeatTime = t
		want[i].LastTransitionTime = t
		for _, o := range old {
			if o.Type == want[i].Type && o.Status == want[i].Status && !o.LastTransitionTime.IsZero() {
				want[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return want
}

// Register creates the Node, or, if it exists (an agent restart), updates
// its labels, taints and status to what this agent reports.
func Register(ctx context.Context, c *client.Client, cfg Config) (*core.Node, error) {
	nodes := client.For[*core.Node](c)
	want := Build(cfg)
	created, err := nodes.Create(ctx, want)
	if err == nil {
		return created, nil
	}
	if !client.IsAlreadyExists(err) {
		return nil, fmt.Errorf("register node %s: %w", cfg.Name, err)
	}
	for {
		cur, err := nodes.Get(ctx, "", cfg.Name)
		if err != nil {
			return nil, fmt.Errorf("register node %s: %w", cfg.Name, err)
		}
		for k, v := range want.Labels {
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			cur.Labels[k] = v
		}
		cur.Spec.Taints = mergeTaints(cur.Spec.Taints, want.Spec.Taints)
		if cur.Spec.PodCIDR == "" {
			cur.Spec.PodCIDR, cur.Spec.PodCIDRs = want.Spec.PodCIDR, want.Spec.PodCIDRs
		}
		updated, err := nodes.Update(ctx, cur)
		if client.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("register node %s: %w", cfg.Name, err)
		}
		return UpdateStatus(ctx, c, updated, want.Status, "", nil)
	}
}

// mergeTaints keeps taints added by others (a cordon, the node lifecycle
// controller) and adds the agent's registration taints.
func mergeTaints(cur, add []core.Taint) []core.Taint {
	out := append([]core.Taint(nil), cur...)
	for _, t := range add {
		found := false
		for _, c := range cur {
			found = found || (c.Key == t.Key && c.Effect == t.Effect)
		}
		if !found {
			out = append(out, t)
		}
	}
	return out
}

// UpdateStatus writes status onto the node, keeping condition transition
// times; notReady, when not empty, makes Ready False with that message.
func UpdateStatus(ctx context.Context, c *client.Client, n *core.Node, status core.NodeStatus, notReady string, pressure map[core.NodeConditionType]bool) (*core.Node, error) {
	nodes := client.For[*core.Node](c)
	for {
		status.Conditions = Conditions(n.Status.Conditions, time.Now(), notReady, pressure)
		status.Capacity, status.Allocatable = keepExtended(n.Status.Capacity, status.Capacity, status.Allocatable)
		cp := *n
		cp.Status = status
		out, err := nodes.UpdateStatus(ctx, &cp)
		if !client.IsConflict(err) {
			return out, err
		}
		if n, err = nodes.Get(ctx, "", n.Name); err != nil {
			return nil, err
		}
	}
}

// keepExtended adds to the agent's capacity and allocatable the extended
// resources someone else advertised in the node's stored capacity (kubectl
// patch node --subresource=status, as Kubernetes' "advertise extended
// resources for a node"): the kubelet keeps them, and allocatable follows.
func keepExtended(stored, capacity, allocatable resource.List) (resource.List, resource.List) {
	for name, q := range stored {
		if _, own := capacity[name]; own || !core.IsExtendedResourceName(name) {
			continue
		}
		if capacity = capacity.DeepCopy(); capacity == nil {
			capacity = resource.List{}
		}
		if allocatable = allocatable.DeepCopy(); allocatable == nil {
			allocatable = resource.List{}
		}
		capacity[name], allocatable[name] = q.Copy(), q.Copy()
	}
	return capacity, allocatable
}

// RenewLease creates or renews the node's heartbeat Lease.
func RenewLease(ctx context.Context, c *client.Client, name string, duration time.Duration) error {
	leases := client.For[*coordination.Lease](c)
	now := meta.NowMicro()
	secs := int32(duration / time.Second)
	l, err := leases.Get(ctx, LeaseNamespace, name)
	if client.IsNotFound(err) {
		l = &coordination.Lease{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: LeaseNamespace}}
		l.Spec = coordination.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &secs, RenewTime: &now, AcquireTime: &now}
		_, err = leases.Create(ctx, l)
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &name, &secs, &now
	_, err = leases.Update(ctx, l)
	return err
}

// listItems splits a comma-separated flag value, dropping empty items.
func listItems(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// ParseTaints reads "key=value:Effect,key2:Effect" (the kubelet's --register-with-taints).
func ParseTaints(s string) ([]core.Taint, error) {
	var out []core.Taint
	for _, part := range listItems(s) {
		kv, effect, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("taint %q: want key[=value]:Effect", part)
		}
		switch core.TaintEffect(effect) {
		case core.TaintNoSchedule, core.TaintPreferNoSchedule, core.TaintNoExecute:
		default:
			return nil, fmt.Errorf("taint %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", part)
		}
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, core.Taint{Key: k, Value: v, Effect: core.TaintEffect(effect)})
	}
	return out, nil
}

// ParseResources reads "cpu=4,memory=8Gi,pods=110".
func ParseResources(s string) (resource.List, error) {
	out := resource.List{}
	for _, part := range listItems(s) {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want name=quantity, such as cpu=4", part)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[resource.Name(k)] = q
	}
	return out, nil
}

// ParseLabels reads "k=v,k2=v2".
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range listItems(s) {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("label %q: want key=value", part)
		}
		out[k] = v
	}
	return out, nil
}

// AwaitPodCIDR registers the node without a pod CIDR and waits up to wait
// for the controller's node IPAM to give it one (the kubelet waits for
// spec.podCIDR the same way). It returns "" when none came in time, or the
// API server could not be reached.
func AwaitPodCIDR(ctx context.Context, c *client.Client, cfg Config, wait time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for ctx.Err() == nil {
		n, err := Register(ctx, c, cfg)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		got, err := client.WaitFor(ctx, client.For[*core.Node](c), "", cfg.Name, 0, func(n *core.Node, _ bool) bool { return n.Spec.PodCIDR != "" })
		if err == nil {
			return got.Spec.PodCIDR
		}
		if n.Spec.PodCIDR != "" {
			return n.Spec.PodCIDR
		}
	}
	return ""
}
