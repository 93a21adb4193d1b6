package apiserver_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

func service(name, typ string, mutate ...func(*core.Service)) *core.Service {
	s := &core.Service{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"},
		Spec: core.ServiceSpec{Type: typ, Selector: map[string]string{"app": name},
			Ports: []core.ServicePort{{Name: "http", Port: 80, TargetPort: meta.FromInt(8080)}}}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func inRange(t *testing.T, ip string) {
	t.Helper()
	_, cidr, _ := net.ParseCIDR("10.96.0.0/16")
	if p := net.ParseIP(ip); p == nil || !cidr.Contains(p) || ip == "10.96.0.0" || ip == "10.96.255.255" || ip == "10.96.0.1" {
		t.Errorf("cluster IP %q: want a usable address of 10.96.0.0/16 other than the kubernetes Service's 10.96.0.1", ip)
	}
}

// The API server allocates a cluster IP to every ClusterIP and NodePort
// Service and a node port to every NodePort port, none twice, also under
// concurrent creates; headless and ExternalName Services get none; the
// kubernetes Service has the first address and points at the API server.
func TestServiceAllocation(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	svcs := client.For[*core.Service](s.Client)

	k, err := svcs.Get(ctx, "default", "kubernetes")
	if err != nil {
		t.Fatalf("the kubernetes Service: %v", err)
	}
	if k.Spec.ClusterIP != "10.96.0.1" || len(k.Spec.Ports) != 1 || k.Spec.Ports[0].Port != 443 {
		t.Errorf("kubernetes Service %+v, want 10.96.0.1:443", k.Spec)
	}
	ep, err := client.For[*core.Endpoints](s.Client).Get(ctx, "default", "kubernetes")
	_, port, _ := net.SplitHostPort(s.Addr())
	if err != nil || len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 1 || fmt.Sprint(ep.Subsets[0].Ports[0].Port) != port {
		t.Errorf("kubernetes Endpoints %+v (%v), want the API server's address and port %s", ep, err, port)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	ips, nodePorts := map[string]string{}, map[int32]string{}
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			typ := core.ServiceTypeClusterIP
			if i%2 == 1 {
				typ = core.ServiceTypeNodePort
			}
			svc := service(fmt.Sprintf("svc-%d", i), typ, func(s *core.Service) {
				s.Spec.Ports = append(s.Spec.Ports, core.ServicePort{Name: "metrics", Port: 9090})
			})
			got, err := svcs.Create(ctx, svc)
			if err != nil {
				t.Errorf("create %s: %v", svc.Name, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			inRange(t, got.Spec.ClusterIP)
			if got.Spec.ClusterIP == "10.96.0.10" {
				t.Errorf("%s got kube-dns's address", got.Name)
			}
			if len(got.Spec.ClusterIPs) != 1 || got.Spec.ClusterIPs[0] != got.Spec.ClusterIP || len(got.Spec.IPFamilies) != 1 || got.Spec.IPFamilies[0] != "IPv4" {
				t.Errorf("%s: clusterIPs %v, ipFamilies %v", got.Name, got.Spec.ClusterIPs, got.Spec.IPFamilies)
			}
			if other, dup := ips[got.Spec.ClusterIP]; dup {
				t.Errorf("%s and %s both got %s", other, got.Name, got.Spec.ClusterIP)
			}
			ips[got.Spec.ClusterIP] = got.Name
			for _, p := range got.Spec.Ports {
				if typ == core.ServiceTypeClusterIP {
					if p.NodePort != 0 {
						t.Errorf("%s (ClusterIP) got node port %d", got.Name, p.NodePort)
					}
					continue
				}
				if p.NodePort < 30000 || p.NodePort > 32767 {
					t.Errorf("%s: node port %d outside 30000-32767", got.Name, p.NodePort)
				}
				if other, dup := nodePorts[p.NodePort]; dup {
					t.Errorf("%s and %s both got node port %d", other, got.Name, p.NodePort)
				}
				nodePorts[p.NodePort] = got.Name
			}
		}()
	}
	wg.Wait()
	if len(ips) != 16 || len(nodePorts) != 16 {
		t.Errorf("%d distinct IPs, %d distinct node ports; want 16 and 16", len(ips), len(nodePorts))
	}

	headless, err := svcs.Create(ctx, service("headless", core.ServiceTypeClusterIP, func(s *core.Service) { s.Spec.ClusterIP = "None" }))
	if err != nil || headless.Spec.ClusterIP != "None" || len(headless.Spec.ClusterIPs) != 1 || headless.Spec.ClusterIPs[0] != "None" {
		t.Errorf("headless: %+v %v", headless, err)
	}
	ext, err := svcs.Create(ctx, service("db", core.ServiceTypeExternalName, func(s *core.Service) { s.Spec.ExternalName = "db.example.internal"; s.Spec.Ports = nil }))
	if err != nil || ext.Spec.ClusterIP != "" || len(ext.Spec.ClusterIPs) != 0 {
		t.Errorf("ExternalName: %+v %v", ext, err)
	}
	// A NodePort Service becomes an ExternalName one as the conformance
	// test changes it (clusterIP and nodePort cleared, the rest as read):
	// its cluster IP, node port and externalTrafficPolicy go.
	np, err := svcs.Create(ctx, service("was-np", core.ServiceTypeNodePort))
	if err != nil || np.Spec.ExternalTrafficPolicy != core.TrafficCluster {
		t.Fatalf("NodePort: %+v %v", np, err)
	}
	np.Spec.Type, np.Spec.ExternalName, np.Spec.ClusterIP, np.Spec.Ports[0].NodePort = core.ServiceTypeExternalName, "foo.example.com", "", 0
	if ext, err = svcs.Update(ctx, np); err != nil || ext.Spec.ExternalTrafficPolicy != "" || ext.Spec.ClusterIP != "" || len(ext.Spec.ClusterIPs) != 0 || ext.Spec.Ports[0].NodePort != 0 {
		t.Errorf("NodePort → ExternalName: %+v %v", ext, err)
	}
	// And back to ClusterIP, externalName left as it was (the conformance
	// suite's DNS test does so): the name goes, an IP comes.
	ext.Spec.Type, ext.Spec.Ports[0].NodePort = core.ServiceTypeClusterIP, 0
	if back, err := svcs.Update(ctx, ext); err != nil || back.Spec.ExternalName != "" || back.Spec.ClusterIP == "" {
		t.Errorf("ExternalName → ClusterIP: %+v %v", back, err)
	}
	if err := svcs.Delete(ctx, "default", "was-np", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	claims, err := s.Store().Claims(ctx, "services/")
	if err != nil {
		t.Fatal(err)
	}
	// kubernetes and kube-dns + 16 IPs, 16 node ports (each NodePort Service has two ports: 8 × 2).
	if len(claims) != 2+16+16 {
		t.Errorf("%d claims stored, want 34: %v", len(claims), claims)
	}
	dns, err := svcs.Get(ctx, "kube-system", "kube-dns")
	if err != nil || dns.Spec.ClusterIP != "10.96.0.10" || len(dns.Spec.Ports) != 2 || *dns.Spec.InternalTrafficPolicy != core.TrafficLocal {
		t.Errorf("kube-dns Service %+v (%v), want 10.96.0.10, 53/UDP and 53/TCP, internalTrafficPolicy Local", dns, err)
	}
}

// A chosen cluster IP or node port must be free and in range; the error
// names the field as Kubernetes does and stores nothing. A deleted
// Service's IP and ports can be had again at once.
func TestServiceChosenAllocationsAndRelease(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	svcs := client.For[*core.Service](s.Client)
	first, err := svcs.Create(ctx, service("first", core.ServiceTypeNodePort, func(s *core.Service) {
		s.Spec.ClusterIP = "10.96.7.7"
		s.Spec.Ports[0].NodePort = 30080
	}))
	if err != nil || first.Spec.ClusterIP != "10.96.7.7" || first.Spec.Ports[0].NodePort != 30080 {
		t.Fatalf("chosen IP and port: %+v %v", first, err)
	}
	for _, tt := range []struct {
		name string
		svc  *core.Service
		want string
	}{
		{"ip taken", service("second", core.ServiceTypeClusterIP, func(s *core.Service) { s.Spec.ClusterIP = "10.96.7.7" }),
			`spec.clusterIPs[0]: Invalid value: "10.96.7.7": provided IP is already allocated`},
		{"ip out of range", service("second", core.ServiceTypeClusterIP, func(s *core.Service) { s.Spec.ClusterIP = "192.168.1.1" }),
			"provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/16"},
		{"port taken", service("second", core.ServiceTypeNodePort, func(s *core.Service) { s.Spec.Ports[0].NodePort = 30080 }),
			"spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"},
		{"port out of range", service("second", core.ServiceTypeNodePort, func(s *core.Service) { s.Spec.Ports[0].NodePort = 8080 }),
			"The range of valid ports is 30000-32767"},
		{"node port on a ClusterIP Service", service("second", core.ServiceTypeClusterIP, func(s *core.Service) { s.Spec.Ports[0].NodePort = 30081 }),
			"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"},
		{"load balancer without node ports, one named", service("second", core.ServiceTypeLoadBalancer, func(s *core.Service) {
			no := false
			s.Spec.AllocateLoadBalancerNodePorts, s.Spec.Ports[0].NodePort = &no, 30090
		}), "spec.ports[0].nodePort: Forbidden: may not be used when `allocateLoadBalancerNodePorts` is false"},
		{"load balancer class on a NodePort Service", service("second", core.ServiceTypeNodePort, func(s *core.Service) {
			c := "example.com/internal-vip"
			s.Spec.LoadBalancerClass = &c
		}), "spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'"},
		{"headless NodePort", service("second", core.ServiceTypeNodePort, func(s *core.Service) { s.Spec.ClusterIP = "None" }),
			"may only be 'None' for services of type ClusterIP"},
	} {
		_, err := svcs.Create(ctx, tt.svc)
		if !client.IsInvalid(err) || !strings.Contains(client.Message(err), tt.want) {
			t.Errorf("%s: %v, want InvalidArgument with %q", tt.name, err, tt.want)
		}
	}
	if _, err := svcs.Get(ctx, "default", "second"); !client.IsNotFound(err) {
		t.Errorf("a refused Service was stored: %v", err)
	}

	// Released on delete: the same IP and port at once.
	if err := svcs.Delete(ctx, "default", "first", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := svcs.Create(ctx, service("again", core.ServiceTypeNodePort, func(s *core.Service) {
		s.Spec.ClusterIP = "10.96.7.7"
		s.Spec.Ports[0].NodePort = 30080
	}))
	if err != nil || again.Spec.ClusterIP != "10.96.7.7" {
		t.Fatalf("IP and port after the delete: %+v %v", again, err)
	}

	// An update without clusterIP or nodePort keeps them (kobectl replace
	// of the manifest); turning it into a ClusterIP Service releases the port.
	replaced := service("again", core.ServiceTypeNodePort)
	replaced.ResourceVersion = again.ResourceVersion
	got, err := svcs.Update(ctx, replaced)
	if err != nil || got.Spec.ClusterIP != "10.96.7.7" || got.Spec.Ports[0].NodePort != 30080 {
		t.Fatalf("replace without allocated fields: %+v %v", got, err)
	}
	got.Spec.Type = core.ServiceTypeClusterIP
	got.Spec.ExternalTrafficPolicy = ""
	got.Spec.Ports[0].NodePort = 0
	if got, err = svcs.Update(ctx, got); err != nil || got.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("NodePort → ClusterIP: %+v %v", got, err)
	}
	if _, err := svcs.Create(ctx, service("port-user", core.ServiceTypeNodePort, func(s *core.Service) { s.Spec.Ports[0].NodePort = 30080 })); err != nil {
		t.Errorf("node port 30080 after its Service became ClusterIP: %v", err)
	}
	// A changed cluster IP is refused.
	got.Spec.ClusterIP, got.Spec.ClusterIPs = "10.96.8.8", nil
	if _, err := svcs.Update(ctx, got); !client.IsInvalid(err) || !strings.Contains(client.Message(err), "immutable") {
		t.Errorf("changing the cluster IP: %v", err)
	}
}

// Claims that disagree with the Services (an older version's crash, a hand
// edit) are repaired when the API server starts: a stale claim is
// released, a missing one taken again.
func TestServiceAllocationRepairOnRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := testserver.Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	svc, err := client.For[*core.Service](s.Client).Create(ctx, service("web", core.ServiceTypeClusterIP))
	if err != nil {
		t.Fatal(err)
	}
	cli := s.Store().Client()
	if _, err := cli.Delete(ctx, storage.ClaimKey("services/ip/"+svc.Spec.ClusterIP)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, storage.ClaimKey("services/ip/10.96.9.9"), storage.Key("services", "default", "gone")); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s, err = testserver.Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	svcs := client.For[*core.Service](s.Client)
	if _, err := svcs.Create(ctx, service("thief", core.ServiceTypeClusterIP, func(x *core.Service) { x.Spec.ClusterIP = svc.Spec.ClusterIP })); !client.IsInvalid(err) {
		t.Errorf("web's IP %s was not claimed again after the restart: %v", svc.Spec.ClusterIP, err)
	}
	if _, err := svcs.Create(ctx, service("heir", core.ServiceTypeClusterIP, func(x *core.Service) { x.Spec.ClusterIP = "10.96.9.9" })); err != nil {
		t.Errorf("a stale claim of a Service that is gone was not released: %v", err)
	}
}

// Deleting a namespace deletes its Services and releases what they held.
func TestNamespaceDeletionReleasesServiceAllocations(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	if _, err := client.For[*core.Namespace](s.Client).Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	svc := service("web", core.ServiceTypeNodePort, func(s *core.Service) { s.Namespace = "team"; s.Spec.ClusterIP = "10.96.5.5" })
	if _, err := client.For[*core.Service](s.Client).Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if err := client.For[*core.Namespace](s.Client).Delete(ctx, "", "team", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		_, err := client.For[*core.Namespace](s.Client).Get(ctx, "", "team")
		return client.IsNotFound(err)
	})
	if _, err := client.For[*core.Service](s.Client).Create(ctx, service("web", core.ServiceTypeClusterIP, func(s *core.Service) { s.Spec.ClusterIP = "10.96.5.5" })); err != nil {
		t.Errorf("the IP of a Service deleted with its namespace: %v", err)
	}
}

func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for ctx.Err() == nil {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("condition not met in time")
}

// TestKubernetesEndpointsFollowTheAPIServer: the API server started again
// on another address (a machine that changed its address, a snapshot
// restored elsewhere) points the kubernetes Endpoints and EndpointSlice
// at the new one — pods reach the API at kubernetes.default.svc — and
// keeps their identity.
func TestKubernetesEndpointsFollowTheAPIServer(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	s, err := testserver.Start(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := client.For[*core.Endpoints](s.Client).Get(ctx, "default", "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s, err = testserver.Start(dir, "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	after, err := client.For[*core.Endpoints](s.Client).Get(ctx, "default", "kubernetes")
	if err != nil || len(after.Subsets) != 1 || after.Subsets[0].Addresses[0].IP != "127.0.0.2" {
		t.Fatalf("the kubernetes Endpoints after a restart on 127.0.0.2: %+v %v", after, err)
	}
	if after.UID != ep.UID {
		t.Errorf("the kubernetes Endpoints was replaced (uid %s -> %s), not updated", ep.UID, after.UID)
	}
	slice, err := client.For[*discovery.EndpointSlice](s.Client).Get(ctx, "default", "kubernetes")
	if err != nil || len(slice.Endpoints) != 1 || slice.Endpoints[0].Addresses[0] != "127.0.0.2" {
		t.Errorf("the kubernetes EndpointSlice after the restart: %+v %v", slice, err)
	}
}

// TestLoadBalancerServiceWithoutALoadBalancer: a LoadBalancer Service is
// accepted as Kubernetes without a cloud accepts it — a cluster IP, node
// ports, externalTrafficPolicy Cluster, allocateLoadBalancerNodePorts
// true, its class kept — and waits for a load balancer controller: its
// status (addresses, conditions) is written through the status
// subresource; turned into a ClusterIP Service, its node ports go.
func TestLoadBalancerServiceWithoutALoadBalancer(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	svcs := client.For[*core.Service](s.Client)
	class := "example.com/internal-vip"
	lb, err := svcs.Create(ctx, service("lb", core.ServiceTypeLoadBalancer, func(s *core.Service) { s.Spec.LoadBalancerClass = &class }))
	if err != nil {
		t.Fatal(err)
	}
	inRange(t, lb.Spec.ClusterIP)
	if np := lb.Spec.Ports[0].NodePort; np < 30000 || np > 32767 || lb.Spec.ExternalTrafficPolicy != core.TrafficCluster ||
		lb.Spec.AllocateLoadBalancerNodePorts == nil || !*lb.Spec.AllocateLoadBalancerNodePorts || *lb.Spec.LoadBalancerClass != class {
		t.Fatalf("a LoadBalancer Service: %+v", lb.Spec)
	}
	lb.Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{IP: "203.0.113.1"}}
	lb.Status.Conditions = []meta.Condition{{Type: "StatusUpdate", Status: meta.ConditionTrue, Reason: "E2E", Message: "Set from e2e test", LastTransitionTime: meta.Now()}}
	if lb, err = svcs.UpdateStatus(ctx, lb); err != nil || lb.Status.LoadBalancer.Ingress[0].IP != "203.0.113.1" || len(lb.Status.Conditions) != 1 {
		t.Fatalf("status written by a load balancer controller: %+v %v", lb, err)
	}
	lb.Spec.Type, lb.Spec.LoadBalancerClass, lb.Spec.AllocateLoadBalancerNodePorts = core.ServiceTypeClusterIP, nil, nil
	lb.Spec.ExternalTrafficPolicy = ""
	if lb, err = svcs.Update(ctx, lb); err != nil || lb.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("turned into a ClusterIP Service: %+v %v; want its node port released", lb, err)
	}
}
