package ctl

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/proto/apipb"
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
			stream, err := c.API.PodExec(cmd.Context())
			if err != nil {
				return err
			}
			first := &apipb.PodExecInput{Namespace: o.namespaceOrDefault(), Name: name, Container: container, Command: args[1:], Stdin: stdin, Tty: tty}
			if err := stream.Send(first); err != nil {
				return err
			}
			if tty && stdin {
				restore := rawTerminal(o.In)
				defer restore()
			}
			if stdin {
				go func() {
					buf := make([]byte, 32*1024)
					for {
						n, err := o.In.Read(buf)
						if n > 0 && stream.Send(&apipb.PodExecInput{StdinData: append([]byte(nil), buf[:n]...)}) != nil {
							return
						}
						if err != nil {
							_ = stream.Send(&apipb.PodExecInput{StdinClosed: true})
							return
						}
					}
				}()
			} else {
				_ = stream.CloseSend()
			}
			for {
				out, err := stream.Recv()
				if err != nil {
					return err
				}
				o.Out.Write(out.Stdout)
				o.ErrOut.Write(out.Stderr)
				if out.Exited {
					if out.ExitCode != 0 {
						return exitError{code: int(out.ExitCode)}
					}
					return nil
				}
			}
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "container (default: the pod's only one)")
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "pass standard input to the command")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "run the command on a terminal in the container")
	return cmd
}

// exitError carries a remote command's exit status to kobectl's own.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("command terminated with exit code %d", e.code) }
