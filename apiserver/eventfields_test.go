package apiserver_test

import (
	"net/url"
	"strings"
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
	// events.k8s.io/v1's names select the same events.
	if code, _, b := c.do("GET", "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector="+url.QueryEscape("reportingController=default-scheduler,regarding.name=p"), "", ""); code != 200 ||
		!strings.Contains(string(b), `"name":"b"`) || strings.Contains(string(b), `"name":"a"`) {
		t.Errorf("events.k8s.io/v1 field names: %d %s", code, b)
	}
	// An event has no spec: changing it raises no generation (as in
	// Kubernetes, whose conformance test compares the whole event).
	code, _, b := c.do("PATCH", "/api/v1/namespaces/default/events/a", "", `{"message":"patched"}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"generation":1,`) {
		t.Errorf("patching an event: %d %s; want its generation left at 1", code, b)
	}
}

// TestEventsV1 (issue #36): events.k8s.io/v1 serves the same events as
// core/v1 under its own field names (regarding, note,
// reportingController, deprecated*), as Kubernetes' conformance tests
// drive it: created, read through both groups, listed, patched, deleted
// as a collection; discovery lists the group.
func TestEventsV1(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const base = "/apis/events.k8s.io/v1/namespaces/default/events"
	ev := `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"v1-event","labels":{"testevent-set":"true"}},
		"eventTime":"2026-12-06T10:00:00.000000Z","reportingController":"test-controller","reportingInstance":"test-node",
		"action":"Testing","reason":"Test","type":"Normal","note":"This is a test event",
		"regarding":{"kind":"Pod","namespace":"default","name":"p","apiVersion":"v1"},
		"series":{"count":2,"lastObservedTime":"2026-12-06T10:00:01.000000Z"}}`
	code, _, b := c.do("POST", base, "", ev)
	if code != 201 || !strings.Contains(string(b), `"apiVersion":"events.k8s.io/v1"`) || !strings.Contains(string(b), `"note":"This is a test event"`) {
		t.Fatalf("create through events.k8s.io/v1: %d %s", code, b)
	}
	code, _, b = c.do("GET", "/api/v1/namespaces/default/events/v1-event", "", "")
	core := decodeJSON(t, b)
	if code != 200 || core["message"] != "This is a test event" || core["reportingComponent"] != "test-controller" ||
		core["involvedObject"].(map[string]any)["name"] != "p" || core["series"].(map[string]any)["count"] != float64(2) {
		t.Fatalf("the same event through core/v1: %d %s", code, b)
	}
	code, _, b = c.do("GET", base+"?labelSelector=testevent-set%3Dtrue", "", "")
	list := decodeJSON(t, b)
	items, _ := list["items"].([]any)
	if code != 200 || list["apiVersion"] != "events.k8s.io/v1" || len(items) != 1 || items[0].(map[string]any)["regarding"] == nil {
		t.Fatalf("list through events.k8s.io/v1: %d %s", code, b)
	}
	code, _, b = c.do("PATCH", base+"/v1-event", "", `{"note":"This is a patched event"}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"note":"This is a patched event"`) {
		t.Fatalf("patch through events.k8s.io/v1: %d %s", code, b)
	}
	code, _, b = c.do("GET", "/apis/events.k8s.io/v1", "", "")
	if code != 200 || !strings.Contains(string(b), `"name":"events"`) {
		t.Errorf("discovery of events.k8s.io/v1: %d %s", code, b)
	}
	if code, _, b := c.do("DELETE", base+"?labelSelector=testevent-set%3Dtrue", "", ""); code != 200 {
		t.Fatalf("delete the collection: %d %s", code, b)
	}
	if code, _, _ := c.do("GET", "/api/v1/namespaces/default/events/v1-event", "", ""); code != 404 {
		t.Errorf("after the collection delete: GET %d", code)
	}
}
