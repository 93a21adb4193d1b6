package ctl_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// kobectl get pv,pvc,sc prints kubectl's columns; a claim without a class
// gets the default StorageClass; a bad claim is refused with the field
// named and nothing stored.
func TestGetStorageObjects(t *testing.T) {
	s := testserver.New(t)
	r := kobectl(t, s, `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv0001}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce, ReadOnlyMany]
  hostPath: {path: /srv/pv0001}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  resources: {requests: {storage: 1Gi}}
`, "apply", "-f", "-")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	r = kobectl(t, s, "", "get", "pv,pvc,sc")
	for _, re := range []string{
		`(?m)^NAME\s+CAPACITY\s+ACCESS MODES\s+RECLAIM POLICY\s+STATUS\s+CLAIM\s+STORAGECLASS`,
		`(?m)^persistentvolume/pv0001\s+5Gi\s+RWO,ROX\s+Retain\s+Pending\s+`,
		`(?m)^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS`,
		`(?m)^persistentvolumeclaim/data\s+Pending\s+local\s+`,
		`(?m)^storageclass.storage.k8s.io/local \(default\)\s+kubernetes.io/no-provisioner\s+Delete\s+WaitForFirstConsumer\s+false\s+`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("get pv,pvc,sc: no %s in\n%s", re, r.stdout)
		}
	}
	// A claim that names no class gets the default one; "" asks for none.
	r = kobectl(t, s, `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: nodef}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: noclass}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  resources: {requests: {storage: 1Gi}}
`, "apply", "-f", "-")
	if r.code != 0 {
		t.Fatalf("apply: %s", r.stderr)
	}
	for name, want := range map[string]string{"nodef": "local", "noclass": ""} {
		c, err := client.For[*core.PersistentVolumeClaim](s.Client).Get(context.Background(), "default", name)
		if err != nil || c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != want {
			t.Errorf("claim %s: class %v (%v), want %q", name, c.Spec.StorageClassName, err, want)
		}
	}
	r = kobectl(t, s, `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: bad}
spec:
  accessModes: [ReadWriteSometimes]
  resources: {requests: {storage: 1Gi}}
`, "apply", "-f", "-")
	if r.code == 0 || !strings.Contains(r.stderr, `spec.accessModes[0]: Unsupported value: "ReadWriteSometimes"`) {
		t.Errorf("a bad access mode: %d %q", r.code, r.stderr)
	}
	if r = kobectl(t, s, "", "get", "pvc", "bad"); r.code == 0 {
		t.Errorf("the refused claim was stored:\n%s", r.stdout)
	}
}
