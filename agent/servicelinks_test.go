package agent

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

func svcFor(ns, name, ip string, ports ...core.ServicePort) *core.Service {
	return &core.Service{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name}, Spec: core.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

// The kubelet's Service link variables: the pod's namespace's Services
// with a cluster IP (unless enableServiceLinks is false) and the
// kubernetes Service, named and formatted as Kubernetes does.
func TestServiceEnv(t *testing.T) {
	services := []*core.Service{
		svcFor("default", "kubernetes", "10.96.0.1", core.ServicePort{Name: "https", Port: 443, Protocol: core.ProtocolTCP}),
		svcFor("team", "web-api", "10.96.3.4", core.ServicePort{Name: "http", Port: 80, Protocol: core.ProtocolTCP},
			core.ServicePort{Name: "dns", Port: 53, Protocol: core.ProtocolUDP}),
		svcFor("team", "headless", "None", core.ServicePort{Port: 80, Protocol: core.ProtocolTCP}),
		svcFor("other", "db", "10.96.9.9", core.ServicePort{Port: 5432, Protocol: core.ProtocolTCP}),
	}
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "team", Name: "p"}}
	var got []string
	for _, e := range serviceEnv(pod, services) {
		got = append(got, e.Name+"="+e.Value)
	}
	want := []string{
		"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_SERVICE_PORT_HTTPS=443",
		"KUBERNETES_PORT=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_PROTO=tcp",
		"KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
		"WEB_API_SERVICE_HOST=10.96.3.4", "WEB_API_SERVICE_PORT=80", "WEB_API_SERVICE_PORT_HTTP=80", "WEB_API_SERVICE_PORT_DNS=53",
		"WEB_API_PORT=tcp://10.96.3.4:80",
		"WEB_API_PORT_80_TCP=tcp://10.96.3.4:80", "WEB_API_PORT_80_TCP_PROTO=tcp", "WEB_API_PORT_80_TCP_PORT=80", "WEB_API_PORT_80_TCP_ADDR=10.96.3.4",
		"WEB_API_PORT_53_UDP=udp://10.96.3.4:53", "WEB_API_PORT_53_UDP_PROTO=udp", "WEB_API_PORT_53_UDP_PORT=53", "WEB_API_PORT_53_UDP_ADDR=10.96.3.4",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("env:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	no := false
	pod.Spec.EnableServiceLinks = &no
	got = got[:0]
	for _, e := range serviceEnv(pod, services) {
		got = append(got, e.Name)
	}
	if len(got) != 8 || !strings.HasPrefix(got[0], "KUBERNETES_") || !strings.HasPrefix(got[7], "KUBERNETES_") {
		t.Errorf("enableServiceLinks false: %v, want only the kubernetes Service's 8 variables", got)
	}
}
