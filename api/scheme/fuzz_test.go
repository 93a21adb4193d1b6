package scheme

import "testing"

// FuzzDecode checks that the manifest decoder never panics, and that every
// object it returns has a registered kind.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(manifest))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := Decode(data)
		if err != nil {
			return
		}
		for _, d := range docs {
			if d.Kind == nil || d.Object == nil {
				t.Fatalf("document without kind or object: %+v", d)
			}
			if d.Object.GetTypeMeta().Kind != d.Kind.Kind {
				t.Fatalf("kind mismatch: %s vs %s", d.Object.GetTypeMeta().Kind, d.Kind.Kind)
			}
			if k := d.Kind.Validate; k != nil {
				_ = k(d.Object)
			}
		}
	})
}
