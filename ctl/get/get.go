package get

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/printers"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

type getFlags struct {
	// files: get the objects these manifests name (-f).
	files         []string
	output        string
	selector      string
	fieldSelector string
	allNamespaces bool
	watch         bool
	// showManagedFields keeps metadata.managedFields in yaml and json
	// (kubectl hides them too unless asked).
	showManagedFields bool
	noHeaders         bool
	showLabels        bool
	labelColumns      []string
	sortBy            string
	// tmpl is -o jsonpath, custom-columns or go-template, parsed.
	tmpl *templateOutput
}

func NewCmdGet(o *cmdutil.Options) *cobra.Command {
	var f getFlags
	cmd := &cobra.Command{
		Use:   "get TYPE[,TYPE...] [NAME...] | TYPE/NAME | -f FILE",
		Short: "Show objects in a table, or as yaml, json or names (kubectl get)",
		Long: `Show objects: a table with kubectl's columns, or yaml, json, names,
a JSONPath template, custom columns or a Go template. TYPE is a kind's
plural, singular or short name (kobectl api-resources lists them); several
are separated by commas, and "all" means pods, services, daemonsets,
deployments, replicasets, statefulsets, jobs and cronjobs.`,
		Example: `  # Pods of the current namespace, with their node and IP
  kobectl get pods -o wide

  # Everything of namespace demo
  kobectl get all -n demo

  # Names and nodes of every pod, sorted by node
  kobectl get pods -A -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName --sort-by=.spec.nodeName

  # The images of a Deployment
  kobectl get deploy web -o jsonpath='{.spec.template.spec.containers[*].image}'

  # One line per pod with a Go template
  kobectl get pods -o go-template='{{range .items}}{{.metadata.name}} {{.status.phase}}{{"\n"}}{{end}}'

  # Labels as columns, and the app label in its own column
  kobectl get pods --show-labels -L app

  # The objects a manifest made
  kobectl get -f deploy/examples/web.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(f.files) > 0 && len(args) > 0:
				return fmt.Errorf("use either -f or TYPE [NAME], not both")
			case len(f.files) > 0:
				return getFiles(o, cmd, &f)
			case len(args) == 0:
				return fmt.Errorf("you must specify the type of resource to get (kobectl api-resources lists them), or -f FILE")
			}
			return getObjects(o, cmd, &f, args)
		},
	}
	cmd.Flags().StringSliceVarP(&f.files, "filename", "f", nil, "get the objects a manifest names (a file, a directory, or - for stdin)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "output format: "+outputFormats)
	cmd.Flags().BoolVar(&f.noHeaders, "no-headers", false, "print tables without their header line")
	cmd.Flags().BoolVar(&f.showLabels, "show-labels", false, "add a LABELS column with every label")
	cmd.Flags().StringSliceVarP(&f.labelColumns, "label-columns", "L", nil, "add a column for each of these label keys (comma separated)")
	cmd.Flags().StringVar(&f.sortBy, "sort-by", "", "sort by a JSONPath, e.g. .metadata.creationTimestamp or .spec.nodeName")
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "label selector, e.g. app=web,tier!=db")
	cmd.Flags().StringVar(&f.fieldSelector, "field-selector", "", "field selector, e.g. spec.nodeName=node-1")
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	cmd.Flags().BoolVarP(&f.watch, "watch", "w", false, "after listing, watch for changes")
	cmd.Flags().BoolVar(&f.showManagedFields, "show-managed-fields", false, "keep metadata.managedFields (server-side apply's record of who owns which field) in yaml and json")
	return cmd
}

func getObjects(o *cmdutil.Options, cmd *cobra.Command, f *getFlags, args []string) error {
	tmpl, err := parseOutput(f.output)
	if err != nil {
		return err
	}
	f.tmpl = tmpl
	if types := strings.Split(args[0], ","); (len(types) > 1 || args[0] == "all") && !strings.Contains(args[0], "/") {
		return getKinds(o, cmd, f, expandAll(o, types), args[1:])
	}
	k, names, err := o.ParseTarget(args)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ns := o.NamespaceFor(k, f.allNamespaces)
	ctx, cancel := cmdutil.CtxFor(cmd)
	defer cancel()
	objs, rev, err := fetchObjects(o, ctx, c, k, ns, names, f)
	if err != nil {
		return err
	}
	p := f.printer(o, k)
	p.withNamespace = f.allNamespaces && k.Namespaced
	if len(objs) == 0 && len(names) == 0 && (f.output == "" || f.output == "wide") && !f.watch {
		o.NoResources(ns)
		return nil
	}
	if err := p.print(objs, len(names) == 1 && !f.watch); err != nil {
		return err
	}
	if !f.watch {
		return nil
	}
	return watchObjects(o, cmd.Context(), c, k, ns, f, rev, p)
}

// fetch gets the named objects of kind k, or lists them (returning the
// list's revision, for a watch).
func fetchObjects(o *cmdutil.Options, ctx context.Context, c *client.Client, k *scheme.Kind, ns string, names []string, f *getFlags) ([]meta.Object, int64, error) {
	objs, rev, err := cmdutil.Fetch(ctx, c, k, ns, names, f.selector, f.fieldSelector)
	if err != nil {
		return nil, 0, err
	}
	if f.sortBy != "" {
		if err := sortObjects(objs, f.sortBy); err != nil {
			return nil, 0, err
		}
	}
	return objs, rev, nil
}

// expandAll reads "all" as kubectl's category of that name: the built-in
// workloads, and the custom kinds whose definitions put them in it.
func expandAll(o *cmdutil.Options, types []string) []string {
	var out []string
	for _, t := range types {
		if t == "all" {
			out = append(out, "pods", "replicationcontrollers", "services", "daemonsets", "deployments", "replicasets", "statefulsets", "jobs", "cronjobs")
			for _, k := range o.Kinds().Custom() {
				if slices.Contains(k.Custom.Categories, "all") {
					out = append(out, k.Resource)
				}
			}
			continue
		}
		out = append(out, t)
	}
	return out
}

// printer makes the printer these flags ask for, for kind k.
func (f *getFlags) printer(o *cmdutil.Options, k *scheme.Kind) *printer {
	return &printer{out: o.Out, kind: k, format: f.output, managedFields: f.showManagedFields, noHeader: f.noHeaders,
		showLabels: f.showLabels, labelColumns: f.labelColumns, tmpl: f.tmpl}
}

// getKinds is `get svc,endpointslices [NAME...]`, as kubectl shows it: a
// table per kind that has objects, names prefixed with their kind, a
// blank line between; one List for -o json/yaml.
func getKinds(o *cmdutil.Options, cmd *cobra.Command, f *getFlags, types, names []string) error {
	if f.watch {
		return fmt.Errorf("you may only specify a single resource type with --watch")
	}
	var kinds []*scheme.Kind
	for _, typ := range types {
		k, err := o.Lookup(typ)
		if err != nil {
			return err
		}
		kinds = append(kinds, k)
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := cmdutil.CtxFor(cmd)
	defer cancel()
	var all []meta.Object
	printed := false
	for _, k := range kinds {
		objs, _, err := fetchObjects(o, ctx, c, k, o.NamespaceFor(k, f.allNamespaces), names, f)
		if err != nil {
			return err
		}
		if f.output == "json" || f.output == "yaml" || f.tmpl != nil && f.tmpl.columns == nil {
			all = append(all, objs...)
			continue
		}
		if len(objs) == 0 {
			continue
		}
		if printed && f.output != "name" {
			fmt.Fprintln(o.Out)
		}
		p := f.printer(o, k)
		p.withNamespace, p.withKind = f.allNamespaces && k.Namespaced, true
		if err := p.print(objs, false); err != nil {
			return err
		}
		printed = true
	}
	if f.output == "json" || f.output == "yaml" || f.tmpl != nil && f.tmpl.columns == nil {
		return f.printer(o, kinds[0]).print(all, false)
	}
	if !printed {
		ns := ""
		if !f.allNamespaces {
			ns = o.NamespaceFor(kinds[0], false)
		}
		o.NoResources(ns)
	}
	return nil
}

// getFiles is `get -f FILE`: the objects the manifests name, as kubectl
// shows them — one table per kind in the order the kinds first appear,
// names prefixed with their kind when there are several kinds; one List
// for -o json/yaml. Each object that is not there is named, as kubectl
// does, and the others are shown.
func getFiles(o *cmdutil.Options, cmd *cobra.Command, f *getFlags) error {
	tmpl, err := parseOutput(f.output)
	if err != nil {
		return err
	}
	f.tmpl = tmpl
	ms, err := o.ReadManifests(f.files, o.In)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := cmdutil.CtxFor(cmd)
	defer cancel()
	var kinds []*scheme.Kind
	byKind := map[*scheme.Kind][]meta.Object{}
	var failed []error
	for i := range ms {
		m := &ms[i]
		if m.Err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", m.Source, m.Err))
			continue
		}
		if err := o.SetNamespace(m); err != nil {
			return err
		}
		meta := m.Object.GetObjectMeta()
		objs, _, err := fetchObjects(o, ctx, c, m.Kind, meta.Namespace, []string{meta.Name}, f)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		if _, seen := byKind[m.Kind]; !seen {
			kinds = append(kinds, m.Kind)
		}
		byKind[m.Kind] = append(byKind[m.Kind], objs...)
	}
	whole := f.output == "json" || f.output == "yaml" || f.tmpl != nil && f.tmpl.columns == nil
	var all []meta.Object
	for i, k := range kinds {
		if whole {
			all = append(all, byKind[k]...)
			continue
		}
		if i > 0 && f.output != "name" {
			fmt.Fprintln(o.Out)
		}
		p := f.printer(o, k)
		p.withKind = len(kinds) > 1
		if err := p.print(byKind[k], false); err != nil {
			return err
		}
	}
	if whole && len(kinds) > 0 {
		if err := f.printer(o, kinds[0]).print(all, len(all) == 1); err != nil {
			return err
		}
	}
	for i, err := range failed {
		if i == len(failed)-1 {
			return err
		}
		fmt.Fprintln(o.ErrOut, cmdutil.FormatError(err, o.Server))
	}
	return nil
}

// watch prints a row (or object) for every change after rev, until interrupted.
func watchObjects(o *cmdutil.Options, ctx context.Context, c *client.Client, k *scheme.Kind, ns string, f *getFlags, rev int64, p *printer) error {
	stream, err := c.Resource(k).Watch(ctx, ns, client.ListOptions{LabelSelector: f.selector, FieldSelector: f.fieldSelector}, rev, false)
	if err != nil {
		return err
	}
	p.noHeader = true
	for {
		ev, err := stream.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if ev.Type == "BOOKMARK" {
			continue
		}
		obj, err := k.Decode(ev.Object)
		if err != nil {
			return err
		}
		if err := p.print([]meta.Object{obj}, true); err != nil {
			return err
		}
	}
}

// printer writes objects in one output format.
type printer struct {
	out           interface{ Write([]byte) (int, error) }
	kind          *scheme.Kind
	format        string
	withNamespace bool
	// withKind names each row kind/name (a get of several kinds).
	withKind bool
	noHeader bool
	// managedFields keeps metadata.managedFields in yaml and json.
	managedFields bool
	// showLabels and labelColumns add LABELS and a column per label key.
	showLabels   bool
	labelColumns []string
	tmpl         *templateOutput
}

func (p *printer) print(objs []meta.Object, single bool) error {
	if !p.managedFields {
		for _, o := range objs {
			o.GetObjectMeta().ManagedFields = nil
		}
	}
	if p.tmpl != nil {
		return p.tmpl.print(p, objs, single)
	}
	switch p.format {
	case "name":
		for _, o := range objs {
			fmt.Fprintln(p.out, cmdutil.Ref(p.kind, o.GetObjectMeta().Name))
		}
		return nil
	case "json", "yaml":
		b, err := json.MarshalIndent(listOrOne(objs, single), "", "    ")
		if err != nil {
			return err
		}
		if p.format == "yaml" {
			if b, err = yaml.JSONToYAML(b); err != nil {
				return err
			}
			_, err = p.out.Write(b)
			return err
		}
		_, err = fmt.Fprintln(p.out, string(b))
		return err
	}
	tw := tabwriter.NewWriter(p.out, 3, 0, 3, ' ', 0)
	t := printers.For(p.kind, p.format == "wide")
	if !p.noHeader {
		h := t.Headers
		if p.withNamespace {
			h = append([]string{"NAMESPACE"}, h...)
		}
		for _, l := range p.labelColumns { // kubectl: the key's last part, upper case
			parts := strings.Split(l, "/")
			h = append(h, strings.ToUpper(parts[len(parts)-1]))
		}
		if p.showLabels {
			h = append(h, "LABELS")
		}
		fmt.Fprintln(tw, strings.Join(h, "\t"))
	}
	for _, o := range objs {
		row := t.Row(o)
		if p.withKind {
			row[0] = cmdutil.Ref(p.kind, row[0])
		}
		if p.withNamespace {
			row = append([]string{o.GetObjectMeta().Namespace}, row...)
		}
		labels := o.GetObjectMeta().Labels
		for _, l := range p.labelColumns {
			row = append(row, labels[l])
		}
		if p.showLabels {
			row = append(row, printers.LabelString(labels))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// listOrOne is what yaml, json and templates print: the object when one
// was named, else a List of them, as kubectl prints.
func listOrOne(objs []meta.Object, single bool) any {
	if single && len(objs) == 1 {
		return objs[0]
	}
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	return meta.List{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: items}
}
