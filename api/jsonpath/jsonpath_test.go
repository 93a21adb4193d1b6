package jsonpath

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONPathTemplates(t *testing.T) {
	const doc = `{"kind":"List","items":[
	  {"metadata":{"name":"a","labels":{"app":"web","k8s.io/tier":"front"}},"spec":{"replicas":3,"containers":[{"name":"app","image":"i:1","ports":[{"containerPort":80}]},{"name":"side","image":"s:2"}]},"status":{"conditions":[{"type":"Ready","status":"True"}]}},
	  {"metadata":{"name":"b"},"spec":{"replicas":10,"containers":[{"name":"app","image":"i:2"}]},"status":{"conditions":[{"type":"Ready","status":"False"}]}}
	]}`
	var v any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ tmpl, want string }{
		{`{.kind}`, "List"},
		{`{$.kind}`, "List"},
		{`{.items[*].metadata.name}`, "a b"},
		{`{.items[0].spec.replicas}`, "3"},
		{`{.items[-1].metadata.name}`, "b"},
		{`{.items[0:1].metadata.name}`, "a"},
		{`{.items[*].spec.containers[*].image}`, "i:1 s:2 i:2"},
		{`{range .items[*]}{.metadata.name}{"\t"}{.spec.replicas}{"\n"}{end}`, "a\t3\nb\t10\n"},
		{`{.items[?(@.spec.replicas>5)].metadata.name}`, "b"},
		{`{.items[?(@.metadata.name=="a")].spec.containers[?(@.name=='side')].image}`, "s:2"},
		{`{.items[*].status.conditions[?(@.type=="Ready")].status}`, "True False"},
		{`{.items[?(@.metadata.labels)].metadata.name}`, "a"},
		{`{.items[0].metadata.labels['k8s.io/tier']}`, "front"},
		{`{..image}`, "i:1 s:2 i:2"},
		{`{.items[0].metadata.labels}`, `{"app":"web","k8s.io/tier":"front"}`},
		{`{.items[1].spec.containers[0].ports}`, ""}, // missing: nothing
		{`{.nothing.here}`, ""},
		{`names: {.items[*].metadata.name}!`, "names: a b!"},
		{`{.items[0].spec.containers[0].ports[0].containerPort}`, "80"},
	}
	for _, tc := range tests {
		tmpl, err := Parse(tc.tmpl)
		if err != nil {
			t.Errorf("%s: %v", tc.tmpl, err)
			continue
		}
		got, err := tmpl.Execute(v)
		if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{.items[*]`, `{range .items[*]}{.x}`, `{end}`, `{.items[abc]}`, `{"unterminated}`} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: parsed, want an error", bad)
		}
	}
	for _, short := range []string{".metadata.name", "metadata.name", "{.metadata.name}"} {
		tmpl, err := ParseRelaxed(short)
		if err != nil {
			t.Fatal(err)
		}
		if got := tmpl.Results(map[string]any{"metadata": map[string]any{"name": "x"}}); len(got) != 1 || got[0] != "x" {
			t.Errorf("relaxed %s: %v", short, got)
		}
	}
}
