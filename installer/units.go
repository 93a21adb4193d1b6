package installer

import (
	"fmt"
	"strings"
)

// Paths of an install, kubeadm's /etc/kubernetes and /var/lib/kubelet at
// Kobune's names.
const (
	EtcDir     = "/etc/kobune"
	PKIDir     = "/etc/kobune/pki"
	VarDir     = "/var/lib/kobune"
	BinDir     = "/usr/local/bin"
	UnitDir    = "/etc/systemd/system"
	AdminConf  = "/etc/kobune/admin.conf"
	AgentConf  = "/etc/kobune/agent.conf"
	CSIConf    = "/etc/kobune/csi.conf"
	ImagesDir  = "/var/lib/kobune/images"
	AddonsDir  = "/etc/kobune/addons"
	Encryption = "/etc/kobune/encryption.yaml"
)

// flag is one command-line flag of a unit, with why it is there: the unit
// file shows each on its own line under its comment, for a student to read.
type flag struct{ name, value, why string }

// Unit is a systemd unit file Kobune installs.
type Unit struct {
	Name, Description string
	After             []string
	Exec              string
	Flags             []flag
	// Extra [Service] lines, each with its comment.
	Service [][2]string
}

// Text is the unit file.
func (u Unit) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s.service — written by kobeadm (docs/install.md explains each line).\n", u.Name)
	fmt.Fprintf(&b, "[Unit]\nDescription=%s\n", u.Description)
	if len(u.After) > 0 {
		fmt.Fprintf(&b, "After=%s\nWants=%s\n", strings.Join(u.After, " "), strings.Join(u.After, " "))
	}
	b.WriteString("\n[Service]\n")
	for _, s := range u.Service {
		fmt.Fprintf(&b, "# %s\n%s\n", s[1], s[0])
	}
	b.WriteString("# Restarted whenever it exits, also after a crash: a component is never left down.\nRestart=always\nRestartSec=2s\n")
	b.WriteString("# Many watches and connections: raise the open-files limit.\nLimitNOFILE=1048576\n")
	fmt.Fprintf(&b, "ExecStart=%s", u.Exec)
	for _, f := range u.Flags {
		fmt.Fprintf(&b, " \\\n  # %s\n  --%s", f.why, f.name)
		if f.value != "" {
			fmt.Fprintf(&b, "=%s", f.value)
		}
	}
	b.WriteString("\n\n[Install]\nWantedBy=multi-user.target\n")
	return b.String()
}

// ControlPlaneUnits are the API server's, the scheduler's and the
// controller's units; ip is the address the API server is reached on.
// Kubernetes' default timings (node-monitor grace period 40 s, the 300 s
// not-ready/unreachable tolerations) unless fast: the lab's.
func ControlPlaneUnits(ip string, fast bool) []Unit {
	pki := func(f string) string { return PKIDir + "/" + f }
	api := Unit{Name: "kobune-apiserver", Description: "Kobune API server with its embedded etcd (kube-apiserver + etcd)",
		After: []string{"network-online.target"}, Exec: BinDir + "/kobune-apiserver",
		Service: [][2]string{
			{"Type=notify", "it tells systemd when it serves (etcd up, the port listening): units ordered after it start then, and systemctl start returns then"},
			{"TimeoutStartSec=300", "a large etcd may take minutes to open after a crash"},
		},
		Flags: []flag{
			{"data-dir", VarDir + "/etcd", "the embedded etcd's data: the whole cluster's state (kobeadm snapshot save backs it up)"},
			{"listen", "127.0.0.1:6443," + ip + ":6443", "where clients reach the API (gRPC and Kubernetes' REST on one port)"},
			{"metrics-listen", "127.0.0.1:6444", "/healthz, /readyz and /metrics, on loopback only"},
			{"tls-cert-file", pki("apiserver.crt"), "the API server's serving certificate (signed by the cluster CA)"},
			{"tls-private-key-file", pki("apiserver.key"), "its key"},
			{"client-ca-file", pki("ca.crt"), "client certificates signed by this CA authenticate their user and groups"},
			{"anonymous-auth", "", "callers without credentials come in as system:anonymous, who may read only health, the version and kube-public's cluster-info (joining machines discover the cluster there), as in kubeadm's clusters"},
			{"kubelet-client-certificate", pki("apiserver-kubelet-client.crt"), "the API server's identity towards the agents' node API (logs, exec)"},
			{"kubelet-client-key", pki("apiserver-kubelet-client.key"), "its key"},
			{"kubelet-certificate-authority", pki("ca.crt"), "the agents' serving certificates are checked against the cluster CA"},
			{"service-account-signing-key-file", pki("sa.key"), "signs ServiceAccount tokens"},
			{"service-account-key-file", pki("sa.pub"), "verifies them"},
			{"encryption-provider-config", Encryption, "Secrets are encrypted in etcd with this key (aesgcm)"},
		}}
	if fast {
		api.Flags = append(api.Flags, flag{"default-toleration-seconds", "5", "lab timing (kobeadm init --fast-timings): pods leave a failed node after 5 s (Kubernetes: 300 s)"})
	}
	sched := Unit{Name: "kobune-scheduler", Description: "Kobune scheduler (kube-scheduler)", After: []string{"kobune-apiserver.service"},
		Exec:  BinDir + "/kobune-scheduler",
		Flags: []flag{{"kubeconfig", EtcDir + "/scheduler.conf", "its identity, system:kube-scheduler, and the API server's address"}}}
	ctrl := Unit{Name: "kobune-controller", Description: "Kobune controllers (kube-controller-manager)", After: []string{"kobune-apiserver.service"},
		Exec: BinDir + "/kobune-controller",
		Flags: []flag{
			{"kubeconfig", EtcDir + "/controller.conf", "its identity, system:kube-controller-manager"},
			{"root-ca-file", pki("ca.crt"), "put into every namespace's kube-root-ca.crt ConfigMap, for pods to trust the API server"},
			{"cluster-signing-cert-file", pki("ca.crt"), "signs the certificates nodes ask for (CertificateSigningRequests of the TLS bootstrap)"},
			{"cluster-signing-key-file", pki("ca.key"), "with the CA's key, which stays on control-plane machines"},
		}}
	if fast {
		ctrl.Flags = append(ctrl.Flags, flag{"node-monitor-grace-period", "8s", "lab timing: a silent node is NotReady after 8 s (Kubernetes: 40 s)"})
	}
	return []Unit{api, sched, ctrl}
}

// AgentUnit is the agent's unit on a machine named node at ip; kubeconfig
// is its identity (or, for a joining machine, where the TLS bootstrap
// writes it, with bootstrap the token's kubeconfig).
func AgentUnit(node, ip, bootstrap string) Unit {
	u := Unit{Name: "kobune-agent", Description: "Kobune node agent (kubelet + kube-proxy)",
		After: []string{"containerd.service", "network-online.target"}, Exec: BinDir + "/kobune-agent",
		Service: [][2]string{
			{"Type=notify", "it tells systemd when it has started (the container runtime answered, the node API listens), before it reaches the API server, as the kubelet does: a machine whose control plane is away still comes up; kobune-csi-local starts after it"},
			{"TimeoutStartSec=360", "a joining machine's first start waits for its certificate (TLS bootstrap, up to 5 minutes)"},
			{"Delegate=yes", "the agent makes the pods' cgroups below its own: systemd hands that subtree over"},
			{"KillMode=process", "stopping the agent stops the agent only: its pods run on (containerd's shims hold them), as with the kubelet"},
		},
		Flags: []flag{
			{"kubeconfig", AgentConf, "its identity, system:node:" + node + " (group system:nodes)"},
			{"node-name", node, "the Node object it registers and heartbeats"},
			{"node-ip", ip, "the address other machines reach this node and its pods on"},
			{"tls-cert-file", PKIDir + "/agent-serving.crt", "the node API's serving certificate (logs, exec, port-forward)"},
			{"tls-private-key-file", PKIDir + "/agent-serving.key", "its key"},
			{"client-ca-file", PKIDir + "/ca.crt", "only the API server (a client certificate of the cluster CA) may call the node API"},
			{"runtime", "containerd", "real containers (the fake runtime only simulates nodes)"},
			{"containerd", "/run/containerd/containerd.sock", "the machine's containerd"},
			{"containerd-namespace", "kobune", "Kobune's containers, apart from anything else on containerd"},
			{"state-dir", VarDir + "/agent", "pods' volumes, logs, CNI allocations: kept across reboots"},
			{"load-images", ImagesDir, "the bundle's images (add-ons, examples), loaded into containerd at start: nothing is pulled"},
		}}
	if bootstrap != "" {
		u.Flags = append(u.Flags, flag{"bootstrap-kubeconfig", bootstrap, "the join token: with it the agent asks for its certificates (TLS bootstrap, a CertificateSigningRequest) and writes --kubeconfig"})
	}
	return u
}

// CSIUnit is kobune-csi-local's unit on a machine named node: the local
// volumes' CSI driver (its socket where the agent looks for plugins) and
// the provisioner of this node's volumes, as the lab runs it.
func CSIUnit(node string) Unit {
	return Unit{Name: "kobune-csi-local", Description: "Kobune local-path CSI driver and provisioner (a CSI node plugin + external-provisioner)",
		After: []string{"kobune-agent.service"}, Exec: BinDir + "/kobune-csi-local",
		Flags: []flag{
			{"node-id", node, "the node whose volumes it makes and mounts"},
			{"kubeconfig", CSIConf, "its identity, system:kobune-csi-local:" + node + " (group system:kobune-csi-provisioners: PersistentVolumes and claims)"},
			{"data-dir", VarDir + "/csi-local", "the volumes' data, one directory each: kept across reboots"},
			{"endpoint", VarDir + "/agent/plugins/localpath.csi.kobune.io/csi.sock", "the CSI socket, in the agent's plugin directory (--state-dir/plugins)"},
		}}
}
