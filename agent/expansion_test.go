package agent

import "testing"

// $(VAR) expansion as the kubelet does it (Kubernetes' expansion tests'
// cases): known variables replaced, unknown ones and unclosed references
// kept, $$ a literal $.
func TestExpand(t *testing.T) {
	vars := envLookup([]string{"FOO=foo-value", "BAR=bar-value", "EMPTY="})
	for in, want := range map[string]string{
		"":                          "",
		"plain":                     "plain",
		"$(FOO)":                    "foo-value",
		"$(FOO)-$(BAR)":             "foo-value-bar-value",
		"$(UNKNOWN)":                "$(UNKNOWN)",
		"$(EMPTY)x":                 "x",
		"$$(FOO)":                   "$(FOO)",
		"$$$(FOO)":                  "$foo-value",
		"$(FOO":                     "$(FOO",
		"a$b":                       "a$b",
		"trailing$":                 "trailing$",
		"$()":                       "$()",
		"echo $(FOO) && echo $HOME": "echo foo-value && echo $HOME",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}
