package apiserver_test

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestPodGeneration: a pod starts at generation 1 whatever the client
// sent, each change of its spec raises it and nothing else does (the
// client's own value is ignored), and a graceful deletion raises it too,
// as Kubernetes 1.35 counts a pod's generation.
func TestPodGeneration(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const pods = "/api/v1/namespaces/default/pods"
	generation := func(b []byte) float64 {
		t.Helper()
		return decodeJSON(t, b)["metadata"].(map[string]any)["generation"].(float64)
	}
	code, _, b := c.do("POST", pods, "", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","generation":100},"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"i"}]}}`)
	if code != 201 || generation(b) != 1 {
		t.Fatalf("create: %d %s", code, b)
	}
	for _, step := range []struct {
		patch string
		want  float64
	}{
		{`{"metadata":{"annotations":{"k":"v"}}}`, 1},
		{`{"metadata":{"generation":7}}`, 1},
		{`{"spec":{"activeDeadlineSeconds":5000}}`, 2},
		{`{"spec":{"tolerations":[{"key":"a","operator":"Exists","effect":"NoSchedule"}]}}`, 3},
	} {
		code, _, b := c.do("PATCH", pods+"/p", "", step.patch, "Content-Type", "application/strategic-merge-patch+json")
		if code != 200 || generation(b) != step.want {
			t.Errorf("patch %s: %d, generation %v, want %v", step.patch, code, generation(b), step.want)
		}
	}
	code, _, b = c.do("DELETE", pods+"/p?gracePeriodSeconds=60", "", "")
	if code != 200 || generation(b) != 4 || !strings.Contains(string(b), "deletionTimestamp") {
		t.Errorf("graceful delete: %d %s; want generation 4", code, b)
	}
}
