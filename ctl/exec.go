package ctl

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/client"
)

func newExecCommand(o *Options) *cobra.Command {
	var container string
	var stdin, tty bool
	cmd := &cobra.Command{
		Use:   "exec POD [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]",
		Short: "Run a command in a container (kubectl exec)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return fmt.Errorf("put the command after --, as in: kobectl exec %s -- sh", args[0])
			}
			name, err := podName(args[0])
			if err != nil {
				return err
			}
			c, err := o.Client()
			if err != nil {
				return err
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
			code, err := c.Exec(cmd.Context(), o.namespaceOrDefault(), name, opts)
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "container (default: the pod's only one)")
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "pass standard input to the command")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "run the command on a terminal in the container")
	return cmd
}

// exitError carries a remote command's exit status to kobectl's own.
// quiet ones print nothing more (auth can-i has said "no" already).
type exitError struct {
	code  int
	quiet bool
}

func (e exitError) Error() string { return fmt.Sprintf("command terminated with exit code %d", e.code) }
