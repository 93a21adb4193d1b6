package explain

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/openapi"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdExplain is kubectl explain: the fields of a kind, or of one
// field path in it, from the same schemas the API server serves at
// /openapi/v3 (api/openapi, made from Kobune's types: exactly the fields
// Kobune serves).
func NewCmdExplain(o *cmdutil.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "explain TYPE[.FIELD...]",
		Short: "Show the fields of a kind or of one of its fields (kubectl explain)",
		Example: `  kobectl explain deployment
  kobectl explain pods.spec.containers
  kobectl explain deployment.spec.strategy.rollingUpdate`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			typ, path, _ := strings.Cut(args[0], ".")
			k, err := scheme.Lookup(typ)
			if err != nil {
				return err
			}
			root, schemas := openapi.KindSchemas(k)
			cur := schemas[root]
			name, field := k.Kind, ""
			desc, _ := cur["description"].(string)
			if path != "" {
				for _, p := range strings.Split(path, ".") {
					props, _ := cur["properties"].(map[string]any)
					ps, ok := props[p].(map[string]any)
					if !ok {
						return fmt.Errorf("field %q does not exist in %s (kobectl explain %s lists its fields)", p, name, strings.TrimSuffix(args[0], "."+p))
					}
					field, name = p, typeName(ps)
					cur = resolve(ps, schemas)
					desc, _ = ps["description"].(string)
					if desc == "" {
						desc, _ = cur["description"].(string)
					}
				}
			}
			w := o.Out
			if k.Group() != "" { // kubectl names no group for the core kinds
				fmt.Fprintf(w, "GROUP:      %s\n", k.Group())
			}
			fmt.Fprintf(w, "KIND:       %s\nVERSION:    %s\n\n", k.Kind, strings.TrimPrefix(k.APIVersion, k.Group()+"/"))
			if field != "" {
				fmt.Fprintf(w, "FIELD: %s <%s>\n\n", field, name)
			}
			if desc != "" {
				fmt.Fprintf(w, "DESCRIPTION:\n%s\n", wrapText(desc, "    ", 80))
			}
			props, _ := cur["properties"].(map[string]any)
			if len(props) == 0 {
				return nil
			}
			fmt.Fprintln(w, "FIELDS:")
			names := make([]string, 0, len(props))
			for n := range props {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				ps, _ := props[n].(map[string]any)
				fmt.Fprintf(w, "  %s\t<%s>\n", n, typeName(ps))
				if d, _ := ps["description"].(string); d != "" {
					fmt.Fprintf(w, "%s\n\n", wrapText(d, "    ", 80))
				}
			}
			return nil
		},
	}
}

// resolve follows a property's $ref (or allOf[0].$ref), and into a list's
// or a map's element.
func resolve(p map[string]any, schemas map[string]map[string]any) map[string]any {
	for {
		if items, ok := p["items"].(map[string]any); ok {
			p = items
			continue
		}
		if ap, ok := p["additionalProperties"].(map[string]any); ok {
			p = ap
			continue
		}
		if ref := refOf(p); ref != "" {
			return schemas[ref]
		}
		return p
	}
}

func refOf(p map[string]any) string {
	if r, ok := p["$ref"].(string); ok {
		return r[strings.LastIndex(r, "/")+1:]
	}
	if all, ok := p["allOf"].([]any); ok && len(all) > 0 {
		if m, ok := all[0].(map[string]any); ok {
			return refOf(m)
		}
	}
	return ""
}

// typeName prints a property's type as kubectl explain does: <string>,
// <[]Container>, <map[string]string>, <DeploymentSpec>.
func typeName(p map[string]any) string {
	if ref := refOf(p); ref != "" {
		return ref[strings.LastIndex(ref, ".")+1:]
	}
	switch t, _ := p["type"].(string); t {
	case "array":
		items, _ := p["items"].(map[string]any)
		return "[]" + typeName(items)
	case "object":
		if ap, ok := p["additionalProperties"].(map[string]any); ok {
			return "map[string]" + typeName(ap)
		}
		return "Object"
	case "":
		return "Object"
	default:
		if f, _ := p["format"].(string); f == "int-or-string" {
			return "IntOrString"
		}
		return t
	}
}

// wrapText breaks text into lines of at most width columns, each indented.
func wrapText(text, indent string, width int) string {
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		line := indent
		for _, word := range strings.Fields(para) {
			if len(line) > len(indent) && len(line)+1+len(word) > width {
				lines = append(lines, line)
				line = indent
			}
			if len(line) > len(indent) {
				line += " "
			}
			line += word
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
