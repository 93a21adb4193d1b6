package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestEphemeralContainersSubresource: ephemeral containers are refused at
// creation and through the pod itself; pods/NAME/ephemeralcontainers adds
// them (a strategic merge patch as kubectl debug and the conformance suite
// send, or a PUT of the pod), raising the pod's generation; reading it is
// the pod; one added is neither changed nor removed; Pod Security judges
// the pod with them; RBAC names the subresource.
func TestEphemeralContainersSubresource(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](s.Client)
	debugger := core.EphemeralContainer{Container: core.Container{Name: "debugger", Image: "kobune.local/busybox:1.35", Command: []string{"sh"}}}
	withEphemeral := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "born-with", Namespace: "default"},
		Spec: core.PodSpec{Containers: []core.Container{{Name: "app", Image: "i"}}, EphemeralContainers: []core.EphemeralContainer{debugger}}}
	if _, err := pods.Create(ctx, withEphemeral); err == nil || !strings.Contains(err.Error(), "spec.ephemeralContainers: Forbidden: cannot be set on create") {
		t.Errorf("create with an ephemeral container: %v", err)
	}
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "target", Namespace: "default"},
		Spec: core.PodSpec{Containers: []core.Container{{Name: "app", Image: "i"}}}}); err != nil {
		t.Fatal(err)
	}
	c := newRESTClient(t, s.admin, s.Addr())
	const path = "/api/v1/namespaces/default/pods/target/ephemeralcontainers"
	patch := `{"spec":{"ephemeralContainers":[{"name":"debugger","image":"kobune.local/busybox:1.35","command":["sh"],"stdin":true,"tty":true,"targetContainerName":"app"}]}}`
	code, _, b := c.do("PATCH", path, "", patch, "Content-Type", "application/strategic-merge-patch+json")
	var got core.Pod
	if err := json.Unmarshal(b, &got); code != http.StatusOK || err != nil || len(got.Spec.EphemeralContainers) != 1 || got.Generation != 2 ||
		got.Spec.EphemeralContainers[0].TargetContainerName != "app" {
		t.Fatalf("patch ephemeralcontainers: %d %s", code, b)
	}
	if code, _, b := c.do("GET", path, "", ""); code != http.StatusOK || !strings.Contains(string(b), `"name":"debugger"`) || !strings.Contains(string(b), `"kind":"Pod"`) {
		t.Errorf("get ephemeralcontainers: %d %s", code, b)
	}
	// A PUT of the pod adds another.
	got.Spec.EphemeralContainers = append(got.Spec.EphemeralContainers, core.EphemeralContainer{Container: core.Container{Name: "debugger2", Image: "i"}})
	body, _ := json.Marshal(got)
	code, _, b = c.do("PUT", path, "", string(body))
	if err := json.Unmarshal(b, &got); code != http.StatusOK || err != nil || len(got.Spec.EphemeralContainers) != 2 || got.Generation != 3 {
		t.Fatalf("put ephemeralcontainers: %d %s", code, b)
	}
	// Not changed, not removed, not through the pod itself, not with ports.
	changed := got
	changed.Spec.EphemeralContainers = []core.EphemeralContainer{got.Spec.EphemeralContainers[0]}
	body, _ = json.Marshal(changed)
	if code, _, b := c.do("PUT", path, "", string(body)); code != 422 || !strings.Contains(string(b), `existing ephemeral containers \"debugger2\" may not be removed`) {
		t.Errorf("removing one: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", path, "", `{"spec":{"ephemeralContainers":[{"name":"debugger","image":"other"}]}}`, "Content-Type", "application/strategic-merge-patch+json"); code != 422 || !strings.Contains(string(b), `existing ephemeral containers \"debugger\" may not be changed`) {
		t.Errorf("changing one: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", path, "", `{"spec":{"ephemeralContainers":[{"name":"ports","image":"i","ports":[{"containerPort":80}]}]}}`, "Content-Type", "application/strategic-merge-patch+json"); code != 422 || !strings.Contains(string(b), "ports: Forbidden: cannot be set for an Ephemeral Container") {
		t.Errorf("with ports: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", "/api/v1/namespaces/default/pods/target", "", `{"spec":{"ephemeralContainers":[{"name":"sneaky","image":"i"}]}}`, "Content-Type", "application/strategic-merge-patch+json"); code != 422 {
		t.Errorf("through the pod itself: %d %s", code, b)
	}
	// Pod Security judges the pod with its ephemeral containers.
	if code, _, b := c.do("PATCH", "/api/v1/namespaces/default", "", `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`, "Content-Type", "application/merge-patch+json"); code != 200 {
		t.Fatalf("label the namespace: %d %s", code, b)
	}
	// Pod Security reads namespace labels from the API server's watch-fed
	// cache (as Kubernetes' reads its informer's): the new level applies
	// within moments, so dry runs wait for it first.
	privileged := `{"spec":{"ephemeralContainers":[{"name":"root","image":"i","securityContext":{"privileged":true}}]}}`
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, _, _ := c.do("PATCH", path+"?dryRun=All", "", privileged, "Content-Type", "application/strategic-merge-patch+json"); code == 403 {
			break
		}
	}
	if code, _, b := c.do("PATCH", path, "", privileged, "Content-Type", "application/strategic-merge-patch+json"); code != 403 || !strings.Contains(string(b), "privileged") {
		t.Errorf("a privileged ephemeral container under baseline: %d %s", code, b)
	}
	// RBAC: the subresource by name.
	code, _, b = c.do("PATCH", path, "", `{"spec":{}}`, "Content-Type", "application/strategic-merge-patch+json", "Impersonate-User", "dev")
	if code != 403 || !strings.Contains(string(b), `cannot patch resource \"pods/ephemeralcontainers\"`) {
		t.Errorf("patch as dev: %d %s", code, b)
	}
}
