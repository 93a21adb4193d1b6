package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestServiceAccountCallsTheAPIFromAPod: the learning goal "RBAC and
// ServiceAccount with least privilege" on a real node. A pod of
// ServiceAccount pod-reader, bound to view in its namespace, runs kobectl
// (mounted from the host) with nothing but what ServiceAccount admission
// mounted: its token, the cluster CA and its namespace. kobectl finds
// them (in-cluster config), reaches the API through the kubernetes
// Service, and may list its namespace's pods and nothing more; a pod with
// automountServiceAccountToken: false has no token at all.
func TestServiceAccountCallsTheAPIFromAPod(t *testing.T) {
	requireRoot(t)
	srv, _, ctx := startWithControllers(t, 3*time.Minute, "10.244.90.0/24")
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "kobectl"), "./cmd/kobectl")
	build.Dir, build.Env = repoRoot(), append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build kobectl: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"create", "namespace", "sa-demo"}, {"create", "serviceaccount", "pod-reader", "-n", "sa-demo"},
		{"create", "rolebinding", "pod-reader-view", "--clusterrole", "view", "--serviceaccount", "sa-demo:pod-reader", "-n", "sa-demo"}} {
		if out, errOut, code := kobectl(ctx, srv.Addr(), args...); code != 0 {
			t.Fatalf("kobectl %v: %s%s", args, out, errOut)
		}
	}
	pods := client.For[*core.Pod](srv.Client)
	dir := core.HostPathDirectory
	no := false
	mk := func(name string, automount *bool) {
		t.Helper()
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "sa-demo", Name: name}, Spec: core.PodSpec{NodeName: "node-1",
			ServiceAccountName: "pod-reader", AutomountServiceAccountToken: automount,
			Volumes: []core.Volume{{Name: "bin", VolumeSource: core.VolumeSource{HostPath: &core.HostPathVolumeSource{Path: bin, Type: &dir}}}},
			Containers: []core.Container{{Name: "c", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
				Command:      []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
				VolumeMounts: []core.VolumeMount{{Name: "bin", MountPath: "/opt/kobectl", ReadOnly: true}}}}}}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		if _, err := client.WaitFor(wctx, pods, "sa-demo", name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning }); err != nil {
			t.Fatal(err)
		}
	}
	mk("reader", nil)
	mk("quiet", &no)
	in := func(pod string, cmd ...string) (string, int) {
		t.Helper()
		out, errOut, code := kobectl(ctx, srv.Addr(), append([]string{"exec", "-n", "sa-demo", pod, "--"}, cmd...)...)
		return out + errOut, code
	}
	sa := core.ServiceAccountTokenMountPath
	if out, code := in("reader", "sh", "-c", "cat "+sa+"/namespace; echo; ls -l "+sa+"/; head -c 27 "+sa+"/ca.crt"); code != 0 ||
		!strings.HasPrefix(out, "sa-demo\n") || !strings.Contains(out, "token") || !strings.Contains(out, "-----BEGIN CERTIFICATE") {
		t.Fatalf("the token volume: %d %q", code, out)
	}
	if out, code := in("reader", "/opt/kobectl/kobectl", "auth", "whoami"); code != 0 || !strings.Contains(out, "system:serviceaccount:sa-demo:pod-reader") {
		t.Errorf("kobectl auth whoami in the pod: %d %q", code, out)
	}
	if out, code := in("reader", "/opt/kobectl/kobectl", "get", "pods"); code != 0 || !strings.Contains(out, "reader") || !strings.Contains(out, "quiet") {
		t.Errorf("kobectl get pods in the pod (its own namespace, view): %d %q", code, out)
	}
	for _, args := range [][]string{{"get", "secrets"}, {"get", "pods", "-n", "default"}, {"delete", "pod", "quiet"}, {"get", "nodes"}} {
		if out, code := in("reader", append([]string{"/opt/kobectl/kobectl"}, args...)...); code == 0 || !strings.Contains(out, "Forbidden") {
			t.Errorf("kobectl %v in the pod: %d %q, want Forbidden", args, code, out)
		}
	}
	if out, code := in("quiet", "ls", sa); code == 0 {
		t.Errorf("automountServiceAccountToken: false, yet %s exists: %q", sa, out)
	}
}
