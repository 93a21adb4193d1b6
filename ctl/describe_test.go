package ctl_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestDescribeInKubectlSections: describe prints kubectl's sections, not
// YAML: a node with its non-terminated pods and the requests and limits
// they add up to against its allocatable resources; a pod with its
// containers, conditions and volumes; a Deployment with its replicas
// line and pod template; other kinds as an indented tree.
func TestDescribeInKubectlSections(t *testing.T) {
	s := testserver.New(t)
	ctx := context.Background()
	node := &core.Node{ObjectMeta: meta.ObjectMeta{Name: "big", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}},
		Spec: core.NodeSpec{Taints: []core.Taint{{Key: "dedicated", Value: "db", Effect: core.TaintNoSchedule}}}}
	if _, err := client.For[*core.Node](s.Client).Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node, _ = client.For[*core.Node](s.Client).Get(ctx, "", "big")
	node.Status.Allocatable = resource.List{resource.CPU: resource.MustParse("4"), resource.Memory: resource.MustParse("8Gi"), resource.Pods: resource.MustParse("110")}
	node.Status.Capacity = node.Status.Allocatable
	if _, err := client.For[*core.Node](s.Client).UpdateStatus(ctx, node); err != nil {
		t.Fatal(err)
	}
	pods := `apiVersion: v1
kind: Pod
metadata: {name: a, namespace: default}
spec:
  nodeName: big
  tolerations: [{key: dedicated, operator: Equal, value: db, effect: NoSchedule}]
  containers:
  - name: app
    image: kobune.local/labapp:1.0
    ports: [{containerPort: 8080}]
    env: [{name: MODE, value: fast}]
    resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {cpu: "1", memory: 2Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: default}
spec:
  nodeName: big
  tolerations: [{key: dedicated, operator: Exists}]
  initContainers:
  - {name: setup, image: kobune.local/busybox:1.35, resources: {requests: {cpu: "2"}}}
  containers:
  - {name: app, image: kobune.local/labapp:1.0, resources: {requests: {cpu: 500m}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
`
	if r := kobectl(t, s, pods, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	r := kobectl(t, s, "", "describe", "node", "big")
	for _, re := range []string{
		`(?m)^Roles:\s+worker$`,
		`(?m)^Taints:\s+dedicated=db:NoSchedule$`,
		`(?m)^Non-terminated Pods:\s+\(2 in total\)$`,
		`(?m)^\s+Namespace\s+Name\s+CPU Requests\s+CPU Limits\s+Memory Requests\s+Memory Limits\s+Age$`,
		`(?m)^\s+default\s+a\s+500m \(12%\)\s+1 \(25%\)\s+1Gi \(12%\)\s+2Gi \(25%\)\s+`,
		`(?m)^\s+default\s+b\s+2 \(50%\)\s+0 \(0%\)`, // the init container's 2 CPUs count, not 500m
		`(?m)^Allocated resources:$`,
		`(?m)^\s+cpu\s+2500m \(62%\)\s+1 \(25%\)$`,
		`(?m)^\s+memory\s+1Gi \(12%\)\s+2Gi \(25%\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("describe node lacks %s:\n%s%s", re, r.stdout, r.stderr)
		}
	}
	r = kobectl(t, s, "", "describe", "pod", "a")
	for _, re := range []string{`(?m)^Containers:$`, `(?m)^  app:$`, `(?m)^\s+Image:\s+kobune.local/labapp:1.0$`, `(?m)^\s+Port:\s+8080/TCP$`,
		`(?m)^\s+Limits:$`, `(?m)^\s+cpu:\s+1$`, `(?m)^\s+MODE:\s+fast$`, `(?m)^QoS Class:\s+Burstable$`, `(?m)^Tolerations:\s+dedicated=db:NoSchedule$`, `(?m)^Events:`} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("describe pod lacks %s:\n%s", re, r.stdout)
		}
	}
	if r := kobectl(t, s, "", "describe", "pod", "b"); !regexp.MustCompile(`(?m)^Init Containers:\n  setup:$`).MatchString(r.stdout) {
		t.Errorf("describe pod b:\n%s", r.stdout)
	}
	if r := kobectl(t, s, deployment("web", "3", "web", ""), "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply deployment: %+v", r)
	}
	r = kobectl(t, s, "", "describe", "deployment", "web")
	for _, re := range []string{`(?m)^Selector:\s+app=web$`, `(?m)^Replicas:\s+3 desired \| 0 updated \| 0 total \| 0 available \| 0 unavailable$`,
		`(?m)^StrategyType:\s+RollingUpdate$`, `(?m)^RollingUpdateStrategy:\s+25% max unavailable, 25% max surge$`, `(?m)^Pod Template:$`} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("describe deployment lacks %s:\n%s", re, r.stdout)
		}
	}
	r = kobectl(t, s, "", "describe", "cm", "settings")
	if !strings.Contains(r.stdout, "\nData\n====\ncolor:\n----\nblue\n") {
		t.Errorf("describe configmap:\n%s", r.stdout)
	}
	kobectl(t, s, "apiVersion: v1\nkind: Secret\nmetadata: {name: pw}\nstringData: {password: hunter2}\n", "apply", "-f", "-")
	r = kobectl(t, s, "", "describe", "secret", "pw")
	if !regexp.MustCompile(`(?m)^password:\s+7 bytes$`).MatchString(r.stdout) || strings.Contains(r.stdout, "hunter2") {
		t.Errorf("describe secret (sizes, never values):\n%s", r.stdout)
	}
	if r := kobectl(t, s, "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: example.com/x\nparameters: {speed: high}\n", "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply storageclass: %+v", r)
	}
	r = kobectl(t, s, "", "describe", "storageclass", "fast")
	if !regexp.MustCompile(`(?m)^Provisioner:\s+example.com/x$`).MatchString(r.stdout) || strings.Contains(r.stdout, "provisioner: ") {
		t.Errorf("describe storageclass (a tree, not YAML):\n%s%s", r.stdout, r.stderr)
	}
}

// TestDescribeAndGetAsKubectl (issue #32): describe pod in kubectl's field
// order with the IPs block and the phase as Status; describe without a
// name (every pod, or those of -l), separated as kubectl separates them;
// get -f FILE shows the objects a manifest names.
func TestDescribeAndGetAsKubectl(t *testing.T) {
	s := testserver.New(t)
	ctx := context.Background()
	pods := client.For[*core.Pod](s.Client)
	for _, name := range []string{"web-1", "web-2", "db"} {
		app := strings.TrimRight(name, "-12")
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": app}},
			Spec: core.PodSpec{Containers: []core.Container{{Name: "c", Image: "kobune.local/labapp:1.0"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Client.Bind(ctx, "default", "web-1", "", "node-1", nil); err != nil {
		t.Fatal(err)
	}
	p, _ := pods.Get(ctx, "default", "web-1")
	p.Status.Phase, p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP = core.PodRunning, "10.244.1.7", []core.PodIP{{IP: "10.244.1.7"}}, "172.31.0.11"
	p.Status.ContainerStatuses = []core.ContainerStatus{{Name: "c", State: core.ContainerState{Waiting: &core.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	if _, err := pods.UpdateStatus(ctx, p); err != nil {
		t.Fatal(err)
	}
	r := kobectl(t, s, "", "describe", "pod", "web-1")
	order := []string{`Name:\s+web-1`, `Namespace:\s+default`, `Priority:\s+0`, `Service Account:\s+default`, `Node:\s+node-1/172\.31\.0\.11`,
		`Labels:\s+app=web`, `Annotations:\s+<none>`, `Status:\s+Running`, `IP:\s+10\.244\.1\.7`, `IPs:`, `  IP:\s+10\.244\.1\.7`, `Containers:`}
	if !regexp.MustCompile(`(?m)^` + strings.Join(order, `\n`)).MatchString(r.stdout) {
		t.Errorf("describe pod, want kubectl's lines in its order %q:\n%s", order, r.stdout)
	}

	r = kobectl(t, s, "", "describe", "pods", "-l", "app=web")
	if r.code != 0 || strings.Count(r.stdout, "\nName:") != 1 || !strings.HasPrefix(r.stdout, "Name:") ||
		!strings.Contains(r.stdout, "Events:  <none>\n\n\nName:") || strings.Contains(r.stdout, "Name:         db") {
		t.Errorf("describe pods -l app=web: the two web pods, two blank lines between:\n%s%s", r.stdout, r.stderr)
	}
	if r = kobectl(t, s, "", "describe", "pods"); strings.Count(r.stdout, "Events:") != 3 {
		t.Errorf("describe pods: want all three:\n%s", r.stdout)
	}
	if r = kobectl(t, s, "", "describe", "pods", "-l", "app=none"); r.code != 0 || !strings.Contains(r.stderr, "No resources found in default namespace.") {
		t.Errorf("describe pods -l app=none: %d %q %q", r.code, r.stdout, r.stderr)
	}

	// logs of a Deployment names the pod it picked among several (kubectl's line).
	if r := kobectl(t, s, deployment("web", "2", "web", ""), "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r = kobectl(t, s, "", "logs", "deploy/web"); !strings.Contains(r.stderr, "Found 2 pods, using pod/web-1\n") {
		t.Errorf("logs deploy/web: %d %q", r.code, r.stderr)
	}

	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: db}\nspec: {containers: [{name: c, image: i}]}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: missing}\n"
	r = kobectl(t, s, manifest, "get", "-f", "-")
	if r.code == 0 || !regexp.MustCompile(`(?m)^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\ndb\s+0/1\s+Pending`).MatchString(r.stdout) ||
		!strings.Contains(r.stderr, `configmaps "missing" not found`) {
		t.Errorf("get -f: the pod in its table, the missing configmap named: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = kobectl(t, s, manifest[:strings.Index(manifest, "---")], "get", "-f", "-", "-o", "name")
	if r.code != 0 || r.stdout != "pod/db\n" {
		t.Errorf("get -f -o name: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestExecAndLogsDefaultContainer: with no -c, exec, attach and logs of a
// pod of several containers take the one the
// kubectl.kubernetes.io/default-container annotation names, else the
// first, and say so as kubectl does (the API server takes no default).
func TestExecAndLogsDefaultContainer(t *testing.T) {
	s := testserver.New(t)
	ctx := context.Background()
	pods := client.For[*core.Pod](s.Client)
	two := []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}, {Name: "side", Image: "kobune.local/labapp:1.0"}}
	for name, ann := range map[string]map[string]string{"two": nil, "annotated": {"kubectl.kubernetes.io/default-container": "side"}} {
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
			Spec: core.PodSpec{Containers: two, InitContainers: []core.Container{{Name: "setup", Image: "kobune.local/labapp:1.0"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	// No node runs these pods: the commands fail after choosing, which is
	// what is looked at.
	for _, args := range [][]string{{"logs", "two"}, {"exec", "two", "--", "true"}, {"attach", "two"}} {
		if r := kobectl(t, s, "", args...); !strings.Contains(r.stderr, `Defaulted container "app" out of: app, side, setup (init)`) ||
			strings.Contains(r.stderr, "a container name must be specified") {
			t.Errorf("%v: %q; want kubectl's Defaulted container line", args, r.stderr)
		}
	}
	if r := kobectl(t, s, "", "logs", "annotated"); strings.Contains(r.stderr, "Defaulted") || strings.Contains(r.stderr, "a container name must be specified") {
		t.Errorf("logs of a pod whose annotation names its default container: %q", r.stderr)
	}
}
