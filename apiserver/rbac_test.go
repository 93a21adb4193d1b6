package apiserver_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/api/scheduling"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
	"github.com/kobune/kobune/ctl"
	"github.com/kobune/kobune/proto/apipb"
)

// securedServer is an API server with the certificates of `kobectl pki
// init` (TLS, client certificates, Node,RBAC by default), and a way to
// connect as any user of its CA.
type securedServer struct {
	*testserver.Server
	dir   string
	admin client.Config
}

func startSecured(t *testing.T, mutate ...func(*apiserver.Config)) *securedServer {
	t.Helper()
	dir := t.TempDir()
	addr := testserver.StableAddr()
	p := func(f string) string { return filepath.Join(dir, "pki", f) }
	if _, err := pki.Init(filepath.Join(dir, "pki"), pki.Options{Server: "https://" + addr, Nodes: []string{"node-1", "node-2"}}); err != nil {
		t.Fatal(err)
	}
	srv, err := testserver.StartTLS(filepath.Join(dir, "etcd"), addr, p("admin.kubeconfig"), append([]func(*apiserver.Config){func(c *apiserver.Config) {
		c.TLSCertFile, c.TLSPrivateKeyFile, c.ClientCAFile = p("apiserver.crt"), p("apiserver.key"), p("ca.crt")
		c.ServiceAccountSigningKeyFile, c.ServiceAccountKeyFiles = p("sa.key"), []string{p("sa.pub")}
		c.Logf = t.Logf
	}}, mutate...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	admin, err := client.LoadKubeconfig(p("admin.kubeconfig"), "")
	if err != nil {
		t.Fatal(err)
	}
	return &securedServer{Server: srv, dir: dir, admin: admin}
}

// as connects with a fresh certificate for user in groups.
func (s *securedServer) as(t *testing.T, user string, groups ...string) *client.Client {
	t.Helper()
	c, err := client.NewFromConfig(s.configAs(t, user, groups...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// configAs is a client configuration with a fresh certificate for user
// in groups.
func (s *securedServer) configAs(t *testing.T, user string, groups ...string) client.Config {
	t.Helper()
	ca, key, err := pki.LoadCA(filepath.Join(s.dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	cert, k, err := pki.Issue(ca, key, &x509.Certificate{Subject: pkix.Name{CommonName: user, Organization: groups}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.admin
	cfg.Cert, cfg.Key = cert, k
	return cfg
}

func forbidden(t *testing.T, what string, err error, words ...string) {
	t.Helper()
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("%s: %v, want PermissionDenied", what, err)
		return
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

func allowed(t *testing.T, what string, err error) {
	t.Helper()
	if status.Code(err) == codes.PermissionDenied || status.Code(err) == codes.Unauthenticated {
		t.Errorf("%s: %v, want it allowed", what, err)
	}
}

// eventually retries f until it returns nil (RBAC changes reach the
// authorizer through a watch).
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after 10s", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createNodes registers Node objects (no agents behind them).
func createNodes(t *testing.T, ctx context.Context, c *client.Client, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := client.For[*core.Node](c).Create(ctx, &core.Node{ObjectMeta: meta.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
}

func binding(ns, name, kind, role string, subjects ...rbac.Subject) *rbac.RoleBinding {
	return &rbac.RoleBinding{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name}, RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: kind, Name: role}, Subjects: subjects}
}

func userSubject(name string) rbac.Subject { return rbac.Subject{Kind: rbac.UserKind, Name: name} }

// TestRBAC: with client certificates the API server authorizes with RBAC.
// A user without bindings gets nothing but "who am I" and "may I"; a
// RoleBinding of edit in one namespace opens that namespace and nothing
// else (not Secrets elsewhere, not nodes, not RBAC); resourceNames and
// subresources (pods/exec, pods/log) are their own permissions; deleting
// the binding takes the access away again; system PriorityClasses stay.
func TestRBAC(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := s.Client
	if _, err := client.For[*core.Namespace](admin).Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*core.Secret](admin).Create(ctx, &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "db"}, StringData: map[string]string{"DB_PASSWORD": "s3cret"}}); err != nil {
		t.Fatal(err)
	}
	alice := s.as(t, "alice", "developers")
	_, _, err := client.For[*core.Pod](alice).List(ctx, "team", client.ListOptions{})
	forbidden(t, "alice lists pods before any binding", err, `User "alice" cannot list resource "pods" in API group "" in the namespace "team"`)
	me, err := alice.WhoAmI(ctx)
	if err != nil || me.Username != "alice" || !strings.Contains(strings.Join(me.Groups, ","), "developers") {
		t.Errorf("whoami: %+v %v", me, err)
	}
	if st, err := alice.CanI(ctx, client.AccessQuestion{Verb: "list", Resource: "pods", Namespace: "team"}, ""); err != nil || st.Allowed {
		t.Errorf("can-i list pods before the binding: %+v %v", st, err)
	}

	if _, err := client.For[*rbac.RoleBinding](admin).Create(ctx, binding("team", "alice-edit", "ClusterRole", "edit", userSubject("alice"))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice lists pods in team after the binding", func() error {
		_, _, err := client.For[*core.Pod](alice).List(ctx, "team", client.ListOptions{})
		return err
	})
	_, err = client.For[*core.ConfigMap](alice).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "team", Name: "settings"}})
	allowed(t, "alice creates a ConfigMap in team", err)
	_, err = client.For[*core.Secret](alice).Create(ctx, &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: "team", Name: "own"}})
	allowed(t, "alice creates a Secret in team", err)
	_, err = client.For[*core.Secret](alice).Get(ctx, "default", "db")
	forbidden(t, "alice reads a Secret in default", err, `secrets "db" is forbidden`)
	_, _, err = client.For[*core.Secret](alice).List(ctx, "", client.ListOptions{})
	forbidden(t, "alice lists Secrets in every namespace", err, "at the cluster scope")
	_, _, err = client.For[*core.Node](alice).List(ctx, "", client.ListOptions{})
	forbidden(t, "alice lists nodes", err)
	err = client.For[*core.Namespace](alice).Delete(ctx, "", "team", client.DeleteOptions{})
	forbidden(t, "alice deletes her namespace", err)
	_, err = client.For[*rbac.RoleBinding](alice).Create(ctx, binding("team", "self-admin", "ClusterRole", "admin", userSubject("alice")))
	forbidden(t, "alice (edit) binds herself admin", err)
	err = client.For[*scheduling.PriorityClass](alice).Delete(ctx, "", "system-node-critical", client.DeleteOptions{})
	forbidden(t, "alice deletes system-node-critical", err)
	if st, err := alice.CanI(ctx, client.AccessQuestion{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "team"}, ""); err != nil || !st.Allowed {
		t.Errorf("can-i create pods/exec in team (edit): %+v %v", st, err)
	}

	// view: pods yes, their logs yes, exec no.
	bob := s.as(t, "bob")
	if _, err := client.For[*rbac.RoleBinding](admin).Create(ctx, binding("team", "bob-view", "ClusterRole", "view", userSubject("bob"))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob lists pods in team", func() error {
		_, _, err := client.For[*core.Pod](bob).List(ctx, "team", client.ListOptions{})
		return err
	})
	_, err = bob.Exec(ctx, "team", "web", client.ExecOptions{Command: []string{"id"}, Stdout: io.Discard, Stderr: io.Discard})
	forbidden(t, "bob (view) execs", err, `cannot create resource "pods/exec"`)
	_, err = alice.Exec(ctx, "team", "web", client.ExecOptions{Command: []string{"id"}, Stdout: io.Discard, Stderr: io.Discard})
	if status.Code(err) != codes.NotFound {
		t.Errorf("alice (edit) execs into a pod that does not exist: %v, want NotFound (past authorization)", err)
	}
	_, err = client.For[*core.ConfigMap](bob).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "team", Name: "by-bob"}})
	forbidden(t, "bob (view) creates", err)
	_, _, err = client.For[*core.Secret](bob).List(ctx, "team", client.ListOptions{})
	forbidden(t, "bob (view) lists Secrets", err)

	// resourceNames: one Secret, by name only.
	carol := s.as(t, "carol")
	role := &rbac.Role{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "db-reader"},
		Rules: []rbac.PolicyRule{{Verbs: []string{"get", "watch", "list"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}}}}
	if _, err := client.For[*rbac.Role](admin).Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*rbac.RoleBinding](admin).Create(ctx, binding("default", "carol-db", "Role", "db-reader", userSubject("carol"))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "carol reads Secret db", func() error {
		_, err := client.For[*core.Secret](carol).Get(ctx, "default", "db")
		return err
	})
	_, _, err = client.For[*core.Secret](carol).List(ctx, "default", client.ListOptions{})
	forbidden(t, "carol lists every Secret", err)
	_, _, err = client.For[*core.Secret](carol).List(ctx, "default", client.ListOptions{FieldSelector: "metadata.name=db"})
	allowed(t, "carol lists Secret db by field selector", err)
	_, err = client.For[*core.Secret](carol).Get(ctx, "team", "own")
	forbidden(t, "carol reads another Secret", err)

	// The binding goes, the access goes.
	if err := client.For[*rbac.RoleBinding](admin).Delete(ctx, "team", "alice-edit", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice refused after her binding is deleted", func() error {
		_, _, err := client.For[*core.Pod](alice).List(ctx, "team", client.ListOptions{})
		if status.Code(err) == codes.PermissionDenied {
			return nil
		}
		return err
	})
}

// TestRBACEscalation: a namespace admin hands out view and Roles within
// what they hold, and is refused cluster-admin, a Role with more than they
// have, and any ClusterRoleBinding; the refusal names the missing rules.
func TestRBACEscalation(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := s.Client
	if _, err := client.For[*core.Namespace](admin).Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*rbac.RoleBinding](admin).Create(ctx, binding("team", "dana-admin", "ClusterRole", "admin", userSubject("dana"))); err != nil {
		t.Fatal(err)
	}
	dana := s.as(t, "dana")
	eventually(t, "dana (admin) grants view", func() error {
		_, err := client.For[*rbac.RoleBinding](dana).Create(ctx, binding("team", "erin-view", "ClusterRole", "view", userSubject("erin")))
		return err
	})
	_, err := client.For[*rbac.RoleBinding](dana).Create(ctx, binding("team", "erin-root", "ClusterRole", "cluster-admin", userSubject("erin")))
	forbidden(t, "dana binds cluster-admin in her namespace", err, "attempting to grant RBAC permissions not currently held", `Verbs:["*"]`)
	_, err = client.For[*rbac.Role](dana).Create(ctx, &rbac.Role{ObjectMeta: meta.ObjectMeta{Namespace: "team", Name: "secrets"},
		Rules: []rbac.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}})
	allowed(t, "dana makes a Role she holds", err)
	_, err = client.For[*rbac.Role](dana).Create(ctx, &rbac.Role{ObjectMeta: meta.ObjectMeta{Namespace: "team", Name: "nodes"},
		Rules: []rbac.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}})
	forbidden(t, "dana makes a Role with nodes", err, `Resources:["nodes"]`)
	_, err = client.For[*rbac.ClusterRoleBinding](dana).Create(ctx, &rbac.ClusterRoleBinding{ObjectMeta: meta.ObjectMeta{Name: "dana-everywhere"},
		RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbac.Subject{userSubject("dana")}})
	forbidden(t, "dana makes a ClusterRoleBinding", err)
	if _, _, err := client.For[*rbac.RoleBinding](admin).List(ctx, "team", client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestBootstrapPolicy: the roles come back as shipped after a change
// while they carry autoupdate=true, and stay changed when it is "false".
func TestBootstrapPolicy(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	roles := client.For[*rbac.ClusterRole](s.Client)
	view, err := roles.Get(ctx, "", "view")
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Rules) == 0 || view.AggregationRule == nil {
		t.Fatalf("view has no aggregated rules: %+v", view)
	}
	edit, _ := roles.Get(ctx, "", "edit")
	if !rbac.Covers(edit.Rules, view.Rules[0]) {
		t.Errorf("edit does not hold view's rules (aggregation)")
	}
	for _, name := range []string{"cluster-admin", "admin", "system:node", "system:kube-scheduler", "system:controller:deployment-controller"} {
		if _, err := roles.Get(ctx, "", name); err != nil {
			t.Errorf("bootstrap role %s: %v", name, err)
		}
	}
}

// TestNodeAuthorizer: an agent reads only the Secrets, ConfigMaps and
// claims of pods bound to its node, and writes only its own Node, Lease
// and its pods' status (Node authorizer + NodeRestriction).
func TestNodeAuthorizer(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := s.Client
	createNodes(t, ctx, admin, "node-1", "node-2")
	for _, name := range []string{"one", "two"} {
		if _, err := client.For[*core.Secret](admin).Create(ctx, &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}, StringData: map[string]string{"DB_PASSWORD": name}}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.For[*core.ConfigMap](admin).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, node, secret string) {
		p := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}, Spec: core.PodSpec{NodeName: node,
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", Env: []core.EnvVar{{Name: "P", ValueFrom: &core.EnvVarSource{SecretKeyRef: &core.SecretKeySelector{LocalObjectReference: core.LocalObjectReference{Name: secret}, Key: "DB_PASSWORD"}}}}}},
			Volumes:    []core.Volume{{Name: "cfg", VolumeSource: core.VolumeSource{ConfigMap: &core.ConfigMapVolumeSource{LocalObjectReference: core.LocalObjectReference{Name: secret}}}}}}}
		if _, err := client.For[*core.Pod](admin).Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	pod("on-1", "node-1", "one")
	pod("on-2", "node-2", "two")
	n1 := s.as(t, "system:node:node-1", "system:nodes")
	// Read at once: a graph miss is checked against storage.
	_, err := client.For[*core.Secret](n1).Get(ctx, "default", "one")
	allowed(t, "node-1 reads the Secret of its pod", err)
	_, err = client.For[*core.ConfigMap](n1).Get(ctx, "default", "one")
	allowed(t, "node-1 reads the ConfigMap of its pod", err)
	_, _, err = client.For[*core.Secret](n1).List(ctx, "default", client.ListOptions{FieldSelector: "metadata.name=one"})
	allowed(t, "node-1 watches the Secret of its pod by name", err)
	_, err = client.For[*core.Secret](n1).Get(ctx, "default", "two")
	forbidden(t, "node-1 reads node-2's pod's Secret", err, "no relationship found between node \"node-1\"")
	_, _, err = client.For[*core.Secret](n1).List(ctx, "default", client.ListOptions{})
	forbidden(t, "node-1 lists every Secret", err)
	_, err = client.For[*core.Secret](n1).Create(ctx, &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "planted"}})
	forbidden(t, "node-1 creates a Secret", err)

	n2node, err := client.For[*core.Node](n1).Get(ctx, "", "node-2")
	allowed(t, "node-1 reads node-2", err)
	if err == nil {
		n2node.Labels = map[string]string{"hijacked": "yes"}
		_, err = client.For[*core.Node](n1).Update(ctx, n2node)
		forbidden(t, "node-1 updates node-2", err, "may only create or update its own Node")
		_, err = client.For[*core.Node](n1).UpdateStatus(ctx, n2node)
		forbidden(t, "node-1 updates node-2's status", err)
	}
	err = client.For[*core.Node](n1).Delete(ctx, "", "node-2", client.DeleteOptions{})
	forbidden(t, "node-1 deletes node-2", err)
	_, err = client.For[*core.Node](n1).Create(ctx, &core.Node{ObjectMeta: meta.ObjectMeta{Name: "node-3"}})
	forbidden(t, "node-1 registers a fake node-3", err)
	own, _ := client.For[*core.Node](n1).Get(ctx, "", "node-1")
	own.Labels = map[string]string{"node-restriction.kubernetes.io/trusted": "true"}
	_, err = client.For[*core.Node](n1).Update(ctx, own)
	forbidden(t, "node-1 sets a node-restriction label on itself", err)
	own, _ = client.For[*core.Node](n1).Get(ctx, "", "node-1")
	own.Labels = map[string]string{"zone": "a"}
	_, err = client.For[*core.Node](n1).Update(ctx, own)
	allowed(t, "node-1 labels itself", err)

	p2, _ := client.For[*core.Pod](admin).Get(ctx, "default", "on-2")
	p2.Status.Phase = core.PodFailed
	_, err = client.For[*core.Pod](n1).UpdateStatus(ctx, p2)
	forbidden(t, "node-1 writes node-2's pod's status", err)
	err = client.For[*core.Pod](n1).Delete(ctx, "default", "on-2", client.DeleteOptions{})
	forbidden(t, "node-1 deletes node-2's pod", err)
	p1, _ := client.For[*core.Pod](admin).Get(ctx, "default", "on-1")
	p1.Status.Phase = core.PodRunning
	_, err = client.For[*core.Pod](n1).UpdateStatus(ctx, p1)
	allowed(t, "node-1 writes its pod's status", err)
	_, err = client.For[*core.Pod](n1).Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "sneaky"}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}})
	forbidden(t, "node-1 creates a pod", err)

	// The pod moves away (deleted, made again on node-2): node-1 loses the
	// Secret once the graph has seen it.
	if err := client.For[*core.Pod](admin).Delete(ctx, "default", "on-1", client.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node-1 refused the Secret of a pod no longer bound to it", func() error {
		_, err := client.For[*core.Secret](n1).Get(ctx, "default", "one")
		if status.Code(err) == codes.PermissionDenied {
			return nil
		}
		return err
	})
	// A user in system:nodes without a node name gets nothing written.
	odd := s.as(t, "mallory", "system:nodes")
	_, err = client.For[*core.Secret](odd).Get(ctx, "default", "two")
	forbidden(t, "a system:nodes member not named system:node:<name> reads a Secret", err)
}

// TestImpersonationAndAuthCommands: kobectl auth whoami and can-i answer
// as the server decides; --as works only with the impersonate verb.
func TestImpersonationAndAuthCommands(t *testing.T) {
	auditDir := t.TempDir()
	policy, auditLog := filepath.Join(auditDir, "policy.yaml"), filepath.Join(auditDir, "audit.log")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startSecured(t, func(c *apiserver.Config) { c.AuditPolicyFile, c.AuditLogPath = policy, auditLog })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := s.Client
	if _, err := client.For[*core.Namespace](admin).Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*rbac.RoleBinding](admin).Create(ctx, binding("team", "alice-edit", "ClusterRole", "edit", userSubject("alice"))); err != nil {
		t.Fatal(err)
	}
	adminKC := filepath.Join(s.dir, "pki", "admin.kubeconfig")
	run := func(args ...string) (string, string, int) {
		var out, errOut strings.Builder
		code := ctl.RunContext(ctx, append([]string{"--kubeconfig", adminKC}, args...), strings.NewReader(""), &out, &errOut)
		return out.String(), errOut.String(), code
	}
	if out, _, code := run("auth", "whoami"); code != 0 || !strings.Contains(out, "kubernetes-admin") || !strings.Contains(out, "system:masters") {
		t.Errorf("whoami: %d %q", code, out)
	}
	eventually(t, "can-i as alice", func() error {
		if out, errOut, code := run("auth", "can-i", "create", "deployments", "-n", "team", "--as", "alice"); code != 0 || out != "yes\n" {
			return fmt.Errorf("can-i create deployments -n team --as alice: %d %q %q", code, out, errOut)
		}
		return nil
	})
	// Without -n, kobectl reads the kubeconfig's namespace before it
	// connects; the connection must still be the kubeconfig's (a second
	// reading once took the server it had noted for plaintext and failed:
	// "an https:// server needs the certificate authority").
	if out, errOut, code := run("auth", "can-i", "list", "endpointslices", "--as", "alice"); code != 1 || out != "no\n" || errOut != "" {
		t.Errorf("can-i list endpointslices as alice: %d %q %q", code, out, errOut)
	}
	if out, _, code := run("auth", "can-i", "create", "deployments", "-n", "default", "--as", "alice"); code != 1 || out != "no\n" {
		t.Errorf("can-i create deployments -n default --as alice: %d %q, want no (exit 1)", code, out)
	}
	if out, _, code := run("auth", "can-i", "create", "pods", "--subresource", "exec", "-n", "team", "--as", "alice"); code != 0 || out != "yes\n" {
		t.Errorf("can-i create pods/exec --as alice: %d %q", code, out)
	}
	// --list: alice's rules in team are edit's (and basic-user's
	// everywhere); in default only basic-user's; the admin holds "*".
	out, errOut, code := run("auth", "can-i", "--list", "-n", "team", "--as", "alice")
	if code != 0 || !regexp.MustCompile(`(?m)^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^deployments\.apps\s+\[\]\s+\[\]\s+\[.*create.*\]$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^pods/exec\s+\[\]\s+\[\]\s+\[.*create.*\]$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^selfsubjectrulesreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]$`).MatchString(out) {
		t.Errorf("can-i --list -n team --as alice: %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := run("auth", "can-i", "--list", "-n", "default", "--as", "alice"); strings.Contains(out, "deployments.apps") || !strings.Contains(out, "selfsubjectaccessreviews") {
		t.Errorf("can-i --list -n default --as alice shows team's rules or lacks basic-user's:\n%s", out)
	}
	if out, _, _ := run("auth", "can-i", "--list", "--no-headers"); !regexp.MustCompile(`(?m)^\*\.\*\s+\[\]\s+\[\]\s+\[\*\]$`).MatchString(out) || strings.Contains(out, "Resources") {
		t.Errorf("can-i --list --no-headers as the admin:\n%s", out)
	}
	if _, errOut, code := run("auth", "can-i", "--list", "get", "pods"); code == 0 || !strings.Contains(errOut, "list option must be specified with no arguments") {
		t.Errorf("can-i --list with a question: %d %q", code, errOut)
	}
	if out, _, code := run("auth", "whoami", "--as", "alice", "--as-group", "developers"); code != 0 || !strings.Contains(out, "alice") || !strings.Contains(out, "developers") || strings.Contains(out, "system:masters") {
		t.Errorf("whoami --as alice: %d %q", code, out)
	}
	if _, _, code := run("get", "pods", "-n", "default", "--as", "alice"); code == 0 {
		t.Error("get pods -n default --as alice succeeded")
	}
	// A watch the authorizer refuses (a stream) is logged with its 403.
	asAliceCfg := s.admin
	asAliceCfg.Impersonate = "alice"
	asAlice, err := client.NewFromConfig(asAliceCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer asAlice.Close()
	if w, err := client.For[*core.Secret](asAlice).Watch(ctx, "kube-system", client.ListOptions{}, 0); err == nil {
		for range w.Events {
			t.Error("alice got a Secret's watch event")
		}
		forbidden(t, "alice watches secrets", w.Err())
	} else {
		forbidden(t, "alice watches secrets", err)
	}
	// The audit log names who acted, and as whom.
	b, _ := os.ReadFile(auditLog)
	if !strings.Contains(string(b), `"user":{"username":"kubernetes-admin"`) || !strings.Contains(string(b), `"impersonatedUser":{"username":"alice"`) {
		t.Errorf("the audit log does not record kubernetes-admin impersonating alice:\n%.2000s", b)
	}
	refusedWatch := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"verb":"watch"`) && strings.Contains(line, `"resource":"secrets"`) && strings.Contains(line, `"impersonatedUser":{"username":"alice"`) {
			refusedWatch = strings.Contains(line, `"code":403`)
		}
	}
	if !refusedWatch {
		t.Errorf("the audit log does not record alice's refused watch of secrets with 403:\n%.3000s", b)
	}
	// Alice may not impersonate anyone, until a role lets her be bob.
	cfg := s.admin
	ca, key, _ := pki.LoadCA(filepath.Join(s.dir, "pki"))
	cert, k, _ := pki.Issue(ca, key, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	cfg.Cert, cfg.Key, cfg.Impersonate = cert, k, "bob"
	aliceAsBob, err := client.NewFromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer aliceAsBob.Close()
	_, err = aliceAsBob.WhoAmI(ctx)
	forbidden(t, "alice impersonates bob", err, `cannot impersonate resource "users"`)
	cr := &rbac.ClusterRole{ObjectMeta: meta.ObjectMeta{Name: "be-bob"}, Rules: []rbac.PolicyRule{{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"bob"}}}}
	if _, err := client.For[*rbac.ClusterRole](admin).Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*rbac.ClusterRoleBinding](admin).Create(ctx, &rbac.ClusterRoleBinding{ObjectMeta: meta.ObjectMeta{Name: "alice-be-bob"},
		RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: "be-bob"}, Subjects: []rbac.Subject{userSubject("alice")}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice acts as bob", func() error {
		u, err := aliceAsBob.WhoAmI(ctx)
		if err == nil && u.Username != "bob" {
			return fmt.Errorf("whoami says %q", u.Username)
		}
		return err
	})
	cfg.Impersonate = "carol"
	aliceAsCarol, _ := client.NewFromConfig(cfg)
	defer aliceAsCarol.Close()
	_, err = aliceAsCarol.WhoAmI(ctx)
	forbidden(t, "alice impersonates carol (only bob is allowed)", err)
}

// TestAnonymousGetsNothing: a TLS client without a certificate (or with a
// bearer token that is not one) can neither list, create nor exec, and
// nothing it sent is stored.
func TestAnonymousGetsNothing(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	anon := s.admin
	anon.Cert, anon.Key = nil, nil
	for name, cfg := range map[string]client.Config{"no certificate": anon, "a made-up bearer token": func() client.Config { c := anon; c.Token = "let-me-in"; return c }()} {
		c, err := client.NewFromConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _, err = client.For[*core.Secret](c).List(ctx, "", client.ListOptions{})
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: list Secrets: %v, want Unauthenticated", name, err)
		}
		_, err = client.For[*core.ConfigMap](c).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "planted"}})
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: create: %v, want Unauthenticated", name, err)
		}
		_, err = c.Exec(ctx, "default", "web", client.ExecOptions{Command: []string{"id"}, Stdout: io.Discard, Stderr: io.Discard})
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: exec: %v, want Unauthenticated", name, err)
		}
		err = client.For[*scheduling.PriorityClass](c).Delete(ctx, "", "system-node-critical", client.DeleteOptions{})
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: delete system-node-critical: %v, want Unauthenticated", name, err)
		}
	}
	if _, err := client.For[*core.ConfigMap](s.Client).Get(ctx, "default", "planted"); status.Code(err) != codes.NotFound {
		t.Errorf("the anonymous create was stored: %v", err)
	}
}

// TestSubjectAccessReviews: whoever may create them asks about other
// users; the answer is the authorizer's; a LocalSubjectAccessReview must
// ask about its own namespace; a user without the right cannot ask.
func TestSubjectAccessReviews(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.For[*rbac.RoleBinding](s.Client).Create(ctx, binding("default", "alice-view", "ClusterRole", "view", userSubject("alice"))); err != nil {
		t.Fatal(err)
	}
	ask := func(c *client.Client, resource, ns, body string) (string, error) {
		resp, err := c.API.Create(ctx, &apipb.CreateRequest{Resource: resource, Namespace: ns, Object: []byte(body)})
		if err != nil {
			return "", err
		}
		return string(resp.Object), nil
	}
	sar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"verb":"list","resource":"pods","namespace":"%s"}}}`
	eventually(t, "alice may list pods in default", func() error {
		out, err := ask(s.Client, "subjectaccessreviews", "", fmt.Sprintf(sar, "default"))
		if err == nil && !strings.Contains(out, `"allowed":true`) {
			return fmt.Errorf("answer %s", out)
		}
		return err
	})
	if out, err := ask(s.Client, "subjectaccessreviews", "", fmt.Sprintf(sar, "kube-system")); err != nil || !strings.Contains(out, `"allowed":false`) {
		t.Errorf("alice in kube-system: %s %v", out, err)
	}
	local := `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"verb":"list","resource":"pods","namespace":"kube-system"}}}`
	if _, err := ask(s.Client, "localsubjectaccessreviews", "default", local); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a LocalSubjectAccessReview about another namespace: %v, want InvalidArgument", err)
	}
	if _, err := ask(s.as(t, "bob"), "subjectaccessreviews", "", fmt.Sprintf(sar, "default")); status.Code(err) != codes.PermissionDenied {
		t.Errorf("bob asks about alice: %v, want PermissionDenied", err)
	}
}

// TestRESTPatchOfAnotherVersionIsAPatch: a PATCH of autoscaling/v1 (a
// version converted to the stored v2) is authorized and audited as one
// patch, as kube-apiserver does: a user allowed only to patch
// HorizontalPodAutoscalers may, without the get and update the server
// does inside (it needed both before).
func TestRESTPatchOfAnotherVersionIsAPatch(t *testing.T) {
	s := startSecured(t)
	admin := newRESTClient(t, s.admin, s.Addr())
	hpa := `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"web"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":1,"maxReplicas":4,"targetCPUUtilizationPercentage":50}}`
	if code, _, b := admin.do("POST", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", "", hpa); code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	role := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"hpa-patcher"},"rules":[{"apiGroups":["autoscaling"],"resources":["horizontalpodautoscalers"],"verbs":["patch"]}]}`
	if code, _, b := admin.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", "", role); code != 201 {
		t.Fatalf("role: %d %s", code, b)
	}
	rb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"hpa-patcher"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"hpa-patcher"},"subjects":[{"kind":"User","name":"patcher","apiGroup":"rbac.authorization.k8s.io"}]}`
	if code, _, b := admin.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", "", rb); code != 201 {
		t.Fatalf("rolebinding: %d %s", code, b)
	}
	patcher := newRESTClient(t, s.configAs(t, "patcher"), s.Addr())
	path := "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web"
	if code, _, b := patcher.do("GET", path, "", ""); code != 403 {
		t.Errorf("GET as a user who may only patch: %d %s, want 403", code, b)
	}
	eventually(t, "PATCH autoscaling/v1 as the patcher", func() error {
		code, _, b := patcher.do("PATCH", path, "", `{"spec":{"targetCPUUtilizationPercentage":70}}`, "Content-Type", "application/merge-patch+json")
		if code != 200 || !strings.Contains(string(b), `"targetCPUUtilizationPercentage":70`) {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})
}
