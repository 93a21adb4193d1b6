package scheme

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/meta"
)

// FuzzCodecAgreesWithEncodingJSON holds the fast codec (codec.go) to
// encoding/json: whatever the fast strict decoder accepts, encoding/json's
// strict decoder accepts too, into an equal object; and Encode writes
// json.Marshal's bytes for every object encoding/json can decode. Inputs are
// JSON or YAML (converted to JSON); the kind is taken from the input, and
// Pod is used when it names none. Its seeds include FuzzDecode's corpus, so
// a plain `go test` checks all of those manifests too.
func FuzzCodecAgreesWithEncodingJSON(f *testing.F) {
	files, _ := filepath.Glob("testdata/fuzz/FuzzDecode/*")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		// The corpus format: "go test fuzz v1" then []byte("...").
		_, lit, _ := strings.Cut(string(b), "\n")
		lit = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lit), "[]byte("), ")")
		data, err := strconv.Unquote(lit)
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		f.Add([]byte(data))
	}
	if len(files) < 100 {
		f.Fatalf("FuzzDecode's corpus has %d inputs; expected hundreds", len(files))
	}
	f.Add([]byte(manifest))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a<b":"&"}},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":1.5,"memory":"1e3"}}}]}}`))
	f.Add([]byte(`{"kind":"Deployment","spec":{"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":0}}}} {}`))
	f.Add([]byte(`{"kind":"Pod","metadata":{"creationTimestamp":"2026-12-01T03:04:05Z","NAME":"x"}}`))
	// Objects as the server stores them once controllers and agents have
	// written their status: timestamps, conditions, owner references.
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"default","uid":"5b1c","resourceVersion":"","generation":1,"creationTimestamp":"2026-12-01T03:04:05Z","deletionTimestamp":"2026-12-01T03:05:05Z","deletionGracePeriodSeconds":30,"finalizers":["kobune.io/x"],"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d8f","uid":"9a","controller":true,"blockOwnerDeletion":true}]},"spec":{"nodeName":"node-1","priority":0,"containers":[{"name":"c","image":"i"}],"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}]},"status":{"phase":"Running","qosClass":"BestEffort","hostIP":"10.0.0.2","podIP":"10.244.1.5","podIPs":[{"ip":"10.244.1.5"}],"startTime":"2026-12-01T03:04:06Z","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-12-01T03:04:09Z"},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-01T03:04:05Z"}],"containerStatuses":[{"name":"c","ready":true,"started":true,"restartCount":2,"image":"i","imageID":"sha256:ab","containerID":"containerd://x","state":{"running":{"startedAt":"2026-12-01T03:04:08Z"}},"lastState":{"terminated":{"exitCode":137,"reason":"OOMKilled","startedAt":"2026-12-01T03:04:06Z","finishedAt":"2026-12-01T03:04:07Z"}}}]}}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1","labels":{"kubernetes.io/hostname":"node-1"}},"spec":{"podCIDR":"10.244.1.0/24","taints":[{"key":"node.kubernetes.io/unreachable","effect":"NoExecute","timeAdded":"2026-12-01T03:04:05Z"}]},"status":{"capacity":{"cpu":"2","memory":"24Gi","pods":"110"},"allocatable":{"cpu":"1900m","memory":"23.5Gi","pods":"110"},"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown","lastHeartbeatTime":"2026-12-01T03:04:05Z","lastTransitionTime":"2026-12-01T03:04:05Z"}],"addresses":[{"type":"InternalIP","address":"10.0.0.2"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},"nodeInfo":{"kernelVersion":"6.1","containerRuntimeVersion":"containerd://1.6"}}}`))
	f.Add([]byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"node-1","namespace":"kube-node-lease"},"spec":{"holderIdentity":"node-1","leaseDurationSeconds":40,"acquireTime":"2026-12-01T03:04:05.123456Z","renewTime":"2026-12-01T03:04:07.000001Z","leaseTransitions":3}}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"default"},"involvedObject":{"kind":"Pod","name":"p","namespace":"default","uid":"u"},"reason":"Scheduled","message":"Successfully assigned default/p to node-1 <&>","type":"Normal","count":2,"firstTimestamp":"2026-12-01T03:04:05Z","lastTimestamp":"2026-12-01T03:04:06Z","eventTime":"2026-12-01T03:04:05.5Z","source":{"component":"kobune-scheduler"}}`))
	f.Add([]byte(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"completions":4,"parallelism":2,"backoffLimit":2,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}},"status":{"active":1,"succeeded":3,"startTime":"2026-12-01T03:04:05Z","completionTime":null,"conditions":[{"type":"Complete","status":"True","lastProbeTime":"2026-12-01T03:04:05Z","lastTransitionTime":"2026-12-01T03:04:05Z"}]}}`))
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","annotations":{"deployment.kubernetes.io/revision":"3"}},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"i"}]}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":1}}},"status":{"observedGeneration":3,"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2,"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","lastUpdateTime":"2026-12-01T03:04:05Z","lastTransitionTime":"2026-12-01T03:04:05Z"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		js := data // JSON as sent, with its own spacing and trailing bytes
		if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			if y, err := yaml.YAMLToJSON(data); err == nil {
				js = y
			}
		}
		var head struct{ Kind string }
		_ = json.Unmarshal(js, &head)
		k, _ := ByResource("pods")
		for _, c := range All() {
			if c.Kind == head.Kind {
				k = c
			}
		}

		fast := k.New()
		fastErr := fastDecodeStrict(js, fast)
		std := k.New()
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		stdErr := dec.Decode(std)
		if stdErr == nil && len(bytes.TrimSpace(js[dec.InputOffset():])) > 0 {
			stdErr = errTrailingData // json.Unmarshal refuses data after the value
		}
		if fastErr == nil {
			if stdErr != nil {
				t.Fatalf("fast decoder accepted what encoding/json refuses (%v):\n%s", stdErr, js)
			}
			if !reflect.DeepEqual(fast, std) {
				t.Fatalf("decoders disagree on\n%s\nfast: %+v\nstd:  %+v", js, fast, std)
			}
		}

		loose := k.New()
		if json.Unmarshal(js, loose) != nil {
			return
		}
		want, wantErr := json.Marshal(loose)
		got, gotErr := Encode(loose)
		if (wantErr == nil) != (gotErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("Encode differs from json.Marshal for\n%s\nEncode:       %s (%v)\njson.Marshal: %s (%v)", js, got, gotErr, want, wantErr)
		}
	})
}

// Both fast decoders refuse unknown fields and trailing data, and the
// option that makes Unmarshal refuse them was found.
func TestFastDecodersAreStrict(t *testing.T) {
	if disallowUnknownFields == nil {
		t.Fatal("the strict option for goccy's Unmarshal was not found: fastDecodeStrict falls back to the slower stream decoder")
	}
	k, _ := ByResource("pods")
	for name, decode := range map[string]func([]byte, meta.Object) error{"fast": fastDecodeStrict, "stream": slowDecodeStrict} {
		for _, in := range []string{`{"spec":{"bogus":1}}`, `{"metadata":{"name":"a"}} {}`, `{"metadata":{"name":"a"}} x`} {
			if err := decode([]byte(in), k.New()); err == nil {
				t.Errorf("%s decoder accepted %s", name, in)
			}
		}
		if err := decode([]byte(`{"metadata":{"name":"a"}}  `), k.New()); err != nil {
			t.Errorf("%s decoder refused a valid object: %v", name, err)
		}
	}
}
