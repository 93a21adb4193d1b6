package runtime

import (
	"context"
	"slices"
	"testing"

	"github.com/kobune/kobune/agent/network"
)

// recordingNetwork is a node's network with a fixed set of sandboxes; it
// records what is torn down.
type recordingNetwork struct {
	network.Network
	sandboxes []string
	torn      []string
}

func (n *recordingNetwork) Sandboxes() ([]string, error) { return n.sandboxes, nil }

func (n *recordingNetwork) Teardown(_ context.Context, id string) error {
	n.torn = append(n.torn, id)
	return nil
}

// The sandboxes of pods the agent knows (listed in the API or running) are
// kept; the others — left by an agent killed between CNI ADD and its first
// container — are torn down, which releases their address and namespace.
func TestRemoveOrphanSandboxes(t *testing.T) {
	net := &recordingNetwork{sandboxes: []string{"aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"}}
	r := &Containerd{network: net}
	keep := map[string]bool{"aaaaaaaaaaaa-1111-2222-3333-444444444444": true, "cccccccccccc-5555-6666-7777-888888888888": true}
	removed, err := r.RemoveOrphanSandboxes(context.Background(), keep)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{"bbbbbbbbbbbb"}) || !slices.Equal(net.torn, removed) {
		t.Errorf("removed %v, torn down %v; want only bbbbbbbbbbbb", removed, net.torn)
	}
}
