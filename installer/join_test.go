package installer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/installer"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestJoinDiscovery: kobeadm join's token discovery against a cluster as
// kobeadm init leaves it (cluster-info published, anonymous callers let
// in, the bootstrap signer running). The right token and CA hash find the
// cluster; a wrong hash, a wrong secret, an unknown token and an expired
// one are refused, each with what to do; a name a Ready node has is
// refused, a new name is not.
func TestJoinDiscovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{Nodes: 1, AnonymousAuth: true})
	caPEM, err := os.ReadFile(filepath.Join(cl.PKIDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	endpoint := cl.Addr()
	if err := installer.PublishClusterInfo(ctx, cl.Client, "https://"+endpoint, caPEM); err != nil {
		t.Fatal(err)
	}
	b, err := installer.CreateToken(ctx, cl.Client, time.Hour, "test")
	if err != nil {
		t.Fatal(err)
	}
	line, err := installer.JoinCommand(endpoint, b.Token(), caPEM)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(line) // kobeadm join ENDPOINT --token T --discovery-token-ca-cert-hash H
	if len(f) != 7 || f[2] != endpoint || f[4] != b.Token() || !strings.HasPrefix(f[6], "sha256:") || len(f[6]) != 71 {
		t.Fatalf("join command %q", line)
	}
	hash := f[6]

	server, ca, err := installer.DiscoverCluster(ctx, endpoint, b.Token(), []string{hash}, false, 10*time.Second)
	if err != nil || server != "https://"+endpoint || !bytes.Equal(ca, caPEM) {
		t.Fatalf("discovery with the right token and hash: %q, CA equal %v, %v", server, bytes.Equal(ca, caPEM), err)
	}

	wrongHash := "sha256:" + strings.Repeat("ab", 32)
	_, _, err = installer.DiscoverCluster(ctx, endpoint, b.Token(), []string{wrongHash}, false, 5*time.Second)
	if !errors.Is(err, installer.ErrCAHashMismatch) || !strings.Contains(err.Error(), hash) || !strings.Contains(err.Error(), "--print-join-command") {
		t.Errorf("a wrong CA hash: %v; want ErrCAHashMismatch naming the real hash and how to get it", err)
	}
	wrongSecret := b.ID + ".0123456789abcdef"
	if _, _, err = installer.DiscoverCluster(ctx, endpoint, wrongSecret, []string{hash}, false, 5*time.Second); !errors.Is(err, installer.ErrTokenNotValid) {
		t.Errorf("a wrong token secret: %v; want ErrTokenNotValid", err)
	}
	if _, _, err = installer.DiscoverCluster(ctx, endpoint, "zzzzzz.0123456789abcdef", []string{hash}, false, 2*time.Second); !errors.Is(err, installer.ErrTokenNotValid) || !strings.Contains(err.Error(), "token create") {
		t.Errorf("an unknown token: %v; want ErrTokenNotValid saying how to make one", err)
	}
	if _, _, err = installer.DiscoverCluster(ctx, endpoint, "not-a-token", []string{hash}, false, time.Second); err == nil || !strings.Contains(err.Error(), "--token") {
		t.Errorf("a malformed token: %v", err)
	}
	if _, _, err = installer.DiscoverCluster(ctx, endpoint, b.Token(), nil, false, time.Second); err == nil || !strings.Contains(err.Error(), "--discovery-token-ca-cert-hash is required") {
		t.Errorf("no CA hash: %v", err)
	}

	// A token that expires: refused once it has (its signature is gone).
	short, err := installer.CreateToken(ctx, cl.Client, 2*time.Second, "short")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := installer.DiscoverCluster(ctx, endpoint, short.Token(), []string{hash}, false, 10*time.Second); err != nil {
		t.Fatalf("a token before it expires: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, _, err = installer.DiscoverCluster(ctx, endpoint, short.Token(), []string{hash}, false, 0)
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !errors.Is(err, installer.ErrTokenNotValid) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired token: %v; want ErrTokenNotValid (expired)", err)
	}

	// The node name: node-1 is Ready (its agent runs).
	tc, err := client.NewFromConfig(client.Config{Server: server, CA: ca, Token: b.Token()})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if _, err := client.WaitFor(ctx, client.For[*core.Node](cl.Client), "", "node-1", 0, func(n *core.Node, _ bool) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == core.NodeReady && c.Status == "True" {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := installer.CheckNodeName(ctx, tc, "node-1", &out); !errors.Is(err, installer.ErrNodeNameTaken) || !strings.Contains(err.Error(), "--node-name") || !strings.Contains(err.Error(), "kobectl delete node node-1") {
		t.Errorf("joining as node-1, which is Ready: %v; want ErrNodeNameTaken saying what to do", err)
	}
	if err := installer.CheckNodeName(ctx, tc, "node-new", &out); err != nil {
		t.Errorf("joining as a new name: %v", err)
	}
	// token list and delete.
	out.Reset()
	if err := installer.ListTokens(ctx, cl.Client, &out); err != nil || !strings.Contains(out.String(), b.Token()) || !strings.Contains(out.String(), "authentication,signing") ||
		!strings.Contains(out.String(), "system:bootstrappers:kubeadm:default-node-token") {
		t.Errorf("token list: %v\n%s", err, out.String())
	}
	if err := installer.DeleteTokens(ctx, cl.Client, &out, []string{b.Token()}); err != nil {
		t.Error(err)
	}
	if err := installer.DeleteTokens(ctx, cl.Client, &out, []string{b.ID}); err == nil || !strings.Contains(err.Error(), "token list") {
		t.Errorf("deleting a token twice: %v", err)
	}
	if _, _, err := client.For[*core.Node](tc).List(ctx, "", client.ListOptions{}); err == nil {
		t.Error("a deleted token still authenticates")
	}
	// The token may read nodes, nothing else.
	tc2, err := client.NewFromConfig(client.Config{Server: server, CA: ca, Token: newToken(t, ctx, cl.Client)})
	if err != nil {
		t.Fatal(err)
	}
	defer tc2.Close()
	if _, _, err := client.For[*core.Secret](tc2).List(ctx, "kube-system", client.ListOptions{}); !client.IsForbidden(err) {
		t.Errorf("a join token lists Secrets: %v", err)
	}
}

func newToken(t *testing.T, ctx context.Context, cl *client.Client) string {
	b, err := installer.CreateToken(ctx, cl, time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	return b.Token()
}
