package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/authorization"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// TestServiceAccountTokens: ServiceAccount admission gives pods their
// ServiceAccount and a token volume; an agent gets tokens only for the
// ServiceAccounts of its own pods, bound to them; a token authenticates
// as system:serviceaccount:<ns>:<name> with no rights until a binding
// grants some; a token for another audience, of a deleted pod, or forged
// authenticates nobody.
func TestServiceAccountTokens(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := s.Client
	createNodes(t, ctx, admin, "node-1", "node-2")
	for _, name := range []string{"reader", "default"} {
		if _, err := client.For[*core.ServiceAccount](admin).Create(ctx, &core.ServiceAccount{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	pods := client.For[*core.Pod](admin)
	newPod := func(name, sa string, automount *bool) (*core.Pod, error) {
		return pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}, Spec: core.PodSpec{NodeName: "node-1",
			ServiceAccountName: sa, AutomountServiceAccountToken: automount, Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}})
	}
	web, err := newPod("web", "reader", nil)
	if err != nil {
		t.Fatal(err)
	}
	var tokenVolume string
	for _, v := range web.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil && v.Projected.Sources[0].ServiceAccountToken != nil {
			tokenVolume = v.Name
		}
	}
	if tokenVolume == "" || len(web.Spec.Containers[0].VolumeMounts) != 1 || web.Spec.Containers[0].VolumeMounts[0].MountPath != core.ServiceAccountTokenMountPath ||
		!web.Spec.Containers[0].VolumeMounts[0].ReadOnly {
		t.Errorf("pod web has no read-only token volume at %s: %+v %+v", core.ServiceAccountTokenMountPath, web.Spec.Volumes, web.Spec.Containers[0].VolumeMounts)
	}
	plain, err := newPod("plain", "", nil)
	if err != nil || plain.Spec.ServiceAccountName != "default" {
		t.Errorf("a pod naming no ServiceAccount: %v %q, want default", err, plain.Spec.ServiceAccountName)
	}
	no := false
	if quiet, err := newPod("quiet", "reader", &no); err != nil || len(quiet.Spec.Volumes) != 0 {
		t.Errorf("automountServiceAccountToken: false still mounts: %v %+v", err, quiet.Spec.Volumes)
	}
	if _, err := newPod("ghost", "ghost", nil); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `serviceaccount "ghost" not found`) {
		t.Errorf("a pod of a ServiceAccount that does not exist: %v", err)
	}

	// Tokens: node-1 for its own pod's ServiceAccount, bound to the pod.
	n1, n2 := s.as(t, "system:node:node-1", "system:nodes"), s.as(t, "system:node:node-2", "system:nodes")
	bound := authorization.TokenRequestSpec{BoundObjectRef: &authorization.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: web.UID}}
	tok, err := n1.CreateToken(ctx, "default", "reader", bound)
	if err != nil || tok.Token == "" || time.Until(tok.ExpirationTimestamp.Time) < 50*time.Minute {
		t.Fatalf("node-1's token for its pod: %+v %v", tok, err)
	}
	_, err = n2.CreateToken(ctx, "default", "reader", bound)
	forbidden(t, "node-2 asks for a token of node-1's pod's ServiceAccount", err)
	_, err = n1.CreateToken(ctx, "default", "reader", authorization.TokenRequestSpec{})
	forbidden(t, "node-1 asks for an unbound token", err, "bound to a pod")
	_, err = n1.CreateToken(ctx, "default", "default", authorization.TokenRequestSpec{BoundObjectRef: &authorization.BoundObjectReference{Kind: "Pod", Name: "web"}})
	forbidden(t, "node-1 asks for the default ServiceAccount's token bound to a pod of reader", err)

	// The token authenticates as the ServiceAccount, with no rights yet.
	withToken := func(token string) *client.Client {
		cfg := s.admin
		cfg.Cert, cfg.Key, cfg.Token = nil, nil, token
		c, err := client.NewFromConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	reader := withToken(tok.Token)
	me, err := reader.WhoAmI(ctx)
	if err != nil || me.Username != "system:serviceaccount:default:reader" || !strings.Contains(strings.Join(me.Groups, ","), "system:serviceaccounts:default") {
		t.Fatalf("whoami with the token: %+v %v", me, err)
	}
	_, _, err = client.For[*core.Pod](reader).List(ctx, "default", client.ListOptions{})
	forbidden(t, "the ServiceAccount lists pods before any binding", err, `User "system:serviceaccount:default:reader"`)
	if _, err := client.For[*rbac.RoleBinding](admin).Create(ctx, &rbac.RoleBinding{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "reader-view"},
		RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbac.Subject{{Kind: rbac.ServiceAccountKind, Name: "reader"}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ServiceAccount lists pods with view", func() error {
		_, _, err := client.For[*core.Pod](reader).List(ctx, "default", client.ListOptions{})
		return err
	})
	_, _, err = client.For[*core.Secret](reader).List(ctx, "default", client.ListOptions{})
	forbidden(t, "the ServiceAccount (view) lists Secrets", err)

	unauthenticated := func(what string, c *client.Client, words string) {
		t.Helper()
		_, err := c.WhoAmI(ctx)
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v, want Unauthenticated saying %q", what, err, words)
		}
	}
	vault, err := admin.CreateToken(ctx, "default", "reader", authorization.TokenRequestSpec{Audiences: []string{"vault"}, BoundObjectRef: bound.BoundObjectRef})
	if err != nil {
		t.Fatal(err)
	}
	unauthenticated("a token for another audience", withToken(vault.Token), "audiences")
	unauthenticated("a forged token", withToken(tok.Token[:len(tok.Token)-4]+"AAAA"), "signature")
	unauthenticated("not a token", withToken("hello"), "not a ServiceAccount token")
	if err := pods.Delete(ctx, "default", "web", client.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	unauthenticated("the token of a deleted pod", reader, "no longer exists")
	short := int64(60)
	_, err = admin.CreateToken(ctx, "default", "reader", authorization.TokenRequestSpec{ExpirationSeconds: &short})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "spec.expirationSeconds") {
		t.Errorf("a 60 s token: %v, want refused naming spec.expirationSeconds", err)
	}
}

// TestTokenReviews (issue #36): a TokenReview says whose a token is — a
// ServiceAccount token for the API server's audiences or the ones the
// review names, with the audiences matched — and a token the server
// refuses is an answer (authenticated false, and why), not an error; a
// review without a token is a bad request. Only holders of
// system:auth-delegator (and the admin) may ask.
func TestTokenReviews(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := s.Client
	if _, err := client.For[*core.ServiceAccount](admin).Create(ctx, &core.ServiceAccount{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "robot"}}); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.CreateToken(ctx, "default", "robot", authorization.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	vault, err := admin.CreateToken(ctx, "default", "robot", authorization.TokenRequestSpec{Audiences: []string{"vault"}})
	if err != nil {
		t.Fatal(err)
	}
	review := func(c *client.Client, spec authorization.TokenReviewSpec) (authorization.TokenReviewStatus, error) {
		b, _ := json.Marshal(authorization.TokenReview{TypeMeta: meta.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"}, Spec: spec})
		resp, err := c.API.Create(ctx, &apipb.CreateRequest{Resource: "tokenreviews", Object: b})
		if err != nil {
			return authorization.TokenReviewStatus{}, err
		}
		var out authorization.TokenReview
		if err := json.Unmarshal(resp.Object, &out); err != nil || out.Kind != "TokenReview" {
			t.Fatalf("the answer is not a TokenReview: %v %s", err, resp.Object)
		}
		return out.Status, nil
	}
	st, err := review(admin, authorization.TokenReviewSpec{Token: tok.Token})
	if err != nil || !st.Authenticated || st.User.Username != "system:serviceaccount:default:robot" ||
		!strings.Contains(strings.Join(st.User.Groups, ","), "system:serviceaccounts:default") || len(st.Audiences) != 1 {
		t.Errorf("a token of robot: %+v %v", st, err)
	}
	if st, err := review(admin, authorization.TokenReviewSpec{Token: vault.Token}); err != nil || st.Authenticated || !strings.Contains(st.Error, "audiences") {
		t.Errorf("a token for another audience, reviewed for the server's: want authenticated false naming the audiences, got %+v %v", st, err)
	}
	if st, err := review(admin, authorization.TokenReviewSpec{Token: vault.Token, Audiences: []string{"vault", "other"}}); err != nil || !st.Authenticated ||
		strings.Join(st.Audiences, ",") != "vault" {
		t.Errorf("a vault token reviewed for vault and other: want authenticated for [vault], got %+v %v", st, err)
	}
	if st, err := review(admin, authorization.TokenReviewSpec{Token: "hello"}); err != nil || st.Authenticated || st.Error == "" {
		t.Errorf("not a token: want authenticated false with an error, got %+v %v", st, err)
	}
	if _, err := review(admin, authorization.TokenReviewSpec{}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "spec.token") {
		t.Errorf("a review without a token: want a bad request naming spec.token, got %v", err)
	}
	// Not for every user: system:auth-delegator grants it.
	dev := s.as(t, "dev")
	_, err = review(dev, authorization.TokenReviewSpec{Token: tok.Token})
	forbidden(t, "dev reviews a token", err)
	if _, err := client.For[*rbac.ClusterRoleBinding](admin).Create(ctx, &rbac.ClusterRoleBinding{ObjectMeta: meta.ObjectMeta{Name: "dev-delegator"},
		RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"}, Subjects: []rbac.Subject{{Kind: "User", Name: "dev"}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "dev reviews a token as an auth delegator", func() error {
		st, err := review(dev, authorization.TokenReviewSpec{Token: tok.Token})
		if err == nil && !st.Authenticated {
			return fmt.Errorf("not authenticated: %+v", st)
		}
		return err
	})
}
