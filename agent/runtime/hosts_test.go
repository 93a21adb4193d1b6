package runtime

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// /etc/hosts as the kubelet writes it: the pod's own name (fully
// qualified with a subdomain), hostAliases last; hostNetwork pods start
// from the node's file.
func TestHostsFile(t *testing.T) {
	aliases := []core.HostAlias{{IP: "10.0.0.7", Hostnames: []string{"db.local", "cache.local"}}}
	for _, tt := range []struct {
		name      string
		spec      core.PodSpec
		want, not []string
	}{
		{"plain pod", core.PodSpec{}, []string{"127.0.0.1\tlocalhost\n", "10.244.1.5\tweb-0\n"}, []string{"HostAliases"}},
		{"StatefulSet pod", core.PodSpec{Hostname: "web-0", Subdomain: "nginx"}, []string{"10.244.1.5\tweb-0.nginx.team.svc.cluster.local\tweb-0\n"}, nil},
		{"hostAliases", core.PodSpec{HostAliases: aliases}, []string{"10.244.1.5\tweb-0\n", "# Entries added by HostAliases.\n10.0.0.7\tdb.local\tcache.local\n"}, nil},
		{"hostNetwork", core.PodSpec{HostNetwork: true, HostAliases: aliases}, []string{"192.0.2.1\tnode-1\n", "10.0.0.7\tdb.local\tcache.local\n"}, []string{"10.244.1.5", "Kubernetes-managed"}},
	} {
		pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "team", Name: "web-0"}, Spec: tt.spec}
		got := HostsFile(pod, "10.244.1.5", "cluster.local", []byte("127.0.0.1 localhost\n192.0.2.1\tnode-1"))
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: no %q in\n%s", tt.name, w, got)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: %q in\n%s", tt.name, n, got)
			}
		}
	}
}

// A pod's name may be 253 characters long, a hostname only 63: the
// hostname is the name cut, without the '-' or '.' the cut leaves last.
func TestPodHostnameIsCutTo63Characters(t *testing.T) {
	long := strings.Repeat("a", 62) + "-" + strings.Repeat("b", 40)
	for _, tt := range []struct{ name, hostname, want string }{
		{"web-0", "", "web-0"},
		{"web-0", "db", "db"},
		{long, "", strings.Repeat("a", 62)},
		{strings.Repeat("c", 100), "", strings.Repeat("c", 63)},
	} {
		pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: tt.name}, Spec: core.PodSpec{Hostname: tt.hostname}}
		if got := PodHostname(pod); got != tt.want {
			t.Errorf("PodHostname(%q, hostname %q) = %q, want %q", tt.name, tt.hostname, got, tt.want)
		}
	}
}
