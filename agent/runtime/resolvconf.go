package runtime

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/kobune/kobune/api/core"
)

// DNS is what the runtime writes into pods' /etc/resolv.conf (the
// kubelet's --cluster-dns and --cluster-domain).
type DNS struct {
	ClusterDNS string // the kube-dns Service's IP: 10.96.0.10
	Domain     string // cluster.local
	// HostResolvConf is the node's resolv.conf, for dnsPolicy Default.
	HostResolvConf string
}

// ResolvConf is a pod's /etc/resolv.conf, as the kubelet writes it:
//
//	ClusterFirst: nameserver <cluster DNS>; search <ns>.svc.<domain>
//	  svc.<domain> <domain> (then the node's search domains); ndots:5
//	Default: the node's resolv.conf
//	None: only dnsConfig
//
// A hostNetwork pod with ClusterFirst gets Default, unless its policy is
// ClusterFirstWithHostNet. dnsConfig's nameservers and searches are added
// (each once; 3 nameservers at most), its options override by name.
func ResolvConf(pod *core.Pod, d DNS, host []byte) string {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = core.DNSClusterFirst
	}
	if policy == core.DNSClusterFirst && pod.Spec.HostNetwork {
		policy = core.DNSDefault
	}
	hostNS, hostSearch, hostOpts := parseResolvConf(host)
	var ns, search []string
	var opts []string
	switch policy {
	case core.DNSClusterFirst, core.DNSClusterFirstWithHostNet:
		if d.ClusterDNS == "" {
			ns, search, opts = hostNS, hostSearch, hostOpts
			break
		}
		ns = []string{d.ClusterDNS}
		search = append([]string{pod.Namespace + ".svc." + d.Domain, "svc." + d.Domain, d.Domain}, hostSearch...)
		opts = []string{"ndots:5"}
	case core.DNSDefault:
		ns, search, opts = hostNS, hostSearch, hostOpts
	}
	if c := pod.Spec.DNSConfig; c != nil {
		for _, n := range c.Nameservers {
			if !slices.Contains(ns, n) {
				ns = append(ns, n)
			}
		}
		for _, s := range c.Searches {
			if !slices.Contains(search, s) {
				search = append(search, s)
			}
		}
		for _, o := range c.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			opts = slices.DeleteFunc(opts, func(x string) bool { return strings.SplitN(x, ":", 2)[0] == o.Name })
			opts = append(opts, opt)
		}
	}
	if len(ns) > 3 {
		ns = ns[:3]
	}
	var b strings.Builder
	if len(search) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(search, " "))
	}
	for _, n := range ns {
		fmt.Fprintf(&b, "nameserver %s\n", n)
	}
	if len(opts) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(opts, " "))
	}
	return b.String()
}

func parseResolvConf(b []byte) (ns, search, opts []string) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "nameserver":
			ns = append(ns, f[1])
		case "search", "domain":
			search = append(search, f[1:]...)
		case "options":
			opts = append(opts, f[1:]...)
		}
	}
	return ns, search, opts
}

// writeResolvConf writes the pod's resolv.conf under dir and returns its path.
func writeResolvConf(dir string, pod *core.Pod, d DNS) (string, error) {
	host, _ := os.ReadFile(d.HostResolvConf)
	return writePodFile(dir, pod, "resolv.conf", ResolvConf(pod, d, host))
}
