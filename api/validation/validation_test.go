package validation

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/meta"
)

func TestNames(t *testing.T) {
	tests := []struct {
		name      string
		label     bool // valid DNS-1123 label
		subdomain bool // valid DNS-1123 subdomain
	}{
		{"web", true, true},
		{"web-1", true, true},
		{"a.b.c", false, true},
		{"Web", false, false},
		{"-web", false, false},
		{"web-", false, false},
		{"web_1", false, false},
		{"", false, false},
		{strings.Repeat("a", 63), true, true},
		{strings.Repeat("a", 64), false, true},
		{strings.Repeat("a", 254), false, false},
	}
	for _, tt := range tests {
		if got := IsDNS1123Label(tt.name) == ""; got != tt.label {
			t.Errorf("IsDNS1123Label(%q) valid = %v, want %v", tt.name, got, tt.label)
		}
		if got := IsDNS1123Subdomain(tt.name) == ""; got != tt.subdomain {
			t.Errorf("IsDNS1123Subdomain(%q) valid = %v, want %v", tt.name, got, tt.subdomain)
		}
	}
}

func TestObjectMetaErrorsNameTheField(t *testing.T) {
	m := &meta.ObjectMeta{
		Name:   "Bad_Name",
		Labels: map[string]string{"app": "-x", "bad key!": "v"},
	}
	errs := ValidateObjectMeta(m, true, IsDNS1123Subdomain, NewPath("metadata"))
	got := errs.ToError().Error()
	for _, want := range []string{
		`metadata.name: Invalid value: "Bad_Name"`,
		"metadata.namespace: Required value",
		`metadata.labels[app]: Invalid value: "-x"`,
		`metadata.labels: Invalid value: "bad key!"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %q do not contain %q", got, want)
		}
	}
}

func TestPath(t *testing.T) {
	p := NewPath("spec", "template").Child("spec").Child("containers").Index(2).Child("resources", "requests").Key("cpu")
	if got, want := p.String(), "spec.template.spec.containers[2].resources.requests[cpu]"; got != want {
		t.Errorf("path = %s, want %s", got, want)
	}
}

// The hand-written check must accept exactly what Kubernetes' relaxed rule
// does: printable ASCII but '='.
func TestIsEnvVarNameMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(`^[ -<>-~]+$`)
	for _, s := range []string{"", "A", "a1", "1a", "_x", "-x", ".x", "MY_VAR.2-b", "a b", "a=b", "ü", "x$", "9", "a\n", "~", "\x7f", "p:"} {
		if got, want := IsEnvVarName(s) == "", re.MatchString(s); got != want {
			t.Errorf("IsEnvVarName(%q) valid = %v, pattern says %v", s, got, want)
		}
	}
}
