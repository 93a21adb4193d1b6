package ctl_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/ctl"
)

// TestEveryCommandHasExamples: each kobectl command a user can run shows
// an Examples section in its --help, as kubectl's do.
func TestEveryCommandHasExamples(t *testing.T) {
	var missing []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Name() != "help" && !strings.HasPrefix(c.CommandPath(), "kobectl completion") && strings.TrimSpace(c.Example) == "" {
			missing = append(missing, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(ctl.NewCommand(&ctl.Options{}))
	if len(missing) > 0 {
		t.Errorf("commands without an Examples section in --help:\n  %s", strings.Join(missing, "\n  "))
	}
}

// TestCompletionOfTypesAndNames: the shell completion kobectl completion
// installs offers resource types, then the names of that type's objects.
func TestCompletionOfTypesAndNames(t *testing.T) {
	s := testserver.New(t)
	if r := kobectl(t, s, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: alpha}\n", "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "get", ""}, "\ndeployments\n"},
		{[]string{"__complete", "describe", "configmaps", ""}, "alpha\n"},
		{[]string{"__complete", "get", "cm/"}, "cm/alpha\n"},
		{[]string{"__complete", "delete", "configmap", ""}, "alpha\n"},
	} {
		if r := kobectl(t, s, "", tc.args...); r.code != 0 || !strings.Contains("\n"+r.stdout, tc.want) {
			t.Errorf("kobectl %s: %d %q, want %q", strings.Join(tc.args, " "), r.code, r.stdout, tc.want)
		}
	}
	if r := kobectl(t, s, "", "completion", "bash"); r.code != 0 || !strings.Contains(r.stdout, "__start_kobectl") {
		t.Errorf("completion bash: %d %.200s", r.code, r.stdout)
	}
}
