package controllermanager

import (
	"context"
	"flag"
	"log"
	"strings"
	"time"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller/resourcequota"
)

// Command is kobune-controller's command line: cmd/kobune-controller
// parses the flags into it and calls Run.
type Command struct {
	Server        string
	Kubeconfig    string
	MetricsListen string
	Leader        client.LeaderFlags
	Config        Config
}

// Register adds the flags.
func (c *Command) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Server, "server", "127.0.0.1:6443", "address of kobune-apiserver")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "a kubeconfig with the API server's https:// address, its CA and this component's certificate (instead of --server, plaintext)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", "127.0.0.1:10257", "HTTP address for /healthz, /readyz and /metrics (empty: off)")
	c.Leader.Register(fs, "kube-system/kobune-controller")
	fs.DurationVar(&c.Config.NodeLifecycle.GracePeriod, "node-monitor-grace-period", 40*time.Second, "how long the controller may see no change of a node's Lease before the node is marked Unknown and tainted unreachable")
	fs.Float64Var(&c.Config.NodeLifecycle.EvictionRate, "node-eviction-rate", 10, "pods evicted per second at most, per zone, from nodes with NoExecute taints")
	fs.BoolVar(&c.Config.AllocateNodeCIDRs, "allocate-node-cidrs", true, "give nodes without a pod CIDR one from --cluster-cidr (node IPAM)")
	fs.StringVar(&c.Config.RootCAFile, "root-ca-file", "", "the cluster CA, published to every namespace as the kube-root-ca.crt ConfigMap (pods' token volumes take ca.crt from it; kobectl pki init writes ca.crt)")
	fs.StringVar(&c.Config.ClusterSigningCertFile, "cluster-signing-cert-file", "", "the CA certificate approved agent certificate requests are signed with (the cluster CA: ca.crt)")
	fs.StringVar(&c.Config.ClusterSigningKeyFile, "cluster-signing-key-file", "", "the key of --cluster-signing-cert-file (ca.key)")
	fs.StringVar(&c.Config.NodeIPAM.ClusterCIDR, "cluster-cidr", "10.244.0.0/16", "the range pod CIDRs are allocated from")
	fs.DurationVar(&c.Config.HPA.SyncPeriod, "horizontal-pod-autoscaler-sync-period", 15*time.Second, "how often every HorizontalPodAutoscaler is evaluated")
	fs.DurationVar(&c.Config.ResourceQuotaSyncPeriod, "resource-quota-sync-period", resourcequota.DefaultResync, "how often every ResourceQuota's usage is recounted even when no pod, Service or claim of its namespace changed (ConfigMaps, Secrets and count/ of other kinds are given back within this time)")
	fs.IntVar(&c.Config.NodeIPAM.NodeMaskSize, "node-cidr-mask-size", 24, "the size of each node's pod CIDR")
}

// Run connects, serves health and metrics, and runs the controllers while
// it leads, until ctx ends. An error means the process should exit.
func (c *Command) Run(ctx context.Context) error {
	cl, err := client.Connect(ctx, c.Server, c.Kubeconfig, "kobune-controller", log.Printf)
	if err != nil {
		return err
	}
	defer cl.Close()
	m, err := New(cl, c.Config)
	if err != nil {
		return err
	}
	return c.Leader.RunComponent(ctx, cl, client.Component{Name: "kobune-controller", Lease: "kobune-controller",
		MetricsListen: c.MetricsListen, Metrics: m.Metrics.Handler(), Ready: client.Synced(m.Informers.Synced),
		Run: func(ctx context.Context) {
			log.Printf("kobune-controller: running %s", strings.Join(Names, ", "))
			m.Run(ctx)
		}})
}
