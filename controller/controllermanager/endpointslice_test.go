package controllermanager_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/endpointslice"
)

// ghostPod is a pod bound to a node without an agent, whose status the
// test writes itself: Running with ip, Ready or not.
func ghostPod(t *testing.T, ctx context.Context, c *client.Client, name, ip string, port int32, ready bool) *core.Pod {
	t.Helper()
	pods := client.For[*core.Pod](c)
	p, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "ghost"}},
		Spec: core.PodSpec{NodeName: "ghost-node", Containers: []core.Container{{Name: "app", Image: "i",
			Ports: []core.ContainerPort{{Name: "http", ContainerPort: port}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return setReady(t, ctx, c, p, ip, ready)
}

func setReady(t *testing.T, ctx context.Context, c *client.Client, p *core.Pod, ip string, ready bool) *core.Pod {
	t.Helper()
	st := meta.ConditionFalse
	if ready {
		st = meta.ConditionTrue
	}
	p.Status.Phase, p.Status.PodIP = core.PodRunning, ip
	p.Status.Conditions = []core.PodCondition{{Type: core.PodReady, Status: st}}
	out, err := client.For[*core.Pod](c).UpdateStatus(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// slicesOf waits until the Service's slices satisfy ok and returns them.
func slicesOf(t *testing.T, ctx context.Context, c *client.Client, svc string, what string, ok func([]*discovery.EndpointSlice) bool) []*discovery.EndpointSlice {
	t.Helper()
	var got []*discovery.EndpointSlice
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var err error
		got, _, err = client.For[*discovery.EndpointSlice](c).List(ctx, "default", client.ListOptions{LabelSelector: discovery.LabelServiceName + "=" + svc})
		if err == nil && ok(got) {
			return got
		}
	}
	t.Fatalf("%s: slices of %s never got there; last:\n%s", what, svc, describeSlices(got))
	return nil
}

func describeSlices(ss []*discovery.EndpointSlice) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "  %s ports=%v:", s.Name, portsOf(s))
		for _, e := range s.Endpoints {
			fmt.Fprintf(&b, " %s(%s r=%v s=%v t=%v)", e.TargetRef.Name, e.Addresses[0], *e.Conditions.Ready, *e.Conditions.Serving, *e.Conditions.Terminating)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func portsOf(s *discovery.EndpointSlice) []string {
	var out []string
	for _, p := range s.Ports {
		out = append(out, fmt.Sprintf("%s/%s/%d", *p.Name, *p.Protocol, *p.Port))
	}
	return out
}

// endpoint finds a pod's endpoint among the slices.
func endpoint(ss []*discovery.EndpointSlice, pod string) (*discovery.Endpoint, *discovery.EndpointSlice) {
	for _, s := range ss {
		for i := range s.Endpoints {
			if e := &s.Endpoints[i]; e.TargetRef != nil && e.TargetRef.Name == pod {
				return e, s
			}
		}
	}
	return nil, nil
}

func conds(e *discovery.Endpoint) string {
	if e == nil {
		return "absent"
	}
	return fmt.Sprintf("ready=%v serving=%v terminating=%v", *e.Conditions.Ready, *e.Conditions.Serving, *e.Conditions.Terminating)
}

// The EndpointSlice controller lists a Service's pods with Kubernetes'
// conditions and follows them: readiness, termination (listed as
// terminating while it serves; gone from the legacy Endpoints), named
// ports resolved per pod (one slice per port set), at most 100 endpoints
// per slice, a placeholder slice when there are none, and everything gone
// with the Service.
func TestEndpointSlicesFollowPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := cluster(t, ctx, 1)
	svcs := client.For[*core.Service](c)
	svc, err := svcs.Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "ghost", Namespace: "default", Labels: map[string]string{"team": "a"}},
		Spec: core.ServiceSpec{Selector: map[string]string{"app": "ghost"}, Ports: []core.ServicePort{{Name: "web", Port: 80, TargetPort: meta.FromString("http")}}}})
	if err != nil {
		t.Fatal(err)
	}
	// No pods: one empty placeholder slice, owned by the Service.
	ss := slicesOf(t, ctx, c, "ghost", "placeholder", func(ss []*discovery.EndpointSlice) bool { return len(ss) == 1 && len(ss[0].Endpoints) == 0 })
	if ref := meta.ControllerOf(ss[0]); ref == nil || ref.UID != svc.UID || ss[0].Labels["team"] != "a" || ss[0].Labels[discovery.LabelManagedBy] != discovery.ManagedByController {
		t.Errorf("placeholder slice metadata %+v", ss[0].ObjectMeta)
	}

	a := ghostPod(t, ctx, c, "a", "10.244.99.1", 8080, true)
	ghostPod(t, ctx, c, "b", "10.244.99.2", 8080, false)
	ghostPod(t, ctx, c, "c", "10.244.99.3", 9090, true) // "http" is another number on this pod
	ss = slicesOf(t, ctx, c, "ghost", "three pods", func(ss []*discovery.EndpointSlice) bool {
		ea, _ := endpoint(ss, "a")
		eb, _ := endpoint(ss, "b")
		ec, _ := endpoint(ss, "c")
		return len(ss) == 2 && conds(ea) == "ready=true serving=true terminating=false" &&
			conds(eb) == "ready=false serving=false terminating=false" && conds(ec) == "ready=true serving=true terminating=false"
	})
	_, sa := endpoint(ss, "a")
	_, sc := endpoint(ss, "c")
	if fmt.Sprint(portsOf(sa)) != "[web/TCP/8080]" || fmt.Sprint(portsOf(sc)) != "[web/TCP/9090]" {
		t.Errorf("named port not resolved per pod: a's slice %v, c's slice %v", portsOf(sa), portsOf(sc))
	}
	if e, _ := endpoint(ss, "a"); e.NodeName == nil || *e.NodeName != "ghost-node" || e.TargetRef.UID != a.UID || e.Addresses[0] != "10.244.99.1" {
		t.Errorf("endpoint a: %+v", e)
	}

	// Legacy Endpoints: ready and not-ready addresses, one subset per port set.
	eps := client.For[*core.Endpoints](c)
	waitEndpoints := func(what, want string) {
		t.Helper()
		var got string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			e, err := eps.Get(ctx, "default", "ghost")
			if err != nil {
				continue
			}
			var parts []string
			for _, s := range e.Subsets {
				var ready, notReady []string
				for _, a := range s.Addresses {
					ready = append(ready, a.TargetRef.Name)
				}
				for _, a := range s.NotReadyAddresses {
					notReady = append(notReady, a.TargetRef.Name)
				}
				parts = append(parts, fmt.Sprintf("%d:%v/%v", s.Ports[0].Port, ready, notReady))
			}
			sort.Strings(parts)
			if got = strings.Join(parts, " "); got == want {
				return
			}
		}
		t.Fatalf("%s: Endpoints %q, want %q", what, got, want)
	}
	waitEndpoints("three pods", "8080:[a]/[b] 9090:[c]/[]")

	// b turns ready; a starts terminating: still serving, not ready, and
	// out of the legacy Endpoints.
	pods := client.For[*core.Pod](c)
	bp, _ := pods.Get(ctx, "default", "b")
	setReady(t, ctx, c, bp, "10.244.99.2", true)
	if err := pods.Delete(ctx, "default", "a", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	slicesOf(t, ctx, c, "ghost", "a terminating, b ready", func(ss []*discovery.EndpointSlice) bool {
		ea, _ := endpoint(ss, "a")
		eb, _ := endpoint(ss, "b")
		return conds(ea) == "ready=false serving=true terminating=true" && conds(eb) == "ready=true serving=true terminating=false"
	})
	waitEndpoints("a terminating", "8080:[b]/[] 9090:[c]/[]")

	// 105 more pods on port 8080: at most 100 endpoints per slice.
	for i := range 105 {
		ghostPod(t, ctx, c, fmt.Sprintf("many-%03d", i), fmt.Sprintf("10.244.100.%d", i+1), 8080, true)
	}
	ss = slicesOf(t, ctx, c, "ghost", "108 endpoints", func(ss []*discovery.EndpointSlice) bool {
		n := 0
		for _, s := range ss {
			if len(s.Endpoints) > discovery.MaxEndpointsPerSlice {
				return false
			}
			n += len(s.Endpoints)
		}
		return n == 108
	})
	if len(ss) != 3 {
		t.Errorf("%d slices for 107 endpoints on 8080 and 1 on 9090, want 3", len(ss))
	}

	// An Endpoints object written by hand, with no Service: not the
	// controller's (it carries no managed-by label), so it stays.
	if _, err := eps.Create(ctx, &core.Endpoints{ObjectMeta: meta.ObjectMeta{Name: "by-hand", Namespace: "default"},
		Subsets: []core.EndpointSubset{{Addresses: []core.EndpointAddress{{IP: "10.0.0.24"}}, Ports: []core.EndpointPort{{Name: "http", Port: 80}}}}}); err != nil {
		t.Fatal(err)
	}
	if e, _ := eps.Get(ctx, "default", "ghost"); e == nil || e.Labels["endpoints.kubernetes.io/managed-by"] != "endpoint-controller" {
		t.Errorf("the controller's Endpoints lack the managed-by label: %+v", e)
	}

	// The Service goes: its slices (garbage collector) and Endpoints go too.
	if err := svcs.Delete(ctx, "default", "ghost", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	slicesOf(t, ctx, c, "ghost", "service deleted", func(ss []*discovery.EndpointSlice) bool { return len(ss) == 0 })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := eps.Get(ctx, "default", "ghost"); client.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Endpoints of a deleted Service stayed")
		}
	}
	if _, err := eps.Get(ctx, "default", "by-hand"); err != nil {
		t.Errorf("the Endpoints written by hand: %v, want them kept", err)
	}
}

// TestEndpointsSyncAgainWhenTheirCreationArrives: a sync that finds no
// Endpoints in its cache creates one; when an earlier sync's create is
// not in the cache yet, the create is refused (AlreadyExists) and the
// Endpoints stay as the earlier sync wrote them, until the object reaches
// the cache and wakes its Service. Before that Add woke nothing, the
// Endpoints of TestEndpointSlicesFollowPods sometimes stayed empty.
func TestEndpointsSyncAgainWhenTheirCreationArrives(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testserver.New(t).Client
	inf := controller.NewInformers(c)
	ec := endpointslice.New(c, inf, nil)
	// Every informer the controller reads but the Endpoints'.
	for _, run := range []func(context.Context){inf.Services.Run, inf.Pods.Run, inf.Nodes.Run, inf.EndpointSlices.Run} {
		go run(ctx)
	}
	if !client.WaitForSync(ctx, inf.Services.HasSynced, inf.Pods.HasSynced, inf.Nodes.HasSynced, inf.EndpointSlices.HasSynced) {
		t.Fatal("informers never synced")
	}
	if _, err := client.For[*core.Service](c).Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "ghost", Namespace: "default"},
		Spec: core.ServiceSpec{Selector: map[string]string{"app": "ghost"}, Ports: []core.ServicePort{{Name: "web", Port: 80, TargetPort: meta.FromString("http")}}}}); err != nil {
		t.Fatal(err)
	}
	a := ghostPod(t, ctx, c, "a", "10.244.99.1", 8080, false)
	sync := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if p, ok := inf.Pods.Get("default", "a"); ok && p.Status.PodIP != "" {
				if _, ok := inf.Services.Get("default", "ghost"); ok {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("the service and pod never reached the cache")
			}
		}
		if _, err := ec.Reconcile(ctx, "default/ghost"); err != nil {
			t.Fatal(err)
		}
	}
	sync() // creates the Endpoints: a not ready
	setReady(t, ctx, c, a, "10.244.99.1", true)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p, ok := inf.Pods.Get("default", "a"); ok && core.PodIsReady(p) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a's readiness never reached the cache")
		}
	}
	sync() // the Endpoints are not in the cache: its create is refused
	time.Sleep(300 * time.Millisecond)
	for ec.Loop.Queue.Len() > 0 { // what the informers queued so far is done with
		k, _ := ec.Loop.Queue.Get()
		ec.Loop.Queue.Done(k)
	}
	e, err := client.For[*core.Endpoints](c).Get(ctx, "default", "ghost")
	if err != nil || len(e.Subsets) != 1 || len(e.Subsets[0].Addresses) != 0 {
		t.Fatalf("the Endpoints as the first sync wrote them (a not ready): %v %+v", err, e)
	}
	go ec.Loop.Run(ctx)
	go inf.Endpoints.Run(ctx)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		e, err := client.For[*core.Endpoints](c).Get(ctx, "default", "ghost")
		if err == nil && len(e.Subsets) == 1 && len(e.Subsets[0].Addresses) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Endpoints' arrival in the cache never synced them again: a still not ready in %+v", e)
		}
	}
}
