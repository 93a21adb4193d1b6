package podio

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func NewCmdExec(o *cmdutil.Options) *cobra.Command {
	var container string
	var stdin, tty bool
	cmd := &cobra.Command{
		Use:   "exec (POD | TYPE/NAME) [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]",
		Short: "Run a command in a container (kubectl exec)",
		Long: `Run a command in a running container, through the API server and the
pod's node (pods/exec). kobectl exits with the command's exit code. For
TYPE/NAME (deploy/web, svc/web ...) one of its pods is chosen, as kubectl
chooses.`,
		Example: `  # A shell on a terminal in pod web-0
  kobectl exec -it web-0 -- sh

  # One command in a pod of Deployment web, container app
  kobectl exec deploy/web -c app -n demo -- cat /etc/hostname

  # Standard input passed on
  echo hello | kobectl exec -i web-0 -- cat`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return fmt.Errorf("put the command after --, as in: kobectl exec %s -- sh", args[0])
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ref, err := resolvePod(cmd.Context(), c, o.NamespaceOrDefault(), args[0])
			if err != nil {
				return err
			}
			if container == "" {
				container = defaultContainer(ref.pod, o.ErrOut)
			}
			opts := client.ExecOptions{Container: container, Command: args[1:], TTY: tty, Stdout: o.Out, Stderr: o.ErrOut}
			if stdin {
				opts.Stdin = o.In
				if tty {
					restore := rawTerminal(o.In)
					defer restore()
				}
			}
			if tty {
				sizes, stop := terminalSizes(o.Out)
				defer stop()
				opts.Resize = sizes
			}
			code, err := c.Exec(cmd.Context(), ref.pod.Namespace, ref.pod.Name, opts)
			if err != nil {
				return err
			}
			if code != 0 {
				return cmdutil.ExitError{Code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "container (default: the one the kubectl.kubernetes.io/default-container annotation names, else the first)")
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "pass standard input to the command")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "run the command on a terminal in the container")
	return cmd
}

func NewCmdAttach(o *cmdutil.Options) *cobra.Command {
	var container string
	var stdin, tty bool
	cmd := &cobra.Command{
		Use:   "attach (POD | TYPE/NAME) [-c CONTAINER]",
		Short: "Print what a running container writes from now on (kubectl attach)",
		Long: `Attach to a running container's output (pods/attach): what it writes
from now on, until it exits or you press Ctrl-C. Kobune starts containers
without stdin or a terminal (their stdin and tty fields are not
supported), so -i and -t are refused: use exec -it for a shell.`,
		Example: `  # What pod web-0 writes from now on
  kobectl attach web-0

  # A container of one pod of Deployment web
  kobectl attach deploy/web -c app -n demo`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ref, err := resolvePod(cmd.Context(), c, o.NamespaceOrDefault(), args[0])
			if err != nil {
				return err
			}
			if container == "" {
				container = defaultContainer(ref.pod, o.ErrOut)
			}
			out, err := c.Attach(cmd.Context(), ref.pod.Namespace, ref.pod.Name, container, stdin, tty)
			if err != nil {
				return err
			}
			if _, err := io.Copy(o.Out, out); err != nil && cmd.Context().Err() == nil {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "container (default: the one the kubectl.kubernetes.io/default-container annotation names, else the first)")
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "pass standard input to the container (refused: Kobune's containers have no stdin)")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "the container's terminal (refused: Kobune's containers have none)")
	return cmd
}
