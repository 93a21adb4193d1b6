package apiserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestCustomResourceFieldValidation (issue #36; the conformance suite's
// FieldValidation tests of custom resources): server-side apply under
// Strict names an undeclared field in structured merge's words; a key
// twice in an applied YAML is refused in the YAML decoder's; unknown
// metadata fields are found at the root and in an embedded object, whose
// metadata is an ObjectMeta (its namespace is known) whatever the schema
// says of it.
func TestCustomResourceFieldValidation(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"noxus.mygroup.example.com"},
	 "spec":{"group":"mygroup.example.com","scope":"Namespaced","names":{"plural":"noxus","kind":"Noxu"},"versions":[{"name":"v1","served":true,"storage":true,
	  "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
	   "foo":{"type":"string"},"cronSpec":{"type":"string"},
	   "template":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"metadata":{"type":"object","properties":{"name":{"type":"string"}}},"spec":{"type":"object"}}},
	   "ports":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"containerPort":{"type":"integer"},"protocol":{"type":"string"}}}}}}}}}}]}}`
	if code, _, b := c.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", crd); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	const base = "/apis/mygroup.example.com/v1/namespaces/default/noxus"
	apply := func(yaml string) (int, string) {
		code, _, b := c.do("PATCH", base+"/mytest?fieldManager=mgr&fieldValidation=Strict", "", yaml, "Content-Type", "application/apply-patch+yaml")
		return code, string(b)
	}
	var code int
	var body string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body = apply("\napiVersion: mygroup.example.com/v1\nkind: Noxu\nmetadata:\n  name: mytest\nunknownField: unknown\nspec:\n  foo: foo1\n")
		if code != 404 || time.Now().After(deadline) {
			break
		}
	}
	if code != 400 || !strings.Contains(body, `.unknownField: field not declared in schema`) {
		t.Errorf("an apply with an undeclared field under Strict: %d %s", code, body)
	}
	code, body = apply("\napiVersion: mygroup.example.com/v1\nkind: Noxu\nmetadata:\n  name: mytest\nspec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n  cronSpec: \"* * * * */5\"\n")
	if code != 400 || !strings.Contains(body, `line 9: key \"foo\" already set in map`) {
		t.Errorf("an apply with a key twice under Strict: %d %s", code, body)
	}
	code, body = apply("\napiVersion: mygroup.example.com/v1\nkind: Noxu\nmetadata:\n  name: mytest\n  unknownMeta: unknown\nspec:\n  template:\n    apiVersion: foo/v1\n    kind: Sub\n    metadata:\n      unknownSubMeta: unknown\n      name: subobject\n      namespace: default\n")
	if code != 400 || !strings.Contains(body, `.metadata.unknownMeta: field not declared in schema`) ||
		!strings.Contains(body, `.spec.template.metadata.unknownSubMeta: field not declared in schema`) || strings.Contains(body, "namespace") {
		t.Errorf("an apply with unknown metadata fields under Strict: %d %s; want both named, the embedded namespace not", code, body)
	}
	// Created without Strict: the unknown ones dropped with warnings, the
	// embedded object's namespace kept.
	code, h, b := c.do("POST", base+"?fieldValidation=Warn", "", `{"apiVersion":"mygroup.example.com/v1","kind":"Noxu","metadata":{"name":"warned","unknownMeta":"x"},
	  "spec":{"template":{"apiVersion":"foo/v1","kind":"Sub","metadata":{"name":"sub","namespace":"default","unknownSubMeta":"x"}}}}`)
	if code != 201 || !strings.Contains(string(b), `"metadata":{"name":"sub","namespace":"default"}`) || strings.Contains(string(b), "unknownSubMeta") ||
		!strings.Contains(strings.Join(h.Values("Warning"), " "), `\"metadata.unknownMeta\"`) || !strings.Contains(strings.Join(h.Values("Warning"), " "), "spec.template.metadata.unknownSubMeta") {
		t.Errorf("a create under Warn: %d %s (warnings %q)", code, b, h.Values("Warning"))
	}
}
