package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestServiceTrafficOnTheNodes: a Service's cluster IP answers from either
// of its two pods (one per node) — asked from a node, and from a pod on
// node-1 (whose own node's endpoint is reached through the masquerade) —
// its NodePort answers on the other node's address, a pod reaches itself
// through its own Service (hairpin), cluster DNS answers the pod, its
// /etc/hosts has its name and hostAliases (a container that mounts its
// own /etc/hosts keeps it), and a
// Service without endpoints refuses at once. All traffic stays inside the test's
// namespaces.
func TestServiceTrafficOnTheNodes(t *testing.T) {
	requireRoot(t)
	srv, nodes, ctx := startWithControllers(t, 4*time.Minute, "10.244.91.0/24", "10.244.92.0/24")

	pods := client.For[*core.Pod](srv.Client)
	if _, err := client.For[*core.ConfigMap](srv.Client).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "own-hosts", Namespace: "default"},
		Data: map[string]string{"hosts": "10.9.9.9\tmine\n"}}); err != nil {
		t.Fatal(err)
	}
	labapp := func(name, node string) *core.Pod {
		return &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec: core.PodSpec{NodeName: node, Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				Ports: []core.ContainerPort{{Name: "http", ContainerPort: 8080}}, ReadinessProbe: httpProbe("/readyz")}}}}
	}
	for _, p := range []*core.Pod{labapp("web-a", "node-1"), labapp("web-b", "node-2"),
		// The client also serves (busybox httpd), behind a Service of its
		// own: it reaches itself through it (hairpin).
		{ObjectMeta: meta.ObjectMeta{Name: "client", Namespace: "default", Labels: map[string]string{"app": "client"}}, Spec: core.PodSpec{NodeName: "node-1",
			HostAliases: []core.HostAlias{{IP: "10.0.0.7", Hostnames: []string{"db.local"}}},
			Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
				Command: []string{"sh", "-c", "mkdir -p /tmp/www && echo hairpin-ok > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"}}}}},
		// A container that mounts its own /etc/hosts keeps it.
		{ObjectMeta: meta.ObjectMeta{Name: "own-hosts", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "own-hosts", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"sleep", "3600"},
				VolumeMounts: []core.VolumeMount{{Name: "hosts", MountPath: "/etc/hosts", SubPath: "hosts"}}}},
			Volumes: []core.Volume{{Name: "hosts", VolumeSource: core.VolumeSource{ConfigMap: &core.ConfigMapVolumeSource{
				LocalObjectReference: core.LocalObjectReference{Name: "own-hosts"}}}}}}},
	} {
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	svcs := client.For[*core.Service](srv.Client)
	web, err := svcs.Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: core.ServiceSpec{Type: core.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
			Ports: []core.ServicePort{{Name: "http", Port: 80, TargetPort: meta.FromString("http")}}}})
	if err != nil {
		t.Fatal(err)
	}
	self, err := svcs.Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "self", Namespace: "default"},
		Spec: core.ServiceSpec{Selector: map[string]string{"app": "client"}, Ports: []core.ServicePort{{Port: 80, TargetPort: meta.FromInt(8080)}}}})
	if err != nil {
		t.Fatal(err)
	}
	none, err := svcs.Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "none", Namespace: "default"},
		Spec: core.ServiceSpec{Selector: map[string]string{"app": "nothing"}, Ports: []core.ServicePort{{Port: 80}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-a", "web-b", "client", "own-hosts"} {
		waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning && core.PodIsReady(p) })
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ss, _, _ := client.For[*discovery.EndpointSlice](srv.Client).List(ctx, "default", client.ListOptions{LabelSelector: discovery.LabelServiceName + "=web"})
		ready := 0
		for _, s := range ss {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					ready++
				}
			}
		}
		if ready == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the web Service's slices never listed 2 ready endpoints")
		}
	}

	// answers asks url with ask until both pods have answered.
	answers := func(what string, ask func(url string) (string, error), url string) {
		t.Helper()
		seen := map[string]bool{}
		var last string
		for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline) && len(seen) < 2; time.Sleep(100 * time.Millisecond) {
			out, err := ask(url)
			last = fmt.Sprintf("%q (%v)", out, err)
			for _, p := range []string{"web-a", "web-b"} {
				if strings.Contains(out, "labapp 1.0 on "+p) {
					seen[p] = true
				}
			}
		}
		if len(seen) < 2 {
			t.Errorf("%s: %s answered by %v only; last answer %s", what, url, seen, last)
		}
	}
	fromNode := func(n *node) func(string) (string, error) {
		return func(url string) (string, error) {
			hctx, hcancel := context.WithTimeout(ctx, 4*time.Second)
			defer hcancel()
			return n.exec(hctx, "timeout", "3", "busybox", "wget", "-q", "-O", "-", url)
		}
	}
	fromPod := func(url string) (string, error) {
		out, errOut, code := kobectl(ctx, srv.Addr(), "exec", "client", "--", "timeout", "3", "wget", "-q", "-O", "-", url)
		if code != 0 {
			return out, fmt.Errorf("exit %d: %s", code, errOut)
		}
		return out, nil
	}
	clusterURL := fmt.Sprintf("http://%s:80/", web.Spec.ClusterIP)
	answers("from node-1", fromNode(nodes[0]), clusterURL)
	answers("from a pod on node-1", fromPod, clusterURL)
	answers("NodePort of node-1, from node-2", fromNode(nodes[1]), fmt.Sprintf("http://%s:%d/", nodes[0].nodeIP, web.Spec.Ports[0].NodePort))

	// Cluster DNS: the pod's resolv.conf names the kube-dns Service, which
	// its node's agent answers; short names resolve through the search path.
	resolv, resolvErr, _ := kobectl(ctx, srv.Addr(), "exec", "client", "--", "cat", "/etc/resolv.conf")
	if want := "search default.svc.cluster.local svc.cluster.local cluster.local"; !strings.Contains(resolv, want) ||
		!strings.Contains(resolv, "nameserver 10.96.0.10") || !strings.Contains(resolv, "ndots:5") {
		t.Errorf("the pod's resolv.conf:\n%s%s", resolv, resolvErr)
	}
	// /etc/hosts: the pod's own name on its address, and its hostAliases.
	hosts, hostsErr, _ := kobectl(ctx, srv.Addr(), "exec", "client", "--", "cat", "/etc/hosts")
	clientPod, err := pods.Get(ctx, "default", "client")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hosts, clientPod.Status.PodIP+"\tclient\n") || !strings.Contains(hosts, "10.0.0.7\tdb.local\n") {
		t.Errorf("the pod's /etc/hosts (want %s client and the hostAlias db.local):\n%s%s", clientPod.Status.PodIP, hosts, hostsErr)
	}
	if own, ownErr, _ := kobectl(ctx, srv.Addr(), "exec", "own-hosts", "--", "cat", "/etc/hosts"); own != "10.9.9.9\tmine\n" {
		t.Errorf("/etc/hosts of a container that mounts its own: %q%s; want the volume's file, not the agent's", own, ownErr)
	}
	var looked string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		o, e, _ := kobectl(ctx, srv.Addr(), "exec", "client", "--", "timeout", "3", "nslookup", "web.default.svc.cluster.local")
		if looked = o + e; strings.Contains(o, web.Spec.ClusterIP) {
			break
		}
	}
	if !strings.Contains(looked, web.Spec.ClusterIP) {
		t.Errorf("nslookup web.default.svc.cluster.local from the pod: %q, want %s", looked, web.Spec.ClusterIP)
	}
	answers("by its short name, from a pod", fromPod, "http://web/")

	// Hairpin: the client pod through its own Service, to itself.
	var hp string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if hp, err = fromPod(fmt.Sprintf("http://%s:80/", self.Spec.ClusterIP)); strings.Contains(hp, "hairpin-ok") {
			break
		}
	}
	if !strings.Contains(hp, "hairpin-ok") {
		t.Errorf("a pod through its own Service: %q (%v)", hp, err)
	}

	// explain-path reads the way from node-1's kernel: map element, the
	// Service chain and its endpoints map, both endpoints' DNAT, the
	// masquerade for the client (a pod of node-1) to web-a (on node-1).
	ep, epErr, _ := kobectl(ctx, srv.Addr(), "explain-path", "svc/web", "--from", "client")
	a, _ := pods.Get(ctx, "default", "web-a")
	b, _ := pods.Get(ctx, "default", "web-b")
	for _, want := range []string{"on node node-1, from pod client (" + clientPod.Status.PodIP + ")", "1. map service-ips", web.Spec.ClusterIP + " . tcp . 80 : goto lb-tcp-2", "2. chain lb-tcp-2",
		"numgen random mod 2 map @service-endpoints", "DNAT to pod web-a (node-1) " + a.Status.PodIP + ":8080", "DNAT to pod web-b (node-2) " + b.Status.PodIP + ":8080",
		"masqueraded after DNAT to pod web-a (node-1) " + a.Status.PodIP + ":8080: " + clientPod.Status.PodIP + " is a pod of this node"} {
		if !strings.Contains(ep, want) {
			t.Errorf("kobectl explain-path svc/web --from client: no %q in\n%s%s", want, ep, epErr)
		}
	}
	t.Logf("kobectl explain-path svc/web --from client:\n%s", ep)
	ep, epErr, _ = kobectl(ctx, srv.Addr(), "explain-path", "svc/none", "--node", "node-2")
	if !strings.Contains(ep, "map no-endpoint-services") || !strings.Contains(ep, "refused") {
		t.Errorf("kobectl explain-path svc/none:\n%s%s", ep, epErr)
	}

	// No endpoints: refused at once, not a timeout.
	start := time.Now()
	out, err := fromNode(nodes[0])(fmt.Sprintf("http://%s:80/", none.Spec.ClusterIP))
	if err == nil || !strings.Contains(out, "refused") || time.Since(start) > 2*time.Second {
		t.Errorf("a Service without endpoints: %q (%v) after %v; want connection refused at once", out, err, time.Since(start).Round(time.Millisecond))
	}
}
