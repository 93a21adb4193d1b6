package layering

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/kobune/kobune/"

var components = []string{"apiserver", "scheduler", "controller", "agent", "csi", "ingress"}

// allowed says which of the module's top-level folders code in each
// top-level folder may import (its own always).
var allowed = map[string][]string{
	"api":    {},
	"proto":  {},
	"client": {"api", "proto"},
	// The components: the layers below, never each other.
	"apiserver":  {"api", "proto", "client"},
	"scheduler":  {"api", "proto", "client"},
	"controller": {"api", "proto", "client"},
	"agent":      {"api", "proto", "client"},
	// Kobune's CSI driver and provisioner: they reach the agent only
	// through the CSI gRPC services.
	"csi": {"api", "proto", "client"},
	// kobune-ingress, the ingress controller: a client of the API like
	// any third-party controller.
	"ingress": {"api", "client"},
	// kobectl: the API's types and the client; the wire format (proto) stays
	// behind the client, so the API's transport can change beneath kobectl.
	"ctl": {"api", "client"},
	// kobeadm, the installer: like kobectl, a client of the API (and of
	// the machine it installs on).
	"installer": {"api", "client"},
	// Mains wire one component each.
	"cmd": {"api", "proto", "client", "apiserver", "scheduler", "controller", "agent", "csi", "ingress", "ctl", "installer"},
	// deploy: the test images use the API's types; the example operator
	// (deploy/examples/website-operator) is a client of the API like any
	// third-party controller.
	"deploy": {"api", "client"},
	// Generators in modules of their own (tools/k8sapi reads k8s.io/api
	// and writes api/k8sapi's table).
	"tools": {"api"},
}

func root(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}

// TestLayering parses every non-test Go file and checks its imports of the
// module's own packages against the rule.
func TestLayering(t *testing.T) {
	base := root(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || rel == "test" || strings.HasPrefix(rel, "test"+string(filepath.Separator)) || d.Name() == "testdata" {
				return filepath.SkipDir // tests may import what they exercise
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		top := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		ok, known := allowed[top]
		if !known {
			t.Errorf("%s: top-level folder %q is not in the layering rule", rel, top)
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			to := strings.SplitN(strings.TrimPrefix(p, module), "/", 2)[0]
			if to == top || contains(ok, to) {
				continue
			}
			t.Errorf("%s imports %s: %s may import only %v (see docs/architecture.md)", rel, p, top, ok)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files; is the walk rooted at the repository?", checked)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestKobectlLinksNoServer: kobectl is a client; it must not drag in etcd's
// server or containerd (before issue #10 it linked 596 packages, 28 MB,
// through one version string).
func TestKobectlLinksNoServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"cmd/kobectl").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, d := range deps {
		for _, bad := range []string{"go.etcd.io/etcd/server", "github.com/containerd/", module + "apiserver", module + "scheduler", module + "controller", module + "agent"} {
			if strings.HasPrefix(d, bad) {
				t.Errorf("kobectl depends on %s", d)
			}
		}
	}
	t.Logf("kobectl links %d packages", len(deps))
}
