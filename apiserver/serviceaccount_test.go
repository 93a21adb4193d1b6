package apiserver_test

import (
	"context"
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
