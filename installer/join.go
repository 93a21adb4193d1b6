package installer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
)

// BootstrapConf is the joining agent's kubeconfig with the token (kubeadm's
// /etc/kubernetes/bootstrap-kubelet.conf): the agent asks for its
// certificates with it, and join deletes it once the node is Ready.
const BootstrapConf = EtcDir + "/bootstrap-agent.conf"

// Join is what join knows beyond Config: where the cluster is and how to
// trust it.
type Join struct {
	// Endpoint is the API server's host:port given on the command line.
	Endpoint string
	Token    string
	// CAHashes pin the cluster CA ("sha256:<hex>" of its public key); one
	// must match.
	CAHashes []string
	// UnsafeSkipCAVerification trusts whatever CA cluster-info names
	// (the token's signature still has to match).
	UnsafeSkipCAVerification bool

	// Found by discovery.
	server string
	ca     []byte
	token  client.BootstrapToken
}

// JoinPhases are kobeadm join's phases, in order.
func JoinPhases(j *Join) []Phase {
	return []Phase{
		{"preflight", "check that this machine can become a node", func(_ context.Context, c *Config) error {
			return Preflight(c.Out, HostOf(), Worker, c.IgnorePreflight)
		}},
		{"discovery", "find the cluster with the token and trust its CA only if its public key has the hash given", j.discover},
		{"check-node-name", "refuse a name that a live node has", j.checkNodeName},
		{"install", "put the binaries on PATH (" + BinDir + ") and the images in " + ImagesDir, install},
		{"agent-start", "write the token's kubeconfig and the agent's unit, and start it: the agent asks for its certificates (TLS bootstrap)", j.startAgent},
		{"wait-node", "wait until this machine's node is Ready, then delete the token's kubeconfig", j.waitNode},
		{"csi-start", "ask for the CSI driver's identity as the node (a CertificateSigningRequest) and start kobune-csi-local", csiStart},
	}
}

// Errors of discovery a test (and a user) can tell apart.
var (
	ErrCAHashMismatch = errors.New("the cluster's CA does not have the public-key hash given")
	ErrTokenNotValid  = errors.New("the token is not valid for this cluster")
)

// fetchClusterInfo GETs kube-public's cluster-info anonymously: with tls
// nil without checking the server's certificate (nothing is trusted yet;
// what is read is checked by its signature and the CA hash), else with it.
func fetchClusterInfo(ctx context.Context, endpoint string, tlsConfig *tls.Config) (*core.ConfigMap, error) {
	if tlsConfig == nil {
		tlsConfig = &tls.Config{InsecureSkipVerify: true} // #nosec: checked below, as kubeadm's token discovery
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, "GET", "https://"+endpoint+"/api/v1/namespaces/"+client.ClusterInfoNamespace+"/configmaps/"+client.ClusterInfoName, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the API server at %s: %v (is the address right, and port 6443 open from this machine?)", endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET cluster-info from %s: %s: %s (was the control plane made with kobeadm init? it publishes cluster-info and lets anyone read it)", endpoint, resp.Status, strings.TrimSpace(string(body)))
	}
	var cm core.ConfigMap
	if err := json.Unmarshal(body, &cm); err != nil {
		return nil, fmt.Errorf("cluster-info from %s: %w", endpoint, err)
	}
	return &cm, nil
}

// DiscoverCluster is token discovery, as kubeadm's: read cluster-info
// without trusting the server, check its signature with the token (only
// the cluster, which knows the token, can have signed it), check the CA it
// names against the pinned hashes, then read it again over TLS verified
// with that CA (the server holds the CA's certificate's key). It returns
// the API server's URL and the CA.
func DiscoverCluster(ctx context.Context, endpoint, token string, hashes []string, skipCA bool, wait time.Duration) (string, []byte, error) {
	b, ok := client.ParseBootstrapToken(token)
	if !ok {
		return "", nil, errors.New("--token: want <6 characters>.<16 characters> of a-z and 0-9 (kobeadm token create prints one)")
	}
	if len(hashes) == 0 && !skipCA {
		return "", nil, errors.New("--discovery-token-ca-cert-hash is required: it is how this machine knows it talks to your cluster (kobeadm token create --print-join-command on the control plane prints it), or give --discovery-token-unsafe-skip-ca-verification")
	}
	for _, h := range hashes {
		if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
			return "", nil, fmt.Errorf("--discovery-token-ca-cert-hash %q: want sha256: and 64 hex digits", h)
		}
	}
	deadline := time.Now().Add(wait)
	var cm *core.ConfigMap
	for {
		var err error
		cm, err = fetchClusterInfo(ctx, endpoint, nil)
		if err != nil {
			if time.Now().After(deadline) {
				return "", nil, err
			}
		} else if _, signed := cm.Data[client.ClusterInfoJWSPrefix+b.ID]; signed || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return "", nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	content := cm.Data[client.ClusterInfoKubeconfig]
	sig, ok := cm.Data[client.ClusterInfoJWSPrefix+b.ID]
	if !ok {
		return "", nil, fmt.Errorf("%w: cluster-info at %s is not signed with token %s — it does not exist, has expired (tokens live 24 h unless made with --ttl), or may not sign. On the control plane: kobeadm token list; kobeadm token create --print-join-command prints a new join command", ErrTokenNotValid, endpoint, b.ID)
	}
	if err := client.VerifyClusterInfo(content, sig, b); err != nil {
		return "", nil, fmt.Errorf("%w: cluster-info's signature for token %s does not match the token's secret (%v): check the token; if it is right, the server at %s is not your cluster", ErrTokenNotValid, b.ID, err, endpoint)
	}
	var kc client.Kubeconfig
	if err := yaml.Unmarshal([]byte(content), &kc); err != nil || len(kc.Clusters) != 1 {
		return "", nil, fmt.Errorf("cluster-info's kubeconfig: want one cluster (%v)", err)
	}
	server := kc.Clusters[0].Cluster.Server
	caPEM, err := base64.StdEncoding.DecodeString(kc.Clusters[0].Cluster.CertificateAuthorityData)
	if err != nil {
		return "", nil, fmt.Errorf("cluster-info's CA: %w", err)
	}
	ca, err := parseCA(caPEM)
	if err != nil {
		return "", nil, fmt.Errorf("cluster-info's CA: %w", err)
	}
	if !skipCA {
		got, ok := client.CAHash(ca), false
		for _, h := range hashes {
			ok = ok || strings.EqualFold(h, got)
		}
		if !ok {
			return "", nil, fmt.Errorf("%w: the CA of the cluster at %s has the public-key hash %s, not %s: check --discovery-token-ca-cert-hash (kobeadm token create --print-join-command on the control plane prints the right one); if it is right, the server at %s is not your cluster", ErrCAHashMismatch, endpoint, got, strings.Join(hashes, " or "), endpoint)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		return "", nil, fmt.Errorf("%s: want host:port (the API server's, 6443)", endpoint)
	}
	again, err := fetchClusterInfo(ctx, endpoint, &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12})
	if err != nil {
		return "", nil, fmt.Errorf("the API server at %s does not prove it holds the CA's certificate: %w", endpoint, err)
	}
	if again.Data[client.ClusterInfoKubeconfig] != content {
		return "", nil, errors.New("cluster-info changed between the two reads: try again")
	}
	return server, caPEM, nil
}

func (j *Join) discover(ctx context.Context, c *Config) error {
	server, caPEM, err := DiscoverCluster(ctx, j.Endpoint, j.Token, j.CAHashes, j.UnsafeSkipCAVerification, 15*time.Second)
	if err != nil {
		return err
	}
	j.server, j.ca = server, caPEM
	j.token, _ = client.ParseBootstrapToken(j.Token)
	ca, _ := parseCA(caPEM)
	fmt.Fprintf(c.Out, "\tcluster-info at %s signed with token %s; its CA (%s) has the hash given; the API server is %s\n", j.Endpoint, j.token.ID, client.CAHash(ca), server)
	return nil
}

func (j *Join) tokenClient() (*client.Client, error) {
	return client.NewFromConfig(client.Config{Server: j.server, CA: j.ca, Token: j.Token})
}

// ErrNodeNameTaken is a join refused because a live node has the name.
var ErrNodeNameTaken = errors.New("the node name is taken")

// CheckNodeName refuses a name a Ready node has (kubeadm's check): the
// machine would take over that node's identity. A node that exists but is
// not Ready is a machine being reinstalled: allowed, and said.
func CheckNodeName(ctx context.Context, cl *client.Client, name string, out io.Writer) error {
	n, err := client.For[*core.Node](cl).Get(ctx, "", name)
	switch {
	case client.IsNotFound(err):
		return nil
	case client.IsForbidden(err):
		fmt.Fprintf(out, "\t[WARNING] the token may not read nodes (not a token of kobeadm's): node name %s not checked\n", name)
		return nil
	case err != nil:
		return fmt.Errorf("get node %s: %s", name, client.Message(err))
	}
	if core.IsNodeReady(n) {
		return fmt.Errorf("%w: a node named %q already exists and is Ready (its agent is running on another machine): this machine would take over its identity. Give this machine another name (kobeadm join --node-name NAME), or, if this machine replaces that node, stop the old one and delete it first (kobectl delete node %s on the control plane)", ErrNodeNameTaken, name, name)
	}
	fmt.Fprintf(out, "\tnode %s exists but is not Ready: this machine takes its place\n", name)
	return nil
}

func (j *Join) checkNodeName(ctx context.Context, c *Config) error {
	cl, err := j.tokenClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := CheckNodeName(ctx, cl, c.NodeName, c.Out); err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "\tno live node is named %s\n", c.NodeName)
	return nil
}

func (j *Join) startAgent(_ context.Context, c *Config) error {
	if err := os.MkdirAll(PKIDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(PKIDir+"/ca.crt", j.ca, 0o644); err != nil {
		return err
	}
	kc, err := pki.TokenKubeconfig(j.server, j.ca, j.Token, "system:bootstrap:"+j.token.ID)
	if err != nil {
		return err
	}
	if err := os.WriteFile(BootstrapConf, kc, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "\twrote %s (the token) and %s/ca.crt (the cluster CA)\n", BootstrapConf, PKIDir)
	return writeUnits(c, []Unit{AgentUnit(c.NodeName, c.Address, BootstrapConf)})
}

func (j *Join) waitNode(ctx context.Context, c *Config) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last string
	for {
		if cl, err := client.Dial("", AgentConf); err == nil {
			n, err := client.For[*core.Node](cl).Get(ctx, "", c.NodeName)
			cl.Close()
			switch {
			case err != nil:
				last = client.Message(err)
			case core.IsNodeReady(n):
				if err := os.Remove(BootstrapConf); err != nil && !os.IsNotExist(err) {
					return err
				}
				fmt.Fprintf(c.Out, "\tnode %s is Ready; %s deleted (the agent has its own certificate now: %s)\n", c.NodeName, BootstrapConf, AgentConf)
				return nil
			default:
				last = "registered, not Ready yet"
			}
		} else {
			last = "no certificate yet (" + err.Error() + ")"
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready within 2 minutes (last: %s): journalctl -u kobune-agent says why; on the control plane, kobectl get csr shows its certificate requests", c.NodeName, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// csiStart gives the node's kobune-csi-local its identity: a client
// certificate for system:kobune-csi-local:<node> that the node asks for
// with its own (kobune-controller approves a node's request for its own
// driver only), then its unit.
func csiStart(ctx context.Context, c *Config) error {
	if _, err := os.Stat(CSIConf); err != nil {
		cl, err := client.Dial("", AgentConf)
		if err != nil {
			return err
		}
		defer cl.Close()
		cfg, err := client.LoadKubeconfig(AgentConf, "")
		if err != nil {
			return err
		}
		subject := pkix.Name{CommonName: certificates.CSIUserPrefix + c.NodeName, Organization: []string{certificates.CSIProvisioners}}
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cert, key, err := cl.RequestCertificate(rctx, "csi-"+c.NodeName, certificates.APIServerClientSigner, subject, nil, []string{"digital signature", "client auth"})
		if err != nil {
			return err
		}
		kc, err := pki.Kubeconfig(cfg.Server, cfg.CA, cert, key, subject.CommonName)
		if err != nil {
			return err
		}
		if err := os.WriteFile(CSIConf, kc, 0o600); err != nil {
			return err
		}
		fmt.Fprintf(c.Out, "\t%s: %s, signed\n", CSIConf, subject.CommonName)
	}
	return writeUnits(c, []Unit{CSIUnit(c.NodeName)})
}
