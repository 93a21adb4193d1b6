package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestServiceBehaviours, on two real nodes: a 3-replica Service answers
// from all three pods by cluster IP and by name; ClientIP affinity sticks
// to one pod; a pod that turns not ready leaves the rules of both nodes
// and comes back when ready again; cluster DNS answers A, SRV, headless,
// hostname-of-a-pod, ExternalName and NXDOMAIN questions from a pod; and a
// killed and restarted agent leaves an established connection through
// the Service, and new connections, working; a UDP flow moves to another
// pod when its endpoint is deleted (conntrack clean-up).
func TestServiceBehaviours(t *testing.T) {
	requireRoot(t)
	srv, nodes, ctx := startWithControllers(t, 5*time.Minute, "10.244.95.0/24", "10.244.96.0/24")
	pods := client.For[*core.Pod](srv.Client)
	labapp := func(name, node string, mutate ...func(*core.Pod)) *core.Pod {
		p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec: core.PodSpec{NodeName: node, Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				Ports: []core.ContainerPort{{Name: "http", ContainerPort: 8080}}, ReadinessProbe: httpProbe("/readyz")}}}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	db := labapp("db-0", "node-2", func(p *core.Pod) {
		p.Labels = map[string]string{"app": "db"}
		p.Spec.Hostname, p.Spec.Subdomain = "db-0", "db"
	})
	for _, p := range []*core.Pod{labapp("web-a", "node-1"), labapp("web-b", "node-2"), labapp("web-c", "node-2"), db,
		{ObjectMeta: meta.ObjectMeta{Name: "client", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"sleep", "3600"}}}}},
	} {
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	svcs := client.For[*core.Service](srv.Client)
	mk := func(s *core.Service) *core.Service {
		t.Helper()
		s.Namespace = "default"
		created, err := svcs.Create(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	httpPort := []core.ServicePort{{Name: "http", Port: 80, TargetPort: meta.FromString("http")}}
	web := mk(&core.Service{ObjectMeta: meta.ObjectMeta{Name: "web"}, Spec: core.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: httpPort}})
	sticky := mk(&core.Service{ObjectMeta: meta.ObjectMeta{Name: "sticky"}, Spec: core.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: httpPort,
		SessionAffinity: core.ServiceAffinityClientIP}})
	mk(&core.Service{ObjectMeta: meta.ObjectMeta{Name: "db"}, Spec: core.ServiceSpec{ClusterIP: core.ClusterIPNone, Selector: map[string]string{"app": "db"}, Ports: httpPort}})
	mk(&core.Service{ObjectMeta: meta.ObjectMeta{Name: "ext"}, Spec: core.ServiceSpec{Type: core.ServiceTypeExternalName, ExternalName: "db.example.internal"}})
	ips := map[string]string{}
	for _, name := range []string{"web-a", "web-b", "web-c", "db-0", "client"} {
		p := waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning && core.PodIsReady(p) })
		ips[name] = p.Status.PodIP
	}

	inPod := func(args ...string) (string, error) {
		out, errOut, code := kobectl(ctx, srv.Addr(), append([]string{"exec", "client", "--"}, args...)...)
		if code != 0 {
			return out + errOut, fmt.Errorf("exit %d", code)
		}
		return out, nil
	}
	// who asks url n times from the client pod and counts who answered.
	who := func(url string, n int) map[string]int {
		seen := map[string]int{}
		for range n {
			out, err := inPod("timeout", "3", "wget", "-q", "-O", "-", url)
			if err != nil {
				seen["error"]++
				continue
			}
			f := strings.Fields(out) // labapp 1.0 on <hostname>
			seen[f[len(f)-1]]++
		}
		return seen
	}
	eventually := func(what string, cond func() (bool, string)) {
		t.Helper()
		var last string
		for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
			var ok bool
			if ok, last = cond(); ok {
				return
			}
		}
		t.Fatalf("%s: never; last: %s", what, last)
	}

	// All three pods answer, by cluster IP and by name.
	for _, url := range []string{"http://" + web.Spec.ClusterIP + "/", "http://web.default.svc.cluster.local/"} {
		eventually("all of web-a, web-b, web-c answer "+url, func() (bool, string) {
			seen := who(url, 15)
			return seen["web-a"] > 0 && seen["web-b"] > 0 && seen["web-c"] > 0, fmt.Sprint(seen)
		})
	}

	// ClientIP affinity: every request of the client goes to the same pod.
	if seen := who("http://"+sticky.Spec.ClusterIP+"/", 12); len(seen) != 1 || seen["error"] > 0 {
		t.Errorf("sessionAffinity ClientIP: answers from %v; want one pod for all 12", seen)
	}

	// web-a turns not ready: gone from both nodes' rules, then back.
	setReady := func(on string) {
		t.Helper()
		if out, err := nodes[0].exec(ctx, "timeout", "3", "busybox", "wget", "-q", "-O", "-", "--post-data=", "http://"+ips["web-a"]+":8080/readyz/"+on); err != nil {
			t.Fatalf("readyz/%s: %s %v", on, out, err)
		}
	}
	inRules := func(n *node, ip string) bool {
		out, err := n.exec(ctx, "nft", "list", "table", "ip", "kobune-proxy")
		if err != nil {
			t.Fatalf("nft on %s: %s %v", n.name, out, err)
		}
		return strings.Contains(out, ip+" ") || strings.Contains(out, ip+":") || strings.Contains(out, ip+"\n")
	}
	setReady("off")
	for _, n := range nodes {
		eventually("web-a out of "+n.name+"'s rules", func() (bool, string) { return !inRules(n, ips["web-a"]), "still there" })
	}
	if seen := who("http://"+web.Spec.ClusterIP+"/", 15); seen["web-a"] > 0 || seen["error"] > 0 {
		t.Errorf("with web-a not ready, answers from %v", seen)
	}
	setReady("on")
	for _, n := range nodes {
		eventually("web-a back in "+n.name+"'s rules", func() (bool, string) { return inRules(n, ips["web-a"]), "absent" })
	}

	// Cluster DNS from the pod.
	for _, q := range []struct {
		args []string
		want string
	}{
		{[]string{"nslookup", "web"}, web.Spec.ClusterIP},
		{[]string{"nslookup", "-type=srv", "_http._tcp.web.default.svc.cluster.local"}, "web.default.svc.cluster.local"},
		{[]string{"nslookup", "db.default.svc.cluster.local"}, ips["db-0"]},
		{[]string{"nslookup", "-type=srv", "_http._tcp.db.default.svc.cluster.local"}, "db-0.db.default.svc.cluster.local"},
		{[]string{"nslookup", "db-0.db.default.svc.cluster.local"}, ips["db-0"]},
		{[]string{"nslookup", "-type=cname", "ext.default.svc.cluster.local"}, "db.example.internal"},
		{[]string{"nslookup", "nope.default.svc.cluster.local"}, "NXDOMAIN"},
	} {
		if out, _ := inPod(append([]string{"timeout", "5"}, q.args...)...); !strings.Contains(out, q.want) {
			t.Errorf("%s from a pod: want %q in\n%s", strings.Join(q.args, " "), q.want, out)
		}
	}

	// An agent restart: a connection opened before keeps being answered,
	// and new connections work while the agent is gone and after.
	conn := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "conn", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1", RestartPolicy: core.RestartPolicyNever,
		Containers: []core.Container{{Name: "nc", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"sh", "-c",
			"(i=0; while [ $i -lt 25 ]; do printf 'GET / HTTP/1.1\\r\\nHost: web\\r\\n\\r\\n'; sleep 1; i=$((i+1)); done) | nc " + web.Spec.ClusterIP + " 80 | grep -c '^HTTP/1.1 200'"}}}}}
	if _, err := pods.Create(ctx, conn); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, ctx, pods, "conn", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	time.Sleep(4 * time.Second)
	nodes[0].killAgent()
	// (From node-1 itself: kobectl exec into a pod goes through its agent.)
	for i := range 5 {
		if out, err := nodes[0].exec(ctx, "timeout", "3", "busybox", "wget", "-q", "-O", "-", "http://"+web.Spec.ClusterIP+"/"); err != nil {
			t.Errorf("new connection %d on node-1 with its agent killed: %s %v", i, out, err)
		}
	}
	time.Sleep(3 * time.Second)
	nodes[0].startAgent(t, "10.244.95.0/24")
	eventually("new connections after node-1's agent restarted", func() (bool, string) {
		seen := who("http://"+web.Spec.ClusterIP+"/", 6)
		return seen["error"] == 0 && len(seen) > 1, fmt.Sprint(seen)
	})
	waitForPod(t, ctx, pods, "conn", 0, func(p *core.Pod, _ bool) bool {
		return p.Status.Phase == core.PodSucceeded || p.Status.Phase == core.PodFailed
	})
	logs, logsErr, _ := kobectl(ctx, srv.Addr(), "logs", "conn")
	if got := strings.TrimSpace(logs); got != "25" {
		t.Errorf("the connection opened before the agent restart got %q answers of 25 (%s)", got, logsErr)
	}

	// UDP: one flow (fixed source port) through a UDP Service keeps going
	// to the endpoint conntrack remembers; when that pod is deleted, the
	// proxy deletes the flow's conntrack entry and the flow reaches the
	// other pod (without the clean-up it would go to the dead address
	// for as long as it keeps sending).
	for _, p := range []*core.Pod{labapp("udp-a", "node-1", func(p *core.Pod) { p.Labels = map[string]string{"app": "udp"} }),
		labapp("udp-b", "node-2", func(p *core.Pod) { p.Labels = map[string]string{"app": "udp"} })} {
		p.Spec.Containers[0].Args = []string{"--udp-listen=:9999"}
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, core.ContainerPort{Name: "echo", ContainerPort: 9999, Protocol: core.ProtocolUDP})
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitForPod(t, ctx, pods, p.Name, 0, func(p *core.Pod, _ bool) bool { return core.PodIsReady(p) })
	}
	udp := mk(&core.Service{ObjectMeta: meta.ObjectMeta{Name: "udp"}, Spec: core.ServiceSpec{Selector: map[string]string{"app": "udp"},
		Ports: []core.ServicePort{{Name: "echo", Port: 9999, Protocol: core.ProtocolUDP, TargetPort: meta.FromString("echo")}}}})
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "udpc", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1", RestartPolicy: core.RestartPolicyNever,
		Containers: []core.Container{{Name: "c", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
			Args: []string{"--udp-client=" + udp.Spec.ClusterIP + ":9999", "--udp-count=400", "--udp-interval=100ms"}}}}}); err != nil {
		t.Fatal(err)
	}
	udpLog := func() []string {
		out, _, _ := kobectl(ctx, srv.Addr(), "logs", "udpc")
		return strings.Split(strings.TrimSpace(out), "\n")
	}
	var first string
	eventually("the UDP flow is answered", func() (bool, string) {
		l := udpLog()
		for _, line := range l {
			if strings.HasPrefix(line, "labapp 1.0 on udp-") {
				first = strings.TrimPrefix(line, "labapp 1.0 on ")
				return true, ""
			}
		}
		return false, strings.Join(l, "|")
	})
	other := map[string]string{"udp-a": "udp-b", "udp-b": "udp-a"}[first]
	if err := pods.Delete(ctx, "default", first, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the UDP flow moves to "+other+" once "+first+" is deleted", func() (bool, string) {
		l := udpLog()
		return strings.Contains(strings.Join(l, "\n"), "labapp 1.0 on "+other), fmt.Sprintf("%d answers, last %q", len(l), l[len(l)-1])
	})
}
