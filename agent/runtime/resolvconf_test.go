package runtime

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// resolv.conf per dnsPolicy, as the kubelet writes it.
func TestResolvConf(t *testing.T) {
	d := DNS{ClusterDNS: "10.96.0.10", Domain: "cluster.local"}
	host := []byte("# the node's\nnameserver 192.0.2.53\nsearch lab.internal\noptions timeout:2\n")
	two := "2"
	for _, tt := range []struct {
		name string
		spec core.PodSpec
		want string
	}{
		{"ClusterFirst", core.PodSpec{},
			"search team.svc.cluster.local svc.cluster.local cluster.local lab.internal\nnameserver 10.96.0.10\noptions ndots:5\n"},
		{"hostNetwork falls back to Default", core.PodSpec{HostNetwork: true},
			"search lab.internal\nnameserver 192.0.2.53\noptions timeout:2\n"},
		{"ClusterFirstWithHostNet", core.PodSpec{HostNetwork: true, DNSPolicy: core.DNSClusterFirstWithHostNet},
			"search team.svc.cluster.local svc.cluster.local cluster.local lab.internal\nnameserver 10.96.0.10\noptions ndots:5\n"},
		{"Default", core.PodSpec{DNSPolicy: core.DNSDefault},
			"search lab.internal\nnameserver 192.0.2.53\noptions timeout:2\n"},
		{"None with dnsConfig", core.PodSpec{DNSPolicy: core.DNSNone, DNSConfig: &core.PodDNSConfig{Nameservers: []string{"10.0.0.53"}, Searches: []string{"corp.internal"},
			Options: []core.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}}}},
			"search corp.internal\nnameserver 10.0.0.53\noptions ndots:2 edns0\n"},
		{"ClusterFirst with dnsConfig", core.PodSpec{DNSConfig: &core.PodDNSConfig{Nameservers: []string{"10.0.0.53"}, Options: []core.PodDNSConfigOption{{Name: "ndots", Value: &two}}}},
			"search team.svc.cluster.local svc.cluster.local cluster.local lab.internal\nnameserver 10.96.0.10\nnameserver 10.0.0.53\noptions ndots:2\n"},
	} {
		pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "team", Name: "p"}, Spec: tt.spec}
		if got := ResolvConf(pod, d, host); got != tt.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tt.name, got, tt.want)
		}
	}
}
