package scheme

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kobune/kobune/api/apps"
)

const manifest = `# a comment
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      hostUsers: false
      containers:
      - name: web
        image: kobune.local/labapp:1.0
        resources:
          requests: {cpu: 0.5, memory: 64Mi}
        stdinOnce: true
`

func TestDecodeMultiDocument(t *testing.T) {
	docs, err := Decode([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("got %d documents, want 2", len(docs))
	}
	if docs[0].Kind.Kind != "Namespace" || docs[0].Line != 1 {
		t.Errorf("doc 0 = %s at line %d", docs[0].Kind.Kind, docs[0].Line)
	}
	d := docs[1].Object.(*apps.Deployment)
	if d.Name != "web" || *d.Spec.Replicas != 3 || docs[1].Line != 7 {
		t.Errorf("deployment decoded wrong: %s replicas %d line %d", d.Name, *d.Spec.Replicas, docs[1].Line)
	}
	if got := d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "500m" {
		t.Errorf("cpu request = %s, want 500m", got)
	}
	want := []string{
		"spec.template.spec.containers[0].stdinOnce: not supported by kobune",
		"spec.template.spec.hostUsers: not supported by kobune",
	}
	if diff := cmp.Diff(want, docs[1].Unsupported); diff != "" {
		t.Errorf("unsupported fields (-want +got):\n%s", diff)
	}
	if len(docs[0].Unsupported) != 0 {
		t.Errorf("namespace reported unsupported fields: %v", docs[0].Unsupported)
	}
}

func TestDecodeJSON(t *testing.T) {
	in := `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}
{"apiVersion":"v1","kind":"Secret","metadata":{"name":"b"},"stringData":{"k":"v"}}`
	docs, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Kind.Kind != "ConfigMap" || docs[1].Kind.Kind != "Secret" || docs[1].Line != 2 {
		t.Fatalf("decoded %+v", docs)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"malformed yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   bad: indent\n", "line 5"},
		{"malformed yaml in second document", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: [x\n", "line 6"},
		{"missing kind", "apiVersion: v1\nmetadata:\n  name: x\n", "line 1: kind is required"},
		{"missing apiVersion", "kind: Pod\n", "apiVersion is required"},
		{"unknown kind", "apiVersion: v1\nkind: Frobnicator\n", `unknown kind "Frobnicator"`},
		{"wrong apiVersion", "apiVersion: extensions/v1beta1\nkind: Deployment\n", `use "apps/v1"`},
		{"wrong type", "apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: three\n", "spec.replicas: expected an integer, got string"},
		{"bad json", `{"apiVersion": "v1",`, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	for in, want := range map[string]string{"po": "pods", "Pod": "pods", "deploy": "deployments", "deployments.apps": "deployments", "pc": "priorityclasses"} {
		k, err := Lookup(in)
		if err != nil || k.Resource != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", in, k, err, want)
		}
	}
	if _, err := Lookup("widgets"); err == nil {
		t.Error("Lookup(widgets) should fail")
	}
}

// Fields Kobune keeps but does not act on are named like unknown ones
// (issue #10 defect 7).
func TestDecodeNamesFieldsNotActedOn(t *testing.T) {
	docs, err := Decode([]byte(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  dnsPolicy: ClusterFirst
  hostNetwork: true
  containers: [{name: c, image: i, tty: true, terminationMessagePolicy: File}]
---
apiVersion: v1
kind: Service
metadata: {name: s}
spec: {ports: [{port: 80}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"spec.containers[0].tty: not supported by kobune"}
	if got := docs[0].Unsupported; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("pod: unsupported %q, want %q (hostNetwork works)", got, want)
	}
	if got := docs[1].Unsupported; len(got) != 0 {
		t.Errorf("service: unsupported %q; Services are acted on (cluster IPs, slices, node rules)", got)
	}
}

// TestZeroValuedUnsupportedFieldsAskForNothing (issue #32): a
// PriorityClass with globalDefault: false, a container with stdin: false
// ask for what Kobune does; only a value that asks for something
// unsupported is named.
func TestZeroValuedUnsupportedFieldsAskForNothing(t *testing.T) {
	tests := []struct {
		doc  string
		want []string
	}{
		{"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 10\nglobalDefault: false\n", nil},
		{"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 10\nglobalDefault: true\n", []string{"globalDefault: not supported by kobune"}},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i, stdin: false, tty: false, terminationMessagePath: ''}]\n", nil},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i, stdin: true}]\n", []string{"spec.containers[0].stdin: not supported by kobune"}},
	}
	for _, tt := range tests {
		docs, err := Decode([]byte(tt.doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := docs[0].Unsupported; strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s: unsupported %q, want %q", tt.doc, got, tt.want)
		}
	}
}

// TestDecodeOtherServedVersion (issue #32): an autoscaling/v1 manifest is
// read as the stored autoscaling/v2 object (kobectl applies it), and a
// field v1 does not have is named, not lost in the conversion.
func TestDecodeOtherServedVersion(t *testing.T) {
	docs, err := Decode([]byte("apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\n" +
		"spec: {scaleTargetRef: {kind: Deployment, name: web}, maxReplicas: 4, targetCPUUtilizationPercentage: 60}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tm := docs[0].Object.GetTypeMeta(); tm.APIVersion != "autoscaling/v2" || !strings.Contains(string(docs[0].JSON), `"averageUtilization":60`) {
		t.Errorf("decoded %+v: %s", tm, docs[0].JSON)
	}
	if _, err := Decode([]byte("apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec: {maxReplica: 4}\n")); err == nil || !strings.Contains(err.Error(), `unknown field "spec.maxReplica"`) {
		t.Errorf("typo in a v1 manifest: %v", err)
	}
}
