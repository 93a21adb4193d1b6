package compat

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestKubectlStreamsOnTheLab runs the streaming subresources on real nodes
// (the in-process cluster's simulated nodes have no logs, processes or
// ports): the lab (deploy/lab/lab.sh, real containerd, as root) is brought
// up, and the real kubectl — and kobectl beside it — use pods/exec (exit
// codes, stdin, stderr), pods/log (follow, selector), pods/attach,
// pods/portforward (a GET through the forwarded loopback port) and cp
// (tar through exec, both ways); a user without the right gets Forbidden.
func TestKubectlStreamsOnTheLab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the lab needs root (network namespaces, containerd): run make test as root to include this test")
	}
	if exec.Command("ip", "link", "show", "kobune-lab0").Run() == nil {
		t.Skip("a lab is already up on this host (kobune-lab0 exists); not touching it")
	}
	if l, err := net.Listen("tcp", "127.0.0.1:6443"); err != nil {
		t.Skip("127.0.0.1:6443 is in use; the lab's API server needs it")
	} else {
		l.Close()
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// A short state path: the CSI driver's socket lives below it, and a
	// unix socket's path may not exceed 107 bytes (t.TempDir's names are
	// long).
	short, err := os.MkdirTemp("", "klab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	state := filepath.Join(short, "lab")
	lab := filepath.Join(repo, "deploy", "lab", "lab.sh")
	env := append(os.Environ(), "KOBUNE_LAB_STATE="+state, "HOME="+t.TempDir(), "SUDO_USER=")
	t.Cleanup(func() { // whatever happens, take it down
		if t.Failed() { // what the components said, before it goes
			logs, _ := filepath.Glob(filepath.Join(state, "logs", "*.log"))
			for _, l := range logs {
				if b, err := exec.Command("tail", "-n", "25", l).Output(); err == nil {
					t.Logf("%s (last lines):\n%s", filepath.Base(l), b)
				}
			}
		}
		cmd := exec.Command(lab, "down")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("lab.sh down: %v\n%s", err, out)
		}
	})
	up := exec.Command(lab, "up", "--nodes", "2")
	up.Env = env
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("lab.sh up: %v\n%s", err, out)
	}
	s := &session{t: t, home: t.TempDir(), kubeconfig: filepath.Join(state, "pki", "admin.kubeconfig")}
	kobectl := func(args ...string) *exec.Cmd {
		return exec.Command(filepath.Join(repo, "bin", "kobectl"), append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
	}

	// exec: stdout, stderr and the exit code come back apart.
	r := s.run("", "exec", "-n", "lab", "client", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if r.code != 3 || r.stdout != "out\n" || !strings.Contains(r.stderr, "err\n") || !strings.Contains(r.stderr, "command terminated with exit code 3") {
		t.Errorf("kubectl exec exiting 3: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	s.okWith("one\ntwo\n", []string{"exec", "-i", "-n", "lab", "client", "--", "sh", "-c", "cat; echo end"}, "one\ntwo\nend\n")
	s.okWith("", []string{"exec", "sts/db", "--", "hostname"}, "db-")
	r = s.run("", "exec", "-n", "lab", "hello-1", "--", "sh") // labapp's image has no shell
	if r.code == 0 || !strings.Contains(r.stderr, `exec: "sh": executable file not found`) {
		t.Errorf("kubectl exec of a missing program: code %d, stderr %q", r.code, r.stderr)
	}

	// Follow a log, attach, and a selector's logs while hello-1 answers a
	// request from the client pod (traffic inside the lab's namespaces).
	ip := s.ok("", "get", "pod", "hello-1", "-n", "lab", "-o", "jsonpath={.status.podIP}")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	follow := s.start(ctx, "logs", "-f", "-n", "lab", "hello-1", "--tail", "0")
	attach := s.start(ctx, "attach", "-n", "lab", "hello-1")
	kattach := startCmd(ctx, t, kobectl("attach", "-n", "lab", "hello-1"))
	// attach and logs -f show only what comes after they are open, and
	// when that is depends on the machine's load: ask again each second
	// until all three have shown a request, for up to 30 s.
	marker := "/?from=the-compat-test" // labapp logs the request URI
	streams := map[string]*syncBuffer{"kubectl logs -f": follow, "kubectl attach": attach, "kobectl attach": kattach}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.okWith("", []string{"exec", "-n", "lab", "client", "--", "wget", "-q", "-O", "-", "http://" + ip + ":8080" + marker}, "labapp 1.0 on hello-1")
		seen := 0
		for _, out := range streams {
			if strings.Contains(out.String(), "GET "+marker) {
				seen++
			}
		}
		if seen == len(streams) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	for name, out := range streams {
		if !strings.Contains(out.String(), "GET "+marker) {
			t.Errorf("%s did not show a request made while it ran, in 30 s:\n%s", name, out.String())
		}
	}
	// --timestamps and --since over REST: the request's line carries the
	// time it was written, and nothing is newer than a time to come.
	asked := time.Now()
	stamped := ""
	for _, l := range strings.Split(s.okWith("", []string{"logs", "-n", "lab", "hello-1", "--timestamps", "--since", "10m"}, marker), "\n") {
		if strings.Contains(l, marker) {
			stamped = l
		}
	}
	if at, err := time.Parse(time.RFC3339Nano, strings.Fields(stamped + " x")[0]); err != nil || at.Before(asked.Add(-2*time.Minute)) || at.After(time.Now()) {
		t.Errorf("kubectl logs --timestamps: the request's line %q has no time from the last two minutes (%v)", stamped, err)
	}
	if out := s.ok("", "logs", "-n", "lab", "hello-1", "--since-time", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); out != "" {
		t.Errorf("kubectl logs --since-time an hour ahead: %q, want nothing", out)
	}
	s.okWith("", []string{"logs", "-n", "demo", "-l", "app=web", "--prefix"}, "[pod/web-")
	kl, err := kobectl("logs", "-n", "lab", "-l", "app=hello", "--prefix", "--tail", "-1").CombinedOutput()
	if err != nil || !strings.Contains(string(kl), "[pod/hello-1/app] ") || !strings.Contains(string(kl), marker) {
		t.Errorf("kobectl logs -l --prefix: %v\n%s", err, kl)
	}
	r = s.run("", "attach", "-i", "-n", "lab", "hello-1")
	if r.code == 0 || !strings.Contains(r.stderr, "without stdin or a terminal") {
		t.Errorf("kubectl attach -i: code %d, stderr %q: want a refusal that says why", r.code, r.stderr)
	}

	// port-forward, with kubectl and with kobectl: a GET through the
	// forwarded loopback port reaches the pod.
	for _, pf := range []struct {
		name string
		out  *syncBuffer
	}{
		{"kubectl port-forward", s.start(ctx, "port-forward", "-n", "lab", "pod/hello-2", ":8080")},
		{"kobectl port-forward", startCmd(ctx, t, kobectl("port-forward", "-n", "demo", "svc/web", ":80"))},
	} {
		if !waitFor(pf.out, "Forwarding from 127.0.0.1:") {
			t.Fatalf("%s did not start:\n%s", pf.name, pf.out.String())
		}
		port := regexp.MustCompile(`127\.0\.0\.1:(\d+)`).FindStringSubmatch(pf.out.String())[1]
		for i := 0; i < 3; i++ { // each request is a new forwarded connection
			body, err := get(ctx, "http://127.0.0.1:"+port+"/")
			if err != nil || !strings.HasPrefix(body, "labapp ") {
				t.Errorf("%s: GET: %v %q", pf.name, err, body)
			}
		}
		if !waitFor(pf.out, "Handling connection for "+port) {
			t.Errorf("%s printed no connection:\n%s", pf.name, pf.out.String())
		}
	}

	// cp: a file into a pod and back (kubectl's tar through exec).
	dir := t.TempDir()
	src, back := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	if err := os.WriteFile(src, []byte("copied through exec\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.ok("", "cp", src, "lab/client:/tmp/in.txt")
	s.okWith("", []string{"exec", "-n", "lab", "client", "--", "cat", "/tmp/in.txt"}, "copied through exec")
	s.ok("", "cp", "lab/client:/tmp/in.txt", back)
	if b, err := os.ReadFile(back); err != nil || string(b) != "copied through exec\n" {
		t.Errorf("kubectl cp back: %v %q", err, b)
	}

	// kobectl cp: a directory into a pod and back.
	tree := filepath.Join(dir, "tree")
	os.MkdirAll(filepath.Join(tree, "sub"), 0o755)
	os.WriteFile(filepath.Join(tree, "sub", "b.txt"), []byte("deep\n"), 0o644)
	if out, err := kobectl("cp", tree, "lab/client:/tmp/tree").CombinedOutput(); err != nil {
		t.Errorf("kobectl cp into the pod: %v %s", err, out)
	}
	if out, err := kobectl("cp", "lab/client:/tmp/tree", filepath.Join(dir, "tree-back")).CombinedOutput(); err != nil {
		t.Errorf("kobectl cp out of the pod: %v %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "tree-back", "sub", "b.txt")); err != nil || string(b) != "deep\n" {
		t.Errorf("kobectl cp round trip: %v %q", err, b)
	}

	// top: the metrics API (metrics.k8s.io/v1beta1) from the agents'
	// samples of the real nodes, as the real kubectl asks for it; the
	// first samples take a few seconds after the pods start.
	for _, args := range [][]string{{"top", "nodes"}, {"top", "pods", "-n", "lab", "--containers"}} {
		want := map[string][]string{"nodes": {"NAME", "CPU(cores)", "MEMORY(bytes)", "node-1", "node-2"},
			"pods": {"POD", "NAME", "CPU(cores)", "MEMORY(bytes)", "hello-1", "client"}}[args[1]]
		var r result
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
			if r = s.run("", args...); r.code == 0 || time.Now().After(deadline) {
				break
			}
		}
		for _, w := range want {
			if r.code != 0 || !strings.Contains(r.stdout, w) {
				t.Errorf("kubectl %s: exit %d, want %q in\n%s%s", strings.Join(args, " "), r.code, w, r.stdout, r.stderr)
				break
			}
		}
	}

	// The lab's user dev, given view in lab, may read its pods but not
	// exec into them or forward their ports.
	s.ok("", "create", "rolebinding", "dev-view", "--clusterrole=view", "--user=dev", "-n", "lab")
	dev := &session{t: t, home: t.TempDir(), kubeconfig: filepath.Join(state, "pki", "user-dev.kubeconfig")}
	dev.ok("", "get", "pod", "hello-1", "-n", "lab")
	r = dev.run("", "exec", "-n", "lab", "hello-1", "--", "true")
	if r.code == 0 || !strings.Contains(r.stderr, `cannot create resource "pods/exec" in API group "" in the namespace "lab"`) {
		t.Errorf("dev's exec in lab: code %d, stderr %q: want Forbidden", r.code, r.stderr)
	}
	r = dev.run("", "port-forward", "-n", "lab", "pod/hello-1", ":8080")
	if r.code == 0 || !strings.Contains(r.stderr, `cannot create resource "pods/portforward"`) {
		t.Errorf("dev's port-forward in lab: code %d, stderr %q: want Forbidden", r.code, r.stderr)
	}
}

// start runs kubectl in the background until ctx ends; its output (both
// streams) is read while it runs.
func (s *session) start(ctx context.Context, args ...string) *syncBuffer {
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
	cmd.Env = []string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH")}
	return startCmd(ctx, s.t, cmd)
}

// startCmd starts cmd with its output in a buffer; the test's end stops it.
func startCmd(ctx context.Context, t *testing.T, cmd *exec.Cmd) *syncBuffer {
	t.Helper()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the process is ours: stop it by its PID
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &out
}

// waitFor waits up to 20 s for want to appear in out.
func waitFor(out *syncBuffer, want string) bool {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(out.String(), want) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func get(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
