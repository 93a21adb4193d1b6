package validation

import "encoding/json"

// JSONEqual reports whether a and b are the same JSON document: what a
// client would read back for each. Fields an update may not change are
// compared this way, so that a nil and an empty map (both absent on the
// wire) are equal, as Kubernetes' semantic equality has them.
func JSONEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// Immutable is Kubernetes' "field is immutable" error at p when an update
// changed the field from o to n, and nothing when it did not.
func Immutable(p *Path, n, o any) ErrorList {
	if JSONEqual(n, o) {
		return nil
	}
	var shown any = n
	switch n.(type) {
	case string, bool, int, int32, int64:
	default:
		b, _ := json.Marshal(n) // a struct's pointers would print as addresses
		shown = string(b)
	}
	return ErrorList{NewInvalid(p, shown, "field is immutable")}
}
