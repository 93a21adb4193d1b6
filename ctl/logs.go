package ctl

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/client"
)

func podName(arg string) (string, error) {
	if t, n, ok := strings.Cut(arg, "/"); ok {
		if t != "pod" && t != "pods" && t != "po" {
			return "", fmt.Errorf("only pods have logs and exec, not %q", t)
		}
		return n, nil
	}
	return arg, nil
}

func newLogsCommand(o *Options) *cobra.Command {
	var container string
	var follow, previous bool
	var tail int64
	cmd := &cobra.Command{
		Use:   "logs POD [-c CONTAINER] [-f] [--tail N] [--previous]",
		Short: "Print a container's log (kubectl logs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := podName(args[0])
			if err != nil {
				return err
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			log, err := c.PodLogs(cmd.Context(), o.namespaceOrDefault(), name,
				client.LogOptions{Container: container, Follow: follow, TailLines: tail, Previous: previous})
			if err != nil {
				return err
			}
			if _, err := io.Copy(o.Out, log); err != nil && cmd.Context().Err() == nil {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "container (default: the pod's only one)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the container stops")
	cmd.Flags().BoolVarP(&previous, "previous", "p", false, "the log of the previous attempt of a restarted container")
	cmd.Flags().Int64Var(&tail, "tail", -1, "lines from the end (-1: all)")
	return cmd
}

func (o *Options) namespaceOrDefault() string {
	if o.Namespace != "" {
		return o.Namespace
	}
	return "default"
}
