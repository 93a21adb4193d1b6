package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/kobune/kobune/api/authorization"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestServiceAccountIssuerDiscovery: the issuer's OIDC discovery document
// names it and its key set; the key set verifies a ServiceAccount token
// by its kid; reading them takes the system:service-account-issuer-
// discovery role; a TokenReview of a pod-bound token says, besides the
// user, the token's id and its pod and node.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	createNodes(t, ctx, s.Client, "node-1")
	if _, err := client.For[*core.ServiceAccount](s.Client).Create(ctx, &core.ServiceAccount{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	pod, err := client.For[*core.Pod](s.Client).Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: core.PodSpec{NodeName: "node-1", Containers: []core.Container{{Name: "app", Image: "i"}}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Client.CreateToken(ctx, "default", "default", authorization.TokenRequestSpec{Audiences: []string{"oidc-test"},
		BoundObjectRef: &authorization.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: pod.UID}})
	if err != nil {
		t.Fatal(err)
	}
	c := newRESTClient(t, s.admin, s.Addr())
	code, _, b := c.do("GET", "/.well-known/openid-configuration", "", "")
	var doc struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.Unmarshal(b, &doc); code != http.StatusOK || err != nil || doc.Issuer == "" || !strings.HasSuffix(doc.JWKSURI, "/openid/v1/jwks") || len(doc.Algs) != 1 || doc.Algs[0] != "ES256" {
		t.Fatalf("discovery document: %d %s", code, b)
	}
	code, _, b = c.do("GET", "/openid/v1/jwks", "", "")
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal(b, &keys); code != http.StatusOK || err != nil || len(keys.Keys) == 0 {
		t.Fatalf("key set: %d %s", code, b)
	}
	tok, err := jwt.ParseSigned(st.Token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	kid := tok.Headers[0].KeyID
	var claims jwt.Claims
	if found := keys.Key(kid); kid == "" || len(found) != 1 || tok.Claims(found[0].Key, &claims) != nil || claims.Issuer != doc.Issuer {
		t.Errorf("the token (kid %q) does not verify with the published key set (issuer %q, want %q)", kid, claims.Issuer, doc.Issuer)
	}
	// Not for everyone: the role is bound to no one by default.
	sa := newRESTClient(t, s.admin, s.Addr())
	if code, _, b := sa.do("GET", "/openid/v1/jwks", "", "", "Impersonate-User", "system:serviceaccount:default:default"); code != http.StatusForbidden {
		t.Errorf("a ServiceAccount without the discovery role: %d %s", code, b)
	}
	// A TokenReview says the token's id, pod and node.
	review, _ := json.Marshal(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": map[string]any{"token": st.Token, "audiences": []string{"oidc-test"}}})
	code, _, b = c.do("POST", "/apis/authentication.k8s.io/v1/tokenreviews", "", string(review))
	var tr authorization.TokenReview
	if err := json.Unmarshal(b, &tr); code != http.StatusCreated || err != nil || !tr.Status.Authenticated {
		t.Fatalf("token review: %d %s", code, b)
	}
	node, _ := client.For[*core.Node](s.Client).Get(ctx, "", "node-1")
	extra := tr.Status.User.Extra
	for k, want := range map[string]string{"pod-name": "web", "pod-uid": pod.UID, "node-name": "node-1", "node-uid": node.UID} {
		if got := extra["authentication.kubernetes.io/"+k]; len(got) != 1 || got[0] != want {
			t.Errorf("extra %s = %v, want [%s]", k, got, want)
		}
	}
	if id := extra["authentication.kubernetes.io/credential-id"]; len(id) != 1 || id[0] != "JTI="+claims.ID {
		t.Errorf("credential-id = %v, want [JTI=%s]", id, claims.ID)
	}
}
