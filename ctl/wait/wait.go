package wait

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/jsonpath"
	"github.com/kobune/kobune/api/printers"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// waitCondition is a parsed --for: condition=TYPE[=STATUS], create,
// delete, or jsonpath='{PATH}'[=VALUE].
type waitCondition struct {
	deleted, created bool
	// condType and condStatus: a status.conditions entry to wait for.
	condType, condStatus string
	path                 *jsonpath.Template
	value                string
	hasValue             bool
	text                 string
}

func parseWaitFor(s string) (waitCondition, error) {
	w := waitCondition{text: s}
	switch {
	case s == "delete":
		w.deleted = true
	case s == "create":
		w.created = true
	case strings.HasPrefix(s, "condition="):
		rest := strings.TrimPrefix(s, "condition=")
		t, st, ok := strings.Cut(rest, "=")
		if !ok {
			st = "True"
		}
		if t == "" {
			return w, fmt.Errorf("--for %q: name a condition, as in condition=Ready", s)
		}
		w.condType, w.condStatus = strings.ToLower(t), strings.ToLower(st)
	case strings.HasPrefix(s, "jsonpath="):
		rest := strings.TrimPrefix(s, "jsonpath=")
		expr, value := rest, ""
		if end := strings.LastIndex(rest, "}"); end >= 0 && strings.HasPrefix(rest[end+1:], "=") {
			expr, value, w.hasValue = rest[:end+1], rest[end+2:], true
		}
		t, err := jsonpath.ParseRelaxed(expr)
		if err != nil {
			return w, fmt.Errorf("--for %q: %w", s, err)
		}
		w.path, w.value = t, value
	default:
		return w, fmt.Errorf("--for %q: use condition=TYPE[=STATUS], create, delete or jsonpath='{PATH}'=VALUE", s)
	}
	return w, nil
}

// met tells whether obj (a JSON object) satisfies the condition.
func (w waitCondition) met(obj map[string]any) bool {
	if w.created {
		return true
	}
	if w.path != nil {
		res := w.path.Results(obj)
		if !w.hasValue {
			return len(res) > 0
		}
		for _, r := range res {
			if jsonpath.Text(r) == w.value {
				return true
			}
		}
		return false
	}
	status, _ := obj["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if t, _ := cm["type"].(string); strings.ToLower(t) == w.condType {
			s, _ := cm["status"].(string)
			return strings.ToLower(s) == w.condStatus
		}
	}
	return false
}

func NewCmdWait(o *cmdutil.Options) *cobra.Command {
	var forFlag, sel string
	var all bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait (TYPE/NAME... | TYPE NAME... | TYPE -l SELECTOR | TYPE --all) --for=condition=TYPE[=STATUS]|create|delete|jsonpath='{PATH}'=VALUE [--timeout=30s]",
		Short: "Wait until objects meet a condition, or are deleted (kubectl wait)",
		Long: `Wait, watching the API server, until each object has the condition
(status.conditions), exists (create), is gone (delete), or has the value
at the JSONPath. Exits
non-zero when --timeout passes first.`,
		Example: `  # Until pod web-0 is Ready
  kobectl wait pod/web-0 --for=condition=Ready --timeout=60s

  # Until every pod labelled app=web is Running
  kobectl wait pods -l app=web --for=jsonpath='{.status.phase}'=Running

  # Until a deleted pod is gone
  kobectl wait pod/web-0 --for=delete

  # Until a StatefulSet's first pod exists
  kobectl wait pod/db-0 --for=create`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if forFlag == "" {
				return fmt.Errorf("--for is required: condition=TYPE, create, delete or jsonpath='{PATH}'=VALUE")
			}
			cond, err := parseWaitFor(forFlag)
			if err != nil {
				return err
			}
			k, names, err := parseWaitTargets(o, args)
			if err != nil {
				return err
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			ns := o.NamespaceFor(k, false)
			if len(names) == 0 {
				if sel == "" && !all {
					return fmt.Errorf("name objects, or select them with -l or --all")
				}
				items, _, err := c.Resource(k).List(ctx, ns, client.ListOptions{LabelSelector: sel})
				if err != nil {
					return err
				}
				for _, b := range items {
					obj, err := k.Decode(b)
					if err != nil {
						return err
					}
					names = append(names, obj.GetObjectMeta().Name)
				}
				if len(names) == 0 {
					return fmt.Errorf("no matching resources found")
				}
			}
			for _, name := range names {
				if err := waitOne(ctx, c, k, ns, name, cond); err != nil {
					if TimedOut(ctx, err) {
						return fmt.Errorf("timed out waiting for the condition on %s/%s", k.Resource, name)
					}
					return err
				}
				what := "condition met"
				if cond.deleted {
					what = "deleted"
				}
				fmt.Fprintf(o.Out, "%s %s\n", cmdutil.Ref(k, name), what)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&forFlag, "for", "", "condition=TYPE[=STATUS], create, delete, or jsonpath='{PATH}'=VALUE")
	cmd.Flags().StringVarP(&sel, "selector", "l", "", "wait for every object this label selector matches")
	cmd.Flags().BoolVar(&all, "all", false, "wait for every object of the type in the namespace")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait")
	return cmd
}

// TimedOut tells a wait that ran out of time: the context's deadline, or
// the server's copy of it ending the watch a moment before the client's
// own timer fires.
func TimedOut(ctx context.Context, err error) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// parseWaitTargets reads TYPE/NAME..., TYPE NAME... or TYPE.
func parseWaitTargets(o *cmdutil.Options, args []string) (*scheme.Kind, []string, error) {
	if !strings.Contains(args[0], "/") {
		return o.ParseTarget(args)
	}
	var kind *scheme.Kind
	var names []string
	for _, a := range args {
		k, n, err := o.ParseTarget([]string{a})
		if err != nil {
			return nil, nil, err
		}
		if kind != nil && k != kind {
			return nil, nil, fmt.Errorf("wait for one type at a time (%s and %s)", kind.Resource, k.Resource)
		}
		kind, names = k, append(names, n...)
	}
	return kind, names, nil
}

// waitOne reads the object, then follows its changes until cond holds.
func waitOne(ctx context.Context, c *client.Client, k *scheme.Kind, ns, name string, cond waitCondition) error {
	r := c.Resource(k)
	items, rev, err := r.List(ctx, ns, client.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return err
	}
	if len(items) == 0 && !cond.created {
		if cond.deleted {
			return nil
		}
		return fmt.Errorf("%s %q not found", k.Resource, name)
	}
	check := func(b []byte) (bool, error) {
		var obj map[string]any
		if err := json.Unmarshal(b, &obj); err != nil {
			return false, err
		}
		return !cond.deleted && cond.met(obj), nil
	}
	if len(items) > 0 {
		if ok, err := check(items[0]); ok || err != nil {
			return err
		}
	}
	stream, err := r.Watch(ctx, ns, client.ListOptions{FieldSelector: "metadata.name=" + name}, rev, false)
	if err != nil {
		return err
	}
	for {
		ev, err := stream.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The server ends the watch at its copy of the deadline, a
			// moment before the client's own timer fires (seen under the
			// race detector as a bare EOF): that is the timeout too.
			if dl, ok := ctx.Deadline(); ok && errors.Is(err, io.EOF) && time.Until(dl) < time.Second {
				<-ctx.Done()
				return ctx.Err()
			}
			return err
		}
		switch ev.Type {
		case "DELETED":
			if cond.deleted {
				return nil
			}
			return fmt.Errorf("%s/%s was deleted while waiting for %s", k.Resource, name, cond.text)
		case "ADDED", "MODIFIED":
			if ok, err := check(ev.Object); ok || err != nil {
				return err
			}
		}
	}
}

func NewCmdEvents(o *cmdutil.Options) *cobra.Command {
	var forObj string
	var allNamespaces, watch bool
	var types []string
	cmd := &cobra.Command{
		Use:   "events [--for TYPE/NAME] [-A] [--types Normal,Warning] [-w]",
		Short: "List events, oldest first (kubectl events)",
		Example: `  # The events of the current namespace
  kobectl events

  # What happened to pod web-0
  kobectl events --for pod/web-0

  # Warnings everywhere
  kobectl events -A --types Warning

  # Follow what happens in namespace demo
  kobectl events -n demo -w`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			ns := o.NamespaceOrDefault()
			if allNamespaces {
				ns = ""
			}
			var fs string
			if forObj != "" {
				k, names, err := o.ParseTarget([]string{forObj})
				if err != nil || len(names) != 1 {
					return fmt.Errorf("--for %q: want TYPE/NAME, as in pod/web-0", forObj)
				}
				fs = fmt.Sprintf("involvedObject.kind=%s,involvedObject.name=%s", k.Kind, names[0])
			}
			evs, rev, err := client.For[*core.Event](c).List(ctx, ns, client.ListOptions{FieldSelector: fs})
			if err != nil {
				return err
			}
			var shown []*core.Event
			for _, e := range evs {
				if len(types) == 0 || containsFold(types, e.Type) {
					shown = append(shown, e)
				}
			}
			sort.SliceStable(shown, func(i, j int) bool { return eventTime(shown[i]).Before(eventTime(shown[j])) })
			switch {
			case len(shown) > 0:
				if err := printEvents(o, shown, allNamespaces, true); err != nil {
					return err
				}
			case !watch:
				o.NoResources(ns)
				return nil
			}
			if !watch {
				return nil
			}
			cancel() // a watch runs until interrupted, not a minute
			w, err := client.For[*core.Event](c).Watch(cmd.Context(), ns, client.ListOptions{FieldSelector: fs}, rev)
			if err != nil {
				return err
			}
			header := len(shown) == 0
			for ev := range w.Events {
				if (ev.Type != "ADDED" && ev.Type != "MODIFIED") || len(types) > 0 && !containsFold(types, ev.Object.Type) {
					continue
				}
				if err := printEvents(o, []*core.Event{ev.Object}, allNamespaces, header); err != nil {
					return err
				}
				header = false
			}
			if cmd.Context().Err() != nil {
				return nil
			}
			return w.Err()
		},
	}
	cmd.Flags().StringVar(&forObj, "for", "", "only the events of this object, TYPE/NAME")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "events of every namespace")
	cmd.Flags().StringSliceVar(&types, "types", nil, "only events of these types: Normal, Warning")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after listing, print each new or changed event until interrupted")
	return cmd
}

// eventTime is when an event last happened.
func eventTime(e *core.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// printEvents prints events as kubectl events does, with the header when
// asked.
func printEvents(o *cmdutil.Options, evs []*core.Event, allNamespaces, header bool) error {
	tw := tabwriter.NewWriter(o.Out, 3, 0, 3, ' ', 0)
	if header {
		head := "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE"
		if allNamespaces {
			head = "NAMESPACE\t" + head
		}
		fmt.Fprintln(tw, head)
	}
	for _, e := range evs {
		row := fmt.Sprintf("%s\t%s\t%s\t%s/%s\t%s", printers.SinceOrUnknown(eventTime(e)), e.Type, e.Reason,
			strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Message)
		if allNamespaces {
			row = e.Namespace + "\t" + row
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

func containsFold(list []string, s string) bool {
	for _, l := range list {
		if strings.EqualFold(l, s) {
			return true
		}
	}
	return false
}

// UntilDeleted waits until the object is gone (delete --wait).
func UntilDeleted(ctx context.Context, c *client.Client, k *scheme.Kind, ns, name string) error {
	return waitOne(ctx, c, k, ns, name, waitCondition{deleted: true})
}
