package agent_test

import (
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// A pod force-deleted from the API while its agent was down must be
// stopped when the agent comes back: no informer event ever names it, so
// before housekeeping the restarted agent adopted it and ran it forever.
func TestPodDeletedWhileTheAgentWasDownIsStopped(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	stop := startAgent(t, ctx, s, rt)
	pods := client.For[*core.Pod](s.Client)
	for _, name := range []string{"gone", "stays"} {
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"},
			Spec: core.PodSpec{NodeName: "node-1", Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}}); err != nil {
			t.Fatal(err)
		}
		waitPod(t, ctx, s, name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	}
	stop()
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "gone", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	stop = startAgent(t, ctx, s, rt)
	defer stop()
	var names []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left, _ := rt.Pods(ctx)
		names = names[:0]
		for _, p := range left {
			names = append(names, p.Name)
		}
		if len(names) == 1 && names[0] == "stays" {
			return
		}
	}
	t.Errorf("the runtime runs %v, want only stays (gone was deleted while the agent was down)", names)
}
