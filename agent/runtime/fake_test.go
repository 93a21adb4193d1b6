package runtime

import (
	"context"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

func TestFakeRunsPodsWithDistinctIPs(t *testing.T) {
	f, err := NewFake("10.244.3.0/24")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := func(uid string) *core.Pod {
		return &core.Pod{ObjectMeta: meta.ObjectMeta{UID: uid, Name: uid},
			Spec: core.PodSpec{InitContainers: []core.Container{{Name: "init", Image: "i"}}, Containers: []core.Container{{Name: "app", Image: "a"}}}}
	}
	a, _ := f.RunPod(ctx, pod("a"), nil)
	b, _ := f.RunPod(ctx, pod("b"), nil)
	again, _ := f.RunPod(ctx, pod("a"), nil)
	if a.IP == b.IP || a.IP != again.IP || a.IP != "10.244.3.2" {
		t.Errorf("IPs: a=%s b=%s a again=%s", a.IP, b.IP, again.IP)
	}
	if len(a.Containers) != 2 || !a.Containers[0].Init || a.Containers[0].Running || !a.Containers[1].Running {
		t.Errorf("containers: %+v", a.Containers)
	}
	if err := f.StopPod(ctx, "a", 0); err != nil {
		t.Fatal(err)
	}
	if err := f.StopPod(ctx, "a", 0); err != nil {
		t.Errorf("second stop: %v", err)
	}
	pods, _ := f.Pods(ctx)
	if len(pods) != 1 || pods[0].UID != "b" {
		t.Errorf("pods after stop: %+v", pods)
	}
	// A pod that already had an address (agent restart) keeps it.
	p := pod("c")
	p.Status.PodIP = "10.244.3.77"
	c, _ := f.RunPod(ctx, p, nil)
	if c.IP != "10.244.3.77" {
		t.Errorf("adopted pod IP = %s", c.IP)
	}
	if _, err := NewFake("bogus"); err == nil {
		t.Error("bad CIDR accepted")
	}
}
