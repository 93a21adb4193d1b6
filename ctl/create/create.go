package create

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
	"github.com/kobune/kobune/ctl/get"
)

// Generators: commands that build one object from flags — create
// deployment|configmap|secret|service|job|quota|pdb|priorityclass, run,
// expose — and then create it, or with --dry-run=client only print it (the
// usual way to start a manifest: kobectl create deployment web --image=...
// --dry-run=client -o yaml), or with --dry-run=server have the API server
// check it.

// genFlags are the flags every generator has.
type genFlags struct {
	dryRun cmdutil.DryRunMode
	output string
}

func (g *genFlags) register(cmd *cobra.Command) {
	cmdutil.AddDryRun(cmd, &g.dryRun)
	cmd.Flags().StringVarP(&g.output, "output", "o", "", "print the object as yaml or json, or its name (-o name)")
}

// emit creates obj (or only prints it, for --dry-run=client) and prints
// the result as -o asks, else "kind/name created".
func emit(o *cmdutil.Options, ctx context.Context, obj meta.Object, g *genFlags) error {
	k, err := scheme.Lookup(strings.ToLower(obj.GetTypeMeta().Kind))
	if err != nil {
		return err
	}
	switch g.output {
	case "", "yaml", "json", "name":
	default:
		return fmt.Errorf("-o %q: use yaml, json or name", g.output)
	}
	m := obj.GetObjectMeta()
	if k.Namespaced && m.Namespace == "" {
		m.Namespace = o.NamespaceOrDefault()
	}
	out := obj
	if g.dryRun != "client" {
		c, err := o.Client()
		if err != nil {
			return err
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		w, err := c.Resource(k).Create(ctx, m.Namespace, raw, client.WriteOptions{DryRun: g.dryRun == "server"})
		if err != nil {
			return err
		}
		for _, warning := range w.Warnings {
			fmt.Fprintf(o.ErrOut, "Warning: %s\n", warning)
		}
		if out, err = k.Decode(w.Object); err != nil {
			return err
		}
	}
	switch g.output {
	case "yaml", "json":
		return get.Print(o.Out, k, g.output, []meta.Object{out}, true)
	case "name":
		fmt.Fprintln(o.Out, cmdutil.Ref(k, m.Name))
		return nil
	}
	suffix := map[cmdutil.DryRunMode]string{"client": " (dry run)", "server": " (server dry run)"}[g.dryRun]
	fmt.Fprintf(o.Out, "%s created%s\n", cmdutil.Ref(k, m.Name), suffix)
	return nil
}

// emitFor is emit under the command's context (its timeout).
func emitFor(o *cmdutil.Options, cmd *cobra.Command, obj meta.Object, g *genFlags) error {
	ctx, cancel := cmdutil.CtxFor(cmd)
	defer cancel()
	return emit(o, ctx, obj, g)
}

// containerName is what kubectl names a container after its image:
// registry.example/team/web:1.0 gives web.
func containerName(image string) string {
	base := path.Base(image)
	if i := strings.IndexAny(base, ":@"); i > 0 {
		base = base[:i]
	}
	return base
}
