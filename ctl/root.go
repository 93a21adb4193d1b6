package ctl

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
	// cfg is clientConfig's answer, worked out once per run (it also
	// records the server it found in Server, for error messages, which
	// must not turn a kubeconfig's TLS server into a plaintext --server
	// on a second call).
	cfg    *client.Config
	cfgErr error
}

// Config is the content of ~/.kobune/config.
type Config struct {
	Server string `json:"server"`
}

// NewCommand returns the kobectl command tree.
func NewCommand(o *Options) *cobra.Command {
	root := &cobra.Command{
		Use:           "kobectl",
		Short:         "kobectl controls a Kobune cluster (the kubectl of Kobune)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(o.In)
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	root.PersistentFlags().StringVar(&o.Server, "server", "", "API server address (default: $KOBUNE_SERVER, then ~/.kobune/config, then "+DefaultServer+")")
	root.PersistentFlags().StringVar(&o.Kubeconfig, "kubeconfig", "", "a kubeconfig file: the server's https:// address, its CA and your certificate (default: $KUBECONFIG, then ~/.kobune/config)")
	root.PersistentFlags().StringVarP(&o.Namespace, "namespace", "n", "", "namespace (default: the object's own, then \"default\")")
	root.PersistentFlags().StringVar(&o.As, "as", "", "act as this user (needs the impersonate verb on it; a ServiceAccount is system:serviceaccount:<namespace>:<name>)")
	root.PersistentFlags().StringArrayVar(&o.AsGroups, "as-group", nil, "act as a member of this group, with --as (repeatable)")
	root.AddCommand(
		newApplyCommand(o), newCreateCommand(o), newReplaceCommand(o),
		newGetCommand(o), newDescribeCommand(o), newDeleteCommand(o),
		newRunCommand(o), newExposeCommand(o),
		newLogsCommand(o), newExecCommand(o), newAttachCommand(o), newPortForwardCommand(o), newCpCommand(o),
		newWaitCommand(o), newEventsCommand(o),
		newScaleCommand(o), newAutoscaleCommand(o), newSetCommand(o), newRolloutCommand(o), newLabelCommand(o), newAnnotateCommand(o), newPatchCommand(o), newEditCommand(o), newDiffCommand(o),
		newCordonCommand(o, true), newCordonCommand(o, false), newDrainCommand(o), newTaintCommand(o), newExplainCommand(o),
		newTopCommand(o), newAPIResourcesCommand(o), newVersionCommand(o),
		newExplainPathCommand(o), newPKICommand(o), newConfigCommand(o), newAuthCommand(o), newTokenCommand(o), newCertificateCommand(o),
	)
	addExamples(root)
	addCompletions(o, root)
	return root
}

// RunContext executes kobectl with args and returns the process exit status;
// ctx ends watches (kobectl get -w) on Ctrl-C.
func RunContext(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	o := &Options{In: in, Out: out, ErrOut: errOut}
	cmd := NewCommand(o)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if o.client != nil {
		o.client.Close()
	}
	var exit exitError
	if errors.As(err, &exit) {
		switch {
		case exit.err != nil:
			fmt.Fprintln(errOut, formatError(exit.err, o.Server))
		case !exit.quiet:
			fmt.Fprintln(errOut, exit.Error())
		}
		return exit.code // as kubectl exec does
	}
	if err != nil {
		fmt.Fprintln(errOut, formatError(err, o.Server))
		return 1
	}
	return 0
}

// serverAddress resolves the server: --server, KOBUNE_SERVER, ~/.kobune/config.
func (o *Options) serverAddress() (string, error) {
	cfg, err := o.clientConfig()
	return cfg.Server, err
}

// clientConfig is where kobectl connects and as whom: --server
// (plaintext), else --kubeconfig, $KUBECONFIG, $KOBUNE_SERVER, then
// ~/.kobune/config — a kubeconfig, or a line `server: 127.0.0.1:6443` —
// then, inside a pod, its ServiceAccount (client.InClusterConfig), then
// DefaultServer.
func (o *Options) clientConfig() (client.Config, error) {
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

// Client connects as clientConfig says, once per run.
func (o *Options) Client() (*client.Client, error) {
	if o.client != nil {
		return o.client, nil
	}
	cfg, err := o.clientConfig()
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

func ctxFor(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), 60*time.Second)
}

type grpcStatusError interface {
	error
	GRPCStatus() *status.Status
}

// formatError prints errors the way kubectl does: "Error from server
// (Reason): message", keeping any context kobectl added in front.
func formatError(err error, server string) string {
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

func (o *Options) namespaceOrDefault() string {
	if o.Namespace != "" {
		return o.Namespace
	}
	return "default"
}
