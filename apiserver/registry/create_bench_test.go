package registry

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/apiserver/admission"
)

type allNamespaces struct{}

func (allNamespaces) NamespacePhase(context.Context, string) (string, bool, error) {
	return core.NamespaceActive, true, nil
}

// BenchmarkCreatePath measures the API server's own work per create —
// decode, defaults, admission, validation, encode — without etcd or gRPC.
func BenchmarkCreatePath(b *testing.B) {
	s := &Registry{admission: admission.NewChain(
		admission.Step{Plugin: admission.Defaulting{}}, admission.Step{Plugin: admission.Priority{}},
		admission.Step{Plugin: admission.DefaultTolerationSeconds{Seconds: 300}}, admission.Step{Plugin: admission.StorageObjectInUseProtection{}},
		admission.Step{Plugin: admission.DefaultStorageClass{}}, admission.Step{Plugin: admission.NamespaceLifecycle{Namespaces: allNamespaces{}}},
		admission.Step{Plugin: admission.Validation{}}, admission.Step{Plugin: admission.PersistentVolumeClaimResize{}})}
	c := func(n string) core.Container {
		return core.Container{Name: n, Image: "kobune.local/labapp:1.0", Args: []string{"--listen=:8080"},
			Ports: []core.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Env:   []core.EnvVar{{Name: "MODE", Value: "production"}, {Name: "POD_NAME", ValueFrom: &core.EnvVarSource{FieldRef: &core.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			Resources: core.ResourceRequirements{
				Requests: resource.List{resource.CPU: resource.MustParse("100m"), resource.Memory: resource.MustParse("64Mi")},
				Limits:   resource.List{resource.CPU: resource.MustParse("500m"), resource.Memory: resource.MustParse("128Mi")}},
			ReadinessProbe: &core.Probe{ProbeHandler: core.ProbeHandler{HTTPGet: &core.HTTPGetAction{Path: "/readyz", Port: meta.FromInt(8080)}}}}
	}
	pod := &core.Pod{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: meta.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"app": "bench", "tier": "backend"},
			Annotations: map[string]string{"kobune.io/bench": strings.Repeat("x", 200)}},
		Spec: core.PodSpec{Containers: []core.Container{c("app"), c("sidecar")}}}
	raw, _ := json.Marshal(pod)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		k, o, _, err := decodeRequest(context.Background(), nil, "pods", "default", raw, "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := admitCreate(ctx, s.admission, k, o); err != nil {
			b.Fatal(err)
		}
	}
}
