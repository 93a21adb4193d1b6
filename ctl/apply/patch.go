package apply

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdPatch is kubectl patch: a strategic merge patch (the
// default), a JSON merge patch or a JSON patch, applied by the server.
func NewCmdPatch(o *cmdutil.Options) *cobra.Command {
	var typ, body, sub string
	var dryRun cmdutil.DryRunMode
	cmd := &cobra.Command{
		Use:   "patch (TYPE NAME | TYPE/NAME) -p PATCH [--type strategic|merge|json]",
		Short: "Change fields of an object with a patch, applied by the server (kubectl patch)",
		Example: `  # Scale a Deployment with a strategic merge patch
  kobectl patch deployment web -p '{"spec":{"replicas":3}}'
  # Change one container's image; the other containers stay (merged by name)
  kobectl patch deployment web -p '{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"kobune.local/labapp:2.0"}]}}}}'
  # A JSON patch, and a merge patch that removes a label
  kobectl patch configmap web-config --type json -p '[{"op":"add","path":"/data/mode","value":"fast"}]'
  kobectl patch pod web-0 --type merge -p '{"metadata":{"labels":{"tier":null}}}'
  # Resize a running pod's container in place (its cgroup changes, the process stays)
  kobectl patch pod web-0 --subresource resize -p '{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"500m"}}}]}}'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			types := map[string]string{"strategic": client.StrategicMergePatch, "merge": client.MergePatch, "json": client.JSONPatch}
			pt, ok := types[typ]
			if !ok {
				return fmt.Errorf("--type %q: must be strategic, merge or json", typ)
			}
			if body == "" {
				return fmt.Errorf("a patch is required: -p '{\"spec\":{...}}'")
			}
			patch, err := yaml.YAMLToJSON([]byte(body)) // JSON is YAML: both are accepted, as kubectl accepts them
			if err != nil {
				return fmt.Errorf("-p: %v", err)
			}
			k, names, err := o.ParseTarget(args)
			if err != nil {
				return err
			}
			if len(names) != 1 {
				return fmt.Errorf("name one object")
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			w, err := c.Resource(k).Patch(ctx, o.NamespaceFor(k, false), names[0], pt, patch,
				client.PatchOptions{WriteOptions: client.WriteOptions{DryRun: dryRun != "none"}, Subresource: sub, FieldManager: "kobectl-patch"})
			if err != nil {
				return err
			}
			for _, warning := range w.Warnings {
				fmt.Fprintf(o.ErrOut, "Warning: %s\n", warning)
			}
			suffix := map[cmdutil.DryRunMode]string{"client": " (dry run)", "server": " (server dry run)"}[dryRun]
			fmt.Fprintf(o.Out, "%s patched%s\n", cmdutil.Ref(k, names[0]), suffix)
			return nil
		},
	}
	cmd.Flags().StringVar(&typ, "type", "strategic", "the patch type: strategic (Kubernetes' strategic merge patch), merge (RFC 7386) or json (RFC 6902)")
	cmd.Flags().StringVarP(&body, "patch", "p", "", "the patch, as JSON or YAML")
	cmd.Flags().StringVar(&sub, "subresource", "", "patch the status, scale or (pods) resize subresource instead of the object")
	// A client dry run is the server's as well: Kobune applies patches on
	// the server only (kubectl applies them itself for --dry-run=client).
	cmdutil.AddDryRun(cmd, &dryRun)
	return cmd
}
