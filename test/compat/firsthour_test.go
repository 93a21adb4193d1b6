package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// corpus is a dozen manifests shaped as Kubernetes' documentation and
// tutorials write them: official images named by one segment, with and
// without a tag. The key is the pod name prefix, the value the image name
// a node must report in the pod's status.
var corpus = []struct{ file, manifest, pod, want string }{
	{"nginx-deployment.yaml", deploymentOf("nginx-deployment", "nginx", "nginx:1.14.2", 80), "nginx-deployment-", "docker.io/library/nginx:1.14.2"},
	{"redis.yaml", podOf("redis", "redis", "redis", 6379), "redis", "docker.io/library/redis:latest"},
	{"busybox.yaml", podOf("busybox", "busybox", "busybox:1.28", 0), "busybox", "docker.io/library/busybox:1.28"},
	{"mysql.yaml", deploymentOf("mysql", "mysql", "mysql:5.6", 3306), "mysql-", "docker.io/library/mysql:5.6"},
	{"wordpress.yaml", deploymentOf("wordpress", "wordpress", "wordpress:6.2.1-apache", 80), "wordpress-", "docker.io/library/wordpress:6.2.1-apache"},
	{"httpd.yaml", podOf("httpd", "httpd", "httpd:2.4", 80), "httpd", "docker.io/library/httpd:2.4"},
	{"postgres.yaml", podOf("postgres", "postgres", "postgres", 5432), "postgres", "docker.io/library/postgres:latest"},
	{"memcached.yaml", deploymentOf("memcached", "memcached", "memcached:1.6", 11211), "memcached-", "docker.io/library/memcached:1.6"},
	{"mongo.yaml", podOf("mongo", "mongo", "mongo:6.0", 27017), "mongo", "docker.io/library/mongo:6.0"},
	{"rabbitmq.yaml", podOf("rabbitmq", "rabbitmq", "rabbitmq:3-management", 5672), "rabbitmq", "docker.io/library/rabbitmq:3-management"},
	{"whoami.yaml", podOf("whoami", "whoami", "traefik/whoami", 80), "whoami", "docker.io/traefik/whoami:latest"},
	{"pause.yaml", podOf("pause", "pause", "registry.k8s.io/pause:3.10", 0), "pause", "registry.k8s.io/pause:3.10"},
}

func podOf(name, container, image string, port int) string {
	ports := ""
	if port > 0 {
		ports = fmt.Sprintf("\n    ports:\n    - containerPort: %d", port)
	}
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  labels:\n    app: %s\nspec:\n  containers:\n  - name: %s\n    image: %s%s\n", name, name, container, image, ports)
}

func deploymentOf(name, container, image string, port int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  labels:
    app: %s
spec:
  replicas: 1
  selector:
    matchLabels:
      app: %s
  template:
    metadata:
      labels:
        app: %s
    spec:
      containers:
      - name: %s
        image: %s
        ports:
        - containerPort: %d
`, name, name, name, name, container, image, port)
}

// TestRealManifestsImageNames (issue #32): the images real manifests name
// (nginx, redis:latest implied, traefik/whoami) resolve on the nodes to
// the names the kubelet and containerd report — what kubectl shows in a
// pod's status — and re-applying the same manifests changes nothing.
func TestRealManifestsImageNames(t *testing.T) {
	s := newSession(t, 2)
	dir := t.TempDir()
	for _, c := range corpus {
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.ok("", "apply", "-f", dir)
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		out := s.ok("", "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}{" "}{.status.containerStatuses[0].image}{" "}{.status.containerStatuses[0].imageID}{"\n"}{end}`)
		missing := []string{}
		for _, c := range corpus {
			found := false
			for _, line := range strings.Split(out, "\n") {
				f := strings.Fields(line)
				if len(f) == 3 && strings.HasPrefix(f[0], c.pod) && f[1] == c.want && strings.HasSuffix(f[2], c.want) {
					found = true
				}
			}
			if !found {
				missing = append(missing, c.pod+" "+c.want)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods whose status does not show the resolved image (want name image imageID):\n%s\nmissing: %v", out, missing)
		}
	}
	out := s.ok("", "apply", "-f", dir)
	if strings.Count(out, "unchanged") != len(corpus) {
		t.Errorf("second apply of the same manifests:\n%s", out)
	}
}

// TestKubectlPrintsWhyAnObjectIsInvalid (issue #32): kubectl printed
// `The pods "" is invalid` with nothing after it; the Status now names the
// kind, the object and each field's problem as kube-apiserver's does.
func TestKubectlPrintsWhyAnObjectIsInvalid(t *testing.T) {
	s := newSession(t, 1)
	tests := []struct{ manifest, want string }{
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: noimage}\nspec:\n  containers: [{name: app}]\n",
			`The Pod "noimage" is invalid: spec.containers[0].image: Required value`},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: twoprobes}\nspec:\n  containers:\n  - name: app\n    image: nginx\n    livenessProbe: {grpc: {port: 0}}\n",
			`The Pod "twoprobes" is invalid: spec.containers[0].livenessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive`},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: badcpu}\nspec:\n  containers: [{name: app, image: nginx, resources: {limits: {cpu: lots}}}]\n",
			`Error from server (BadRequest): error when creating "STDIN": Pod in version "v1" cannot be handled as a Pod: quantity "lots"`},
		{"apiVersion: v1\nkind: Service\nmetadata: {name: Bad_Name}\nspec:\n  ports: [{port: 80}]\n",
			`The Service "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"`},
	}
	for _, tt := range tests {
		r := s.run(tt.manifest, "create", "-f", "-")
		if r.code == 0 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("kubectl create of an invalid object: exit %d\n%s\nwant %q", r.code, r.stderr, tt.want)
		}
	}
}

// TestKubectlAutoscalingV1 (issue #32): an autoscaling/v1 manifest, as
// older tutorials write it, applies with the real kubectl (create, then
// apply again unchanged, then a changed target), reads back in v1 when
// asked for v1 and in v2 by default, and kobectl applies it too.
func TestKubectlAutoscalingV1(t *testing.T) {
	s := newSession(t, 1)
	hpa := `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: php-apache
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: php-apache
  minReplicas: 1
  maxReplicas: 10
  targetCPUUtilizationPercentage: 50
`
	s.okWith(hpa, []string{"apply", "-f", "-"}, "horizontalpodautoscaler.autoscaling/php-apache created")
	s.okWith(hpa, []string{"apply", "-f", "-"}, "horizontalpodautoscaler.autoscaling/php-apache unchanged")
	s.okWith(strings.Replace(hpa, "50", "70", 1), []string{"apply", "-f", "-"}, "horizontalpodautoscaler.autoscaling/php-apache configured")
	if out := s.ok("", "get", "horizontalpodautoscalers.v1.autoscaling", "php-apache", "-o", "jsonpath={.apiVersion} {.spec.targetCPUUtilizationPercentage}"); out != "autoscaling/v1 70" {
		t.Errorf("get horizontalpodautoscalers.v1.autoscaling: %q", out)
	}
	if out := s.ok("", "get", "hpa", "php-apache", "-o", "jsonpath={.apiVersion} {.spec.metrics[0].resource.target.averageUtilization}"); out != "autoscaling/v2 70" {
		t.Errorf("get hpa (v2, preferred): %q", out)
	}
	s.expect([]string{"api-versions"}, "autoscaling/v1", "autoscaling/v2")
	if r := s.run(strings.Replace(hpa, "maxReplicas", "maxReplica", 1), "create", "-f", "-"); r.code == 0 || !strings.Contains(r.stderr, `unknown field "spec.maxReplica"`) {
		t.Errorf("a typo in a v1 manifest: exit %d %s", r.code, r.stderr)
	}
}
