package apiserver_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
)

// TestAdmissionChainOrder: the admission chain of a server as the lab
// runs it (RBAC and the node authorizer on) runs its steps in the order
// docs/architecture.md shows — the one list a student reads is the one
// the server runs.
func TestAdmissionChainOrder(t *testing.T) {
	dir := t.TempDir()
	s, err := testserver.StartSecure(filepath.Join(dir, "etcd"), testserver.StableAddr(), filepath.Join(dir, "pki"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	mutating, validating := s.AdmissionOrder()

	section := architectureSection(t, "## The admission chain", "## The reconcile contract")
	row := regexp.MustCompile(`(?m)^\| \d+ \| (\w+) \| (mutating|validating) \|`)
	var docM, docV []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		if m[2] == "mutating" {
			docM = append(docM, m[1])
		} else {
			docV = append(docV, m[1])
		}
	}
	if !slices.Equal(mutating, docM) {
		t.Errorf("mutating steps:\n the server runs %v\n the docs show   %v", mutating, docM)
	}
	if !slices.Equal(validating, docV) {
		t.Errorf("validating steps:\n the server runs %v\n the docs show   %v", validating, docV)
	}
	if len(mutating) == 0 || mutating[0] != "Defaulting" || validating[len(validating)-1] != "ResourceQuota" {
		t.Errorf("Defaulting must come first and ResourceQuota last: %v, %v", mutating, validating)
	}
}

// TestHandlerChainOrder: the filters every request passes, REST or gRPC,
// are the ones docs/architecture.md lists, in its order.
func TestHandlerChainOrder(t *testing.T) {
	s := testserver.New(t)
	section := architectureSection(t, "## The handler chain", "## The admission chain")
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^\| \d+ \| (\w+) \|`).FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	if got := s.Server.HandlerChain(); !slices.Equal(got, documented) {
		t.Errorf("handler chain:\n the server runs %v\n the docs show   %v", got, documented)
	}
}

// TestStartStepsDocumented: New's steps are the ones docs/architecture.md
// lists under "Inside the API server", in its order.
func TestStartStepsDocumented(t *testing.T) {
	section := architectureSection(t, "## Inside the API server", "## The handler chain")
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^\| \d+ \| (.+) \|$`).FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	if got := apiserver.StartSteps(); !slices.Equal(got, documented) {
		t.Errorf("New's steps:\n the server runs %q\n the docs show   %q", got, documented)
	}
}

// architectureSection is docs/architecture.md from the heading start to
// the heading end.
func architectureSection(t *testing.T, start, end string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	i := strings.Index(section, start)
	if i < 0 {
		t.Fatalf("docs/architecture.md has no %q section", start)
	}
	section = section[i:]
	if j := strings.Index(section, end); j >= 0 {
		section = section[:j]
	}
	return section
}
