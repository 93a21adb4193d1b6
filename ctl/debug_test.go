package ctl_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestDebugAddsAnEphemeralContainer: kobectl debug adds an ephemeral
// container with the image, command and target asked for (the name given,
// or debugger-<random>), and refuses -it, which Kobune's containers cannot
// have, saying what to do instead.
func TestDebugAddsAnEphemeralContainer(t *testing.T) {
	s := testserver.New(t)
	ctx := context.Background()
	pods := client.For[*core.Pod](s.Client)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "web-0", Namespace: "default"},
		Spec: core.PodSpec{Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}}); err != nil {
		t.Fatal(err)
	}
	r := kobectl(t, s, "", "debug", "web-0", "--image", "kobune.local/busybox:1.35", "--target", "app", "-c", "dbg", "--", "sleep", "3600")
	if r.code != 0 || !strings.Contains(r.stdout, "ephemeral container dbg added") {
		t.Fatalf("debug: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := kobectl(t, s, "", "debug", "web-0", "--image", "kobune.local/busybox:1.35"); r.code != 0 || !strings.Contains(r.stderr, "Defaulting debug container name to debugger-") {
		t.Errorf("debug without a name: %d %s%s", r.code, r.stdout, r.stderr)
	}
	p, err := pods.Get(ctx, "default", "web-0")
	if err != nil {
		t.Fatal(err)
	}
	if ecs := p.Spec.EphemeralContainers; len(ecs) != 2 || ecs[0].Name != "dbg" || ecs[0].TargetContainerName != "app" || strings.Join(ecs[0].Command, " ") != "sleep 3600" ||
		ecs[0].Image != "kobune.local/busybox:1.35" || !strings.HasPrefix(ecs[1].Name, "debugger-") {
		t.Errorf("ephemeral containers: %+v", ecs)
	}
	if r := kobectl(t, s, "", "describe", "pod", "web-0"); !strings.Contains(r.stdout, "Ephemeral Containers:") || !strings.Contains(r.stdout, "Target Container Name:") {
		t.Errorf("describe pod does not show the ephemeral containers:\n%s", r.stdout)
	}
	if r := kobectl(t, s, "", "debug", "-it", "web-0", "--image", "kobune.local/busybox:1.35"); r.code == 0 || !strings.Contains(r.stderr, "kobectl exec -it web-0 -c NAME -- sh") {
		t.Errorf("debug -it: %d %s%s; want a refusal saying what to do", r.code, r.stdout, r.stderr)
	}
}
