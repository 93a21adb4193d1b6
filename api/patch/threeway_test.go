package patch

import (
	"encoding/json"
	"testing"

	"github.com/kobune/kobune/api/k8sapi"
)

// TestThreeWay: client-side apply's merge, as kubectl's: keyed lists
// merge item by item, what the server added stays, what the last
// manifest had and the new one drops goes.
func TestThreeWay(t *testing.T) {
	podType, ok := k8sapi.ForKind("v1", "Pod")
	if !ok {
		t.Fatal("no Pod type")
	}
	tests := []struct{ name, live, last, desired, want string }{
		{name: "unchanged manifest: the server's fields inside a container stay",
			live:    `{"spec":{"containers":[{"name":"app","image":"a","imagePullPolicy":"IfNotPresent","volumeMounts":[{"name":"tok","mountPath":"/var/run/secrets"}]}]}}`,
			last:    `{"spec":{"containers":[{"name":"app","image":"a"}]}}`,
			desired: `{"spec":{"containers":[{"name":"app","image":"a"}]}}`,
			want:    `{"spec":{"containers":[{"name":"app","image":"a","imagePullPolicy":"IfNotPresent","volumeMounts":[{"name":"tok","mountPath":"/var/run/secrets"}]}]}}`},
		{name: "a container dropped from the manifest goes, a new one is appended",
			live:    `{"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}`,
			last:    `{"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}`,
			desired: `{"spec":{"containers":[{"name":"a","image":"x2"},{"name":"c","image":"z"}]}}`,
			want:    `{"spec":{"containers":[{"name":"a","image":"x2"},{"name":"c","image":"z"}]}}`},
		{name: "an env var removed from the manifest goes; one another user added stays",
			live:    `{"spec":{"containers":[{"name":"a","env":[{"name":"A","value":"1"},{"name":"B","value":"2"},{"name":"OTHER","value":"o"}]}]}}`,
			last:    `{"spec":{"containers":[{"name":"a","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}]}}`,
			desired: `{"spec":{"containers":[{"name":"a","env":[{"name":"A","value":"1"}]}]}}`,
			want:    `{"spec":{"containers":[{"name":"a","env":[{"name":"A","value":"1"},{"name":"OTHER","value":"o"}]}]}}`},
		{name: "a list without a merge key is replaced",
			live:    `{"spec":{"containers":[{"name":"a","command":["sh","-c","x"]}]}}`,
			last:    `{"spec":{"containers":[{"name":"a","command":["sh","-c","x"]}]}}`,
			desired: `{"spec":{"containers":[{"name":"a","command":["sleep","1"]}]}}`,
			want:    `{"spec":{"containers":[{"name":"a","command":["sleep","1"]}]}}`},
		{name: "a field removed from the manifest goes, one the server set stays",
			live:    `{"metadata":{"labels":{"a":"1","b":"2"},"uid":"u"},"spec":{"nodeName":"n"}}`,
			last:    `{"metadata":{"labels":{"a":"1","b":"2"}}}`,
			desired: `{"metadata":{"labels":{"a":"1"}}}`,
			want:    `{"metadata":{"labels":{"a":"1"},"uid":"u"},"spec":{"nodeName":"n"}}`},
		{name: "merged primitive list: finalizers another controller added stay",
			live:    `{"metadata":{"finalizers":["mine","theirs"]}}`,
			last:    `{"metadata":{"finalizers":["mine"]}}`,
			desired: `{"metadata":{"finalizers":[]}}`,
			want:    `{"metadata":{"finalizers":["theirs"]}}`},
	}
	obj := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return m
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := json.Marshal(ThreeWay(obj(tt.live), obj(tt.last), obj(tt.desired), podType))
			want, _ := json.Marshal(obj(tt.want))
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}
