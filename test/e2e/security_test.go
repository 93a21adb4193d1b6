package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestSecurityContextOnARealNode runs pods with securityContexts on a real
// node and reads, from inside each container, what the kernel says of it:
// user and groups, capability bounding set, no_new_privs, seccomp mode,
// a read-only root filesystem, an emptyDir owned by the fsGroup, the
// node's PID namespace; and a root image under runAsNonRoot is refused
// with the kubelet's message.
func TestSecurityContextOnARealNode(t *testing.T) {
	requireRoot(t)
	srv, _, ctx := startWithControllers(t, 3*time.Minute, "10.244.96.0/24")
	pods := client.For[*core.Pod](srv.Client)
	i64 := func(v int64) *int64 { return &v }
	yes, no := true, false
	sleep := []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}
	mk := func(name string, spec core.PodSpec) {
		t.Helper()
		spec.NodeName = "node-1"
		for i := range spec.Containers {
			spec.Containers[i].Image, spec.Containers[i].ImagePullPolicy, spec.Containers[i].Command = "kobune.local/busybox:1.35", core.PullNever, sleep
		}
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.For[*core.Secret](srv.Client).Create(ctx, &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "tok"},
		Data: map[string][]byte{"key": []byte("t0ken")}}); err != nil {
		t.Fatal(err)
	}
	owner := int32(0o400)
	mk("restricted", core.PodSpec{
		SecurityContext: &core.PodSecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(3000), FSGroup: i64(2000), SupplementalGroups: []int64{4000},
			SeccompProfile: &core.SeccompProfile{Type: core.SeccompRuntimeDefault}},
		Volumes: []core.Volume{{Name: "data", VolumeSource: core.VolumeSource{EmptyDir: &core.EmptyDirVolumeSource{}}},
			{Name: "tok", VolumeSource: core.VolumeSource{Secret: &core.SecretVolumeSource{SecretName: "tok", DefaultMode: &owner}}}},
		Containers: []core.Container{{Name: "c", VolumeMounts: []core.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "tok", MountPath: "/secret"}},
			SecurityContext: &core.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
				Capabilities: &core.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}}}}},
	})
	mk("plain", core.PodSpec{Containers: []core.Container{{Name: "c"}}})
	mk("hostpid", core.PodSpec{HostPID: true, Containers: []core.Container{{Name: "c"}}})
	mk("privileged", core.PodSpec{Containers: []core.Container{{Name: "c", SecurityContext: &core.SecurityContext{Privileged: &yes}}}})
	mk("nonroot", core.PodSpec{SecurityContext: &core.PodSecurityContext{RunAsNonRoot: &yes}, Containers: []core.Container{{Name: "c"}}})
	for _, name := range []string{"restricted", "plain", "hostpid", "privileged"} {
		waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	}
	exec := func(pod, cmd string) string {
		t.Helper()
		out, errOut, code := kobectl(ctx, srv.Addr(), "exec", pod, "--", "sh", "-c", cmd)
		if code != 0 && !strings.Contains(cmd, "||") {
			t.Errorf("%s: %s: exit %d: %s%s", pod, cmd, code, out, errOut)
		}
		return strings.TrimSpace(out)
	}
	status := func(pod, field string) string {
		return exec(pod, "grep '^"+field+":' /proc/self/status | cut -f2")
	}
	for _, c := range []struct{ pod, got, want string }{
		{"restricted", exec("restricted", "id -u; id -g"), "1000\n3000"},
		{"restricted", status("restricted", "CapBnd"), "0000000000000400"}, // NET_BIND_SERVICE only
		{"restricted", status("restricted", "NoNewPrivs"), "1"},
		{"restricted", status("restricted", "Seccomp"), "2"}, // a filter
		{"restricted", exec("restricted", "touch /x 2>&1 || echo refused"), "touch: /x: Read-only file system\nrefused"},
		{"restricted", exec("restricted", "touch /data/f && stat -c %g /data/f"), "2000"},
		// A 0400 secret file is readable by the non-root user through the fsGroup.
		{"restricted", exec("restricted", "cat /secret/key; echo; stat -L -c '%g %a' /secret/key"), "t0ken\n2000 440"},
		{"plain", exec("plain", "id -u"), "0"},
		{"plain", status("plain", "CapBnd"), "00000000a80425fb"}, // containerd's (Docker's) default set
		{"plain", status("plain", "NoNewPrivs"), "0"},
		{"plain", status("plain", "Seccomp"), "0"}, // Kubernetes' default: Unconfined
		{"plain", exec("plain", "cat /proc/1/comm"), "sh"},
		{"privileged", status("privileged", "CapBnd"), ownCapBnd(t)}, // every capability the node's runtime has
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.pod, c.got, c.want)
		}
	}
	if groups := " " + exec("restricted", "id -G") + " "; !strings.Contains(groups, " 2000 ") || !strings.Contains(groups, " 4000 ") {
		t.Errorf("restricted: groups %q, want the fsGroup 2000 and the supplemental group 4000", groups)
	}
	if comm := exec("hostpid", "cat /proc/1/comm"); comm == "sh" || comm == "" {
		t.Errorf("hostPID: PID 1 is %q, want the node's init", comm)
	}
	p := waitForPod(t, ctx, pods, "nonroot", 0, func(p *core.Pod, _ bool) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	if msg := p.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "container has runAsNonRoot and image will run as root") {
		t.Errorf("nonroot: %q", msg)
	}
}

// ownCapBnd is this (root) process's capability bounding set, as
// /proc/self/status shows it: what a privileged container gets.
func ownCapBnd(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no CapBnd in /proc/self/status")
	return ""
}
