package agent_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestClusterTrustBundleProjection: a projected clusterTrustBundle puts
// the bundle's certificates in the pod's volume; a bundle that does not
// exist keeps a pod whose projection is not optional from starting, its
// Ready condition saying which containers are not ready (the kubelet's
// words, which the conformance suite waits for), until it is created.
func TestClusterTrustBundleProjection(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "root"}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	bundles := client.For[*certificates.ClusterTrustBundle](s.Client)
	if _, err := bundles.Create(ctx, &certificates.ClusterTrustBundle{ObjectMeta: meta.ObjectMeta{Name: "example.com:signer:root"},
		Spec: certificates.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: ca}}); err != nil {
		t.Fatal(err)
	}
	podDir := t.TempDir()
	cfg := agent.Config{LeaseInterval: 200 * time.Millisecond, DisableProbes: true, Logf: t.Logf, PodDir: podDir}
	cfg.Node = node.Config{Name: "node-1", Capacity: mustResources(t, "cpu=4,memory=8Gi,pods=110"), PodCIDR: "10.244.1.0/24"}
	defer runAgent(t, ctx, cfg, s, rt)()
	pods := client.For[*core.Pod](s.Client)
	withBundle := func(name string, proj core.ClusterTrustBundleProjection) *core.Pod {
		proj.Path = "ca.pem"
		return &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}, Spec: core.PodSpec{NodeName: "node-1",
			Volumes: []core.Volume{{Name: "trust", VolumeSource: core.VolumeSource{Projected: &core.ProjectedVolumeSource{
				Sources: []core.VolumeProjection{{ClusterTrustBundle: &proj}}}}}},
			Containers: []core.Container{{Name: "app", Image: "busybox", VolumeMounts: []core.VolumeMount{{Name: "trust", MountPath: "/etc/trust"}}}}}}
	}
	signer := "example.com/signer"
	created, err := pods.Create(ctx, withBundle("by-signer", core.ClusterTrustBundleProjection{SignerName: &signer, LabelSelector: &meta.LabelSelector{}}))
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "by-signer", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	c, _ := rt.Config(created.UID, "app")
	if len(c.Mounts) != 1 {
		t.Fatalf("mounts: %+v", c.Mounts)
	}
	if b, err := os.ReadFile(filepath.Join(c.Mounts[0].Source, "ca.pem")); err != nil || string(b) != ca {
		t.Errorf("ca.pem = %q (%v), want the bundle's certificate", b, err)
	}
	missing := "example.com:signer:missing"
	if _, err := pods.Create(ctx, withBundle("waits", core.ClusterTrustBundleProjection{Name: &missing})); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "waits", 0, func(p *core.Pod, _ bool) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == core.PodReady {
				return p.Status.Phase == core.PodPending && c.Reason == "ContainersNotReady" && c.Message == "containers with unready status: [app]"
			}
		}
		return false
	})
	if _, err := bundles.Create(ctx, &certificates.ClusterTrustBundle{ObjectMeta: meta.ObjectMeta{Name: missing},
		Spec: certificates.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: ca}}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "waits", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	// Validation: the name follows the signer, the bundle holds certificates.
	for _, bad := range []struct {
		b    certificates.ClusterTrustBundle
		want string
	}{
		{certificates.ClusterTrustBundle{ObjectMeta: meta.ObjectMeta{Name: "other:name"}, Spec: certificates.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: ca}}, "must be named with prefix example.com:signer:"},
		{certificates.ClusterTrustBundle{ObjectMeta: meta.ObjectMeta{Name: "plain"}, Spec: certificates.ClusterTrustBundleSpec{TrustBundle: "not a certificate"}}, "spec.trustBundle: Invalid value"},
	} {
		if _, err := bundles.Create(ctx, &bad.b); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("create %s: %v; want %q", bad.b.Name, err, bad.want)
		}
	}
	// Deleted: their volumes (tmpfs mounts) go before the agent stops.
	for _, name := range []string{"by-signer", "waits"} {
		if err := pods.Delete(ctx, "default", name, client.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
			t.Fatal(err)
		}
	}
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if left, _ := os.ReadDir(podDir); len(left) == 0 {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the pods' directories are still there")
		}
	}
}
