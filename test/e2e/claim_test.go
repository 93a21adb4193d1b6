package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
)

// TestClaimOnARealNode: a static PersistentVolume (a directory of the
// node) is bound to a claim; a pod writes through the claim into the
// node's directory; deleting the claim while the pod runs leaves it
// Terminating until the pod is gone; the volume is then Released and,
// under Retain, its data stays.
func TestClaimOnARealNode(t *testing.T) {
	requireRoot(t)
	srv, nodes, ctx := startWithControllers(t, 3*time.Minute, "10.244.99.0/24")
	dir := filepath.Join(t.TempDir(), "pv")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	volumes, claims, pods := client.For[*core.PersistentVolume](srv.Client), client.For[*core.PersistentVolumeClaim](srv.Client), client.For[*core.Pod](srv.Client)
	if _, err := volumes.Create(ctx, &core.PersistentVolume{ObjectMeta: meta.ObjectMeta{Name: "node-dir"}, Spec: core.PersistentVolumeSpec{
		Capacity: resource.List{"storage": resource.MustParse("1Gi")}, AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce},
		HostPath: &core.HostPathVolumeSource{Path: dir}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Create(ctx, &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "data"},
		Spec: core.PersistentVolumeClaimSpec{AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce}, StorageClassName: new(string),
			Resources: core.VolumeResourceRequirements{Requests: resource.List{"storage": resource.MustParse("100Mi")}}}}); err != nil {
		t.Fatal(err)
	}
	writer, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "writer"}, Spec: core.PodSpec{NodeName: "node-1",
		Volumes: []core.Volume{{Name: "data", VolumeSource: core.VolumeSource{PersistentVolumeClaim: &core.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
			Command:      []string{"sh", "-c", "echo kept > /data/file && sleep 3600"},
			VolumeMounts: []core.VolumeMount{{Name: "data", MountPath: "/data"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	waitForPod(t, ctx, pods, "writer", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	deadline := time.Now().Add(20 * time.Second)
	for b, _ := os.ReadFile(filepath.Join(dir, "file")); strings.TrimSpace(string(b)) != "kept"; b, _ = os.ReadFile(filepath.Join(dir, "file")) {
		if time.Now().After(deadline) {
			t.Fatalf("the pod's write is not in the node's directory: %q", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _, _ := kobectl(ctx, srv.Addr(), "get", "pvc", "data")
	if !strings.Contains(out, "Bound") || !strings.Contains(out, "node-dir") {
		t.Errorf("kobectl get pvc:\n%s", out)
	}
	if err := claims.Delete(ctx, "default", "data", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if c, err := claims.Get(ctx, "default", "data"); err != nil || c.DeletionTimestamp == nil {
		t.Fatalf("the claim in use: %v, %v; want it Terminating", c, err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "writer", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		pv, err := volumes.Get(ctx, "", "node-dir")
		_, claimErr := claims.Get(ctx, "default", "data")
		if err == nil && pv.Status.Phase == core.VolumeReleased && client.IsNotFound(claimErr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60 s after the pod's deletion: volume %v (%v), claim %v", pv, err, claimErr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "file")); err != nil || strings.TrimSpace(string(b)) != "kept" {
		t.Errorf("Retain: the data went: %q %v", b, err)
	}
	// The agent has stopped the pod (its directory goes last): the test
	// does not end while it is at it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(nodes[0].dir, "agent", "pods", writer.UID)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deleted pod is still on the node after 30 s")
		}
	}
}
