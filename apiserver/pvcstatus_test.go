package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
)

// TestClaimStatusConditions: a claim's status keeps the conditions a
// controller writes (Kubernetes' resizer reports Resizing so), through
// a patch of the status subresource as through an update.
func TestClaimStatusConditions(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	claims := client.For[*core.PersistentVolumeClaim](s.Client)
	if _, err := claims.Create(ctx, &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: core.PersistentVolumeClaimSpec{AccessModes: []core.PersistentVolumeAccessMode{"ReadWriteOnce"},
			Resources: core.VolumeResourceRequirements{Requests: resource.List{"storage": resource.MustParse("1Gi")}}}}); err != nil {
		t.Fatal(err)
	}
	c := newRESTClient(t, s.admin, s.Addr())
	code, _, b := c.do("PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/data/status", "",
		`{"status":{"conditions":[{"type":"StatusPatched","status":"True","reason":"E2E patchedStatus","message":"Set from e2e test"}]}}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"type":"StatusPatched"`) || !strings.Contains(string(b), `"reason":"E2E patchedStatus"`) {
		t.Errorf("patch a claim's status conditions: %d %s", code, b)
	}
}
