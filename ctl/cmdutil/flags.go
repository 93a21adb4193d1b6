package cmdutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/scheme"
)

// ParseTarget reads "pods", "pods web-1 web-2" or "pod/web-1".
// Only built-in kinds are known here: commands use Options.ParseTarget,
// which asks the server for custom ones.
func ParseTarget(args []string) (*scheme.Kind, []string, error) {
	typ, names, err := splitTarget(args)
	if err != nil {
		return nil, nil, err
	}
	k, err := scheme.Lookup(typ)
	return k, names, err
}

func splitTarget(args []string) (string, []string, error) {
	typ, names := args[0], args[1:]
	if t, n, ok := strings.Cut(typ, "/"); ok {
		if len(names) > 0 {
			return "", nil, fmt.Errorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form")
		}
		typ, names = t, []string{n}
	}
	return typ, names, nil
}

// Qualified prints a resource as kubectl does: "deployment.apps".
func Qualified(resource, apiVersion string) string {
	singular := strings.TrimSuffix(resource, "s")
	if group, _, ok := strings.Cut(apiVersion, "/"); ok {
		return singular + "." + group
	}
	return singular
}

// DryRunMode is --dry-run: "none", "client" or "server".
type DryRunMode string

func (d *DryRunMode) String() string { return string(*d) }

func (d *DryRunMode) Type() string { return "string" }

func (d *DryRunMode) Set(v string) error {
	switch v {
	case "none", "client", "server":
		*d = DryRunMode(v)
	case "true": // kubectl's old boolean form
		*d = "client"
	case "false":
		*d = "none"
	default:
		return fmt.Errorf(`must be "none", "server" or "client"`)
	}
	return nil
}

// AddDryRun registers --dry-run; alone it means client, as in kubectl.
func AddDryRun(cmd *cobra.Command, d *DryRunMode) {
	*d = "none"
	f := cmd.Flags().VarPF(d, "dry-run", "", `"client": only print what would be sent; "server": the API server checks it, stores nothing; "none": do it`)
	f.NoOptDefVal = "client"
}

// LastAppliedAnnotation is where apply keeps the manifest it last applied
// (kubectl's, so that kubectl and kobectl read each other's).
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
