package network

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// host-local keeps one file per address, named after it, holding the
// container ID and the interface (joined by "\r\n"), plus a lock and the
// last reserved address: only the address files name sandboxes.
func TestAllocatedSandboxes(t *testing.T) {
	state := t.TempDir()
	if ids, err := AllocatedSandboxes(state); err != nil || len(ids) != 0 {
		t.Fatalf("no allocations yet: %v %v", ids, err)
	}
	dir := filepath.Join(state, "ipam", "kobune")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"10.244.1.2":         "aaaaaaaaaaaa\r\neth0",
		"10.244.1.3":         "bbbbbbbbbbbb\r\neth0",
		"lock":               "",
		"last_reserved_ip.0": "10.244.1.3",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := AllocatedSandboxes(state)
	slices.Sort(ids)
	if err != nil || !slices.Equal(ids, []string{"aaaaaaaaaaaa", "bbbbbbbbbbbb"}) {
		t.Errorf("sandboxes %v (%v)", ids, err)
	}
}
