package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// unpullable names a registry on the node's own loopback where nothing
// listens: a pull fails at once, and no packet leaves the machine.
const unpullable = "127.0.0.1:1/missing:1.0"

// Issue #32: a pod's image is resolved as the kubelet and containerd
// resolve it (nginx:1.14.2 is docker.io/library/nginx:1.14.2), and the
// status says which image and which bytes run (image, imageID); a pull
// that fails shows ErrImagePull, then ImagePullBackOff while the
// kubelet's back-off holds the next pull back; an init container whose
// image fails shows in initContainerStatuses; a name outside the grammar
// is InvalidImageName.
func TestImageNamesResolveAndPullFailuresBackOff(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	n := nodes[0]
	n.startAgent(t, "10.244.86.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// What a pull of nginx:1.14.2 would have left on the node, made
	// locally: the lab's app under Docker Hub's name.
	// (The agent loads the lab's images as it starts.)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out := n.ctr("images", "tag", "kobune.local/labapp:1.0", "docker.io/library/nginx:1.14.2")
		if !strings.Contains(out, "ctr:") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ctr images tag: %s", out)
		}
	}
	pods := client.For[*core.Pod](srv.Client)
	pod := func(name string, init, image string) *core.Pod {
		p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "app", Image: image}}}}
		if init != "" {
			p.Spec.InitContainers = []core.Container{{Name: "setup", Image: init, Command: []string{"true"}}}
		}
		return p
	}
	for _, p := range []*core.Pod{
		pod("nginx", "", "nginx:1.14.2"),
		pod("unpullable", "", unpullable),
		pod("badinit", unpullable, "kobune.local/labapp:1.0"),
		pod("invalid", "", "Nginx:Latest"),
	} {
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	running := waitForPod(t, ctx, pods, "nginx", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	cs := running.Status.ContainerStatuses[0]
	if cs.Image != "docker.io/library/nginx:1.14.2" || !strings.HasPrefix(cs.ImageID, "docker.io/library/nginx@sha256:") {
		t.Errorf("pod nginx:1.14.2 runs image %q, imageID %q; want docker.io/library/nginx:1.14.2 and docker.io/library/nginx@sha256:...", cs.Image, cs.ImageID)
	}

	// ErrImagePull first, then ImagePullBackOff, seen in the pod's status.
	seen := map[string]bool{}
	p := waitForPod(t, ctx, pods, "unpullable", 0, func(p *core.Pod, _ bool) bool {
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false
		}
		reason := p.Status.ContainerStatuses[0].State.Waiting.Reason
		seen[reason] = true
		return seen["ErrImagePull"] && reason == "ImagePullBackOff"
	})
	w := p.Status.ContainerStatuses[0].State.Waiting
	if w.Message != `Back-off pulling image "`+unpullable+`"` {
		t.Errorf("ImagePullBackOff message %q", w.Message)
	}
	evs := awaitEvents(t, ctx, srv.Client, p, "Pulling", "Failed", "BackOff")
	failedToPull := false
	for _, e := range evs["Failed"] {
		failedToPull = failedToPull || strings.HasPrefix(e.Message, `Failed to pull image "`+unpullable+`": `)
	}
	if !failedToPull {
		t.Errorf("no Failed event saying the pull failed: %v", evs["Failed"])
	}
	// The back-off holds: 10 s after the first failure, then 20 s. In 15 s
	// a pull every ~3 s (the agent's retry before) would be 5 or more.
	time.Sleep(15 * time.Second)
	pulls := int32(0)
	for _, e := range events(t, ctx, srv.Client, p)["Pulling"] {
		pulls += max(e.Count, 1)
	}
	if pulls > 3 {
		t.Errorf("%d pulls of %s within ~16 s of the first: the back-off (10 s, 20 s, ...) does not hold", pulls, unpullable)
	}

	// An exec into it says the container does not run yet (it answered an
	// InternalError with containerd's ids).
	_, stderr, code := kobectl(ctx, srv.Addr(), "exec", "unpullable", "--", "true")
	if code == 0 || !strings.Contains(stderr, `container "app" in pod "unpullable" is not running yet`) || strings.Contains(stderr, "InternalError") {
		t.Errorf("kobectl exec into a container that never started: exit %d\n%s", code, stderr)
	}

	// The init container whose image fails is named in initContainerStatuses.
	waitForPod(t, ctx, pods, "badinit", 0, func(p *core.Pod, _ bool) bool {
		if len(p.Status.InitContainerStatuses) != 1 || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		w, app := p.Status.InitContainerStatuses[0].State.Waiting, p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && app != nil && app.Reason == "PodInitializing"
	})
	out, _, _ := kobectl(ctx, srv.Addr(), "get", "pod", "badinit")
	if !strings.Contains(out, "Init:ErrImagePull") && !strings.Contains(out, "Init:ImagePullBackOff") {
		t.Errorf("kobectl get pod badinit:\n%s\nwant STATUS Init:ErrImagePull or Init:ImagePullBackOff", out)
	}

	waitForPod(t, ctx, pods, "invalid", 0, func(p *core.Pod, _ bool) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "InvalidImageName" && strings.Contains(w.Message, "must be lowercase")
	})
}
