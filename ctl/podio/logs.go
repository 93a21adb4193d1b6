package podio

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func NewCmdLogs(o *cmdutil.Options) *cobra.Command {
	var (
		container, sel       string
		follow, previous     bool
		prefix, allContainer bool
		timestamps           bool
		tail, limitBytes     int64
		since                time.Duration
		sinceTime            string
		maxRequests          int
	)
	cmd := &cobra.Command{
		Use:   "logs (POD | TYPE/NAME | -l SELECTOR) [-c CONTAINER] [-f] [--tail N] [--since D] [--timestamps] [--previous]",
		Short: "Print a container's log (kubectl logs)",
		Long: `Print the log of a container: of a pod, of one pod of a Deployment,
StatefulSet, Job ... (TYPE/NAME), or of every pod a label selector matches
(-l; then only the last 10 lines of each unless --tail says otherwise, as
kubectl). The log holds what the container wrote to stdout and stderr, each
line with the time the node read it (--timestamps shows it, --since and
--since-time choose by it).`,
		Example: `  # The log of pod web-0's only container
  kobectl logs web-0

  # Follow one pod of Deployment web, from its last 20 lines
  kobectl logs deploy/web -f --tail 20 -n demo

  # Every pod labelled app=web, each line prefixed with its pod and container
  kobectl logs -l app=web --prefix -n demo

  # The last five minutes, each line with its time
  kobectl logs web-0 --since 5m --timestamps

  # The attempt before the last restart
  kobectl logs web-0 --previous`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (sel != "") {
				return fmt.Errorf("name a pod (POD or TYPE/NAME) or give a selector (-l), not both or neither")
			}
			opts := client.LogOptions{Follow: follow, Previous: previous, Timestamps: timestamps, SinceTime: sinceTime}
			switch {
			case since != 0 && sinceTime != "":
				return fmt.Errorf("at most one of --since-time or --since may be used")
			case since < 0:
				return fmt.Errorf("--since: must be greater than 0 (a duration such as 30s, 5m or 2h)")
			case since > 0:
				opts.SinceSeconds = int64(math.Ceil(since.Seconds()))
			}
			if sinceTime != "" {
				if _, err := time.Parse(time.RFC3339, sinceTime); err != nil {
					return fmt.Errorf("--since-time %q: must be an RFC 3339 time, such as 2024-01-02T15:04:05Z", sinceTime)
				}
			}
			if cmd.Flags().Changed("limit-bytes") && limitBytes <= 0 {
				return fmt.Errorf("--limit-bytes: must be greater than 0")
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, ns := cmd.Context(), o.NamespaceOrDefault()
			var pods []*core.Pod
			if sel != "" {
				if !cmd.Flags().Changed("tail") {
					tail = 10
				}
				if pods, _, err = client.For[*core.Pod](c).List(ctx, ns, client.ListOptions{LabelSelector: sel}); err != nil {
					return err
				}
				if len(pods) == 0 {
					fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", ns)
					return nil
				}
			} else {
				ref, err := resolvePod(ctx, c, ns, args[0])
				if err != nil {
					return err
				}
				if ref.among > 1 { // as kubectl: which pod of the several
					fmt.Fprintf(o.ErrOut, "Found %d pods, using pod/%s\n", ref.among, ref.pod.Name)
				}
				pods = []*core.Pod{ref.pod}
			}
			var streams []logStream
			for _, p := range pods {
				names := []string{container}
				if allContainer {
					names = names[:0]
					for _, ct := range p.Spec.InitContainers {
						names = append(names, ct.Name)
					}
					for _, ct := range p.Spec.Containers {
						names = append(names, ct.Name)
					}
				} else if container == "" && sel != "" {
					names = []string{p.Spec.Containers[0].Name} // kubectl -l: each pod's first container
				} else if container == "" {
					names = []string{defaultContainer(p, o.ErrOut)}
				}
				for _, n := range names {
					streams = append(streams, logStream{pod: p.Name, container: n})
				}
			}
			if follow && len(streams) > maxRequests {
				return fmt.Errorf("you are attempting to follow %d log streams, but maximum allowed concurrency is %d, use --max-log-requests to increase the limit", len(streams), maxRequests)
			}
			opts.TailLines = tail
			return printLogs(ctx, c, ns, streams, opts, prefix, limitBytes, o)
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "container (default: the one the kubectl.kubernetes.io/default-container annotation names, else the first)")
	cmd.Flags().StringVarP(&sel, "selector", "l", "", "the logs of every pod this label selector matches, e.g. app=web")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the container stops")
	cmd.Flags().BoolVarP(&previous, "previous", "p", false, "the log of the previous attempt of a restarted container")
	cmd.Flags().BoolVar(&prefix, "prefix", false, "begin each line with [pod/NAME/CONTAINER]")
	cmd.Flags().BoolVar(&allContainer, "all-containers", false, "the logs of every container of the pods, init containers first")
	cmd.Flags().IntVar(&maxRequests, "max-log-requests", 5, "with -l and -f: how many logs may be followed at once")
	cmd.Flags().Int64Var(&tail, "tail", -1, "lines from the end (-1: all; 10 with -l)")
	cmd.Flags().BoolVar(&timestamps, "timestamps", false, "begin each line with the time it was written (RFC 3339, UTC)")
	cmd.Flags().DurationVar(&since, "since", 0, "only lines newer than this, e.g. 30s, 5m, 2h (not with --since-time)")
	cmd.Flags().StringVar(&sinceTime, "since-time", "", "only lines written at or after this RFC 3339 time (not with --since)")
	cmd.Flags().Int64Var(&limitBytes, "limit-bytes", 0, "stop after this many bytes of each log (0: no limit)")
	return cmd
}

// logStream is one container log to print.
type logStream struct{ pod, container string }

// printLogs prints the streams one after another, or, when following
// several, all at once, whole lines at a time, so that lines of different
// containers do not mix.
func printLogs(ctx context.Context, c *client.Client, ns string, streams []logStream, opts client.LogOptions, prefix bool, limitBytes int64, o *cmdutil.Options) error {
	var mu sync.Mutex
	show := func(s logStream) error {
		so := opts
		so.Container = s.container
		r, err := c.PodLogs(ctx, ns, s.pod, so)
		if err != nil {
			return fmt.Errorf("pod/%s: %w", s.pod, err)
		}
		if limitBytes > 0 {
			r = io.LimitReader(r, limitBytes)
		}
		if !prefix && len(streams) == 1 {
			_, err = io.Copy(o.Out, r)
			return err
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			mu.Lock()
			if prefix {
				fmt.Fprintf(o.Out, "[pod/%s/%s] ", s.pod, s.container)
			}
			fmt.Fprintln(o.Out, sc.Text())
			mu.Unlock()
		}
		return sc.Err()
	}
	if !opts.Follow {
		for _, s := range streams {
			if err := show(s); err != nil && ctx.Err() == nil {
				return err
			}
		}
		return nil
	}
	errs := make(chan error, len(streams))
	for _, s := range streams {
		go func() { errs <- show(s) }()
	}
	var first error
	for range streams {
		if err := <-errs; err != nil && first == nil && ctx.Err() == nil {
			first = err
		}
	}
	return first
}
