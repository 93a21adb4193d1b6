package apiserver_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestCertificateSigningRequestApproval: certificatesigningrequests/NAME/
// approval reads as the request and writes its conditions (and labels and
// annotations) only — never the certificate; Approved and Denied exclude
// each other; requests are selected by spec.signerName; RBAC names the
// subresource.
func TestCertificateSigningRequestApproval(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "e2e"}}, priv)
	csrs := client.For[*certificates.CertificateSigningRequest](s.Client)
	for _, name := range []string{"one", "two"} {
		signer := map[string]string{"one": "example.com/e2e", "two": "example.com/other"}[name]
		if _, err := csrs.Create(ctx, &certificates.CertificateSigningRequest{ObjectMeta: meta.ObjectMeta{Name: name},
			Spec: certificates.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
				SignerName: signer, Usages: []string{"client auth"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if list, _, err := csrs.List(ctx, "", client.ListOptions{FieldSelector: "spec.signerName=example.com/e2e"}); err != nil || len(list) != 1 || list[0].Name != "one" {
		t.Errorf("selected by spec.signerName: %v %v", len(list), err)
	}
	c := newRESTClient(t, s.admin, s.Addr())
	const path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/one/approval"
	if code, _, b := c.do("GET", path, "", ""); code != http.StatusOK || !strings.Contains(string(b), `"kind":"CertificateSigningRequest"`) {
		t.Errorf("get approval: %d %s", code, b)
	}
	merge := []string{"Content-Type", "application/merge-patch+json"}
	code, _, b := c.do("PATCH", path, "", `{"metadata":{"annotations":{"patchedapproval":"true"}},"status":{"certificate":"Ym9ndXM=","conditions":[{"type":"ApprovalPatch","status":"True","reason":"e2e"}]}}`, merge...)
	var got certificates.CertificateSigningRequest
	if err := json.Unmarshal(b, &got); code != http.StatusOK || err != nil || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != "ApprovalPatch" ||
		got.Annotations["patchedapproval"] != "true" || len(got.Status.Certificate) != 0 {
		t.Errorf("patch approval: %d %s (the certificate must not come through it)", code, b)
	}
	got.Status.Conditions = append(got.Status.Conditions, certificates.Condition{Type: certificates.Approved, Status: "True", Reason: "E2E"})
	body, _ := json.Marshal(got)
	if code, _, b := c.do("PUT", path, "", string(body)); code != http.StatusOK || !strings.Contains(string(b), `"type":"Approved"`) {
		t.Errorf("put approval: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", path, "", `{"status":{"conditions":[{"type":"Approved","status":"True"},{"type":"Denied","status":"True"}]}}`, merge...); code != 422 || !strings.Contains(string(b), "mutually exclusive") {
		t.Errorf("approved and denied: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", path, "", `{"status":{}}`, append(merge, "Impersonate-User", "dev")...); code != 403 || !strings.Contains(string(b), `certificatesigningrequests/approval`) {
		t.Errorf("patch approval as dev: %d %s", code, b)
	}
	if code, _, b := c.do("GET", "/apis/certificates.k8s.io/v1", "", ""); code != http.StatusOK || !strings.Contains(string(b), `"name":"certificatesigningrequests/approval"`) {
		t.Errorf("discovery: %d %s", code, b)
	}
}
