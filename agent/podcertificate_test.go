package agent_test

import (
	"crypto/ecdsa"
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

// TestPodCertificateProjection: a projected podCertificate source makes
// the pod wait until a signer issues the PodCertificateRequest the agent
// sends (its stub request signed by a key of the asked type, for the pod,
// its ServiceAccount and its node, with the lifetime asked for); then the
// key and the chain are in the pod's volume, the key matching the
// certificate. A denied request is the volume's error, named.
func TestPodCertificateProjection(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	if _, err := client.For[*core.ServiceAccount](s.Client).Create(ctx, &core.ServiceAccount{ObjectMeta: meta.ObjectMeta{Name: "default", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	podDir := t.TempDir()
	cfg := agent.Config{LeaseInterval: 200 * time.Millisecond, DisableProbes: true, Logf: t.Logf, PodDir: podDir}
	cfg.Node = node.Config{Name: "node-1", Capacity: mustResources(t, "cpu=4,memory=8Gi,pods=110"), PodCIDR: "10.244.1.0/24"}
	defer runAgent(t, ctx, cfg, s, rt)()

	// A signer for example.com/pods: issues what it is asked, at the
	// lifetime asked for; denies what is asked of example.com/deny.
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour)}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	ca, _ := x509.ParseCertificate(caDER)
	pcrs := client.For[*certificates.PodCertificateRequest](s.Client)
	asked := make(chan *certificates.PodCertificateRequest, 10)
	go func() {
		for ctx.Err() == nil {
			list, _, _ := pcrs.List(ctx, "default", client.ListOptions{})
			for _, r := range list {
				if r.Condition() != nil {
					continue
				}
				now := time.Now().Truncate(time.Second)
				if r.Spec.SignerName == "example.com/deny" {
					r.Status.Conditions = []meta.Condition{{Type: certificates.PodCertificateDenied, Status: meta.ConditionTrue, Reason: "Policy", Message: "not this pod", LastTransitionTime: meta.NewTime(now)}}
				} else {
					req, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
					if err != nil {
						t.Errorf("stub request: %v", err)
						return
					}
					notAfter := now.Add(time.Duration(*r.Spec.MaxExpirationSeconds) * time.Second)
					der, _ := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: now, NotAfter: notAfter}, ca, req.PublicKey, caKey)
					r.Status = certificates.PodCertificateRequestStatus{
						Conditions:       []meta.Condition{{Type: certificates.PodCertificateIssued, Status: meta.ConditionTrue, Reason: "Signed", Message: "ok", LastTransitionTime: meta.NewTime(now)}},
						CertificateChain: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})),
						NotBefore:        ptr(meta.NewTime(now)), NotAfter: ptr(meta.NewTime(notAfter)), BeginRefreshAt: ptr(meta.NewTime(notAfter.Add(-30 * time.Minute)))}
				}
				if _, err := pcrs.UpdateStatus(ctx, r); err != nil {
					if ctx.Err() == nil { // not the test ending meanwhile
						t.Errorf("issue %s: %v", r.Name, err)
					}
					return
				}
				asked <- r
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	pods := client.For[*core.Pod](s.Client)
	withCert := func(name, signer string) *core.Pod {
		hour := int32(3600)
		return &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}, Spec: core.PodSpec{NodeName: "node-1",
			Volumes: []core.Volume{{Name: "tls", VolumeSource: core.VolumeSource{Projected: &core.ProjectedVolumeSource{Sources: []core.VolumeProjection{{
				PodCertificate: &core.PodCertificateProjection{SignerName: signer, KeyType: "ECDSAP256", MaxExpirationSeconds: &hour,
					CredentialBundlePath: "bundle.pem", CertificateChainPath: "chain.pem"}}}}}}},
			Containers: []core.Container{{Name: "app", Image: "busybox", VolumeMounts: []core.VolumeMount{{Name: "tls", MountPath: "/run/tls"}}}}}}
	}
	created, err := pods.Create(ctx, withCert("secured", "example.com/pods"))
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "secured", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	r := <-asked
	if r.Spec.PodName != "secured" || r.Spec.PodUID != created.UID || r.Spec.NodeName != "node-1" || r.Spec.NodeUID == "" ||
		r.Spec.ServiceAccountName != "default" || r.Spec.ServiceAccountUID == "" || *r.Spec.MaxExpirationSeconds != 3600 {
		t.Errorf("the request the agent sent: %+v", r.Spec)
	}
	c, _ := rt.Config(created.UID, "app")
	bundle, err := os.ReadFile(filepath.Join(c.Mounts[0].Source, "bundle.pem"))
	if err != nil {
		t.Fatal(err)
	}
	keyBlock, rest := pem.Decode(bundle)
	leafBlock, _ := pem.Decode(rest)
	if keyBlock == nil || keyBlock.Type != "PRIVATE KEY" || leafBlock == nil || leafBlock.Type != "CERTIFICATE" {
		t.Fatalf("bundle.pem is not a key and a chain:\n%s", bundle)
	}
	key, err := x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	leaf, err2 := x509.ParseCertificate(leafBlock.Bytes)
	if err != nil || err2 != nil {
		t.Fatalf("parse the bundle: %v %v", err, err2)
	}
	if k, ok := key.(*ecdsa.PrivateKey); !ok || !k.PublicKey.Equal(leaf.PublicKey) {
		t.Errorf("the key in the bundle is not the certificate's (%T)", key)
	}
	if chain, _ := os.ReadFile(filepath.Join(c.Mounts[0].Source, "chain.pem")); strings.Count(string(chain), "BEGIN CERTIFICATE") != 2 || strings.Contains(string(chain), "PRIVATE KEY") {
		t.Errorf("chain.pem:\n%s", chain)
	}
	// Denied: the volume's error says so, and the pod waits.
	if _, err := pods.Create(ctx, withCert("refused", "example.com/deny")); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		events, _, _ := client.For[*core.Event](s.Client).List(ctx, "default", client.ListOptions{})
		found := false
		for _, e := range events {
			found = found || e.Reason == "FailedMount" && strings.Contains(e.Message, "was Denied by signer example.com/deny: Policy: not this pod")
		}
		if found {
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("no FailedMount event naming the denial")
		}
	}
	if p, _ := pods.Get(ctx, "default", "refused"); p.Status.Phase != core.PodPending {
		t.Errorf("a pod whose certificate was denied: %s", p.Status.Phase)
	}
	for _, name := range []string{"secured", "refused"} {
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
