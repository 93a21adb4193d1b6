package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/ctl/apply"
	"github.com/kobune/kobune/ctl/auth"
	"github.com/kobune/kobune/ctl/cmdutil"
	"github.com/kobune/kobune/ctl/config"
	"github.com/kobune/kobune/ctl/create"
	"github.com/kobune/kobune/ctl/delete"
	"github.com/kobune/kobune/ctl/describe"
	"github.com/kobune/kobune/ctl/drain"
	"github.com/kobune/kobune/ctl/explain"
	"github.com/kobune/kobune/ctl/explainpath"
	"github.com/kobune/kobune/ctl/get"
	"github.com/kobune/kobune/ctl/pki"
	"github.com/kobune/kobune/ctl/podio"
	"github.com/kobune/kobune/ctl/rollout"
	"github.com/kobune/kobune/ctl/token"
	"github.com/kobune/kobune/ctl/top"
	"github.com/kobune/kobune/ctl/wait"
)

// Options are the global flags and streams of one kobectl run.
type Options = cmdutil.Options

// DefaultServer is the address used when no flag, variable or config file
// names one.
const DefaultServer = cmdutil.DefaultServer

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
		apply.NewCmdApply(o), apply.NewCmdCreate(o, create.Generators(o)...), apply.NewCmdReplace(o),
		get.NewCmdGet(o), describe.NewCmdDescribe(o), delete.NewCmdDelete(o),
		create.NewCmdRun(o), create.NewCmdExpose(o),
		podio.NewCmdLogs(o), podio.NewCmdExec(o), podio.NewCmdAttach(o), podio.NewCmdDebug(o), podio.NewCmdPortForward(o), podio.NewCmdCp(o),
		wait.NewCmdWait(o), wait.NewCmdEvents(o),
		rollout.NewCmdScale(o), rollout.NewCmdAutoscale(o), rollout.NewCmdSet(o), rollout.NewCmdRollout(o), apply.NewCmdLabel(o), apply.NewCmdAnnotate(o), apply.NewCmdPatch(o), apply.NewCmdEdit(o), apply.NewCmdDiff(o),
		drain.NewCmdCordon(o, true), drain.NewCmdCordon(o, false), drain.NewCmdDrain(o), drain.NewCmdTaint(o), explain.NewCmdExplain(o),
		top.NewCmdTop(o), newAPIResourcesCommand(o), newVersionCommand(o),
		explainpath.NewCmdExplainPath(o), pki.NewCmdPKI(o), config.NewCmdConfig(o), auth.NewCmdAuth(o), token.NewCmdToken(o), token.NewCmdCertificate(o),
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
	o.Close()
	var exit cmdutil.ExitError
	if errors.As(err, &exit) {
		switch {
		case exit.Err != nil:
			fmt.Fprintln(errOut, cmdutil.FormatError(exit.Err, o.Server))
		case !exit.Quiet:
			fmt.Fprintln(errOut, exit.Error())
		}
		return exit.Code // as kubectl exec does
	}
	if err != nil {
		fmt.Fprintln(errOut, cmdutil.FormatError(err, o.Server))
		return 1
	}
	return 0
}
