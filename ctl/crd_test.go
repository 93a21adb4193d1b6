package ctl_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
)

const crdManifest = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: websites.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: websites, singular: website, kind: Website, shortNames: [ws], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Domain, type: string, jsonPath: .spec.domain}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [domain]
            properties:
              domain: {type: string}
              replicas: {type: integer, minimum: 1, default: 1}
`

const websiteManifest = `apiVersion: example.com/v1
kind: Website
metadata:
  name: blog
spec:
  domain: blog.example.com
`

// TestKobectlOnCustomResources (issue #36): kobectl learns a custom kind
// from the server and then works on it as on a built-in one: apply from
// a manifest, get by plural, singular, short name and name/kind with the
// definition's printer columns, get all (the kind is in category all),
// api-resources, a refusal naming the field, delete.
func TestKobectlOnCustomResources(t *testing.T) {
	s := testserver.New(t)
	if r := kobectl(t, s, crdManifest, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply the definition: %+v", r)
	}
	if r := kobectl(t, s, "", "wait", "--for=condition=Established", "crd/websites.example.com", "--timeout=20s"); r.code != 0 {
		t.Fatalf("wait for Established: %+v", r)
	}
	r := kobectl(t, s, websiteManifest, "apply", "-f", "-")
	if r.code != 0 || !strings.Contains(r.stdout, "website.example.com/blog created") {
		t.Fatalf("apply a website: %+v", r)
	}
	for _, name := range []string{"websites", "website", "ws", "websites.example.com"} {
		r := kobectl(t, s, "", "get", name)
		if r.code != 0 || !strings.Contains(r.stdout, "DOMAIN") || !regexpMatch(`blog\s+blog.example.com\s+1`, r.stdout) {
			t.Errorf("get %s: %+v", name, r)
		}
	}
	if r := kobectl(t, s, "", "get", "website/blog", "-o", "jsonpath={.spec.replicas}"); r.code != 0 || r.stdout != "1" {
		t.Errorf("get website/blog -o jsonpath (the default applied): %+v", r)
	}
	if r := kobectl(t, s, "", "describe", "website", "blog"); r.code != 0 || !regexpMatch(`Name:\s+blog`, r.stdout) || !strings.Contains(r.stdout, "blog.example.com") {
		t.Errorf("describe website blog: %+v", r)
	}
	if r := kobectl(t, s, "", "get", "all"); r.code != 0 || !strings.Contains(r.stdout, "website.example.com/blog") {
		t.Errorf("get all: %+v", r)
	}
	if r := kobectl(t, s, "", "api-resources"); r.code != 0 || !regexpMatch(`websites\s+ws\s+example.com/v1\s+true\s+Website`, r.stdout) {
		t.Errorf("api-resources: %+v", r)
	}
	bad := strings.Replace(websiteManifest, "domain: blog.example.com", "replicas: 0", 1)
	if r := kobectl(t, s, bad, "apply", "-f", "-"); r.code == 0 || !strings.Contains(r.stderr, "spec.domain: Required value") {
		t.Errorf("apply a website without its domain: %+v", r)
	}
	if r := kobectl(t, s, "", "delete", "ws", "blog"); r.code != 0 || !strings.Contains(r.stdout, `website.example.com "blog" deleted`) {
		t.Errorf("delete: %+v", r)
	}
	if r := kobectl(t, s, "", "get", "websites"); r.code != 0 || !strings.Contains(r.stderr+r.stdout, "No resources found") {
		t.Errorf("get after delete: %+v", r)
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
