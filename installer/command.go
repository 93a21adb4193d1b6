package installer

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// Run is kobeadm's command line; it returns the exit status.
func Run(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:   "kobeadm",
		Short: "Install Kobune on machines (kubeadm's role)",
		Long: `kobeadm installs Kobune on a machine, phase by phase, as kubeadm installs
Kubernetes. Built so far: the preflight checks of init (a control plane)
and join (a worker): kobeadm init phase preflight, kobeadm join phase
preflight. docs/install.md says what each phase does and what comes next.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	for _, role := range []struct {
		use, short string
		role       Role
	}{
		{"init", "Make this machine the cluster's control plane (built so far: its preflight phase)", ControlPlane},
		{"join", "Join this machine to a cluster as a node (built so far: its preflight phase)", Worker},
	} {
		cmd := &cobra.Command{Use: role.use, Short: role.short}
		phase := &cobra.Command{Use: "phase", Short: "Run one phase of " + role.use + " on its own"}
		phase.AddCommand(preflightCommand(role.role, stdout))
		cmd.AddCommand(phase)
		root.AddCommand(cmd)
	}
	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

func preflightCommand(role Role, out io.Writer) *cobra.Command {
	var ignore []string
	what := map[Role]string{ControlPlane: "a control plane", Worker: "a node"}[role]
	cmd := &cobra.Command{
		Use:   "preflight",
		Short: "Check that this machine can become " + what,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			start := time.Now()
			fmt.Fprintf(out, "[preflight] Running pre-flight checks for %s\n", what)
			if err := Preflight(out, HostOf(), role, ignore); err != nil {
				return err
			}
			fmt.Fprintf(out, "[preflight] This machine can become %s (%d ms)\n", what, time.Since(start).Milliseconds())
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&ignore, "ignore-preflight-errors", nil, "checks whose errors are shown as warnings (names as printed, e.g. Swap,Port-6443; all: every check)")
	return cmd
}
