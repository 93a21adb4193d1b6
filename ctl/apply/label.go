package apply

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdLabel is kubectl label: set (KEY=VALUE) or remove (KEY-)
// labels of one object; an existing key changes only with --overwrite.
// Admission warnings (Pod Security's, when a namespace's level is raised)
// are printed.
func NewCmdLabel(o *cmdutil.Options) *cobra.Command {
	return newMetadataMapCommand(o, "labels", "labeled", &cobra.Command{
		Use:   "label TYPE NAME KEY=VALUE ... | KEY- ...",
		Short: "Set or remove labels of an object (kubectl label)",
		Example: `  # Label pod web-0 tier=front
  kobectl label pod web-0 tier=front

  # Change a label that is set, and remove another
  kobectl label deploy/web tier=back env- --overwrite

  # Raise namespace demo's Pod Security level (warnings name the pods it would refuse)
  kobectl label namespace demo pod-security.kubernetes.io/enforce=restricted`,
	})
}

// NewCmdAnnotate is kubectl annotate, the same for annotations.
func NewCmdAnnotate(o *cmdutil.Options) *cobra.Command {
	return newMetadataMapCommand(o, "annotations", "annotated", &cobra.Command{
		Use:   "annotate TYPE NAME KEY=VALUE ... | KEY- ...",
		Short: "Set or remove annotations of an object (kubectl annotate)",
		Example: `  # Record why a Deployment changed (rollout history shows it)
  kobectl annotate deploy/web kubernetes.io/change-cause="image 2.0"

  # Remove an annotation
  kobectl annotate pod web-0 note-`,
	})
}

// newMetadataMapCommand sets or removes keys of metadata.labels or
// metadata.annotations of one object with a merge patch of those keys.
func newMetadataMapCommand(o *cmdutil.Options, field, done string, cmd *cobra.Command) *cobra.Command {
	var overwrite bool
	cmd.Args = cobra.MinimumNArgs(2)
	cmd.RunE =
		func(cmd *cobra.Command, args []string) error {
			split := 2
			if strings.Contains(args[0], "/") {
				split = 1
			}
			if len(args) <= split {
				return fmt.Errorf("at least one label update is required (KEY=VALUE or KEY-)")
			}
			k, names, err := o.ParseTarget(args[:split])
			if err != nil {
				return err
			}
			if len(names) != 1 {
				return fmt.Errorf("name one object")
			}
			set, remove := map[string]string{}, []string{}
			for _, a := range args[split:] {
				if key, ok := strings.CutSuffix(a, "-"); ok && !strings.Contains(a, "=") {
					remove = append(remove, key)
					continue
				}
				key, value, ok := strings.Cut(a, "=")
				if !ok {
					return fmt.Errorf("%q: want KEY=VALUE or KEY-", a)
				}
				errs := validation.ValidateAnnotations(map[string]string{key: value}, validation.NewPath("metadata", field))
				if field == "labels" {
					errs = validation.ValidateLabels(map[string]string{key: value}, validation.NewPath("metadata", field))
				}
				if len(errs) > 0 {
					return errs.ToError()
				}
				set[key] = value
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			ns, r := o.NamespaceFor(k, false), c.Resource(k)
			raw, err := r.Get(ctx, ns, names[0])
			if err != nil {
				return err
			}
			var obj struct {
				Metadata map[string]json.RawMessage `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &obj); err != nil {
				return err
			}
			var current map[string]string
			if b, ok := obj.Metadata[field]; ok {
				if err := json.Unmarshal(b, &current); err != nil {
					return err
				}
			}
			for key, value := range set {
				if old, ok := current[key]; ok && old != value && !overwrite {
					return fmt.Errorf("'%s' already has a value (%v), and --overwrite is false", key, old)
				}
			}
			// As kubectl: a merge patch of only the keys named, so a
			// concurrent change to other keys (a controller's) neither
			// conflicts nor is lost.
			change := map[string]any{}
			for key, value := range set {
				change[key] = value
			}
			for _, key := range remove {
				change[key] = nil
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{field: change}})
			if err != nil {
				return err
			}
			w, err := r.Patch(ctx, ns, names[0], client.MergePatch, patch, client.PatchOptions{FieldManager: "kobectl-" + cmd.Name()})
			if err != nil {
				return err
			}
			for _, warning := range w.Warnings {
				fmt.Fprintf(o.ErrOut, "Warning: %s\n", warning)
			}
			fmt.Fprintf(o.Out, "%s/%s %s\n", cmdutil.Qualified(k.Resource, k.APIVersion), names[0], done)
			return nil
		}
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "change a key that is already set")
	return cmd
}
