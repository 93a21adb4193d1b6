package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"sigs.k8s.io/yaml"
)

// Config is how to reach an API server: its address and, over TLS, the
// CA its certificate must be signed by and the client's own certificate
// (its identity: CN the user, O the groups).
type Config struct {
	// Server is "https://host:port" (TLS) or "host:port" / "http://host:port"
	// (plaintext, for a server started without TLS).
	Server string
	// CA, Cert and Key are PEM.
	CA, Cert, Key []byte
	// Namespace is the kubeconfig context's default namespace.
	Namespace string
	// Kubeconfig is the file the Config came from: a new TLS handshake
	// reads its client certificate again when the file has changed (the
	// certificates were renewed: kobectl pki init run again), so a
	// long-running component picks up new certificates without a restart.
	Kubeconfig        string
	kubeconfigContext string
	kubeconfigCert    []byte // the certificate the file held: only that one is replaced by the file's next
	// Token is a bearer token (a ServiceAccount's) sent with every call;
	// TokenFile is read again for every call, so a token the agent
	// refreshes in a pod's volume is picked up (client-go does the same).
	Token, TokenFile string
	// Impersonate and ImpersonateGroups make every call act as that user
	// (and groups) — `kubectl --as/--as-group`; the server allows it only
	// with the impersonate verb on users, groups or serviceaccounts.
	Impersonate       string
	ImpersonateGroups []string
}

// Impersonation headers, as Kubernetes' (Impersonate-User, Impersonate-Group).
const (
	ImpersonateUserHeader  = "impersonate-user"
	ImpersonateGroupHeader = "impersonate-group"
)

// bearer sends "authorization: Bearer <token>" with every call, over TLS
// only.
type bearer struct{ token, file string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	tok := b.token
	if b.file != "" {
		raw, err := os.ReadFile(b.file)
		if err != nil {
			return nil, fmt.Errorf("token file: %w", err)
		}
		tok = strings.TrimSpace(string(raw))
	}
	return map[string]string{"authorization": "Bearer " + tok}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }

// impersonation adds the impersonation headers to every call.
func impersonation(cfg Config) []grpc.DialOption {
	if cfg.Impersonate == "" && len(cfg.ImpersonateGroups) == 0 {
		return nil
	}
	pairs := []string{}
	if cfg.Impersonate != "" {
		pairs = append(pairs, ImpersonateUserHeader, cfg.Impersonate)
	}
	for _, g := range cfg.ImpersonateGroups {
		pairs = append(pairs, ImpersonateGroupHeader, g)
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(metadata.AppendToOutgoingContext(ctx, pairs...), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(metadata.AppendToOutgoingContext(ctx, pairs...), desc, cc, method, opts...)
		}),
	}
}

// NewFromConfig connects as cfg says (lazily, as New).
func NewFromConfig(cfg Config) (*Client, error) {
	addr, secure := strings.CutPrefix(cfg.Server, "https://")
	if !secure {
		addr = strings.TrimPrefix(addr, "http://")
		if len(cfg.Cert) > 0 || len(cfg.CA) > 0 {
			return nil, fmt.Errorf("server %q: certificates are given but the address is not https://", cfg.Server)
		}
		if cfg.Token != "" || cfg.TokenFile != "" {
			return nil, fmt.Errorf("server %q: a bearer token goes only over https://", cfg.Server)
		}
		c, err := dial(addr, insecure.NewCredentials(), impersonation(cfg)...)
		if c != nil {
			c.cfg = cfg
		}
		return c, err
	}
	tc, err := TLSConfig(cfg, addr)
	if err != nil {
		return nil, err
	}
	opts := impersonation(cfg)
	if cfg.Token != "" || cfg.TokenFile != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: cfg.Token, file: cfg.TokenFile}))
	}
	c, err := dial(addr, credentials.NewTLS(tc), opts...)
	if c != nil {
		c.cfg = cfg
	}
	return c, err
}

// TLSConfig is the client side of TLS 1.3 to addr: the server is verified
// against the CA (and its name or IP), the client presents its
// certificate.
func TLSConfig(cfg Config, addr string) (*tls.Config, error) {
	if len(cfg.CA) == 0 {
		return nil, errors.New("an https:// server needs the certificate authority that signed its certificate (certificate-authority in the kubeconfig)")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cfg.CA) {
		return nil, errors.New("certificate-authority: no PEM certificate in it")
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", addr, err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots, ServerName: host}
	if len(cfg.Cert) > 0 || len(cfg.Key) > 0 {
		pair, err := tls.X509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate and key: %w", err)
		}
		if cfg.Kubeconfig == "" || !bytes.Equal(cfg.Cert, cfg.kubeconfigCert) {
			// Not (or no longer) the kubeconfig's own certificate: the
			// caller set another one, which stays.
			tc.Certificates = []tls.Certificate{pair}
		} else {
			// The first handshake reads the file again (it may have changed
			// since cfg was loaded); pair is the fallback.
			r := &kubeconfigCert{path: cfg.Kubeconfig, context: cfg.kubeconfigContext, pair: &pair}
			tc.GetClientCertificate = r.get
		}
	}
	return tc, nil
}

// kubeconfigCert is a kubeconfig's client certificate, read again when
// the file changes.
type kubeconfigCert struct {
	path, context string
	mu            sync.Mutex
	modTime       time.Time
	pair          *tls.Certificate
}

func (k *kubeconfigCert) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	fi, err := os.Stat(k.path)
	if err != nil || fi.ModTime().Equal(k.modTime) {
		return k.pair, nil
	}
	cfg, err := LoadKubeconfig(k.path, k.context)
	if err != nil {
		return k.pair, nil // being rewritten: keep the one that works
	}
	pair, err := tls.X509KeyPair(cfg.Cert, cfg.Key)
	if err != nil {
		return k.pair, nil
	}
	k.pair, k.modTime = &pair, fi.ModTime()
	return k.pair, nil
}

// Kubeconfig is the kubeconfig file's shape (clientcmd's v1 Config): the
// same file real kubectl reads.
type Kubeconfig struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []NamedCluster `json:"clusters"`
	Users          []NamedUser    `json:"users"`
	Contexts       []NamedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
	Preferences    map[string]any `json:"preferences,omitempty"`
}

// NamedCluster is a cluster entry.
type NamedCluster struct {
	Name    string  `json:"name"`
	Cluster Cluster `json:"cluster"`
}

// Cluster is where a server is and what signed its certificate.
type Cluster struct {
	Server                   string `json:"server"`
	CertificateAuthority     string `json:"certificate-authority,omitempty"`
	CertificateAuthorityData string `json:"certificate-authority-data,omitempty"`
}

// NamedUser is a user entry.
type NamedUser struct {
	Name string `json:"name"`
	User User   `json:"user"`
}

// User is a client identity: a certificate and its key. Tokens are not
// supported yet.
type User struct {
	ClientCertificate     string `json:"client-certificate,omitempty"`
	ClientCertificateData string `json:"client-certificate-data,omitempty"`
	ClientKey             string `json:"client-key,omitempty"`
	ClientKeyData         string `json:"client-key-data,omitempty"`
	Token                 string `json:"token,omitempty"`
	TokenFile             string `json:"tokenFile,omitempty"`
}

// NamedContext is a context entry.
type NamedContext struct {
	Name    string  `json:"name"`
	Context Context `json:"context"`
}

// Context joins a cluster, a user and a default namespace.
type Context struct {
	Cluster   string `json:"cluster"`
	User      string `json:"user"`
	Namespace string `json:"namespace,omitempty"`
}

// LoadKubeconfig reads a kubeconfig and resolves a context ("" for its
// current-context) into a Config; file paths in it are relative to the
// file.
func LoadKubeconfig(path, context string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("kubeconfig: %w", err)
	}
	var k Kubeconfig
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		return Config{}, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg, err := k.Resolve(filepath.Dir(path), context)
	if err == nil {
		cfg.Kubeconfig, cfg.kubeconfigContext, cfg.kubeconfigCert = path, context, cfg.Cert
	}
	return cfg, err
}

// Resolve turns a context of the kubeconfig into a Config.
func (k *Kubeconfig) Resolve(dir, context string) (Config, error) {
	if k.Kind != "Config" {
		return Config{}, fmt.Errorf("kubeconfig: kind %q, want Config", k.Kind)
	}
	if context == "" {
		context = k.CurrentContext
	}
	var ctx *Context
	for i := range k.Contexts {
		if k.Contexts[i].Name == context {
			ctx = &k.Contexts[i].Context
		}
	}
	if ctx == nil {
		return Config{}, fmt.Errorf("kubeconfig: context %q not found (kobectl config get-contexts lists them)", context)
	}
	cfg := Config{Namespace: ctx.Namespace}
	found := false
	for _, c := range k.Clusters {
		if c.Name != ctx.Cluster {
			continue
		}
		found = true
		cfg.Server = c.Cluster.Server
		var err error
		if cfg.CA, err = fileOrData(dir, c.Cluster.CertificateAuthority, c.Cluster.CertificateAuthorityData, "certificate-authority"); err != nil {
			return Config{}, err
		}
	}
	if !found {
		return Config{}, fmt.Errorf("kubeconfig: context %q names cluster %q, which is not in clusters", context, ctx.Cluster)
	}
	if ctx.User != "" {
		found = false
		for _, u := range k.Users {
			if u.Name != ctx.User {
				continue
			}
			found = true
			cfg.Token, cfg.TokenFile = u.User.Token, u.User.TokenFile
			if cfg.TokenFile != "" && !filepath.IsAbs(cfg.TokenFile) {
				cfg.TokenFile = filepath.Join(dir, cfg.TokenFile)
			}
			var err error
			if cfg.Cert, err = fileOrData(dir, u.User.ClientCertificate, u.User.ClientCertificateData, "client-certificate"); err != nil {
				return Config{}, err
			}
			if cfg.Key, err = fileOrData(dir, u.User.ClientKey, u.User.ClientKeyData, "client-key"); err != nil {
				return Config{}, err
			}
		}
		if !found {
			return Config{}, fmt.Errorf("kubeconfig: context %q names user %q, which is not in users", context, ctx.User)
		}
	}
	return cfg, nil
}

func fileOrData(dir, file, data, field string) ([]byte, error) {
	switch {
	case data != "":
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %s-data: not base64: %w", field, err)
		}
		return b, nil
	case file != "":
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %s: %w", field, err)
		}
		return b, nil
	}
	return nil, nil
}

// Dial is how components connect: through a kubeconfig when one is given,
// else to server in plaintext.
func Dial(server, kubeconfig string) (*Client, error) {
	if kubeconfig == "" {
		return New(server)
	}
	cfg, err := LoadKubeconfig(kubeconfig, "")
	if err != nil {
		return nil, err
	}
	return NewFromConfig(cfg)
}

// In-cluster paths: where a pod finds its ServiceAccount token, the
// cluster CA and its namespace (ServiceAccount admission mounts them).
const (
	inClusterDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// InClusterConfig is how a process in a pod reaches the API: the
// kubernetes Service (KUBERNETES_SERVICE_HOST and _PORT, which the agent
// sets in every container), the cluster CA, and the pod's ServiceAccount
// token, read again at every call so the agent's refreshes are picked up
// — client-go's rest.InClusterConfig. ok is false outside a pod.
func InClusterConfig() (cfg Config, ok bool, err error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	tokenFile := filepath.Join(inClusterDir, "token")
	if host == "" || port == "" {
		return Config{}, false, nil
	}
	if _, err := os.Stat(tokenFile); err != nil {
		return Config{}, false, nil
	}
	ca, err := os.ReadFile(filepath.Join(inClusterDir, "ca.crt"))
	if err != nil {
		return Config{}, true, fmt.Errorf("in-cluster: %w", err)
	}
	ns, _ := os.ReadFile(filepath.Join(inClusterDir, "namespace"))
	return Config{Server: "https://" + net.JoinHostPort(host, port), CA: ca, TokenFile: tokenFile, Namespace: strings.TrimSpace(string(ns))}, true, nil
}
