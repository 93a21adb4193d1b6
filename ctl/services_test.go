package ctl_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
)

// kobectl get svc shows the allocated cluster IP and node port as kubectl
// does; describe svc lists the endpoints per port; endpointslices print.
func TestGetAndDescribeServices(t *testing.T) {
	s := testserver.New(t)
	r := kobectl(t, s, `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30080}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: web}
subsets:
- addresses: [{ip: 10.244.1.5}, {ip: 10.244.2.7}]
  ports: [{name: http, port: 8080}]
`, "apply", "-f", "-")
	if r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	r = kobectl(t, s, "", "get", "svc")
	if !regexp.MustCompile(`(?m)^web\s+NodePort\s+10\.96\.\d+\.\d+\s+<none>\s+80:30080/TCP\s+`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^kubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443/TCP`).MatchString(r.stdout) {
		t.Errorf("get svc:\n%s", r.stdout)
	}
	r = kobectl(t, s, "", "describe", "svc", "web")
	// kubectl's lines, in its order (issue #32: the IP family lines).
	want := []string{`Selector:\s+app=web`, `Type:\s+NodePort`, `IP Family Policy:\s+SingleStack`, `IP Families:\s+IPv4`, `IP:\s+10\.96\.\d+\.\d+`,
		`IPs:\s+10\.96\.\d+\.\d+`, `Port:\s+http  80/TCP`, `TargetPort:\s+8080/TCP`, `NodePort:\s+http  30080/TCP`,
		`Endpoints:\s+10\.244\.1\.5:8080,10\.244\.2\.7:8080`, `Session Affinity:\s+None`, `External Traffic Policy:\s+Cluster`, `Internal Traffic Policy:\s+Cluster`, `Events:`}
	if !regexp.MustCompile(`(?m)^` + strings.Join(want, `\n`)).MatchString(r.stdout) {
		t.Errorf("describe svc, want kubectl's lines in its order %q:\n%s", want, r.stdout)
	}
	r = kobectl(t, s, "", "get", "endpointslices", "-n", "kube-system")
	if r.code != 0 || !strings.Contains(r.stderr+r.stdout, "No resources found") {
		t.Errorf("get endpointslices -n kube-system (none, no controller here): %d %q %q", r.code, r.stdout, r.stderr)
	}
	// The kubernetes Service's slice is the API server's own.
	r = kobectl(t, s, "", "get", "endpointslices", "-A")
	if r.code != 0 || !regexp.MustCompile(`(?m)^default\s+kubernetes\s+IPv4\s+\d+\s+127\.0\.0\.1`).MatchString(r.stdout) {
		t.Errorf("get endpointslices -A: the kubernetes Service's slice is missing: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// Several kinds at once, as kubectl: a table per kind, kind/name rows.
	r = kobectl(t, s, "", "get", "svc,endpoints,endpointslices")
	if r.code != 0 || !regexp.MustCompile(`(?m)^service/web\s+NodePort\s+10\.96\.`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^\n?endpoints/web\s+10\.244\.1\.5:8080,10\.244\.2\.7:8080`).MatchString(r.stdout) || !strings.Contains(r.stdout, "\n\nNAME") {
		t.Errorf("get svc,endpoints,endpointslices: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = kobectl(t, s, "", "get", "svc,endpoints", "web", "-o", "name"); r.stdout != "service/web\nendpoints/web\n" {
		t.Errorf("get svc,endpoints web -o name: %q %s", r.stdout, r.stderr)
	}
	if r = kobectl(t, s, "", "get", "svc,nosuchkind"); r.code == 0 || !strings.Contains(r.stderr, "nosuchkind") {
		t.Errorf("get svc,nosuchkind: %d %q", r.code, r.stderr)
	}
	// explain-path: what is not a Service, a headless one, a node without agent.
	if r = kobectl(t, s, "", "explain-path", "deploy/web"); r.code == 0 || !strings.Contains(r.stderr, "explain-path takes svc/NAME") {
		t.Errorf("explain-path deploy/web: %d %q", r.code, r.stderr)
	}
	kobectl(t, s, "apiVersion: v1\nkind: Service\nmetadata: {name: hl}\nspec: {clusterIP: None, selector: {app: x}, ports: [{port: 80}]}\n", "apply", "-f", "-")
	if r = kobectl(t, s, "", "explain-path", "svc/hl"); r.code != 0 || !strings.Contains(r.stdout, "is headless") {
		t.Errorf("explain-path svc/hl: %d %q %q", r.code, r.stdout, r.stderr)
	}
	kobectl(t, s, "apiVersion: v1\nkind: Node\nmetadata: {name: sim-1}\n", "apply", "-f", "-")
	if r = kobectl(t, s, "", "explain-path", "svc/web"); r.code != 0 || !strings.Contains(r.stdout, "cannot read the rules of node sim-1: node sim-1 publishes no agent address") {
		t.Errorf("explain-path svc/web with a node without agent: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
