// Package jsonstr reads and writes the JSON strings of Kobune's small value
// types (quantities, int-or-string, timestamps) without a nested
// encoding/json call when the string is plain ASCII with nothing to escape,
// which it always is for their canonical forms. Anything else falls back to
// encoding/json, so the results are identical.
//
// It has no Kubernetes counterpart: apimachinery's Quantity and Time take
// the same shortcut in their own (Un)MarshalJSON methods.
package jsonstr
