// Command kobune-apiserver serves the Kobune resource API over gRPC, backed by
// embedded etcd (default) or an external etcd cluster (kube-apiserver).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/kobune/kobune/apiserver"
)

func main() {
	var cfg apiserver.Config
	flag.StringVar(&cfg.Listen, "listen", "127.0.0.1:6443", "gRPC address(es) to serve the API on, comma-separated")
	flag.StringVar(&cfg.MetricsListen, "metrics-listen", "127.0.0.1:6444", "HTTP address for /healthz, /readyz and /metrics (empty: off)")
	flag.StringVar(&cfg.DataDir, "data-dir", "/var/lib/kobune/etcd", "data directory of the embedded etcd")
	flag.StringVar(&cfg.EtcdServers, "etcd-servers", "", "URLs of an external etcd cluster, comma-separated (instead of the embedded one)")
	flag.StringVar(&cfg.EtcdCAFile, "etcd-cafile", "", "the CA of the external etcd's serving certificate (https:// --etcd-servers)")
	flag.StringVar(&cfg.EtcdCertFile, "etcd-certfile", "", "the API server's client certificate for the external etcd (mutual TLS)")
	flag.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", "", "the key of --etcd-certfile")
	flag.Int64Var(&cfg.DefaultTolerationSeconds, "default-toleration-seconds", 300, "how long new pods tolerate a not-ready or unreachable node (the tolerationSeconds added to every pod) before they are evicted")
	flag.DurationVar(&cfg.CompactionInterval, "compaction-interval", 5*time.Minute, "how often etcd history older than one interval is compacted")
	flag.Int64Var(&cfg.EtcdQuotaBytes, "etcd-quota-backend-bytes", apiserver.DefaultEtcdQuotaBytes, "etcd's database quota: the embedded etcd's setting, or what the external one has; at this size etcd refuses writes until objects are deleted (the API server then recovers by itself)")
	flag.StringVar(&cfg.EtcdLogLevel, "etcd-log-level", "fatal", "log level of the embedded etcd (debug, info, warn, error, fatal)")
	flag.StringVar(&cfg.ServiceClusterIPRange, "service-cluster-ip-range", "10.96.0.0/16", "the range Services' cluster IPs are allocated from; the first address is the kubernetes Service's")
	flag.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", "30000-32767", "the range NodePort Services' node ports are allocated from")
	flag.StringVar(&cfg.EncryptionProviderConfig, "encryption-provider-config", "", "an EncryptionConfiguration file (aesgcm, aescbc, secretbox, identity providers per resource): those resources are encrypted in etcd (docs/security.md)")
	flag.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "the API server's serving certificate (PEM): the API is then TLS 1.3 only")
	flag.StringVar(&cfg.TLSPrivateKeyFile, "tls-private-key-file", "", "the serving certificate's key")
	flag.StringVar(&cfg.ClientCAFile, "client-ca-file", "", "the CA whose client certificates authenticate users (CN the user, O the groups); callers without one are refused")
	flag.BoolVar(&cfg.InsecurePlaintext, "insecure-plaintext", false, "INSECURE: serve the API without TLS and without authentication (everyone anonymous and allowed); only for trying Kobune on a machine nobody else uses")
	flag.IntVar(&cfg.MaxRequestsInflight, "max-requests-inflight", 400, "with Priority and Fairness, this plus --max-mutating-requests-inflight is the seats its priority levels share; without, the reads that may run at once, more refused with 429 and Retry-After (-1: no limit)")
	flag.IntVar(&cfg.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", 200, "with Priority and Fairness, part of its seats (see --max-requests-inflight); without, the writes that may run at once (-1: no limit)")
	flag.DurationVar(&cfg.RequestTimeout, "request-timeout", time.Minute, "how long a request that is not long-running (not watch, logs, exec, attach, port-forward) may take before it is ended with 504; a quarter of it is the longest a request waits in a Priority and Fairness queue")
	enableAPF := flag.Bool("enable-priority-and-fairness", true, "API Priority and Fairness: requests queue fairly per priority level and flow, as the FlowSchemas and PriorityLevelConfigurations say (false: the two in-flight limits are plain limits)")
	flag.IntVar(&cfg.MaxWatchesPerUser, "max-watches-per-user", 2000, "watches one user may hold open; more are refused with 429 (-1: no limit; system:masters is exempt)")
	flag.BoolVar(&cfg.AnonymousAuth, "anonymous-auth", false, "with --client-ca-file, let callers without a certificate in as system:anonymous")
	flag.StringVar(&cfg.KubeletClientCertFile, "kubelet-client-certificate", "", "the API server's client certificate towards the agents' node API (kobectl pki init: apiserver-kubelet-client.crt)")
	flag.StringVar(&cfg.KubeletClientKeyFile, "kubelet-client-key", "", "the key of --kubelet-client-certificate")
	flag.StringVar(&cfg.KubeletCertificateAuthority, "kubelet-certificate-authority", "", "the CA the agents' serving certificates must be signed by, for the node's name (the cluster CA)")
	flag.StringVar(&cfg.ServiceAccountSigningKeyFile, "service-account-signing-key-file", "", "the private key ServiceAccount tokens are signed with (kobectl pki init: sa.key)")
	var saKeys, audiences string
	flag.StringVar(&saKeys, "service-account-key-file", "", "public key file(s), comma-separated, ServiceAccount tokens are verified with (kobectl pki init: sa.pub; give the old and the new while replacing a key)")
	flag.StringVar(&cfg.ServiceAccountIssuer, "service-account-issuer", apiserver.DefaultServiceAccountIssuer, "the iss of ServiceAccount tokens")
	flag.StringVar(&audiences, "api-audiences", "", "audiences this server accepts in tokens, comma-separated (default: the issuer)")
	flag.StringVar(&cfg.AuthorizationMode, "authorization-mode", "", "authorizers in order, comma-separated: Node, RBAC, AlwaysAllow (default Node,RBAC with --client-ca-file, AlwaysAllow without); system:masters is always allowed")
	flag.StringVar(&cfg.AuditPolicyFile, "audit-policy-file", "", "an audit.k8s.io/v1 Policy: which requests the audit log records, at which level (docs/security.md)")
	flag.StringVar(&cfg.AuditLogPath, "audit-log-path", "", "where audit events go, one JSON line each (- for standard output)")
	flag.Int64Var(&cfg.AuditLogMaxBytes, "audit-log-maxsize-bytes", 100<<20, "the audit log is rotated (to PATH.1) past this size")
	flag.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "the address the kubernetes Service's endpoint names (default: the last --listen address that is not loopback)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: kobune-apiserver [flags]\n\nServes the Kobune API (the kube-apiserver of Kobune). Flags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	cfg.DisablePriorityAndFairness = !*enableAPF
	for _, list := range []struct {
		s   string
		out *[]string
	}{{saKeys, &cfg.ServiceAccountKeyFiles}, {audiences, &cfg.APIAudiences}} {
		for _, f := range strings.Split(list.s, ",") {
			if f = strings.TrimSpace(f); f != "" {
				*list.out = append(*list.out, f)
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := apiserver.New(ctx, cfg)
	if err != nil {
		log.Fatalf("kobune-apiserver: %v", err)
	}
	// Under systemd with Type=notify (kobeadm's unit): ready once etcd is
	// up, the bootstrap policy written and the port listening — the
	// scheduler's and controller's units start after it. Nothing happens
	// without $NOTIFY_SOCKET.
	if _, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		log.Printf("kobune-apiserver: telling systemd it is ready: %v", err)
	}
	err = srv.Serve(ctx)
	srv.Close()
	if err != nil {
		log.Fatalf("kobune-apiserver: %v", err)
	}
}
