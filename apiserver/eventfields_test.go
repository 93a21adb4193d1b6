package apiserver_test

import (
	"net/url"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestEventFieldSelectors (issue #36): events are selected by Kubernetes'
// field set — source (the reporting component: source.component, else
// reportingComponent, what the e2e framework selects when it dumps a
// namespace's events), reportingComponent and every involvedObject
// field; a field outside the set is refused.
func TestEventFieldSelectors(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	for _, ev := range []string{
		`{"apiVersion":"v1","kind":"Event","metadata":{"name":"a"},"involvedObject":{"kind":"Pod","name":"p","apiVersion":"v1","fieldPath":"spec.containers{c}"},"reason":"Started","source":{"component":"kubelet"},"type":"Normal"}`,
		`{"apiVersion":"v1","kind":"Event","metadata":{"name":"b"},"involvedObject":{"kind":"Pod","name":"p","apiVersion":"v1"},"reason":"Scheduled","reportingComponent":"default-scheduler","reportingInstance":"s1","type":"Normal"}`,
	} {
		if code, _, b := c.do("POST", "/api/v1/namespaces/default/events", "", ev); code != 201 {
			t.Fatalf("create event: %d %s", code, b)
		}
	}
	for sel, want := range map[string][]string{
		"source=kubelet":                                 {"a"},
		"source=default-scheduler":                       {"b"},
		"reportingComponent=default-scheduler":           {"b"},
		"involvedObject.apiVersion=v1":                   {"a", "b"},
		"involvedObject.fieldPath=spec.containers{c}":    {"a"},
		"involvedObject.name=p,source!=kubelet":          {"b"},
		"involvedObject.resourceVersion=,reason=Started": {"a"},
	} {
		code, _, b := c.do("GET", "/api/v1/namespaces/default/events?fieldSelector="+url.QueryEscape(sel), "", "")
		var names []string
		if code == 200 {
			for _, it := range decodeJSON(t, b)["items"].([]any) {
				names = append(names, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
			}
		}
		if code != 200 || len(names) != len(want) || names[0] != want[0] {
			t.Errorf("events with %s: %d %v; want %v", sel, code, names, want)
		}
	}
	if code, _, b := c.do("GET", "/api/v1/namespaces/default/events?fieldSelector=message%3Dx", "", ""); code != 400 {
		t.Errorf("a field outside the set: %d %s; want 400", code, b)
	}
}
