package apiserver_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestDynamicResourceAllocationAPI: resource.k8s.io/v1 is served as an
// API — defaults, validation (CEL selectors compile, one way to place a
// slice, taint effects), an immutable claim spec, status writes — and
// every REST request on claims warns that Kobune allocates nothing.
func TestDynamicResourceAllocationAPI(t *testing.T) {
	s := startSecured(t)
	c := newRESTClient(t, s.admin, s.Addr())
	const gv = "/apis/resource.k8s.io/v1"
	for _, tc := range []struct {
		path, body, want string
		code             int
	}{
		{"/deviceclasses", `{"metadata":{"name":"gpu"},"spec":{"selectors":[{"cel":{"expression":"device.driver == 'gpu.example.com'"}}]}}`, `"expression":"device.driver == 'gpu.example.com'"`, 201},
		{"/deviceclasses", `{"metadata":{"name":"broken"},"spec":{"selectors":[{"cel":{"expression":"device.driver =="}}]}}`, `spec.selectors[0].cel.expression: Invalid value`, 422},
		{"/namespaces/default/resourceclaims", `{"metadata":{"name":"one"},"spec":{"devices":{"requests":[{"name":"req-0","exactly":{"deviceClassName":"gpu"}}]}}}`, `"allocationMode":"ExactCount","count":1`, 201},
		{"/namespaces/default/resourceclaims", `{"metadata":{"name":"both"},"spec":{"devices":{"requests":[{"name":"req-0"}]}}}`, "exactly one of `exactly` or `firstAvailable` is required", 422},
		{"/resourceslices", `{"metadata":{"name":"pool-a"},"spec":{"driver":"gpu.example.com","pool":{"name":"a","generation":1,"resourceSliceCount":1},"nodeName":"node-1","devices":[{"name":"gpu-0","attributes":{"model":{"string":"t4"}}}]}}`, `"name":"gpu-0"`, 201},
		{"/resourceslices", `{"metadata":{"name":"nowhere"},"spec":{"driver":"gpu.example.com","pool":{"name":"a","generation":1,"resourceSliceCount":1}}}`, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required", 422},
		{"/devicetaintrules", `{"metadata":{"name":"t"},"spec":{"taint":{"key":"broken","effect":"Bogus"}}}`, `spec.taint.effect: Unsupported value`, 422},
		{"/devicetaintrules", `{"metadata":{"name":"t"},"spec":{"taint":{"key":"testing","effect":"None"}}}`, `"effect":"None"`, 201},
	} {
		code, h, b := c.do("POST", gv+tc.path, "", tc.body)
		if code != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("POST %s %s: %d %s; want %d with %q", tc.path, tc.body, code, b, tc.code, tc.want)
		}
		if strings.Contains(tc.path, "resourceclaims") && !strings.Contains(h.Get("Warning"), "allocates no devices") {
			t.Errorf("POST %s: no warning that nothing is allocated: %q", tc.path, h.Get("Warning"))
		}
	}
	claim := gv + "/namespaces/default/resourceclaims/one"
	merge := []string{"Content-Type", "application/merge-patch+json"}
	if code, _, b := c.do("PATCH", claim, "", `{"spec":{"devices":{"requests":[{"name":"req-0","exactly":{"deviceClassName":"other"}}]}}}`, merge...); code != 422 || !strings.Contains(string(b), "field is immutable") {
		t.Errorf("changing a claim's spec: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", claim, "", `{"metadata":{"labels":{"a":"b"}}}`, merge...); code != http.StatusOK {
		t.Errorf("labelling a claim: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", claim+"/status", "", `[{"op":"add","path":"/status/allocation","value":{}}]`, "Content-Type", "application/json-patch+json"); code != http.StatusOK || !strings.Contains(string(b), `"allocation":{}`) {
		t.Errorf("status allocation {}: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", claim+"/status", "", `{"status":{"allocation":{"devices":{"results":[{"request":"nope","driver":"d","pool":"p","device":"x"}]}}}}`, merge...); code != 422 || !strings.Contains(string(b), "must be the name of a request") {
		t.Errorf("an allocation for no request: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", gv+"/devicetaintrules/t/status", "", `{"status":{"conditions":[{"type":"Testing","status":"True","lastTransitionTime":"2026-12-07T00:00:00Z","reason":"E2E","message":"m"}]}}`, merge...); code != http.StatusOK {
		t.Errorf("taint rule status: %d %s", code, b)
	}
	if code, _, b := c.do("GET", gv, "", ""); code != http.StatusOK || !strings.Contains(string(b), `"name":"resourceclaims/status"`) || !strings.Contains(string(b), `"name":"devicetaintrules"`) {
		t.Errorf("discovery of resource.k8s.io/v1: %d %s", code, b)
	}
}
