package ctl_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client/pki"
)

// TestApplyUnchangedPodIsANoOp (issue #32): the ServiceAccount admission
// adds the token's volumeMount to each container and the server defaults
// fields inside them; applying the same Pod manifest again replaced the
// containers list whole and the server refused the "update" (pod spec is
// immutable), so a second make lab failed. As on Kubernetes, it is a no-op,
// diff shows nothing, and an image change still applies.
func TestApplyUnchangedPodIsANoOp(t *testing.T) {
	dir := t.TempDir()
	if _, err := pki.Init(dir, pki.Options{Server: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	s := testserver.New(t, func(c *apiserver.Config) {
		c.ServiceAccountSigningKeyFile, c.ServiceAccountKeyFiles = filepath.Join(dir, "sa.key"), []string{filepath.Join(dir, "sa.pub")}
	})
	if r := kobectl(t, s, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default}\n", "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	pod := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: app
    image: kobune.local/labapp:1.0
    ports: [{containerPort: 8080}]
    env: [{name: A, value: "1"}]
    resources: {limits: {cpu: 100m}}
`
	if r := kobectl(t, s, pod, "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if got := kobectl(t, s, "", "get", "pod", "p", "-o", "jsonpath={.spec.containers[0].volumeMounts[0].mountPath}"); !strings.Contains(got.stdout, "serviceaccount") {
		t.Fatalf("the admission did not mount the token (%q): the test would not show the defect", got.stdout)
	}
	rev := revision(t, s)
	if r := kobectl(t, s, pod, "apply", "-f", "-"); r.code != 0 || !strings.Contains(r.stdout, "pod/p unchanged") {
		t.Errorf("second apply of the same pod: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := kobectl(t, s, pod, "diff", "-f", "-"); r.code != 0 || r.stdout != "" {
		t.Errorf("diff of the applied pod: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := revision(t, s); got != rev {
		t.Errorf("the unchanged apply wrote: revision %d -> %d", rev, got)
	}
	changed := strings.Replace(pod, "labapp:1.0", "labapp:2.0", 1)
	if r := kobectl(t, s, changed, "apply", "-f", "-"); r.code != 0 || !strings.Contains(r.stdout, "pod/p configured") {
		t.Errorf("apply of a new image: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := kobectl(t, s, "", "get", "pod", "p", "-o", "jsonpath={.spec.containers[0].image} {.spec.containers[0].volumeMounts[0].mountPath}"); !strings.HasPrefix(got.stdout, "kobune.local/labapp:2.0 /var/run/secrets") {
		t.Errorf("after the image change: %q", got.stdout)
	}
}
