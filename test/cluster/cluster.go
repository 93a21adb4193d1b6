// Package cluster starts a whole Kobune control plane in-process for
// integration tests: the real API server on embedded etcd, the scheduler,
// the controllers, and simulated nodes — agents on the fake runtime, whose
// pods run and turn Ready at once without executing anything (the lab and
// test/e2e run real containers).
package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller/controllermanager"
	"github.com/kobune/kobune/controller/cronjob"
	"github.com/kobune/kobune/controller/job"
	"github.com/kobune/kobune/controller/nodelifecycle"
	"github.com/kobune/kobune/scheduler"
)

// Options shape the cluster.
type Options struct {
	Nodes int // simulated nodes node-1 ... node-N (4 cpu, 8Gi, 110 pods)
	// NoControllers leaves kobune-controller out (a test runs its own).
	NoControllers bool
	// DefaultTolerationSeconds for the API server (0: 300);
	// NodeMonitorGracePeriod for the node lifecycle controller (0: 40 s).
	DefaultTolerationSeconds int64
	NodeMonitorGracePeriod   time.Duration
	// JobBackoffBase is the Job controller's wait after a failure (0: 10 s).
	JobBackoffBase time.Duration
	// CronJobClock, when set, is the clock CronJob schedules are read on.
	CronJobClock func() time.Time
	// AllocateNodeCIDRs runs node IPAM on 10.244.0.0/16.
	AllocateNodeCIDRs bool
	// AnonymousAuth lets callers without credentials in (as kobeadm's
	// installed API server does).
	AnonymousAuth bool
}

// Cluster is a running in-process cluster.
type Cluster struct {
	*testserver.Server
	agents map[string]context.CancelFunc
}

// StopAgent stops a node's agent, as if its machine died: its Lease is no
// longer renewed and its pods are left as they are.
func (c *Cluster) StopAgent(node string) { c.agents[node]() }

// Start starts the cluster; everything stops when ctx ends or the test does.
func Start(t testing.TB, ctx context.Context, o Options) *Cluster {
	t.Helper()
	// Secure as the lab: TLS, client certificates, Node,RBAC; each
	// component and node connects with its own identity, so these tests
	// also check the components' least-privilege roles. Client is the
	// admin's.
	var nodes []string
	for i := 1; i <= o.Nodes; i++ {
		nodes = append(nodes, fmt.Sprintf("node-%d", i))
	}
	dir := t.TempDir()
	s, err := testserver.StartSecure(filepath.Join(dir, "etcd"), testserver.StableAddr(), filepath.Join(dir, "pki"), nodes, nil,
		func(c *apiserver.Config) {
			c.DefaultTolerationSeconds, c.AnonymousAuth = o.DefaultTolerationSeconds, o.AnonymousAuth
		})
	if err != nil {
		t.Fatalf("start apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	as := func(identity string) *client.Client {
		c, err := client.Dial("", s.Kubeconfig(identity))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	cl := &Cluster{Server: s, agents: map[string]context.CancelFunc{}}
	quiet := func(string, ...any) {}
	for i := 1; i <= o.Nodes; i++ {
		cidr := fmt.Sprintf("10.244.%d.0/24", i)
		rt, err := runtime.NewFake(cidr)
		if err != nil {
			t.Fatal(err)
		}
		capacity, _ := node.ParseResources("cpu=4,memory=8Gi,pods=110")
		cfg := agent.Config{LeaseInterval: 500 * time.Millisecond, DisableProbes: true, Logf: quiet}
		cfg.Node = node.Config{Name: fmt.Sprintf("node-%d", i), Capacity: capacity, PodCIDR: cidr}
		actx, stop := context.WithCancel(ctx)
		cl.agents[cfg.Node.Name] = stop
		ac := as("agent-" + cfg.Node.Name)
		go func() { _ = agent.New(cfg, ac, rt).Run(actx) }()
	}
	go scheduler.New(scheduler.Config{Logf: quiet}, as("scheduler")).Run(ctx)
	if !o.NoControllers {
		cfg := controllermanager.Config{NodeLifecycle: nodelifecycle.Config{GracePeriod: o.NodeMonitorGracePeriod}, Job: job.Config{BackoffBase: o.JobBackoffBase},
			CronJob: cronjob.Config{Now: o.CronJobClock}, AllocateNodeCIDRs: o.AllocateNodeCIDRs,
			RootCAFile: filepath.Join(s.PKIDir, "ca.crt"), ClusterSigningCertFile: filepath.Join(s.PKIDir, "ca.crt"), ClusterSigningKeyFile: filepath.Join(s.PKIDir, "ca.key")}
		m, err := controllermanager.New(as("controller"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		go m.Run(ctx)
	}
	t.Cleanup(func() { logEventsIfFailed(t, s.Client) })
	return cl
}

// logEventsIfFailed logs the cluster's last events when the test failed,
// before the cluster stops: what the controllers said about the objects
// that did not do what the test waited for.
func logEventsIfFailed(t testing.TB, c *client.Client) {
	if !t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	events, _, err := client.For[*core.Event](c).List(ctx, "", client.ListOptions{})
	if err != nil {
		t.Logf("events: %v", err)
		return
	}
	sort.Slice(events, func(i, j int) bool { return events[i].LastTimestamp.Before(events[j].LastTimestamp.Time) })
	for _, e := range events[max(0, len(events)-60):] {
		o := e.InvolvedObject
		t.Logf("event %s %s %s/%s/%s ×%d: %s", e.LastTimestamp.Format("15:04:05"), e.Reason, o.Kind, o.Namespace, o.Name, e.Count, e.Message)
	}
}
