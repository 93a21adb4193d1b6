package core

import (
	"encoding/json"
)

// EventsV1 is events.k8s.io/v1: the same events as core/v1's under other
// field names, which Kubernetes serves beside core/v1 from the one stored
// kind (newer clients record events there). Kobune stores core/v1 Events
// and converts at the REST door, as it serves autoscaling/v1.
const EventsV1 = "events.k8s.io/v1"

// eventsV1Names maps core/v1 Event field names to events.k8s.io/v1's;
// the fields not named here (metadata, reason, type, eventTime, series,
// related, reportingInstance, action) are the same in both.
var eventsV1Names = map[string]string{
	"involvedObject":     "regarding",
	"message":            "note",
	"reportingComponent": "reportingController",
	"source":             "deprecatedSource",
	"firstTimestamp":     "deprecatedFirstTimestamp",
	"lastTimestamp":      "deprecatedLastTimestamp",
	"count":              "deprecatedCount",
}

// EventToEventsV1 turns a stored (core/v1) Event's JSON into
// events.k8s.io/v1's.
func EventToEventsV1(b []byte) ([]byte, error) {
	return renameEventFields(b, eventsV1Names, EventsV1)
}

// EventsV1ToEvent turns an events.k8s.io/v1 Event's JSON into core/v1's.
func EventsV1ToEvent(b []byte) ([]byte, error) {
	back := make(map[string]string, len(eventsV1Names))
	for core, v1 := range eventsV1Names {
		back[v1] = core
	}
	return renameEventFields(b, back, "v1")
}

func renameEventFields(b []byte, names map[string]string, apiVersion string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(doc))
	for k, v := range doc {
		if n, ok := names[k]; ok {
			k = n
		}
		out[k] = v
	}
	out["apiVersion"], _ = json.Marshal(apiVersion)
	return json.Marshal(out)
}
