package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// apiserverFloors says which of the API server's own packages each of its
// packages may import, floor by floor (docs/architecture.md, "Inside the
// API server"): the front ends (rest, grpcapi) call the registry and the
// node proxy and never each other; the registry calls storage through
// admission; storage and etcd know nothing above them. The root package
// wires them all (apiserver/server.go) and is the only one that may.
var apiserverFloors = map[string][]string{
	// The ground: no other API server package.
	"storage": {}, "etcd": {}, "request": {}, "audit": {}, "encryption": {},
	"filters": {}, "serviceaccount": {},
	"apierrors":  {"storage"},
	"admission":  {"request"},
	"authorizer": {"request"},
	// What happens to an object: allocation and the generic verbs.
	"servicealloc": {"storage", "admission"},
	"registry":     {"storage", "apierrors", "request", "admission", "servicealloc"},
	// Calling out to users' webhooks (admission and conversion).
	"webhook": {"storage", "registry"},
	// CustomResourceDefinitions: kinds served through the registry.
	"apiextensions": {"storage", "registry", "admission", "webhook"},
	// Dynamic admission: webhooks and policies, steps of the chain that
	// users configure.
	"dynamicadmission": {"storage", "registry", "admission", "apierrors", "request", "webhook"},
	// Beside the registry: who is asking, how much of the server they get,
	// and the way to the nodes.
	"authentication": {"storage", "apierrors", "request", "authorizer", "serviceaccount", "registry"},
	"authorization":  {"storage", "apierrors", "request", "authorizer", "admission", "registry"},
	// The way to the nodes passes admission: attach, exec and port-forward
	// are CONNECT requests to the chain.
	"nodeproxy":   {"storage", "apierrors", "registry", "admission", "request"},
	"flowcontrol": {"storage", "request", "registry"},
	// The two front ends.
	"rest":    {"apierrors", "request", "filters", "registry", "nodeproxy"},
	"grpcapi": {"filters", "registry", "nodeproxy"},
	// Tests' helper: the whole server.
	"testserver": {""},
}

// kobectlFloors says which of kobectl's packages each may import: every
// verb family stands on cmdutil, a few on one other family
// (create prints as get does, rollout shows a template as describe does,
// delete waits as wait does), and none imports the root package, which
// assembles the command tree — kubectl's pkg/cmd/<verb> on pkg/cmd/util.
var kobectlFloors = map[string][]string{
	"cmdutil": {},
	"apply":   {"cmdutil"}, "auth": {"cmdutil"}, "config": {"cmdutil"}, "drain": {"cmdutil"},
	"explain": {"cmdutil"}, "explainpath": {"cmdutil"}, "pki": {"cmdutil"}, "podio": {"cmdutil"},
	"token": {"cmdutil"}, "top": {"cmdutil"},
	"get":      {"cmdutil"},
	"describe": {"cmdutil"},
	"wait":     {"cmdutil"},
	"create":   {"cmdutil", "get"},
	"rollout":  {"cmdutil", "describe"},
	"delete":   {"cmdutil", "wait"},
}

// TestAPIServerFloors checks every API server package's imports of its
// siblings against apiserverFloors; a new package must be placed there.
func TestAPIServerFloors(t *testing.T) { checkFloors(t, "apiserver", apiserverFloors) }

// TestKobectlFloors checks kobectl's packages against kobectlFloors; a new
// package must be placed there.
func TestKobectlFloors(t *testing.T) { checkFloors(t, "ctl", kobectlFloors) }

// checkFloors holds the packages under top to floors: each may import
// only the siblings listed for it, and none the root package ("" in a
// list allows it), which wires them all.
func checkFloors(t *testing.T, top string, floors map[string][]string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, module+top+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	base := module + top
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		if pkg == base {
			continue // the root wires everything
		}
		name := strings.TrimPrefix(pkg, base+"/")
		allowed, ok := floors[name]
		if !ok {
			t.Errorf("%s/%s is not placed on a floor in test/layering/floors_test.go: say which packages it stands on", top, name)
			continue
		}
		checked++
		for _, imp := range strings.Fields(imports) {
			to, sibling := strings.CutPrefix(imp, base+"/")
			if imp == base {
				to, sibling = "", true
			}
			if sibling && !contains(allowed, to) {
				t.Errorf("%s/%s imports %s: it may import only %q of %s's packages", top, name, imp, allowed, top)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d packages under %s", checked, top)
	}
}
