package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/patch"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// cmdutil.LastAppliedAnnotation holds the manifest an object was last
// applied from, as kubectl's client-side apply keeps it; apply uses it to
// tell fields the user removed from fields someone else set.

type writeFlags struct {
	files    []string
	strict   bool
	validate string
	dryRun   cmdutil.DryRunMode
	// verb is what a client dry run says it would have done ("created",
	// "replaced"); apply asks the server whether the object exists.
	verb string
	// serverSide applies with server-side apply (apply only).
	serverSide, forceConflicts bool
	fieldManager               string
	// quiet prints no line per object (kobectl diff prints its own).
	quiet bool
	// live and written are the object before and after the last applyOne
	// (live is nil for a create), for kobectl diff.
	live, written []byte
	// heard are the warnings the server gave for the manifest being
	// written (admission's, such as Pod Security's); forEachManifest
	// prints those kobectl has not printed itself.
	heard []string
}

// hear keeps a write's warnings.
func (f *writeFlags) hear(w client.Written) { f.heard = append(f.heard, w.Warnings...) }

func (f *writeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVarP(&f.files, "filename", "f", nil, "file, directory or - (stdin) with manifests")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "treat Kubernetes fields kobune does not support as errors instead of warnings")
	cmd.Flags().StringVar(&f.validate, "validate", "strict", `fields Kubernetes does not have (typos): "strict" refuses the document, "warn" warns, "ignore" (or "false") says nothing`)
	cmdutil.AddDryRun(cmd, &f.dryRun)
}

// writeOptions: kobectl has checked the fields itself, with the server's
// own code (scheme.CheckFields), and printed or refused what it found.
func (f *writeFlags) writeOptions() client.WriteOptions {
	return client.WriteOptions{FieldValidation: "Ignore", DryRun: f.dryRun == "server"}
}

func NewCmdApply(o *cmdutil.Options) *cobra.Command {
	var f writeFlags
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update objects from manifests (kubectl apply)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return forEachManifest(o, cmd, &f, func(ctx context.Context, c *client.Client, m cmdutil.Manifest) (string, error) {
				if f.serverSide {
					return serverSideApply(ctx, c, m, &f)
				}
				return applyOne(ctx, c, m, &f)
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.serverSide, "server-side", false, "server-side apply: the API server merges and records who owns each field (metadata.managedFields)")
	cmd.Flags().BoolVar(&f.forceConflicts, "force-conflicts", false, "with --server-side, take fields other managers own instead of failing")
	cmd.Flags().StringVar(&f.fieldManager, "field-manager", "kobectl", "with --server-side, the name this apply owns its fields under")
	return cmd
}

// serverSideApply sends the manifest as written to the server, which
// merges it (apiserver/registry/apply.go).
func serverSideApply(ctx context.Context, c *client.Client, m cmdutil.Manifest, f *writeFlags) (string, error) {
	md := m.Object.GetObjectMeta()
	w, err := c.Resource(m.Kind).Patch(ctx, md.Namespace, md.Name, client.ApplyPatch, m.Applied,
		client.PatchOptions{WriteOptions: f.writeOptions(), FieldManager: f.fieldManager, Force: f.forceConflicts})
	f.hear(w)
	if client.IsConflict(err) {
		return "", fmt.Errorf("%w\nThe fields above have other managers: apply with --force-conflicts to take them, or leave them out of this manifest", err)
	}
	return "serverside-applied", err
}

// NewCmdCreate is create -f, with the generators (create deployment,
// create secret ...) as its subcommands.
func NewCmdCreate(o *cmdutil.Options, generators ...*cobra.Command) *cobra.Command {
	var f writeFlags
	cmd := &cobra.Command{
		Use:   "create -f FILE",
		Short: "Create objects from manifests; an existing name is an error (kubectl create)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return forEachManifest(o, cmd, &f, func(ctx context.Context, c *client.Client, m cmdutil.Manifest) (string, error) {
				w, err := c.Resource(m.Kind).Create(ctx, m.Object.GetObjectMeta().Namespace, m.Raw, f.writeOptions())
				f.hear(w)
				return "created", err
			})
		},
	}
	f.register(cmd)
	f.verb = "created"
	cmd.AddCommand(generators...)
	return cmd
}

func NewCmdReplace(o *cmdutil.Options) *cobra.Command {
	var f writeFlags
	cmd := &cobra.Command{
		Use:   "replace -f FILE",
		Short: "Replace objects with manifests; a stale resourceVersion in the file is a conflict (kubectl replace)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return forEachManifest(o, cmd, &f, func(ctx context.Context, c *client.Client, m cmdutil.Manifest) (string, error) {
				w, err := c.Resource(m.Kind).Update(ctx, m.Object.GetObjectMeta().Namespace, m.Raw, f.writeOptions())
				f.hear(w)
				return "replaced", err
			})
		},
	}
	f.register(cmd)
	f.verb = "replaced"
	return cmd
}

// forEachManifest reads every manifest first, refuses the documents that
// cannot be used (an unknown kind, invalid YAML, a typo under
// --validate=strict, an unsupported field under --strict), prints warnings
// for the rest, then sends each usable object — as kubectl does, every
// document that can be applied is, each failure is reported and the
// command fails.
func forEachManifest(o *cmdutil.Options, cmd *cobra.Command, f *writeFlags, do func(context.Context, *client.Client, cmdutil.Manifest) (string, error)) error {
	ms, err := o.ReadManifests(f.files, o.In)
	if err != nil {
		return err
	}
	switch f.validate {
	case "strict", "true", "warn", "ignore", "false":
	default:
		return fmt.Errorf(`--validate %q: must be "strict", "warn" or "ignore" (or true, false)`, f.validate)
	}
	for i := range ms {
		m := &ms[i]
		if m.Err != nil {
			continue // reported in its turn below
		}
		if err := o.SetNamespace(m); err != nil {
			return err
		}
		name := cmdutil.Ref(m.Kind, m.Object.GetObjectMeta().Name)
		switch {
		case len(m.Unknown) > 0 && (f.validate == "strict" || f.validate == "true"):
			m.Err = fmt.Errorf("strict decoding error: %s (Kubernetes has no such field: a typo? --validate=warn sends it anyway)", strings.Join(m.Unknown, ", "))
			continue
		case f.validate == "warn":
			for _, u := range m.Unknown {
				fmt.Fprintf(o.ErrOut, "Warning: %s: %s\n", name, u)
			}
		}
		if f.strict && len(m.Unsupported) > 0 {
			m.Err = fmt.Errorf("not supported by kobune (--strict): %s", strings.Join(m.Unsupported, "; "))
			continue
		}
		for _, u := range m.Unsupported {
			fmt.Fprintf(o.ErrOut, "Warning: %s: %s\n", name, u)
		}
		if m.Raw, err = json.Marshal(m.Object); err != nil {
			return err
		}
		if m.Applied, err = asWritten(m); err != nil {
			return err
		}
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	var failed []error
	for _, m := range ms {
		if m.Err != nil {
			what := m.Source
			if m.Kind != nil {
				what = fmt.Sprintf("%s (%s line %d)", cmdutil.Ref(m.Kind, m.Object.GetObjectMeta().Name), m.Source, m.Line)
			}
			failed = append(failed, fmt.Errorf("%s: %w", what, m.Err))
			continue
		}
		ctx, cancel := cmdutil.CtxFor(cmd)
		f.heard = nil
		var verb string
		if f.dryRun == "client" { // nothing is sent: say what would be done
			verb, err = f.verb, nil
			if verb == "" {
				verb = "created"
				if _, gerr := c.Resource(m.Kind).Get(ctx, m.Object.GetObjectMeta().Namespace, m.Object.GetObjectMeta().Name); gerr == nil {
					verb = "configured"
				}
			}
		} else {
			verb, err = do(ctx, c, m)
		}
		cancel()
		name := cmdutil.Ref(m.Kind, m.Object.GetObjectMeta().Name)
		for _, w := range slices.Compact(f.heard) {
			if !slices.Contains(m.Unsupported, w) {
				fmt.Fprintf(o.ErrOut, "Warning: %s: %s\n", name, w)
			}
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("%s (%s line %d): %w", name, m.Source, m.Line, err))
			continue
		}
		if f.quiet {
			continue
		}
		suffix := map[cmdutil.DryRunMode]string{"client": " (dry run)", "server": " (server dry run)"}[f.dryRun]
		fmt.Fprintf(o.Out, "%s %s%s\n", name, verb, suffix)
	}
	if len(failed) == 1 {
		return failed[0]
	}
	if len(failed) > 1 {
		for _, e := range failed[:len(failed)-1] {
			fmt.Fprintln(o.ErrOut, cmdutil.FormatError(e, o.Server))
		}
		return failed[len(failed)-1]
	}
	return nil
}

func joinLines(l []string) string {
	out := ""
	for i, s := range l {
		if i > 0 {
			out += "\n  "
		}
		out += s
	}
	return out
}

// applyOne creates the object or merges the manifest into the live object.
func applyOne(ctx context.Context, c *client.Client, m cmdutil.Manifest, f *writeFlags) (string, error) {
	applied, err := withLastApplied(m.Applied)
	if err != nil {
		return "", err
	}
	meta := m.Object.GetObjectMeta()
	r := c.Resource(m.Kind)
	for attempt := 0; ; attempt++ {
		live, err := r.Get(ctx, meta.Namespace, meta.Name)
		f.live, f.written = live, live
		if client.IsNotFound(err) {
			w, err := r.Create(ctx, meta.Namespace, applied, f.writeOptions())
			f.hear(w)
			f.live, f.written = nil, w.Object
			return "created", err
		}
		if err != nil {
			return "", err
		}
		merged, changed, err := threeWayMerge(live, m.Applied, applied)
		if err != nil {
			return "", err
		}
		if !changed {
			return "unchanged", nil
		}
		resp, err := r.Update(ctx, meta.Namespace, merged, f.writeOptions())
		f.hear(resp)
		f.written = resp.Object
		if client.IsConflict(err) && attempt < 5 {
			continue // someone wrote in between: merge again onto the new state
		}
		if err != nil {
			return "", err
		}
		if sameRevision(live, resp.Object) {
			return "unchanged", nil // after defaulting, the server found nothing to write
		}
		return "configured", nil
	}
}

// asWritten is the manifest as the user wrote it, with the namespace the
// typed object got (from -n or "default") filled in, as kubectl records it.
func asWritten(m *cmdutil.Manifest) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(m.JSON, &obj); err != nil {
		return nil, err
	}
	if ns := m.Object.GetObjectMeta().Namespace; ns != "" {
		md, _ := obj["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			obj["metadata"] = md
		}
		md["namespace"] = ns
	}
	return json.Marshal(obj)
}

// withLastApplied returns the manifest with the last-applied annotation set to itself.
func withLastApplied(raw []byte) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return nil, errors.New("object has no metadata")
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	ann[cmdutil.LastAppliedAnnotation] = string(raw)
	md["annotations"] = ann
	return json.Marshal(obj)
}

// threeWayMerge applies the manifest onto the live object: fields in the
// manifest win; fields that were in the last applied manifest but are gone
// now are removed; other fields (set by controllers or other users) stay.
// Lists with a merge key merge item by item, as kubectl's strategic
// merge (patch.ThreeWay). Status is never touched.
func threeWayMerge(liveJSON, manifestJSON, appliedJSON []byte) ([]byte, bool, error) {
	var live, manifest, applied map[string]any
	if err := json.Unmarshal(liveJSON, &live); err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(manifestJSON, &manifest); err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(appliedJSON, &applied); err != nil {
		return nil, false, err
	}
	var last map[string]any
	if md, ok := live["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if s, ok := ann[cmdutil.LastAppliedAnnotation].(string); ok {
				_ = json.Unmarshal([]byte(s), &last)
			}
		}
	}
	before, _ := json.Marshal(live)
	delete(applied, "status")
	delete(last, "status")
	var kt *k8sapi.Type
	if kind, _ := live["kind"].(string); kind != "" {
		apiVersion, _ := live["apiVersion"].(string)
		kt, _ = k8sapi.ForKind(apiVersion, kind)
	}
	merged := patch.ThreeWay(live, last, applied, kt)
	after, err := json.Marshal(merged)
	if err != nil {
		return nil, false, err
	}
	return after, !reflect.DeepEqual(before, after), nil
}

func sameRevision(a, b []byte) bool {
	var x, y struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && x.Metadata.ResourceVersion == y.Metadata.ResourceVersion
}
