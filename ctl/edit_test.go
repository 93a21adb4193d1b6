package ctl_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestDiffAndEdit: diff shows what apply would change (exit 1) or nothing
// (exit 0) and changes nothing; edit stores what the editor wrote, cancels
// when nothing changed, and keeps the file when the server refuses it.
func TestDiffAndEdit(t *testing.T) {
	s := testserver.New(t)
	ctx := context.Background()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: site}\ndata: {color: blue, size: '3'}\n"
	if r := kobectl(t, s, cm, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := kobectl(t, s, cm, "diff", "-f", "-"); r.code != 0 || r.stdout != "" {
		t.Errorf("diff of the live state: %+v, want exit 0 and nothing", r)
	}
	changed := strings.Replace(cm, "blue", "green", 1) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: fresh}\ndata: {a: b}\n"
	r := kobectl(t, s, changed, "diff", "-f", "-")
	if r.code != 1 || !regexp.MustCompile(`(?m)^-\s+color: blue$`).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^\+\s+color: green$`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "+++ ") || !regexp.MustCompile(`(?m)^\+\s+a: b$`).MatchString(r.stdout) {
		t.Errorf("diff of a change and a new object: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cms := client.For[*core.ConfigMap](s.Client)
	if got, _ := cms.Get(ctx, "default", "site"); got.Data["color"] != "blue" {
		t.Errorf("diff changed the object: %v", got.Data)
	}
	if _, err := cms.Get(ctx, "default", "fresh"); !client.IsNotFound(err) {
		t.Errorf("diff created an object: %v", err)
	}
	if r := kobectl(t, s, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndatta: {}\n", "diff", "-f", "-"); r.code != 2 || !strings.Contains(r.stderr, "datta") {
		t.Errorf("diff of a typo: %+v, want exit 2 naming the field", r)
	}

	t.Setenv("KUBE_EDITOR", "sed -i s/blue/red/")
	if r := kobectl(t, s, "", "edit", "cm", "site"); r.code != 0 || r.stdout != "configmap/site edited\n" {
		t.Errorf("edit: %+v", r)
	}
	if got, _ := cms.Get(ctx, "default", "site"); got.Data["color"] != "red" || got.Data["size"] != "3" {
		t.Errorf("after edit: %v", got.Data)
	}
	t.Setenv("KUBE_EDITOR", "true")
	if r := kobectl(t, s, "", "edit", "configmap/site"); r.code != 0 || !strings.Contains(r.stderr, "Edit cancelled, no changes made.") {
		t.Errorf("edit without a change: %+v", r)
	}
	t.Setenv("KUBE_EDITOR", "sed -i s/^data:/dataa:/")
	r = kobectl(t, s, "", "edit", "cm", "site")
	m := regexp.MustCompile(`stored to "([^"]+)"`).FindStringSubmatch(r.stderr)
	if r.code == 0 || !strings.Contains(r.stderr, "dataa") || m == nil {
		t.Fatalf("edit with a typo: %+v", r)
	}
	if b, err := os.ReadFile(m[1]); err != nil || !strings.Contains(string(b), "dataa:") {
		t.Errorf("the refused edit's copy: %v %q", err, b)
	}
	os.Remove(m[1])
}
