package rest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/proto/apipb"
)

// A custom kind whose versions a webhook converts has selectable fields
// per version (a definition's versions[].selectableFields): a field
// selector at a version other than the stored one selects by that
// version's fields, read from each object converted to it. The registry
// stores and selects the stored version only, so this door selects: it
// asks the registry without the field selector, converts (as it does
// anyway) and keeps what matches. Such a list is answered whole (limit
// and continue are not applied), and a watch tracks which objects match
// (and is sent each change's previous object) so that one that stops
// matching is sent as DELETED, as kube-apiserver does; a deletion is
// judged by the object's last state.

// versionSelector is a field selector the door applies at the URL's version.
type versionSelector struct {
	kind   *scheme.Kind
	fields selector.Selector
}

// versionFields parses the request's field selector when it is the door's
// to apply; nil when the registry selects.
func (t *restTarget) versionFields(sel string) (*versionSelector, error) {
	if sel == "" || t.conv == nil || t.conv.Fields == nil {
		return nil, nil
	}
	fs, err := selector.ParseFields(sel)
	if err != nil {
		return nil, statusWithCode(http.StatusBadRequest, "BadRequest", fmt.Sprintf("unable to parse fieldSelector: %v", err))
	}
	vk := t.kind.AtVersion(t.conv)
	for _, r := range fs.Requirements {
		if !vk.SupportsField(r.Key) {
			return nil, statusWithCode(http.StatusBadRequest, "BadRequest", fmt.Sprintf("field label not supported: %s (fieldSelector of %s at %s)", r.Key, t.kind.Resource, t.conv.APIVersion))
		}
	}
	return &versionSelector{kind: vk, fields: fs}, nil
}

// matches says whether an object at the URL's version is selected.
func (v *versionSelector) matches(obj []byte) bool {
	u := &meta.Unstructured{}
	if json.Unmarshal(obj, u) != nil {
		return false
	}
	return v.fields.Matches(v.kind.SelectableFields(u))
}

// keep is the objects (at the URL's version) the selector selects.
func (v *versionSelector) keep(objs [][]byte) [][]byte {
	out := objs[:0:0]
	for _, o := range objs {
		if v.matches(o) {
			out = append(out, o)
		}
	}
	return out
}

// watchFilter turns a watch's events (at the URL's version) into the
// selector's: an object that comes to match is ADDED, one that stops
// matching DELETED.
type watchFilter struct {
	sel     *versionSelector
	matched map[string]bool // namespace/name of what the watcher has as matching
}

// event is the type to send for an event's object (and, for a MODIFIED
// one, the object before it), or "" to send nothing.
func (f *watchFilter) event(typ string, obj, prev []byte) string {
	if typ == registry.Bookmark {
		return typ
	}
	var m struct {
		Metadata struct{ Namespace, Name string } `json:"metadata"`
	}
	_ = json.Unmarshal(obj, &m)
	key := m.Metadata.Namespace + "/" + m.Metadata.Name
	if typ == registry.Deleted { // its last state: selected then, or tracked as selected
		if f.matched[key] || f.sel.matches(obj) {
			delete(f.matched, key)
			return typ
		}
		return ""
	}
	was, is := f.matched[key] || prev != nil && f.sel.matches(prev), f.sel.matches(obj)
	switch {
	case is && was:
		return typ
	case is:
		f.matched[key] = true
		return registry.Added
	case was:
		delete(f.matched, key)
		return registry.Deleted
	}
	return ""
}

// withoutFields is a list request the registry answers whole for the door
// to select from.
func withoutFields(req *apipb.ListRequest) {
	req.FieldSelector, req.Limit, req.Continue = "", 0, ""
}
