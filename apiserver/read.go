package apiserver

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// Get implements the Get RPC.
func (s *Server) Get(ctx context.Context, req *apipb.GetRequest) (*apipb.ObjectResponse, error) {
	k, ok := scheme.ByResource(req.Resource)
	if !ok {
		return nil, invalid("unknown resource %q (see kobectl api-resources)", req.Resource)
	}
	ns := req.Namespace
	if !k.Namespaced {
		ns = ""
	} else if ns == "" {
		ns = "default"
	}
	switch req.Subresource {
	case "", "status":
	case "scale":
		if !scalable[k.Resource] {
			return nil, invalid("%s has no scale subresource", k.Kind)
		}
	default:
		return nil, invalid("subresource %q of %s cannot be read", req.Subresource, k.Resource)
	}
	kv, err := s.store.Get(ctx, storage.Key(k.Resource, ns, req.Name))
	if err != nil {
		return nil, storageError(err, k, req.Name)
	}
	obj := withRevision(kv.Value, kv.Revision)
	if req.Subresource == "scale" {
		if obj, err = scaleOf(obj); err != nil {
			return nil, status.Errorf(codes.Internal, "scale of %s %q: %v", k.Kind, req.Name, err)
		}
	}
	return &apipb.ObjectResponse{Object: obj}, nil
}

// filter is a parsed label and field selector for one kind.
type filter struct {
	kind   *scheme.Kind
	labels selector.Selector
	fields selector.Selector
}

func newFilter(k *scheme.Kind, labelSel, fieldSel string) (*filter, error) {
	ls, err := selector.ParseLabels(labelSel)
	if err != nil {
		return nil, invalid("labelSelector: %v", err)
	}
	fs, err := selector.ParseFields(fieldSel)
	if err != nil {
		return nil, invalid("fieldSelector: %v", err)
	}
	for _, r := range fs.Requirements {
		if !k.SupportsField(r.Key) {
			return nil, invalid("fieldSelector: field label %q is not supported for %s", r.Key, k.Resource)
		}
	}
	return &filter{kind: k, labels: ls, fields: fs}, nil
}

func (f *filter) everything() bool { return f.labels.Empty() && f.fields.Empty() }

func (f *filter) matches(o meta.Object) bool {
	if !f.labels.Matches(o.GetObjectMeta().Labels) {
		return false
	}
	return f.fields.Empty() || f.fields.Matches(f.kind.SelectableFields(o))
}

// matchesStored decodes stored bytes only when a selector needs them.
func (f *filter) matchesStored(value []byte) (bool, error) {
	if f.everything() {
		return true, nil
	}
	o, err := f.kind.DecodeFast(value)
	if err != nil {
		return false, err
	}
	return f.matches(o), nil
}

// List implements the List RPC.
func (s *Server) List(ctx context.Context, req *apipb.ListRequest) (*apipb.ListResponse, error) {
	k, ok := scheme.ByResource(req.Resource)
	if !ok {
		return nil, invalid("unknown resource %q (see kobectl api-resources)", req.Resource)
	}
	f, err := newFilter(k, req.LabelSelector, req.FieldSelector)
	if err != nil {
		return nil, err
	}
	ns := req.Namespace
	if !k.Namespaced {
		ns = ""
	}
	kvs, rev, err := s.store.List(ctx, storage.ListPrefix(k.Resource, ns))
	if err != nil {
		return nil, storageError(err, k, "")
	}
	resp := &apipb.ListResponse{ResourceVersion: rev, Items: make([][]byte, 0, len(kvs))}
	for _, kv := range kvs {
		ok, err := f.matchesStored(kv.Value)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "decode stored %s: %v", kv.Key, err)
		}
		if ok {
			resp.Items = append(resp.Items, withRevision(kv.Value, kv.Revision))
		}
	}
	return resp, nil
}

// Version implements the Version RPC.
func (s *Server) Version(context.Context, *apipb.VersionRequest) (*apipb.VersionResponse, error) {
	return &apipb.VersionResponse{Version: Version, EtcdVersion: s.etcd.version}, nil
}

func bookmark(k *scheme.Kind, rev int64) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"resourceVersion":"%d"}}`, k.APIVersion, k.Kind, rev))
}
