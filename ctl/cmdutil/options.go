// Package cmdutil is what every kobectl command shares: the global flags
// and streams (Options), where to connect and as whom (a kubeconfig,
// --server, KOBUNE_SERVER, ~/.kobune/config, a pod's ServiceAccount), the
// namespace a command works in, the manifests -f reads, and errors in
// kubectl's words. It mirrors kubectl's k8s.io/kubectl/pkg/cmd/util (its
// Factory and helpers); the commands are in ctl and its packages.
package cmdutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
)

// DefaultServer is the address used when no flag, variable or config file names one.
const DefaultServer = "127.0.0.1:6443"

// Options are the global flags and streams of one kobectl run.
type Options struct {
	Server     string
	Kubeconfig string
	Namespace  string
	// As and AsGroups impersonate (--as, --as-group).
	As       string
	AsGroups []string
	In       io.Reader
	Out      io.Writer
	ErrOut   io.Writer
	// Home is where ~/.kobune/config is looked up ("" means $HOME).
	Home string

	client *client.Client
	// cfg is ClientConfig's answer, worked out once per run (it also
	// records the server it found in Server, for error messages, which
	// must not turn a kubeconfig's TLS server into a plaintext --server
	// on a second call).
	cfg    *client.Config
	cfgErr error
	// kinds are the server's, once asked (kinds.go).
	kinds *scheme.Kinds
}

// Config is the content of ~/.kobune/config.
type Config struct {
	Server string `json:"server"`
}

// ServerAddress resolves the server: --server, KOBUNE_SERVER, ~/.kobune/config.
func (o *Options) ServerAddress() (string, error) {
	cfg, err := o.ClientConfig()
	return cfg.Server, err
}

// ClientConfig is where kobectl connects and as whom: --server
// (plaintext), else --kubeconfig, $KUBECONFIG, $KOBUNE_SERVER, then
// ~/.kobune/config — a kubeconfig, or a line `server: 127.0.0.1:6443` —
// then, inside a pod, its ServiceAccount (client.InClusterConfig), then
// DefaultServer.
func (o *Options) ClientConfig() (client.Config, error) {
	if o.cfg == nil {
		cfg, err := o.loadClientConfig()
		o.cfg, o.cfgErr = &cfg, err
	}
	return *o.cfg, o.cfgErr
}

func (o *Options) loadClientConfig() (client.Config, error) {
	if o.Server != "" {
		return client.Config{Server: o.Server}, nil
	}
	for _, path := range []string{o.Kubeconfig, os.Getenv("KUBECONFIG")} {
		if path != "" {
			cfg, err := client.LoadKubeconfig(path, "")
			if err == nil {
				o.Server = cfg.Server
			}
			return cfg, err
		}
	}
	if s := os.Getenv("KOBUNE_SERVER"); s != "" {
		o.Server = s
		return client.Config{Server: s}, nil
	}
	home := o.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	path := filepath.Join(home, ".kobune", "config")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		// In a pod: its ServiceAccount, as kubectl does.
		if cfg, ok, err := client.InClusterConfig(); ok {
			o.Server = cfg.Server
			return cfg, err
		}
		o.Server = DefaultServer
		return client.Config{Server: DefaultServer}, nil
	}
	if err != nil {
		return client.Config{}, fmt.Errorf("read %s: %w", path, err)
	}
	if bytes.Contains(b, []byte("kind: Config")) {
		cfg, err := client.LoadKubeconfig(path, "")
		if err == nil {
			o.Server = cfg.Server
		}
		return cfg, err
	}
	var cfg Config
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return client.Config{}, fmt.Errorf("%s: %w (expected a kubeconfig, or a line such as `server: 127.0.0.1:6443`)", path, err)
	}
	if cfg.Server == "" {
		return client.Config{}, fmt.Errorf("%s: no `server:` set", path)
	}
	o.Server = cfg.Server
	return client.Config{Server: cfg.Server}, nil
}

// Client connects as ClientConfig says, once per run.
func (o *Options) Client() (*client.Client, error) {
	if o.client != nil {
		return o.client, nil
	}
	cfg, err := o.ClientConfig()
	if err != nil {
		return nil, err
	}
	if o.Namespace == "" {
		o.Namespace = cfg.Namespace
	}
	cfg.Impersonate, cfg.ImpersonateGroups = o.As, o.AsGroups
	c, err := client.NewFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	o.client = c
	return c, nil
}

// CtxFor is a command's context with kobectl's 60 s bound on one call.
func CtxFor(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), 60*time.Second)
}

type grpcStatusError interface {
	error
	GRPCStatus() *status.Status
}

// FormatError prints errors the way kubectl does: "Error from server
// (Reason): message", keeping any context kobectl added in front.
func FormatError(err error, server string) string {
	var se grpcStatusError
	if !errors.As(err, &se) {
		return "error: " + err.Error()
	}
	s := se.GRPCStatus()
	prefix := strings.TrimSuffix(err.Error(), se.Error())
	reason := map[codes.Code]string{
		codes.InvalidArgument: "Invalid", codes.NotFound: "NotFound", codes.AlreadyExists: "AlreadyExists",
		codes.Aborted: "Conflict", codes.ResourceExhausted: "RequestEntityTooLarge", codes.FailedPrecondition: "BadRequest",
		codes.OutOfRange: "Expired", codes.Internal: "InternalError", codes.DeadlineExceeded: "Timeout",
		codes.PermissionDenied: "Forbidden", codes.Unauthenticated: "Unauthorized",
	}[s.Code()]
	if s.Code() == codes.Unavailable {
		return fmt.Sprintf("error: %sthe connection to the server %s was refused or lost: %s (is kobune-apiserver running? set --server, KOBUNE_SERVER or ~/.kobune/config)", prefix, server, s.Message())
	}
	if reason == "" {
		reason = s.Code().String()
	}
	return fmt.Sprintf("Error from server (%s): %s%s", reason, prefix, s.Message())
}

// NamespaceOrDefault is -n, else "default".
func (o *Options) NamespaceOrDefault() string {
	if o.Namespace != "" {
		return o.Namespace
	}
	return "default"
}

// NamespaceFor is the namespace a command on kind k works in: none for
// a cluster-scoped kind or --all-namespaces, else -n, the kubeconfig
// context's, "default".
func (o *Options) NamespaceFor(k *scheme.Kind, all bool) string {
	switch {
	case !k.Namespaced || all:
		return ""
	case o.Namespace != "":
		return o.Namespace
	}
	if cfg, err := o.ClientConfig(); err == nil && cfg.Namespace != "" {
		return cfg.Namespace // the kubeconfig context's
	}
	return "default"
}

// NoResources says, as kubectl does, that a list came back empty.
func (o *Options) NoResources(ns string) {
	if ns == "" {
		fmt.Fprintln(o.ErrOut, "No resources found")
	} else {
		fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", ns)
	}
}

// KubeconfigPath is the kubeconfig kobectl config reads and writes:
// --kubeconfig, $KUBECONFIG, then ~/.kobune/config.
func (o *Options) KubeconfigPath() string {
	for _, p := range []string{o.Kubeconfig, os.Getenv("KUBECONFIG")} {
		if p != "" {
			return p
		}
	}
	home := o.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".kobune", "config")
}

// ReadKubeconfig reads the kubeconfig KubeconfigPath names.
func (o *Options) ReadKubeconfig() (string, *client.Kubeconfig, error) {
	path := o.KubeconfigPath()
	b, err := os.ReadFile(path)
	if err != nil {
		return path, nil, err
	}
	var k client.Kubeconfig
	if err := yaml.UnmarshalStrict(b, &k); err != nil || k.Kind != "Config" {
		return path, nil, fmt.Errorf("%s is not a kubeconfig (kind: Config): %v", path, err)
	}
	return path, &k, nil
}

// SetNamespace fills the namespace from -n, refusing a conflict as kubectl does.
func (o *Options) SetNamespace(m *Manifest) error {
	meta := m.Object.GetObjectMeta()
	if !m.Kind.Namespaced {
		return nil
	}
	switch {
	case meta.Namespace == "" && o.Namespace != "":
		meta.Namespace = o.Namespace
	case meta.Namespace == "":
		meta.Namespace = "default"
	case o.Namespace != "" && meta.Namespace != o.Namespace:
		return fmt.Errorf("%s line %d: the namespace from the provided object %q does not match the namespace %q; remove -n or the object's namespace", m.Source, m.Line, meta.Namespace, o.Namespace)
	}
	return nil
}

// Close closes the connection Client made, if any.
func (o *Options) Close() {
	if o.client != nil {
		o.client.Close()
	}
}
