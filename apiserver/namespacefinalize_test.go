package apiserver_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestNamespaceFinalizersAndOrderedDeletion (issue #36): a namespace as
// Kubernetes' conformance tests drive it. It is created with the spec
// finalizer "kubernetes"; namespaces/NAME/finalize adds and removes
// others (an update of the namespace itself leaves them; a bad name is
// refused naming the field); its status takes conditions. Deleted, it
// empties its pods first: while a pod (held by a finalizer) is still
// there, the namespace is Terminating with a NamespaceDeletionContentFailure
// condition and its ConfigMap is still there. Once the pod is gone the
// rest goes and "kubernetes" is taken away, but the namespace stays until
// its last finalizer is finalized away.
func TestNamespaceFinalizersAndOrderedDeletion(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	type namespace struct {
		Metadata struct {
			ResourceVersion   string  `json:"resourceVersion"`
			DeletionTimestamp *string `json:"deletionTimestamp"`
		} `json:"metadata"`
		Spec struct {
			Finalizers []string `json:"finalizers"`
		} `json:"spec"`
		Status struct {
			Phase      string `json:"phase"`
			Conditions []struct{ Type, Status, Reason, Message string }
		} `json:"status"`
	}
	get := func() (int, namespace) {
		t.Helper()
		code, _, b := c.do("GET", "/api/v1/namespaces/fin", "", "")
		var ns namespace
		if code == 200 {
			if err := json.Unmarshal(b, &ns); err != nil {
				t.Fatal(err)
			}
		}
		return code, ns
	}
	finalize := func(finalizers ...string) (int, string) {
		t.Helper()
		f, _ := json.Marshal(finalizers)
		code, _, b := c.do("PUT", "/api/v1/namespaces/fin/finalize", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fin"},"spec":{"finalizers":`+string(f)+`}}`)
		return code, string(b)
	}
	if code, _, b := c.do("POST", "/api/v1/namespaces", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fin"}}`); code != 201 {
		t.Fatalf("create the namespace: %d %s", code, b)
	}
	if _, ns := get(); !slices.Equal(ns.Spec.Finalizers, []string{"kubernetes"}) {
		t.Fatalf("a new namespace's spec.finalizers: %v, want [kubernetes]", ns.Spec.Finalizers)
	}
	const fake = "e2e.example.com/fakeFinalizer"
	if code, b := finalize("kubernetes", fake); code != 200 || !strings.Contains(b, fake) {
		t.Fatalf("finalize adding %s: %d %s", fake, code, b)
	}
	if code, b := finalize("kubernetes", "bogus"); code != 422 || !strings.Contains(b, "spec.finalizers[1]") {
		t.Errorf("finalize with a finalizer name that is not qualified: %d %s; want 422 naming spec.finalizers[1]", code, b)
	}
	if code, _, b := c.do("PUT", "/api/v1/namespaces/fin", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fin","labels":{"a":"b"}},"spec":{}}`); code != 200 {
		t.Fatalf("update the namespace: %d %s", code, b)
	}
	if _, ns := get(); !slices.Equal(ns.Spec.Finalizers, []string{"kubernetes", fake}) {
		t.Errorf("after an update without spec.finalizers: %v; an update must leave them (finalize changes them)", ns.Spec.Finalizers)
	}
	// A status patch sets labels and annotations too, as Kubernetes'
	// namespace status strategy lets them through (the name label stays);
	// the spec stays.
	code, _, b := c.do("PATCH", "/api/v1/namespaces/fin/status", "", `{"metadata":{"labels":null,"annotations":{"patched-with-status":"yes"}},"spec":{"finalizers":[]},"status":{"conditions":[{"type":"StatusPatch","status":"True","reason":"E2E","message":"Patched by a test"}]}}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"reason":"E2E"`) || !strings.Contains(string(b), `"patched-with-status":"yes"`) ||
		!strings.Contains(string(b), `"kubernetes.io/metadata.name":"fin"`) {
		t.Errorf("patch the namespace's status with a condition and an annotation: %d %s", code, b)
	}
	if _, ns := get(); !slices.Equal(ns.Spec.Finalizers, []string{"kubernetes", fake}) {
		t.Errorf("after a status patch: finalizers %v; a status write must leave the spec", ns.Spec.Finalizers)
	}
	code, _, b = c.do("PATCH", "/api/v1/namespaces/fin/status", "", `{"metadata":{"labels":{"not a key":"x"}}}`, "Content-Type", "application/merge-patch+json")
	if code != 422 || !strings.Contains(string(b), "metadata.labels") {
		t.Errorf("a status patch with a bad label: %d %s, want 422 naming metadata.labels", code, b)
	}

	// A pod held by a finalizer, and a ConfigMap.
	if code, _, b := c.do("POST", "/api/v1/namespaces/fin/pods", "", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"held","finalizers":["e2e.example.com/finalizer"]},"spec":{"containers":[{"name":"c","image":"kobune.local/pause"}]}}`); code != 201 {
		t.Fatalf("create the pod: %d %s", code, b)
	}
	if code, _, b := c.do("POST", "/api/v1/namespaces/fin/configmaps", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kept"}}`); code != 201 {
		t.Fatalf("create the ConfigMap: %d %s", code, b)
	}
	if code, _, b := c.do("DELETE", "/api/v1/namespaces/fin", "", ""); code != 200 {
		t.Fatalf("delete the namespace: %d %s", code, b)
	}
	condition := func(ns namespace, typ string) string {
		for _, c := range ns.Status.Conditions {
			if c.Type == typ {
				return c.Status + " " + c.Reason + ": " + c.Message
			}
		}
		return ""
	}
	eventually(t, "the namespace says its pod is not gone", func() error {
		_, ns := get()
		if got := condition(ns, "NamespaceDeletionContentFailure"); ns.Status.Phase != "Terminating" || !strings.HasPrefix(got, "True ContentDeletionFailed") {
			return fmt.Errorf("phase %s, NamespaceDeletionContentFailure %q", ns.Status.Phase, got)
		}
		if got := condition(ns, "NamespaceFinalizersRemaining"); !strings.Contains(got, "e2e.example.com/finalizer in 1 resource instances") {
			return fmt.Errorf("NamespaceFinalizersRemaining %q", got)
		}
		return nil
	})
	// Pods go first: over several rounds of the cleanup (every 2 s) the
	// ConfigMap stays while the pod does.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if code, _, _ := c.do("GET", "/api/v1/namespaces/fin/configmaps/kept", "", ""); code != 200 {
			t.Fatalf("the ConfigMap was deleted (GET: %d) while a pod of the namespace was still there: pods go first", code)
		}
	}
	code, _, b = c.do("GET", "/api/v1/namespaces/fin/pods/held", "", "")
	if code != 200 || !strings.Contains(string(b), "deletionTimestamp") {
		t.Fatalf("the pod held by its finalizer: %d %s; want it there, marked for deletion", code, b)
	}
	if code, _, b := c.do("PATCH", "/api/v1/namespaces/fin/pods/held", "", `{"metadata":{"finalizers":null}}`, "Content-Type", "application/merge-patch+json"); code != 200 {
		t.Fatalf("remove the pod's finalizer: %d %s", code, b)
	}
	eventually(t, "the rest of the namespace goes once its pod has", func() error {
		if code, _, _ := c.do("GET", "/api/v1/namespaces/fin/configmaps/kept", "", ""); code != 404 {
			return fmt.Errorf("the ConfigMap: %d", code)
		}
		code, ns := get()
		if code != 200 || !slices.Equal(ns.Spec.Finalizers, []string{fake}) {
			return fmt.Errorf("the namespace: %d, spec.finalizers %v; want it there with only %s", code, ns.Spec.Finalizers, fake)
		}
		if got := condition(ns, "NamespaceContentRemaining"); !strings.HasPrefix(got, "False ContentRemoved") {
			return fmt.Errorf("NamespaceContentRemaining %q", got)
		}
		return nil
	})
	if code, b := finalize(); code != 200 {
		t.Fatalf("finalize away the last finalizer: %d %s", code, b)
	}
	if code, _ := get(); code != 404 {
		t.Errorf("the namespace without content or finalizers: GET %d, want 404", code)
	}
}
