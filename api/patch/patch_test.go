package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

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
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","tier":"front"},"finalizers":["b","a"]},"spec":{"replicas":2,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"template":{"spec":{"containers":[{"name":"app","image":"labapp:2","env":[{"name":"A","value":"1"},{"name":"B","value":"3"},{"name":"C","value":"4"}],"ports":[{"containerPort":8080}]},{"name":"side","image":"busybox"}]}}}}`},
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

// TestStrategicMergeOrdersListsAsKubernetes: a merged list comes out in
// the order apimachinery's strategic merge gives it (each want below is
// what k8s.io/apimachinery v0.37's StrategicMergePatch answered for the
// same document and patch): items the patch names in its order, an item
// new to the list before the stored ones after it, $setElementOrder
// reorders, primitives likewise.
func TestStrategicMergeOrdersListsAsKubernetes(t *testing.T) {
	dt, _ := k8sapi.ForKind("apps/v1", "Deployment")
	doc := `{"metadata":{"name":"web","finalizers":["a","b","c"]},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"x"},{"name":"side","image":"y"},{"name":"third","image":"z"}]}}}}`
	cases := []struct{ patch, want string }{
		{`{"spec":{"template":{"spec":{"containers":[{"name":"test-rs","image":"pause"}]}}}}`,
			`{"metadata":{"finalizers":["a","b","c"],"name":"web"},"spec":{"template":{"spec":{"containers":[{"image":"pause","name":"test-rs"},{"image":"x","name":"app"},{"image":"y","name":"side"},{"image":"z","name":"third"}]}}}}`},
		{`{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"side"},{"name":"app"}],"containers":[{"name":"app","image":"v2"}]}}}}`,
			`{"metadata":{"finalizers":["a","b","c"],"name":"web"},"spec":{"template":{"spec":{"containers":[{"image":"y","name":"side"},{"image":"v2","name":"app"},{"image":"z","name":"third"}]}}}}`},
		{`{"spec":{"template":{"spec":{"containers":[{"name":"third","image":"v2"},{"name":"new","image":"n"}]}}}}`,
			`{"metadata":{"finalizers":["a","b","c"],"name":"web"},"spec":{"template":{"spec":{"containers":[{"image":"x","name":"app"},{"image":"y","name":"side"},{"image":"v2","name":"third"},{"image":"n","name":"new"}]}}}}`},
		{`{"metadata":{"finalizers":["c","d"]}}`,
			`{"metadata":{"finalizers":["a","b","c","d"],"name":"web"},"spec":{"template":{"spec":{"containers":[{"image":"x","name":"app"},{"image":"y","name":"side"},{"image":"z","name":"third"}]}}}}`},
	}
	for _, c := range cases {
		got, err := Apply(StrategicMergePatchType, []byte(doc), []byte(c.patch), dt)
		if err != nil {
			t.Errorf("%s: %v", c.patch, err)
			continue
		}
		if canon(t, string(got)) != canon(t, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.patch, got, canon(t, c.want))
		}
	}
}

func TestPatchErrorsNameTheOperation(t *testing.T) {
	dt, _ := k8sapi.ForKind("apps/v1", "Deployment")
	cases := []struct{ typ, patch, want string }{
		{JSONPatchType, `[{"op":"replace","path":"/spec/nope","value":1}]`, `replace operation does not apply: doc is missing key: /spec/nope`},
		{JSONPatchType, `[{"op":"test","path":"/spec/replicas","value":7}]`, `testing value /spec/replicas failed: test failed`},
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

// TestJSONPatchLimits (issue #35): a 2.8 KB patch of copies that each
// double a value took 1.5 GB, and 20 of them killed the API server; a
// patch may now add at most MaxCopyBytes by copying and hold at most
// MaxJSONPatchOperations operations, as in Kubernetes, and is refused
// with a TooLargeError (413) before it grows.
func TestJSONPatchLimits(t *testing.T) {
	doc := []byte(`{"metadata":{"name":"x"},"data":{"v":"` + strings.Repeat("x", 1024) + `"}}`)
	var ops []string
	for i := 1; i <= 18; i++ { // /data copied into itself: 1 KiB doubled 18 times, 256 MiB
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/data","path":"/data/c%d"}`, i))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Apply(JSONPatchType, doc, []byte("["+strings.Join(ops, ",")+"]"), nil)
	runtime.ReadMemStats(&after)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "copy") {
		t.Errorf("18 doubling copies: %v; want a TooLargeError about copies", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("refusing the doubling copies allocated %d MiB; want far less than the 256 MiB they ask for", grew>>20)
	}
	many := strings.Repeat(`{"op":"test","path":"/metadata/name","value":"x"},`, MaxJSONPatchOperations)
	_, err = Apply(JSONPatchType, doc, []byte("["+many+`{"op":"test","path":"/metadata/name","value":"x"}]`), nil)
	if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "maximum operations in a JSON patch is 10000, got 10001") {
		t.Errorf("a patch of 10001 operations: %v; want refused as too large", err)
	}
	// Big integers survive a JSON patch as they are.
	out, err := Apply(JSONPatchType, []byte(`{"n":9007199254740993}`), []byte(`[{"op":"copy","from":"/n","path":"/m"}]`), nil)
	if err != nil || canon(t, string(out)) != canon(t, `{"m":9007199254740993,"n":9007199254740993}`) || !strings.Contains(string(out), "9007199254740993") {
		t.Errorf("copy of a large integer: %s %v", out, err)
	}
}

// TestStrategicMergeOfALongList (issue #35): a strategic merge patch of
// 4,000 containers compared every patch item with every stored one
// (jsonEqual each time) and ran for 89 s, and on after its client had
// gone. Each item now finds its own by its merge key in one lookup; the
// result is the same: every container merged, one deleted, one added,
// the order kept. (How long it takes is in the log; make bench holds
// timings.)
func TestStrategicMergeOfALongList(t *testing.T) {
	dt, _ := k8sapi.ForKind("apps/v1", "Deployment")
	const n = 4000
	var orig, patch []string
	for i := range n {
		orig = append(orig, fmt.Sprintf(`{"name":"c%d","image":"a","ports":[{"containerPort":%d}]}`, i, 1000+i))
		if i == 7 {
			patch = append(patch, fmt.Sprintf(`{"name":"c%d","$patch":"delete"}`, i))
			continue
		}
		patch = append(patch, fmt.Sprintf(`{"name":"c%d","image":"b"}`, i))
	}
	patch = append(patch, `{"name":"new","image":"n"}`)
	doc := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[` + strings.Join(orig, ",") + `]}}}}`
	p := `{"spec":{"template":{"spec":{"containers":[` + strings.Join(patch, ",") + `]}}}}`
	start := time.Now()
	out, err := Apply(StrategicMergePatchType, []byte(doc), []byte(p), dt)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a strategic merge of %d containers took %v", n, time.Since(start))
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name, Image string
						Ports       []struct{ ContainerPort int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != n {
		t.Fatalf("%d containers after the merge, want %d (one deleted, one added)", len(cs), n)
	}
	for i, c := range cs[:n-1] {
		want := i
		if i >= 7 {
			want = i + 1 // c7 is gone
		}
		if c.Name != fmt.Sprintf("c%d", want) || c.Image != "b" || len(c.Ports) != 1 || c.Ports[0].ContainerPort != 1000+want {
			t.Fatalf("container %d after the merge: %+v; want c%d, image b, its port kept", i, c, want)
		}
	}
	if last := cs[n-1]; last.Name != "new" || last.Image != "n" {
		t.Errorf("the added container: %+v", last)
	}
}
