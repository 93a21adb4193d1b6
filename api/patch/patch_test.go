package patch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/k8sapi"
)

func canon(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON in the test: %v: %s", err, s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

const deployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","tier":"front"},"finalizers":["a"]},
"spec":{"replicas":2,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"template":{"spec":{"containers":[
{"name":"app","image":"labapp:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"ports":[{"containerPort":8080}]},
{"name":"side","image":"busybox"}]}}}}`

func TestPatchTypes(t *testing.T) {
	dt, _ := k8sapi.ForKind("apps/v1", "Deployment")
	cases := []struct {
		name, typ, patch, want string
	}{
		{"merge patch: maps merge, null deletes, lists replace", MergePatchType,
			`{"metadata":{"labels":{"tier":null,"new":"x"}},"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"app","image":"labapp:2"}]}}}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","new":"x"},"finalizers":["a"]},"spec":{"replicas":5,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"template":{"spec":{"containers":[{"name":"app","image":"labapp:2"}]}}}}`},
		{"json patch: replace, add to a list, remove, test", JSONPatchType,
			`[{"op":"test","path":"/spec/replicas","value":2},{"op":"replace","path":"/spec/replicas","value":3},{"op":"add","path":"/metadata/finalizers/-","value":"b"},{"op":"remove","path":"/metadata/labels/tier"},{"op":"copy","from":"/metadata/name","path":"/metadata/labels/copied"}]`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","copied":"web"},"finalizers":["a","b"]},"spec":{"replicas":3,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"template":{"spec":{"containers":[{"name":"app","image":"labapp:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"ports":[{"containerPort":8080}]},{"name":"side","image":"busybox"}]}}}}`},
		{"strategic: containers merge by name, env by name, finalizers union", StrategicMergePatchType,
			`{"metadata":{"finalizers":["b"]},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"labapp:2","env":[{"name":"B","value":"3"},{"name":"C","value":"4"}]}]}}}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","tier":"front"},"finalizers":["a","b"]},"spec":{"replicas":2,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"template":{"spec":{"containers":[{"name":"app","image":"labapp:2","env":[{"name":"A","value":"1"},{"name":"B","value":"3"},{"name":"C","value":"4"}],"ports":[{"containerPort":8080}]},{"name":"side","image":"busybox"}]}}}}`},
		{"strategic: $patch delete removes one container; $retainKeys drops rollingUpdate", StrategicMergePatchType,
			`{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"},"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","tier":"front"},"finalizers":["a"]},"spec":{"replicas":2,"strategy":{"type":"Recreate"},"template":{"spec":{"containers":[{"name":"app","image":"labapp:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"ports":[{"containerPort":8080}]}]}}}}`},
		{"strategic: $deleteFromPrimitiveList and $setElementOrder", StrategicMergePatchType,
			`{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],"$setElementOrder/finalizers":[]}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","tier":"front"},"finalizers":[]},"spec":{"replicas":2,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"template":{"spec":{"containers":[{"name":"app","image":"labapp:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"ports":[{"containerPort":8080}]},{"name":"side","image":"busybox"}]}}}}`},
		{"strategic: $patch replace on a list", StrategicMergePatchType,
			`{"spec":{"template":{"spec":{"containers":[{"$patch":"replace"},{"name":"only","image":"x"}]}}}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","tier":"front"},"finalizers":["a"]},"spec":{"replicas":2,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"template":{"spec":{"containers":[{"name":"only","image":"x"}]}}}}`},
	}
	for _, c := range cases {
		got, err := Apply(c.typ, []byte(deployment), []byte(c.patch), dt)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if canon(t, string(got)) != canon(t, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, canon(t, c.want))
		}
	}
}

func TestPatchErrorsNameTheOperation(t *testing.T) {
	dt, _ := k8sapi.ForKind("apps/v1", "Deployment")
	cases := []struct{ typ, patch, want string }{
		{JSONPatchType, `[{"op":"replace","path":"/spec/nope","value":1}]`, `operation 0 (replace /spec/nope): /spec/nope: no such field`},
		{JSONPatchType, `[{"op":"test","path":"/spec/replicas","value":7}]`, `operation 0 (test /spec/replicas): test failed: /spec/replicas is not the value given`},
		{JSONPatchType, `{"op":"add"}`, `a JSON patch is a list of operations`},
		{StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}`, `spec: template: spec: containers: an item has no merge key "name"`},
		{"application/xml", `<x/>`, `patch type "application/xml" is not supported`},
	}
	for _, c := range cases {
		_, err := Apply(c.typ, []byte(deployment), []byte(c.patch), dt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.typ, c.patch, err, c.want)
		}
	}
}
