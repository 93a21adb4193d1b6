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

// TestConfigAndVolumesInPods, on a real node: a pod with every volume
// type and env source sees the right contents (files, modes, read-only
// mounts, tmpfs for secrets and Memory emptyDirs, a hostPath shared with
// the node); a ConfigMap update reaches the file in the running pod; an
// agent killed while the pod's volumes are being made, and restarted,
// leaves each tmpfs mounted once; the pod's deletion leaves no mount and
// no directory.
func TestConfigAndVolumesInPods(t *testing.T) {
	requireRoot(t)
	srv, nodes, ctx := startWithControllers(t, 4*time.Minute, "10.244.97.0/24")
	cms, secrets, pods := client.For[*core.ConfigMap](srv.Client), client.For[*core.Secret](srv.Client), client.For[*core.Pod](srv.Client)
	if _, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "web-config"},
		Data: map[string]string{"index.html": "v1", "LOG_LEVEL": "debug"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "db"},
		Data: map[string][]byte{"password": []byte("s3cret")}}); err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(t.TempDir(), "shared")
	ref := func(name string) core.LocalObjectReference { return core.LocalObjectReference{Name: name} }
	mode, size, dirOrCreate := int32(0o400), resource.MustParse("1Mi"), core.HostPathDirectoryOrCreate
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "vols", Labels: map[string]string{"app": "vols"}},
		Spec: core.PodSpec{NodeName: "node-1",
			Volumes: []core.Volume{
				{Name: "config", VolumeSource: core.VolumeSource{ConfigMap: &core.ConfigMapVolumeSource{LocalObjectReference: ref("web-config")}}},
				{Name: "secret", VolumeSource: core.VolumeSource{Secret: &core.SecretVolumeSource{SecretName: "db", Items: []core.KeyToPath{{Key: "password", Path: "pw", Mode: &mode}}}}},
				{Name: "podinfo", VolumeSource: core.VolumeSource{DownwardAPI: &core.DownwardAPIVolumeSource{Items: []core.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &core.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
				{Name: "all", VolumeSource: core.VolumeSource{Projected: &core.ProjectedVolumeSource{Sources: []core.VolumeProjection{
					{ConfigMap: &core.ConfigMapProjection{LocalObjectReference: ref("web-config"), Items: []core.KeyToPath{{Key: "index.html", Path: "web/index.html"}}}},
					{Secret: &core.SecretProjection{LocalObjectReference: ref("db")}},
					{DownwardAPI: &core.DownwardAPIProjection{Items: []core.DownwardAPIVolumeFile{{Path: "name", FieldRef: &core.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}}},
				{Name: "scratch", VolumeSource: core.VolumeSource{EmptyDir: &core.EmptyDirVolumeSource{}}},
				{Name: "mem", VolumeSource: core.VolumeSource{EmptyDir: &core.EmptyDirVolumeSource{Medium: core.StorageMediumMemory, SizeLimit: &size}}},
				{Name: "host", VolumeSource: core.VolumeSource{HostPath: &core.HostPathVolumeSource{Path: host, Type: &dirOrCreate}}},
			},
			Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"sleep", "3600"},
				EnvFrom: []core.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &core.ConfigMapEnvSource{LocalObjectReference: ref("web-config")}}},
				Env: []core.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &core.EnvVarSource{SecretKeyRef: &core.SecretKeySelector{LocalObjectReference: ref("db"), Key: "password"}}},
					{Name: "LEVEL", ValueFrom: &core.EnvVarSource{ConfigMapKeyRef: &core.ConfigMapKeySelector{LocalObjectReference: ref("web-config"), Key: "LOG_LEVEL"}}}},
				VolumeMounts: []core.VolumeMount{{Name: "config", MountPath: "/etc/config"}, {Name: "secret", MountPath: "/etc/secret"},
					{Name: "podinfo", MountPath: "/etc/podinfo"}, {Name: "all", MountPath: "/etc/all"}, {Name: "scratch", MountPath: "/scratch"},
					{Name: "mem", MountPath: "/mem"}, {Name: "host", MountPath: "/host"}, {Name: "config", MountPath: "/index.html", SubPath: "index.html"}}}}}}
	created, err := pods.Create(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	// Killed while it makes the pod's volumes, restarted: each tmpfs once.
	time.Sleep(300 * time.Millisecond)
	nodes[0].killAgent()
	nodes[0].startAgent(t, "10.244.97.0/24")
	waitForPod(t, ctx, pods, "vols", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	podDir := filepath.Join(nodes[0].dir, "agent", "pods", created.UID)
	tmpfs := func() []string {
		b, _ := os.ReadFile("/proc/self/mounts")
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 2 && strings.HasPrefix(f[1], podDir+"/") {
				out = append(out, f[1]+" "+f[2])
			}
		}
		return out
	}
	if got := tmpfs(); len(got) != 4 {
		t.Errorf("mounts below the pod's directory after the agent's restart: %v, want the secret, projected, Memory emptyDir and ServiceAccount token tmpfs once each", got)
	}

	sh := func(cmd string) string {
		out, errOut, code := kobectl(ctx, srv.Addr(), "exec", "vols", "--", "sh", "-c", cmd)
		if code != 0 {
			t.Errorf("%s: exit %d: %s%s", cmd, code, out, errOut)
		}
		return strings.TrimSpace(out)
	}
	for cmd, want := range map[string]string{
		"cat /etc/config/index.html":                                  "v1",
		"cat /index.html":                                             "v1",
		"echo $CFG_LOG_LEVEL $LEVEL $DB_PASSWORD":                     "debug debug s3cret",
		"cat /etc/secret/pw":                                          "s3cret",
		"stat -L -c %a /etc/secret/pw":                                "400",
		"cat /etc/podinfo/labels":                                     `app="vols"`,
		"cat /etc/all/web/index.html /etc/all/password /etc/all/name": "v1s3cretvols", // the values as stored: no newlines
		"grep -c ' /mem tmpfs ' /proc/mounts; grep -c ' /etc/secret tmpfs ' /proc/mounts": "1\n1",
		"touch /etc/config/x 2>&1 || echo read-only":                                      "read-only",
		"echo from-pod > /host/f && echo from-pod > /scratch/f && cat /scratch/f":         "from-pod",
	} {
		if got := sh(cmd); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(host, "f")); string(b) != "from-pod\n" {
		t.Errorf("the node's hostPath has %q", b)
	}

	// The ConfigMap changes: the running pod's file follows (the subPath
	// mount keeps the old contents, as in Kubernetes).
	cm, _ := cms.Get(ctx, "default", "web-config")
	cm.Data["index.html"] = "v2"
	if _, err := cms.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for sh("cat /etc/config/index.html") != "v2" {
		if time.Since(start) > 2*time.Second {
			t.Fatalf("the pod still reads %q 2 s after the update", sh("cat /etc/config/index.html"))
		}
	}
	t.Logf("the update reached the running pod within %v", time.Since(start))
	if got := sh("cat /etc/all/web/index.html"); got != "v2" {
		t.Errorf("the projected copy reads %q", got)
	}

	// Deleted: nothing mounted, nothing left of its volumes.
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "vols", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, statErr := os.Stat(podDir)
		if os.IsNotExist(statErr) && len(tmpfs()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the deletion: mounts %v, directory: %v", tmpfs(), statErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(host, "f")); err != nil {
		t.Errorf("the hostPath's file went with the pod: %v", err)
	}
}
