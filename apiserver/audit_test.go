package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestAuditLog: with a policy that asks for everything, a Secret's create
// is logged at Metadata only (its data appears nowhere in the log), a pod's
// create with its request and response, a failed get with 404, a watch
// when it starts; ConfigMaps the policy excludes are absent; a pod that
// breaks its namespace's audit level carries the violation as an
// annotation.
func TestAuditLog(t *testing.T) {
	dir := t.TempDir()
	policy, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  resources: [{group: "", resources: [configmaps, events]}]
- level: RequestResponse
`), 0o600)
	s := testserver.New(t, func(c *apiserver.Config) { c.AuditPolicyFile, c.AuditLogPath = policy, logPath })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.For[*core.Namespace](s.Client).Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: "watched",
		Labels: map[string]string{"pod-security.kubernetes.io/audit": "restricted"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*core.Secret](s.Client).Create(ctx, &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "db"},
		Data: map[string][]byte{"password": []byte("hunter2-in-audit")}}); err != nil {
		t.Fatal(err)
	}
	client.For[*core.ConfigMap](s.Client).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "cfg"}})
	if _, err := client.For[*core.Pod](s.Client).Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "watched", Name: "web"},
		Spec: core.PodSpec{Containers: []core.Container{{Name: "app", Image: "kobune.local/busybox:1.35"}}}}); err != nil {
		t.Fatal(err)
	}
	client.For[*core.Pod](s.Client).Get(ctx, "default", "missing")
	w, err := client.For[*core.Pod](s.Client).Watch(ctx, "default", client.ListOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = w
	var events []map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b, []byte("hunter2")) || bytes.Contains(b, []byte("aHVudGVyMi1pbi1hdWRpdA")) {
			t.Fatal("the Secret's data is in the audit log")
		}
		events = nil
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) == nil {
				events = append(events, ev)
			}
		}
		if bytes.Contains(b, []byte(`"verb":"watch"`)) || time.Now().After(deadline) {
			break
		}
	}
	find := func(verb, resource, name string) map[string]any {
		for _, ev := range events {
			ref, _ := ev["objectRef"].(map[string]any)
			if ev["verb"] == verb && ref != nil && ref["resource"] == resource && (name == "" || ref["name"] == name) {
				return ev
			}
		}
		t.Errorf("no %s %s %s event in %d", verb, resource, name, len(events))
		return map[string]any{}
	}
	sec := find("create", "secrets", "db")
	if sec["level"] != "Metadata" || sec["requestObject"] != nil || sec["user"].(map[string]any)["username"] != "system:anonymous" {
		t.Errorf("secret create: %v", sec)
	}
	pod := find("create", "pods", "web")
	if pod["level"] != "RequestResponse" || pod["requestObject"] == nil || pod["responseObject"] == nil ||
		pod["requestURI"] != "/api/v1/namespaces/watched/pods/web" || pod["responseStatus"].(map[string]any)["code"] != float64(201) {
		t.Errorf("pod create: %v", pod)
	}
	if ann, _ := pod["annotations"].(map[string]any); ann == nil || !strings.Contains(ann["pod-security.kubernetes.io/audit-violations"].(string), `would violate PodSecurity "restricted:latest"`) {
		t.Errorf("pod create annotations: %v", pod["annotations"])
	}
	if miss := find("get", "pods", "missing"); miss["responseStatus"].(map[string]any)["code"] != float64(404) {
		t.Errorf("failed get: %v", miss)
	}
	if watch := find("watch", "pods", ""); watch["stage"] != "ResponseStarted" {
		t.Errorf("watch: %v", watch)
	}
	for _, ev := range events {
		if ref, _ := ev["objectRef"].(map[string]any); ref != nil && ref["resource"] == "configmaps" {
			t.Errorf("a ConfigMap request the policy excludes: %v", ev)
		}
	}
}
