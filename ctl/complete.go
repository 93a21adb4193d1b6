package ctl

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
)

// Shell completion (kobectl completion bash|zsh|fish|powershell, cobra's)
// of resource types and of the names of the objects in the cluster, as
// kubectl completes them.

// completion says what each command's arguments are.
var completion = map[string]string{
	"get": "types", "describe": "types", "delete": "types", "label": "types", "annotate": "types",
	"patch": "types", "edit": "types", "wait": "types", "explain": "types", "expose": "types",
	"scale": "types", "rollout status": "types", "rollout history": "types", "rollout undo": "types",
	"rollout restart": "types", "rollout pause": "types", "rollout resume": "types", "set image": "types",
	"logs": "pods", "exec": "pods", "debug": "pods", "attach": "pods", "port-forward": "pods",
	"cordon": "nodes", "uncordon": "nodes", "drain": "nodes", "taint": "nodes",
}

func addCompletions(o *Options, root *cobra.Command) {
	for path, what := range completion {
		cmd, _, err := root.Find(strings.Fields(path))
		if err != nil || cmd == root {
			continue
		}
		what := what
		cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return completeArgs(o, cmd, what, args, toComplete)
		}
	}
}

// complete offers type names for the first argument of a TYPE NAME
// command (or TYPE/ prefixes), then names of objects of that type.
func completeArgs(o *Options, cmd *cobra.Command, what string, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	noFiles := cobra.ShellCompDirectiveNoFileComp
	var typ string
	switch {
	case what == "pods":
		typ = "pods"
	case what == "nodes" && cmd.Name() == "taint":
		if len(args) == 0 {
			return []string{"nodes"}, noFiles
		}
		if len(args) > 1 {
			return nil, noFiles
		}
		typ = "nodes"
	case what == "nodes":
		typ = "nodes"
	case len(args) == 0 && !strings.Contains(toComplete, "/"):
		var names []string
		for _, k := range scheme.All() {
			names = append(names, k.Resource)
		}
		return names, noFiles
	case len(args) == 0: // TYPE/prefix
		t, _, _ := strings.Cut(toComplete, "/")
		names := objectNames(o, cmd, t)
		for i, n := range names {
			names[i] = t + "/" + n
		}
		return names, noFiles
	default:
		if strings.Contains(args[0], "/") {
			return nil, noFiles
		}
		typ = args[0]
	}
	if what != "types" && len(args) > 0 {
		return nil, noFiles
	}
	return objectNames(o, cmd, typ), noFiles
}

// objectNames lists the names of objects of a type, quickly or not at all.
func objectNames(o *Options, cmd *cobra.Command, typ string) []string {
	k, err := scheme.Lookup(typ)
	if err != nil {
		return nil
	}
	c, err := o.Client()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	items, _, err := c.Resource(k).List(ctx, o.NamespaceFor(k, false), client.ListOptions{})
	if err != nil {
		return nil
	}
	var names []string
	for _, b := range items {
		if obj, err := k.Decode(b); err == nil {
			names = append(names, obj.GetObjectMeta().Name)
		}
	}
	return names
}
