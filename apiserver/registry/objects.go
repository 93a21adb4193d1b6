package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/storage"
)

// DecodeStored turns stored bytes into an object whose resourceVersion is
// the key's modification revision. The revision is never stored inside the
// value: etcd assigns it at write time.
func DecodeStored(k *scheme.Kind, value []byte, rev int64) (meta.Object, error) {
	o, err := k.DecodeFast(value)
	if err != nil {
		return nil, err
	}
	o.GetObjectMeta().ResourceVersion = strconv.FormatInt(rev, 10)
	return o, nil
}

// encodeForStorage marshals o without its resourceVersion.
func encodeForStorage(o meta.Object) ([]byte, error) {
	m := o.GetObjectMeta()
	rv := m.ResourceVersion
	m.ResourceVersion = ""
	b, err := scheme.Encode(o)
	m.ResourceVersion = rv
	return b, err
}

// answered is a stored object as reads answer it: with its revision, and
// for a custom kind whose schema has defaults, with them applied
// (scheme.Custom.ReadDefaulted). A custom kind's object stored at an
// earlier storage version is converted to the current one first, which
// fails only when the kind's conversion webhook fails.
func answered(ctx context.Context, k *scheme.Kind, stored []byte, rev int64) ([]byte, error) {
	c := k.Custom
	if c == nil {
		return withRevision(stored, rev), nil
	}
	stored, moved, err := atStorageVersion(ctx, k, stored)
	if err != nil {
		return nil, conversionFailed(err)
	}
	if c.ReadDefaulted != nil {
		if b, ok := c.ReadDefaulted(stored, strconv.FormatInt(rev, 10)); ok {
			return b, nil
		}
	}
	if moved {
		// Rewritten as a map: its keys are in another order, so the
		// revision goes in by name rather than by withRevision's splice.
		d := json.NewDecoder(bytes.NewReader(stored))
		d.UseNumber()
		var m map[string]any
		if d.Decode(&m) == nil {
			if md, ok := m["metadata"].(map[string]any); ok {
				md["resourceVersion"] = strconv.FormatInt(rev, 10)
				if b, err := json.Marshal(m); err == nil {
					return b, nil
				}
			}
		}
	}
	return withRevision(stored, rev), nil
}

// atStorageVersion is a custom resource stored at an earlier storage
// version, read as the current one (moved): by the kind's conversion
// webhook when it has one, else only the stored apiVersion is rewritten
// (conversion None: its versions differ in apiVersion only). A version no
// longer served is left as it is.
func atStorageVersion(ctx context.Context, k *scheme.Kind, stored []byte) ([]byte, bool, error) {
	if bytes.HasPrefix(stored, []byte(`{"apiVersion":"`+k.APIVersion+`"`)) {
		return stored, false, nil // stored at the storage version: the usual case, decided without a decode
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
	}
	if json.Unmarshal(stored, &tm) != nil || tm.APIVersion == k.APIVersion || tm.APIVersion == "" {
		return stored, false, nil
	}
	if conv := k.Custom.Convert; conv != nil {
		out, err := conv(ctx, [][]byte{stored}, k.APIVersion)
		if err != nil {
			return nil, false, err
		}
		return out[0], true, nil
	}
	v, ok := k.ServedAt(tm.APIVersion)
	if !ok {
		return stored, false, nil
	}
	b, err := v.ToStored(stored)
	if err != nil {
		return stored, false, nil
	}
	return b, true, nil
}

// conversionFailed is a conversion webhook's failure as the client sees
// it: kube-apiserver's 500.
func conversionFailed(err error) error {
	return status.Error(codes.Internal, err.Error())
}

// withRevision returns stored bytes with metadata.resourceVersion spliced
// in, without decoding: stored values are our own scheme.Encode output, so
// the first `"metadata":{` is the object's metadata. This keeps reads and
// create responses from paying for a decode and an encode per object.
func withRevision(stored []byte, rev int64) []byte {
	const marker = `"metadata":{`
	i := bytes.Index(stored, []byte(marker))
	if i < 0 {
		return stored
	}
	i += len(marker)
	field := `"resourceVersion":"` + strconv.FormatInt(rev, 10) + `"`
	if i < len(stored) && stored[i] != '}' {
		field += ","
	}
	out := make([]byte, 0, len(stored)+len(field))
	out = append(out, stored[:i]...)
	out = append(out, field...)
	return append(out, stored[i:]...)
}

// encodeWithRevision marshals o for a client with resourceVersion set to rev.
func encodeWithRevision(o meta.Object, rev int64) ([]byte, error) {
	o.GetObjectMeta().ResourceVersion = strconv.FormatInt(rev, 10)
	return scheme.Encode(o)
}

func objectKey(k *scheme.Kind, o meta.Object) string {
	m := o.GetObjectMeta()
	return storage.Key(k.Resource, m.Namespace, m.Name)
}

// statusField returns the Status field of a kind's struct, if it has one.
func statusField(o meta.Object) (reflect.Value, bool) {
	f := reflect.ValueOf(o).Elem().FieldByName("Status")
	return f, f.IsValid()
}

// resetStatus clears status on create, as Kubernetes' strategies do for
// every kind with a status subresource except Node.
func resetStatus(o meta.Object) {
	if f, ok := statusField(o); ok {
		f.Set(reflect.Zero(f.Type()))
	}
}

// copyStatus sets dst's status to src's.
func copyStatus(dst, src meta.Object) {
	d, ok1 := statusField(dst)
	s, ok2 := statusField(src)
	if ok1 && ok2 {
		d.Set(s)
	}
}

// specOf returns the JSON of everything but metadata and status: a change
// here is a spec change, which bumps generation. It encodes a shallow copy
// with those parts cleared (encoding never writes to the shared maps and
// slices).
func specOf(o meta.Object) []byte {
	if _, isMap := o.(*meta.Unstructured); !isMap && !reflect.ValueOf(o).Elem().FieldByName("Spec").IsValid() {
		// A kind without a spec (Event, ConfigMap, Role ...) has no
		// generation to raise, as in Kubernetes: its strategy keeps none.
		return nil
	}
	v := reflect.New(reflect.TypeOf(o).Elem())
	v.Elem().Set(reflect.ValueOf(o).Elem())
	c := v.Interface().(meta.Object)
	*c.GetTypeMeta() = meta.TypeMeta{}
	*c.GetObjectMeta() = meta.ObjectMeta{}
	if st := v.Elem().FieldByName("Status"); st.IsValid() {
		st.SetZero()
	}
	b, _ := scheme.Encode(c)
	return b
}
