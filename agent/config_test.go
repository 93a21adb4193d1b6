package agent_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
)

func ptr[T any](v T) *T { return &v }

// Environment from every source: envFrom (with a prefix; a key that is no
// valid name — one starting with a digit — left out), configMapKeyRef, secretKeyRef, an optional key
// that is missing, resourceFieldRef with a divisor, fieldRef; env wins a
// name envFrom also sets. A missing required key keeps the container
// waiting with CreateContainerConfigError naming the key, until the key
// is added — then the pod starts without anyone touching it.
func TestEnvFromConfigMapsAndSecrets(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	cms, secrets, pods := client.For[*core.ConfigMap](s.Client), client.For[*core.Secret](s.Client), client.For[*core.Pod](s.Client)
	if _, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "cfg"},
		Data: map[string]string{"A": "1", "MODE": "from-envFrom", "dashed-key.ok": "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "sec"},
		Data: map[string][]byte{"PASSWORD": []byte("s3cret"), "9lives": []byte("no")}}); err != nil {
		t.Fatal(err)
	}
	defer startAgent(t, ctx, s, rt)()
	limits := resource.List{resource.Memory: resource.MustParse("64Mi"), resource.CPU: resource.MustParse("250m")}
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "env"}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{{Name: "app", Image: "busybox", Resources: core.ResourceRequirements{Limits: limits},
			EnvFrom: []core.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &core.ConfigMapEnvSource{LocalObjectReference: core.LocalObjectReference{Name: "cfg"}}},
				{SecretRef: &core.SecretEnvSource{LocalObjectReference: core.LocalObjectReference{Name: "sec"}}},
				{ConfigMapRef: &core.ConfigMapEnvSource{LocalObjectReference: core.LocalObjectReference{Name: "nothing"}, Optional: ptr(true)}}},
			Env: []core.EnvVar{
				{Name: "CFG_MODE", Value: "from-env"},
				{Name: "A", ValueFrom: &core.EnvVarSource{ConfigMapKeyRef: &core.ConfigMapKeySelector{LocalObjectReference: core.LocalObjectReference{Name: "cfg"}, Key: "A"}}},
				{Name: "DB_PASSWORD", ValueFrom: &core.EnvVarSource{SecretKeyRef: &core.SecretKeySelector{LocalObjectReference: core.LocalObjectReference{Name: "sec"}, Key: "PASSWORD"}}},
				{Name: "MAYBE", ValueFrom: &core.EnvVarSource{ConfigMapKeyRef: &core.ConfigMapKeySelector{LocalObjectReference: core.LocalObjectReference{Name: "cfg"}, Key: "NOPE", Optional: ptr(true)}}},
				{Name: "MEM_MB", ValueFrom: &core.EnvVarSource{ResourceFieldRef: &core.ResourceFieldSelector{Resource: "limits.memory", Divisor: ptr(resource.MustParse("1Mi"))}}},
				{Name: "CPU", ValueFrom: &core.EnvVarSource{ResourceFieldRef: &core.ResourceFieldSelector{Resource: "limits.cpu"}}},
				// client-go sends an unset divisor as "0": unset, as in Kubernetes.
				{Name: "CPU_ZERO", ValueFrom: &core.EnvVarSource{ResourceFieldRef: &core.ResourceFieldSelector{Resource: "limits.cpu", Divisor: ptr(resource.MustParse("0"))}}},
				{Name: "CPU_M", ValueFrom: &core.EnvVarSource{ResourceFieldRef: &core.ResourceFieldSelector{Resource: "limits.cpu", Divisor: ptr(resource.MustParse("1m"))}}},
				{Name: "MY_NAME", ValueFrom: &core.EnvVarSource{FieldRef: &core.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				// The node's address, known before the pod's status says it.
				{Name: "HOST_IP", ValueFrom: &core.EnvVarSource{FieldRef: &core.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
				{Name: "HOST_IPS", ValueFrom: &core.EnvVarSource{FieldRef: &core.ObjectFieldSelector{FieldPath: "status.hostIPs"}}},
				// A value names variables set before it; command and args
				// name any ($$ is a literal $).
				{Name: "GREETING", Value: "hello $(MY_NAME) on $(CPU) $(LATER)"},
				{Name: "LATER", Value: "x"},
			},
			Command: []string{"sh", "-c", "echo $(GREETING) $$(MY_NAME)"}, Args: []string{"$(LATER)", "$(NOPE)"}}}}}
	created, err := pods.Create(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "env", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	cfg, ok := rt.Config(created.UID, "app")
	if !ok {
		t.Fatal("the runtime was given no config for the container")
	}
	// (A key starting with a digit is a name since Kubernetes 1.34.)
	for _, want := range []string{"CFG_A=1", "CFG_MODE=from-env", "CFG_dashed-key.ok=x", "PASSWORD=s3cret", "A=1", "DB_PASSWORD=s3cret", "MEM_MB=64", "CPU=1", "CPU_ZERO=1", "CPU_M=250", "MY_NAME=env", "9lives=no", "HOST_IP=192.0.2.10", "HOST_IPS=192.0.2.10"} {
		if !slices.Contains(cfg.Env, want) {
			t.Errorf("env lacks %s: %v", want, cfg.Env)
		}
	}
	if !slices.Contains(cfg.Env, "GREETING=hello env on 1 $(LATER)") {
		t.Errorf("env value composed of earlier variables: %v", cfg.Env)
	}
	if got := strings.Join(append(cfg.Command, cfg.Args...), "|"); got != "sh|-c|echo hello env on 1 $(LATER) $(MY_NAME)|x|$(NOPE)" {
		t.Errorf("command and args expanded: %q", got)
	}
	for _, e := range cfg.Env {
		if strings.HasPrefix(e, "MAYBE=") || strings.HasPrefix(e, "CFG_MODE=from-envFrom") {
			t.Errorf("env has %s: %v", e, cfg.Env)
		}
	}

	// A required key that is not there: the container waits, named.
	waiting := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "waits"}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{{Name: "app", Image: "busybox", Env: []core.EnvVar{{Name: "X",
			ValueFrom: &core.EnvVarSource{ConfigMapKeyRef: &core.ConfigMapKeySelector{LocalObjectReference: core.LocalObjectReference{Name: "cfg"}, Key: "LATER"}}}}}}}}
	if _, err := pods.Create(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, ctx, s, "waits", 0, func(p *core.Pod, _ bool) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	if msg := p.Status.ContainerStatuses[0].State.Waiting.Message; msg != "couldn't find key LATER in ConfigMap default/cfg" {
		t.Errorf("waiting message %q", msg)
	}
	cm, _ := cms.Get(ctx, "default", "cfg")
	cm.Data["LATER"] = "now"
	if _, err := cms.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p = waitPod(t, ctx, s, "waits", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	t.Logf("running %v after the key was added", time.Since(start))
	if cfg, _ := rt.Config(p.UID, "app"); !slices.Contains(cfg.Env, "X=now") {
		t.Errorf("env %v", cfg.Env)
	}
}

// Volumes on a node: configMap (all keys, and items with a mode), a
// downward API file of the labels, an emptyDir and a hostPath
// (DirectoryOrCreate) are made under the pod's directory and mounted
// where the containers ask (subPath, readOnly); a ConfigMap update is
// rewritten in place; the pod's deletion removes the volumes and stops the
// watch of its ConfigMap. Secret and in-memory volumes need root (tmpfs):
// the e2e tests cover them.
func TestVolumesAreMadeUpdatedAndRemoved(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	cms, pods := client.For[*core.ConfigMap](s.Client), client.For[*core.Pod](s.Client)
	if _, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "web"},
		Data: map[string]string{"index.html": "v1", "app.conf": "port=80"}}); err != nil {
		t.Fatal(err)
	}
	podDir, host := t.TempDir(), filepath.Join(t.TempDir(), "data")
	cfg := agent.Config{LeaseInterval: 200 * time.Millisecond, DisableProbes: true, Logf: t.Logf, PodDir: podDir}
	cfg.Node = node.Config{Name: "node-1", Capacity: mustResources(t, "cpu=4,memory=8Gi,pods=110"), PodCIDR: "10.244.1.0/24"}
	defer runAgent(t, ctx, cfg, s, rt)()
	dirOrCreate := core.HostPathDirectoryOrCreate
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "vols", Labels: map[string]string{"app": "web"}},
		Spec: core.PodSpec{NodeName: "node-1",
			Volumes: []core.Volume{
				{Name: "html", VolumeSource: core.VolumeSource{ConfigMap: &core.ConfigMapVolumeSource{LocalObjectReference: core.LocalObjectReference{Name: "web"}}}},
				{Name: "conf", VolumeSource: core.VolumeSource{ConfigMap: &core.ConfigMapVolumeSource{LocalObjectReference: core.LocalObjectReference{Name: "web"},
					Items: []core.KeyToPath{{Key: "app.conf", Path: "etc/app.conf", Mode: ptr(int32(0o600))}}}}},
				{Name: "info", VolumeSource: core.VolumeSource{DownwardAPI: &core.DownwardAPIVolumeSource{Items: []core.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &core.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
				{Name: "scratch", VolumeSource: core.VolumeSource{EmptyDir: &core.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: core.VolumeSource{HostPath: &core.HostPathVolumeSource{Path: host, Type: &dirOrCreate}}},
			},
			Containers: []core.Container{{Name: "app", Image: "busybox", VolumeMounts: []core.VolumeMount{
				{Name: "html", MountPath: "/usr/share/nginx/html"},
				{Name: "conf", MountPath: "/etc/app.conf", SubPath: "etc/app.conf"},
				{Name: "info", MountPath: "/etc/podinfo"},
				{Name: "scratch", MountPath: "/cache", SubPath: "a/b"},
				{Name: "scratch", MountPath: "/logs", SubPathExpr: "logs/$(POD)"},
				{Name: "host", MountPath: "/data", ReadOnly: true},
			}, Env: []core.EnvVar{{Name: "POD", ValueFrom: &core.EnvVarSource{FieldRef: &core.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}}
	created, err := pods.Create(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "vols", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	c, _ := rt.Config(created.UID, "app")
	mounts := map[string]string{}
	for _, m := range c.Mounts {
		mounts[m.Destination] = m.Source
		if ro := m.Destination != "/cache" && m.Destination != "/logs"; m.ReadOnly != ro {
			t.Errorf("mount %s read-only %v", m.Destination, m.ReadOnly)
		}
	}
	vols := filepath.Join(podDir, created.UID, "volumes")
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	if got := read(filepath.Join(mounts["/usr/share/nginx/html"], "index.html")); got != "v1" {
		t.Errorf("index.html = %q (mounts %v)", got, mounts)
	}
	if !strings.HasPrefix(mounts["/usr/share/nginx/html"], filepath.Join(vols, "kubernetes.io~configmap", "html")) {
		t.Errorf("configMap volume at %s", mounts["/usr/share/nginx/html"])
	}
	if info, err := os.Stat(mounts["/etc/app.conf"]); err != nil || info.Mode().Perm() != 0o600 || read(mounts["/etc/app.conf"]) != "port=80" {
		t.Errorf("subPath item: %v %v %q", info, err, read(mounts["/etc/app.conf"]))
	}
	if got := read(filepath.Join(mounts["/etc/podinfo"], "labels")); got != "app=\"web\"\n" {
		t.Errorf("downward API labels = %q", got)
	}
	if info, err := os.Stat(mounts["/cache"]); err != nil || !info.IsDir() || !strings.HasSuffix(mounts["/cache"], "kubernetes.io~empty-dir/scratch/a/b") {
		t.Errorf("emptyDir subPath %s: %v", mounts["/cache"], err)
	}
	if info, err := os.Stat(host); err != nil || !info.IsDir() || mounts["/data"] != host {
		t.Errorf("hostPath %s: %v", mounts["/data"], err)
	}
	if info, err := os.Stat(mounts["/logs"]); err != nil || !info.IsDir() || !strings.HasSuffix(mounts["/logs"], "kubernetes.io~empty-dir/scratch/logs/vols") {
		t.Errorf("subPathExpr logs/$(POD): mounted %s: %v; want .../scratch/logs/vols", mounts["/logs"], err)
	}

	// A subPathExpr that expands to a way out of the volume: the container
	// waits, CreateContainerConfigError, as the kubelet refuses it.
	escape := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "escape"}, Spec: core.PodSpec{NodeName: "node-1",
		Volumes: []core.Volume{{Name: "scratch", VolumeSource: core.VolumeSource{EmptyDir: &core.EmptyDirVolumeSource{}}}},
		Containers: []core.Container{{Name: "app", Image: "busybox", Env: []core.EnvVar{{Name: "UP", Value: ".."}},
			VolumeMounts: []core.VolumeMount{{Name: "scratch", MountPath: "/logs", SubPathExpr: "$(UP)"}}}}}}
	if _, err := pods.Create(ctx, escape); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "escape", 0, func(p *core.Pod, _ bool) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerConfigError" &&
			strings.Contains(cs[0].State.Waiting.Message, `subPathExpr "$(UP)" expands to ".."`)
	})

	// The ConfigMap changes: the file in the running pod's volume follows.
	cm, _ := cms.Get(ctx, "default", "web")
	cm.Data["index.html"] = "v2"
	start := time.Now()
	if _, err := cms.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(vols, "kubernetes.io~configmap", "html", "index.html")
	for read(html) != "v2" {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("index.html still %q 10 s after the update", read(html))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the update reached the volume in %v", time.Since(start))

	// Deleted: the volumes go (the hostPath stays: it is the node's).
	if err := pods.Delete(ctx, "default", "vols", client.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(podDir, created.UID)); os.IsNotExist(err) {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the pod's directory is still there")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(host); err != nil {
		t.Errorf("the hostPath went with the pod: %v", err)
	}
}

// A pod whose emptyDir on disk grows past its sizeLimit is evicted: Failed,
// reason Evicted, the message naming the volume and the limit.
func TestEmptyDirOverItsSizeLimitIsEvicted(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	podDir := t.TempDir()
	cfg := agent.Config{LeaseInterval: 200 * time.Millisecond, DisableProbes: true, Logf: t.Logf, PodDir: podDir, LocalStorageInterval: 100 * time.Millisecond}
	cfg.Node = node.Config{Name: "node-1", Capacity: mustResources(t, "cpu=4,memory=8Gi,pods=110"), PodCIDR: "10.244.1.0/24"}
	defer runAgent(t, ctx, cfg, s, rt)()
	limit := resource.MustParse("4Ki")
	created, err := client.For[*core.Pod](s.Client).Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "big"},
		Spec: core.PodSpec{NodeName: "node-1", Volumes: []core.Volume{{Name: "cache", VolumeSource: core.VolumeSource{EmptyDir: &core.EmptyDirVolumeSource{SizeLimit: &limit}}}},
			Containers: []core.Container{{Name: "app", Image: "busybox", VolumeMounts: []core.VolumeMount{{Name: "cache", MountPath: "/cache"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "big", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	dir := filepath.Join(podDir, created.UID, "volumes", "kubernetes.io~empty-dir", "cache")
	if err := os.WriteFile(filepath.Join(dir, "small"), make([]byte, 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // several measurements: under the limit, nothing happens
	if p, _ := client.For[*core.Pod](s.Client).Get(ctx, "default", "big"); p.Status.Phase != core.PodRunning {
		t.Fatalf("evicted under its limit: %s %s", p.Status.Phase, p.Status.Message)
	}
	if err := os.WriteFile(filepath.Join(dir, "large"), make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, ctx, s, "big", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodFailed })
	if p.Status.Reason != "Evicted" || p.Status.Message != `Usage of EmptyDir volume "cache" exceeds the limit "4Ki".` {
		t.Errorf("status %q %q", p.Status.Reason, p.Status.Message)
	}
}
