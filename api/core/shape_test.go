package core

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A pod status as kube-apiserver serves it (`kubectl get pod -o json`,
// trimmed to the fields Kobune has) must decode into Kobune's types with no
// unknown field: the same JSON shapes, field for field.
func TestPodStatusJSONShapeMatchesKubernetes(t *testing.T) {
	const kube = `{"phase":"Running","qosClass":"Burstable","hostIP":"10.0.0.2","podIP":"10.244.1.5",
	"podIPs":[{"ip":"10.244.1.5"}],"startTime":"2026-12-01T03:04:06Z",
	"conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-01T03:04:09Z"}],
	"containerStatuses":[{"name":"app","ready":true,"started":true,"restartCount":1,"image":"kobune.local/labapp:1.0",
		"imageID":"sha256:ab","containerID":"containerd://c1",
		"state":{"running":{"startedAt":"2026-12-01T03:04:08Z"}},
		"lastState":{"terminated":{"exitCode":137,"reason":"OOMKilled","startedAt":"2026-12-01T03:04:06Z","finishedAt":"2026-12-01T03:04:07Z","containerID":"containerd://c0"}}}]}`
	var st PodStatus
	dec := json.NewDecoder(bytes.NewReader([]byte(kube)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("Kubernetes' pod status does not decode: %v", err)
	}
	cs := st.ContainerStatuses[0]
	if cs.LastState.Terminated == nil || cs.LastState.Terminated.ExitCode != 137 || cs.State.Running == nil {
		t.Fatalf("container status decoded as %+v", cs)
	}
	out, _ := json.Marshal(&st)
	if !bytes.Contains(out, []byte(`"lastState":{"terminated":{"exitCode":137`)) {
		t.Errorf("encoded status does not use Kubernetes' names: %s", out)
	}
}
