package apiserver_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestPodCertificateRequests: a request binds a pod, its ServiceAccount
// and node and a stub request whose signature proves the key; its spec
// never changes; a signer's answer is one terminal condition, and an
// issued chain must be for the request's key with its times in status —
// after which nothing changes. A node may ask only for a pod bound to it.
// Pods' podCertificate projections are held to Kubernetes' lifetime
// bounds, in its words.
func TestPodCertificateRequests(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	stub, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, priv)
	day := int32(86400)
	request := func(node string) *certificates.PodCertificateRequest {
		return &certificates.PodCertificateRequest{ObjectMeta: meta.ObjectMeta{GenerateName: "pcr-", Namespace: "default"},
			Spec: certificates.PodCertificateRequestSpec{SignerName: "example.com/pods", PodName: "app", PodUID: "uid-1",
				ServiceAccountName: "default", ServiceAccountUID: "sa-uid", NodeName: node, NodeUID: "node-uid",
				MaxExpirationSeconds: &day, StubPKCS10Request: stub}}
	}
	pcrs := client.For[*certificates.PodCertificateRequest](s.Client)
	r, err := pcrs.Create(ctx, request("node-1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		change func(*certificates.PodCertificateRequest)
		want   string
	}{
		{func(r *certificates.PodCertificateRequest) { r.Spec.StubPKCS10Request = []byte("junk") }, "spec.stubPKCS10Request: Invalid value"},
		{func(r *certificates.PodCertificateRequest) {
			long := int32(92 * 86400)
			r.Spec.MaxExpirationSeconds = &long
		}, "spec.maxExpirationSeconds: Invalid value: 7948800: must be in the range [3600, 7862400]"},
		{func(r *certificates.PodCertificateRequest) { r.Spec.SignerName = "no-slash" }, "spec.signerName: Invalid value"},
	} {
		req := request("node-1")
		bad.change(req)
		if _, err := pcrs.Create(ctx, req); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("create: %v; want %q", err, bad.want)
		}
	}
	changed := *r
	changed.Spec.PodName = "other"
	if _, err := pcrs.Update(ctx, &changed); err == nil || !strings.Contains(err.Error(), "spec: Invalid value: \"\": field is immutable") {
		t.Errorf("changing the spec: %v", err)
	}
	// The signer's answer.
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true}
	now := time.Now().Truncate(time.Second)
	issue := func(key any, life time.Duration) certificates.PodCertificateRequestStatus {
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: now, NotAfter: now.Add(life)}, ca, key, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return certificates.PodCertificateRequestStatus{
			Conditions:       []meta.Condition{{Type: certificates.PodCertificateIssued, Status: meta.ConditionTrue, Reason: "Signed", Message: "ok", LastTransitionTime: meta.NewTime(now)}},
			CertificateChain: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			NotBefore:        &meta.Time{Time: now}, NotAfter: &meta.Time{Time: now.Add(life)}, BeginRefreshAt: &meta.Time{Time: now.Add(life / 2)}}
	}
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	for _, bad := range []struct {
		status certificates.PodCertificateRequestStatus
		want   string
	}{
		{issue(otherPub, 2*time.Hour), "leaf certificate was not issued to the requested public key"},
		{issue(pub, 30*time.Minute), "leaf certificate lifetime must be >= 1 hour"},
		{issue(pub, 48*time.Hour), "leaf certificate lifetime must be <= spec.maxExpirationSeconds (86400)"},
		{certificates.PodCertificateRequestStatus{Conditions: []meta.Condition{{Type: "Approved", Status: meta.ConditionTrue, Reason: "R", LastTransitionTime: meta.NewTime(now)}}}, `status.conditions[0].type: Unsupported value: "Approved"`},
	} {
		r.Status = bad.status
		if _, err := pcrs.UpdateStatus(ctx, r); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("status: %v; want %q", err, bad.want)
		}
	}
	r.Status = issue(pub, 2*time.Hour)
	issued, err := pcrs.UpdateStatus(ctx, r)
	if err != nil {
		t.Fatalf("issue: %v", err)
	}
	issued.Status.Conditions[0].Message = "changed my mind"
	if _, err := pcrs.UpdateStatus(ctx, issued); err == nil || !strings.Contains(err.Error(), "immutable after PodCertificateRequest is issued") {
		t.Errorf("changing an issued request: %v", err)
	}
	// A fresh request has a status to patch (a JSON patch adds to it).
	fresh, err := pcrs.Create(ctx, request("node-1"))
	if err != nil {
		t.Fatal(err)
	}
	rc := newRESTClient(t, s.admin, s.Addr())
	deny := `[{"op":"add","path":"/status/conditions","value":[{"type":"Denied","status":"True","reason":"Policy","message":"no","lastTransitionTime":"2026-12-07T00:00:00Z"}]}]`
	if code, _, b := rc.do("PATCH", "/apis/certificates.k8s.io/v1/namespaces/default/podcertificaterequests/"+fresh.Name+"/status", "", deny, "Content-Type", "application/json-patch+json"); code != 200 {
		t.Errorf("a JSON patch adding a condition to a fresh request: %d %s", code, b)
	}
	// A node asks only for pods bound to it.
	if _, err := client.For[*core.Pod](s.Client).Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "node-2", Containers: []core.Container{{Name: "c", Image: "i"}}}}); err != nil {
		t.Fatal(err)
	}
	n1 := client.For[*certificates.PodCertificateRequest](s.as(t, "system:node:node-1", "system:nodes"))
	if _, err := n1.Create(ctx, request("node-2")); err == nil || !strings.Contains(err.Error(), "naming itself in spec.nodeName") {
		t.Errorf("node-1 asking in node-2's name: %v", err)
	}
	if _, err := n1.Create(ctx, request("node-1")); err == nil || !strings.Contains(err.Error(), "for a pod bound to it") {
		t.Errorf("node-1 asking for node-2's pod: %v", err)
	}
	// Pods: the projection's lifetime bounds, in Kubernetes' words.
	for secs, want := range map[int32]string{3599: "if provided, maxExpirationSeconds must be >= 3600", 91*86400 + 1: "if provided, maxExpirationSeconds must be <= 7862400"} {
		p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "certs", Namespace: "default"}, Spec: core.PodSpec{Containers: []core.Container{{Name: "c", Image: "i"}},
			Volumes: []core.Volume{{Name: "tls", VolumeSource: core.VolumeSource{Projected: &core.ProjectedVolumeSource{Sources: []core.VolumeProjection{{
				PodCertificate: &core.PodCertificateProjection{SignerName: "example.com/pods", KeyType: "ED25519", MaxExpirationSeconds: &secs, CredentialBundlePath: "b.pem"}}}}}}}}}
		if _, err := client.For[*core.Pod](s.Client).Create(ctx, p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a pod asking for %d s: %v; want %q", secs, err, want)
		}
	}
}
