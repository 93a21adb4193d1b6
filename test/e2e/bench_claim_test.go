package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/test/benchreport"
)

// TestBenchClaimPodStartup is `make bench`'s storage benchmark (as root,
// only when KOBUNE_BENCH_REPORT names the report): on two real nodes with
// kobune-csi-local, 20 pods each with a claim of a WaitForFirstConsumer
// class (scheduled, provisioned on the chosen node, bound, staged and
// published) against 20 pods with an emptyDir, alternated, each timed from
// its create call to Running as seen through a watch.
func TestBenchClaimPodStartup(t *testing.T) {
	report := benchreport.Path(t)
	requireRoot(t)
	_, c, _, ctx := startCSICluster(t, 6*time.Minute)
	wffc := storage.WaitForFirstConsumer
	if _, err := client.For[*storage.StorageClass](c).Create(ctx, &storage.StorageClass{ObjectMeta: meta.ObjectMeta{Name: "local"},
		Provisioner: csiDriver, VolumeBindingMode: &wffc}); err != nil {
		t.Fatal(err)
	}
	claims, pods := client.For[*core.PersistentVolumeClaim](c), client.For[*core.Pod](c)
	class := "local"
	start := func(name string, vol core.VolumeSource) time.Duration {
		began := time.Now()
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}, Spec: core.PodSpec{
			Volumes: []core.Volume{{Name: "data", VolumeSource: vol}},
			Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}, VolumeMounts: []core.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}); err != nil {
			t.Fatal(err)
		}
		waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
		return time.Since(began)
	}
	var withClaim, withEmptyDir []time.Duration
	for i := range 20 {
		withEmptyDir = append(withEmptyDir, start(fmt.Sprintf("e%d", i), core.VolumeSource{EmptyDir: &core.EmptyDirVolumeSource{}}))
		name := fmt.Sprintf("c%d", i)
		began := time.Now()
		if _, err := claims.Create(ctx, &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
			Spec: core.PersistentVolumeClaimSpec{AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce}, StorageClassName: &class,
				Resources: core.VolumeResourceRequirements{Requests: resource.List{"storage": resource.MustParse("10Mi")}}}}); err != nil {
			t.Fatal(err)
		}
		d := time.Since(began)
		withClaim = append(withClaim, d+start(name, core.VolumeSource{PersistentVolumeClaim: &core.PersistentVolumeClaimVolumeSource{ClaimName: name}}))
	}
	pct := func(l []time.Duration, p int) time.Duration {
		s := append([]time.Duration(nil), l...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[(len(s)-1)*p/100]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	c50, c99, e50, e99 := pct(withClaim, 50), pct(withClaim, 99), pct(withEmptyDir, 50), pct(withEmptyDir, 99)
	t.Logf("claim p50 %v p99 %v; emptyDir p50 %v p99 %v", c50, c99, e50, e99)
	benchreport.Append(t, report, fmt.Sprintf(`
## Pod start with a provisioned volume

Written by `+"`make bench`"+` (test/e2e TestBenchClaimPodStartup, as root) on %s: two real nodes with kobune-csi-local; 20 pods each with a new claim of a WaitForFirstConsumer class — the scheduler picks a node and marks the claim, that node's provisioner calls CreateVolume and writes the PersistentVolume, the binder binds, the agent calls NodeStageVolume and NodePublishVolume — alternated with 20 pods with an emptyDir, each timed from its create call (the claim's, for the first kind) to Running seen through a watch.

| pods | p50 | p99 |
|---|---|---|
| with a claim | %.0f ms | %.0f ms |
| with an emptyDir | %.0f ms | %.0f ms |
| ratio (the cost of storage in pod start) | %.2f× | %.2f× |
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), ms(c50), ms(c99), ms(e50), ms(e99), float64(c50)/float64(e50), float64(c99)/float64(e99)))
}
