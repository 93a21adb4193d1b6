package apiserver_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

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

	doc, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	if i := strings.Index(section, "## The admission chain"); i >= 0 {
		section = section[i:]
	}
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
	doc, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	if i := strings.Index(section, "## The handler chain"); i >= 0 {
		section = section[i:]
	}
	if i := strings.Index(section, "## The admission chain"); i >= 0 {
		section = section[:i]
	}
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^\| \d+ \| (\w+) \|`).FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	if got := s.Server.HandlerChain(); !slices.Equal(got, documented) {
		t.Errorf("handler chain:\n the server runs %v\n the docs show   %v", got, documented)
	}
}
