package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kobune/kobune/api/core"
)

// HostsFile is a pod's /etc/hosts, as the kubelet writes it: localhost,
// the pod's own address under its hostname (and its fully qualified name
// <hostname>.<subdomain>.<namespace>.svc.<domain> when it has a
// subdomain: StatefulSet pods), then the hostAliases. A hostNetwork pod
// gets the node's /etc/hosts (host) with the hostAliases after it.
func HostsFile(pod *core.Pod, podIP, domain string, host []byte) string {
	var b strings.Builder
	if pod.Spec.HostNetwork {
		b.Write(host)
		if len(host) > 0 && host[len(host)-1] != '\n' {
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
		hostname := PodHostname(pod)
		if podIP != "" {
			if pod.Spec.Subdomain != "" && domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.%s\t%s\n", podIP, hostname, pod.Spec.Subdomain, pod.Namespace, domain, hostname)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", podIP, hostname)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.String()
}

// PodHostname is the hostname a pod's containers get: spec.hostname, else
// the pod's name, cut to 63 characters (the kernel's limit) without a
// trailing '-' or '.', as the kubelet does: a pod's name may have up to
// 253 characters.
func PodHostname(pod *core.Pod) string {
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	if len(hostname) > 63 {
		hostname = strings.TrimRight(hostname[:63], "-.")
	}
	return hostname
}

// writePodFile writes one of a pod's generated files (resolv.conf,
// hosts) under dir/<uid>/, atomically, and returns its path.
func writePodFile(dir string, pod *core.Pod, name, content string) (string, error) {
	path := filepath.Join(dir, pod.UID, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}
