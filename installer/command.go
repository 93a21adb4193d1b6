package installer

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/client"
)

// Run is kobeadm's command line; it returns the exit status.
func Run(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:   "kobeadm",
		Short: "Install Kobune on machines (kubeadm's role)",
		Long: `kobeadm installs Kobune on machines, phase by phase, as kubeadm installs
Kubernetes: kobeadm init on the first machine (a control plane that is
also a node), then kobeadm join on the others with the line init prints.
Each phase prints what it did and how long it took, and can run alone
(kobeadm init phase NAME). kobeadm token makes join lines, certs shows
and renews certificates, snapshot backs the cluster up, reset undoes an
install. docs/install.md (INSTALL.md in the bundle) says what each step
does, side by side with kubeadm's.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(initCommand(stdout), joinCommand(stdout), tokenCommand(stdout), resetCommand(stdout), snapshotCommand(stdout), certsCommand(stdout))
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
	var skip []string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Make this machine the cluster's first control plane (and a node)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.Defaults(); err != nil {
				return err
			}
			start := time.Now()
			phases, err := skipPhases(InitPhases(), skip)
			if err != nil {
				return err
			}
			if err := RunPhases(cmd.Context(), c, phases); err != nil {
				return err
			}
			fmt.Fprintf(out, "\nKobune's control plane runs on %s (%s), in %s.\nkobectl --kubeconfig %s get nodes\n", c.NodeName, c.Address, time.Since(start).Round(100*time.Millisecond), AdminConf)
			fmt.Fprintf(out, "\nJoin further machines with, on each, as root:\n\n  %s\n\n", c.JoinCommand)
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
		fs.Flags().DurationVar(&c.TokenTTL, "token-ttl", DefaultTokenTTL, "how long the bootstrap token init makes lives (0: forever)")
	}
	flags(cmd)
	cmd.Flags().StringSliceVar(&skip, "skip-phases", nil, "phases to leave out, e.g. addon (kobeadm init phase NAME runs one later)")
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

// skipPhases leaves out the phases named (kubeadm's --skip-phases).
func skipPhases(phases []Phase, skip []string) ([]Phase, error) {
	known := map[string]bool{}
	for _, p := range phases {
		known[p.Name] = true
	}
	for _, s := range skip {
		if !known[s] {
			var names []string
			for _, p := range phases {
				names = append(names, p.Name)
			}
			return nil, fmt.Errorf("--skip-phases: no phase %q (the phases: %s)", s, strings.Join(names, ", "))
		}
	}
	var out []Phase
	for _, p := range phases {
		if !slices.Contains(skip, p.Name) {
			out = append(out, p)
		}
	}
	return out, nil
}

func joinCommand(out io.Writer) *cobra.Command {
	c := &Config{Out: out}
	j := &Join{}
	cmd := &cobra.Command{
		Use:   "join API-SERVER:6443 --token TOKEN --discovery-token-ca-cert-hash sha256:HASH",
		Short: "Join this machine to a cluster as a node",
		Long: `kobeadm join makes this machine a node of the cluster whose API server is
at API-SERVER:6443, as kubeadm join does: it reads the cluster's CA from
cluster-info, trusts it only if the token signed it and its public key
has the hash given, refuses a name a live node has, installs the
binaries and starts the agent, which asks for its certificate with the
token (TLS bootstrap). kobeadm init and kobeadm token create
--print-join-command print the whole line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			j.Endpoint = args[0]
			if err := c.Defaults(); err != nil {
				return err
			}
			start := time.Now()
			if err := RunPhases(cmd.Context(), c, JoinPhases(j)); err != nil {
				return err
			}
			fmt.Fprintf(out, "\nThis machine joined the cluster as node %s in %s.\nOn the control plane: kobectl get nodes\n", c.NodeName, time.Since(start).Round(100*time.Millisecond))
			return nil
		},
	}
	cmd.Flags().StringVar(&c.NodeName, "node-name", "", "this machine's node name (default: its hostname)")
	cmd.Flags().StringVar(&c.Address, "node-ip", "", "the address other machines reach this node and its pods on (default: its first global IPv4 address)")
	cmd.Flags().StringVar(&c.Bundle, "bundle", "", "the directory with the binaries and images/ to install (default: kobeadm's own directory)")
	cmd.Flags().StringSliceVar(&c.IgnorePreflight, "ignore-preflight-errors", nil, "checks whose errors are shown as warnings (names as printed, e.g. Swap,Port-10250; all: every check)")
	cmd.Flags().StringVar(&j.Token, "token", "", "the bootstrap token (kobeadm token create makes one)")
	cmd.Flags().StringSliceVar(&j.CAHashes, "discovery-token-ca-cert-hash", nil, "sha256:<hex> of the cluster CA's public key: this machine trusts the cluster only if its CA has it")
	cmd.Flags().BoolVar(&j.UnsafeSkipCAVerification, "discovery-token-unsafe-skip-ca-verification", false, "trust whatever CA cluster-info names (anyone between this machine and the API server could impersonate the cluster)")
	phase := &cobra.Command{Use: "phase", Short: "Run one phase of join on its own"}
	phase.AddCommand(preflightCommand(Worker, out))
	cmd.AddCommand(phase)
	return cmd
}

func tokenCommand(out io.Writer) *cobra.Command {
	admin := func() (*client.Client, error) {
		cl, err := client.Dial("", AdminConf)
		if err != nil {
			return nil, fmt.Errorf("%w (kobeadm token runs on a control-plane machine, as root)", err)
		}
		return cl, nil
	}
	cmd := &cobra.Command{Use: "token", Short: "Manage bootstrap tokens (what joining machines authenticate with)"}
	var ttl time.Duration
	var description string
	var print bool
	create := &cobra.Command{Use: "create", Short: "Make a bootstrap token", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		cl, err := admin()
		if err != nil {
			return err
		}
		defer cl.Close()
		b, err := CreateToken(cmd.Context(), cl, ttl, description)
		if err != nil {
			return err
		}
		if !print {
			fmt.Fprintln(out, b.Token())
			return nil
		}
		caPEM, err := os.ReadFile(PKIDir + "/ca.crt")
		if err != nil {
			return err
		}
		cfg, err := client.LoadKubeconfig(AdminConf, "")
		if err != nil {
			return err
		}
		line, err := JoinCommand(strings.TrimPrefix(cfg.Server, "https://"), b.Token(), caPEM)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, line)
		return nil
	}}
	create.Flags().DurationVar(&ttl, "ttl", DefaultTokenTTL, "how long the token lives (0: forever)")
	create.Flags().StringVar(&description, "description", "", "what the token is for (shown by token list)")
	create.Flags().BoolVar(&print, "print-join-command", false, "print the whole kobeadm join line, the CA's hash included, instead of the token alone")
	list := &cobra.Command{Use: "list", Short: "List the bootstrap tokens", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		cl, err := admin()
		if err != nil {
			return err
		}
		defer cl.Close()
		return ListTokens(cmd.Context(), cl, out)
	}}
	del := &cobra.Command{Use: "delete TOKEN-ID...", Short: "Delete bootstrap tokens (by id or whole token)", Args: cobra.MinimumNArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		cl, err := admin()
		if err != nil {
			return err
		}
		defer cl.Close()
		return DeleteTokens(cmd.Context(), cl, out, args)
	}}
	cmd.AddCommand(create, list, del)
	return cmd
}

func resetCommand(out io.Writer) *cobra.Command {
	c := &Config{Out: out}
	var force bool
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Undo everything kobeadm init or join made on this machine",
		Long: `kobeadm reset removes what an install made on this machine, as kubeadm
reset does: the units, every pod and containerd's kobune namespace, the
pods' network namespaces, the bridge, the agent's routes and nftables
tables, the pods' cgroups and mounts, /etc/kobune, /var/lib/kobune (on a
control plane: etcd, the cluster's whole state) and the binaries. It is
safe to run twice. It does not remove the Node from the cluster: kobectl
delete node NAME on the control plane does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.Address = "-" // not needed: a machine without an address is reset too
			if err := c.Defaults(); err != nil {
				return err
			}
			return Reset(cmd.Context(), c, force, cmd.InOrStdin())
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "reset without asking")
	return cmd
}

func snapshotCommand(out io.Writer) *cobra.Command {
	dataDir := EtcdDataDir
	cmd := &cobra.Command{Use: "snapshot", Short: "Back up the cluster's state (etcd's snapshot API) and restore it"}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", EtcdDataDir, "the API server's etcd data directory (its --data-dir)")
	save := &cobra.Command{Use: "save FILE", Short: "Take an online, consistent snapshot of the cluster's state into FILE", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			info, err := SaveSnapshot(cmd.Context(), dataDir, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Snapshot saved to %s in %s: revision %d, %d keys, %.1f MB. Keep a copy of %s with it (the CA and keys the nodes trust).\n",
				args[0], time.Since(start).Round(time.Millisecond), info.Revision, info.Keys, float64(info.Bytes)/1e6, PKIDir)
			return nil
		}}
	status := &cobra.Command{Use: "status FILE", Short: "Check a snapshot and say what it holds", Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			info, err := CheckSnapshot(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s is whole (its SHA-256 matches): revision %d, %d keys, %.1f MB\n", args[0], info.Revision, info.Keys, float64(info.Bytes)/1e6)
			return nil
		}}
	restore := &cobra.Command{Use: "restore FILE", Short: "Make a new etcd data directory from a snapshot, for the API server to start on",
		Long: `kobeadm snapshot restore checks FILE and makes --data-dir from it (it must
not exist or be empty: nothing is overwritten). The revision moves a
billion past the snapshot's and older ones are marked compacted, so every
client lists again instead of trusting what it saw of the lost state. On a
control plane: systemctl stop kobune-apiserver; move the old data away;
restore; systemctl start kobune-apiserver. The nodes reconnect by
themselves if /etc/kobune/pki is the one they trust.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			start := time.Now()
			info, err := RestoreSnapshot(args[0], dataDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Restored %s into %s in %s: revision %d (the server continues at %d), %d keys.\nNext: systemctl start kobune-apiserver\n",
				args[0], dataDir, time.Since(start).Round(time.Millisecond), info.Revision, info.Revision+RestoreRevisionBump, info.Keys)
			return nil
		}}
	cmd.AddCommand(save, status, restore)
	return cmd
}

func certsCommand(out io.Writer) *cobra.Command {
	c := &Config{Out: out}
	cmd := &cobra.Command{Use: "certs", Short: "See when this machine's certificates expire, and renew them"}
	check := &cobra.Command{Use: "check-expiration", Short: "List this machine's certificates, when each expires and what renews it", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return CheckExpiration(out, EtcDir, time.Now()) }}
	renew := &cobra.Command{Use: "renew all", Short: "Renew every certificate the cluster CA signed on this control plane (a year more)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "all" {
				return fmt.Errorf("certs renew %s: only \"all\" is supported (every certificate is renewed together)", args[0])
			}
			if err := c.Defaults(); err != nil {
				return err
			}
			if err := RunPhases(cmd.Context(), c, []Phase{{"certs-renew", "renew the certificates and kubeconfigs the cluster CA signed", renewCerts}}); err != nil {
				return err
			}
			fmt.Fprintln(out, "\nRenewed. The API server, scheduler, controller and agent read the new files at their next connection (nothing restarts).")
			return CheckExpiration(out, EtcDir, time.Now())
		}}
	renew.Flags().StringVar(&c.NodeName, "node-name", "", "this machine's node name, as given to init (default: its hostname)")
	renew.Flags().StringVar(&c.Address, "apiserver-advertise-address", "", "the address given to init (default: its first global IPv4 address)")
	cmd.AddCommand(check, renew)
	return cmd
}
