package installer

import (
	"context"
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
Kubernetes: kobeadm init on the first machine (a control plane that is
also a node). Each phase prints what it did and can run alone (kobeadm
init phase NAME). Built so far: init's phases up to a running control
plane and agent; join has its preflight phase. docs/install.md says what
each phase does and what comes next.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(initCommand(stdout), joinCommand(stdout))
	if err := root.ExecuteContext(context.Background()); err != nil {
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

func initCommand(out io.Writer) *cobra.Command {
	c := &Config{Out: out}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Make this machine the cluster's first control plane (and a node)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.Defaults(); err != nil {
				return err
			}
			start := time.Now()
			if err := RunPhases(cmd.Context(), c, InitPhases()); err != nil {
				return err
			}
			fmt.Fprintf(out, "\nKobune's control plane runs on %s (%s), in %s.\nkobectl --kubeconfig %s get nodes\n", c.NodeName, c.Address, time.Since(start).Round(100*time.Millisecond), AdminConf)
			return nil
		},
	}
	flags := func(fs *cobra.Command) {
		fs.Flags().StringVar(&c.NodeName, "node-name", "", "this machine's node name (default: its hostname)")
		fs.Flags().StringVar(&c.Address, "apiserver-advertise-address", "", "the address other machines reach this one on (default: its first global IPv4 address)")
		fs.Flags().StringVar(&c.Bundle, "bundle", "", "the directory with the binaries and images/ to install (default: kobeadm's own directory)")
		fs.Flags().BoolVar(&c.FastTimings, "fast-timings", false, "the netns lab's short timings (a silent node NotReady after 8 s, its pods gone 5 s later) instead of Kubernetes' 40 s and 300 s")
		fs.Flags().BoolVar(&c.Untaint, "untaint", false, "do not taint this machine's node: ordinary pods run on the control plane too (a one-machine cluster)")
		fs.Flags().StringSliceVar(&c.IgnorePreflight, "ignore-preflight-errors", nil, "checks whose errors are shown as warnings (names as printed, e.g. Swap,Port-6443; all: every check)")
	}
	flags(cmd)
	phase := &cobra.Command{Use: "phase", Short: "Run one phase of init on its own"}
	for _, p := range InitPhases() {
		p := p
		pc := &cobra.Command{Use: p.Name, Short: p.Short, Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.Defaults(); err != nil {
				return err
			}
			return RunPhases(cmd.Context(), c, []Phase{p})
		}}
		flags(pc)
		phase.AddCommand(pc)
	}
	cmd.AddCommand(phase)
	return cmd
}

func joinCommand(out io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "join", Short: "Join this machine to a cluster as a node (built so far: its preflight phase)"}
	phase := &cobra.Command{Use: "phase", Short: "Run one phase of join on its own"}
	phase.AddCommand(preflightCommand(Worker, out))
	cmd.AddCommand(phase)
	return cmd
}
