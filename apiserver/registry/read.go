package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/api/version"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// Get implements the Get RPC.
func (s *Registry) Get(ctx context.Context, req *apipb.GetRequest) (*apipb.ObjectResponse, error) {
	k, ok := s.cfg.Kinds.ByResource(req.Resource)
	if !ok {
		return nil, apierrors.Invalid("unknown resource %q (see kobectl api-resources)", req.Resource)
	}
	ns := req.Namespace
	if !k.Namespaced {
		ns = ""
	} else if ns == "" {
		ns = "default"
	}
	switch req.Subresource {
	case "", "status":
	case EphemeralContainersSubresource, ResizeSubresource, ApprovalSubresource:
		if !IsPart(k.Resource, req.Subresource) || k.Custom != nil {
			return nil, apierrors.Invalid("%s has no %s subresource", k.Kind, req.Subresource)
		}
	case "scale":
		if !Scalable(k) {
			return nil, apierrors.Invalid("%s has no scale subresource", k.Kind)
		}
	default:
		return nil, apierrors.Invalid("subresource %q of %s cannot be read", req.Subresource, k.Resource)
	}
	kv, err := s.store.Get(ctx, storage.Key(k.Resource, ns, req.Name))
	if err != nil {
		return nil, apierrors.FromStorage(err, k, req.Name)
	}
	obj, err := answered(ctx, k, kv.Value, kv.Revision)
	if err != nil {
		return nil, err
	}
	if req.Subresource == "scale" {
		if obj, err = scaleOf(k, obj); err != nil {
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
	// As kube-apiserver: a selector it cannot use is a 400 BadRequest.
	ls, err := selector.ParseLabels(labelSel)
	if err != nil {
		return nil, apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "unable to parse labelSelector: %v", err)
	}
	fs, err := selector.ParseFields(fieldSel)
	if err != nil {
		return nil, apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "unable to parse fieldSelector: %v", err)
	}
	for _, r := range fs.Requirements {
		if !k.SupportsField(r.Key) {
			return nil, apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "field label not supported: %s (fieldSelector of %s)", r.Key, k.Resource)
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
func (s *Registry) List(ctx context.Context, req *apipb.ListRequest) (*apipb.ListResponse, error) {
	k, ok := s.cfg.Kinds.ByResource(req.Resource)
	if !ok {
		return nil, apierrors.Invalid("unknown resource %q (see kobectl api-resources)", req.Resource)
	}
	f, err := newFilter(k, req.LabelSelector, req.FieldSelector)
	if err != nil {
		return nil, err
	}
	ns := req.Namespace
	if !k.Namespaced {
		ns = ""
	}
	prefix := storage.ListPrefix(k.Resource, ns)
	if req.Limit < 0 {
		return nil, apierrors.Invalid("limit: Invalid value: %d: must be 0 (everything) or more", req.Limit)
	}
	page := listPage{prefix: prefix}
	switch req.ResourceVersionMatch {
	case "", "NotOlderThan":
		if req.ResourceVersion > 0 {
			cur, err := s.store.Revision(ctx)
			if err != nil {
				return nil, apierrors.FromStorage(err, k, "")
			}
			if req.ResourceVersion > cur {
				return nil, status.Errorf(codes.DeadlineExceeded, "Timeout: Too large resource version: %d, current: %d", req.ResourceVersion, cur)
			}
		}
	case "Exact":
		if req.ResourceVersion <= 0 {
			return nil, apierrors.Invalid("resourceVersionMatch: Forbidden: Exact needs a resourceVersion other than 0")
		}
		page.rev = req.ResourceVersion
	default:
		return nil, apierrors.Invalid("resourceVersionMatch: Unsupported value: %q: supported values: \"Exact\", \"NotOlderThan\"", req.ResourceVersionMatch)
	}
	if req.Continue != "" {
		if page, err = decodeContinue(req.Continue, prefix); err != nil {
			return nil, err
		}
	}
	if req.Limit == 0 && page.rev == 0 && page.start == "" {
		return listAll(ctx, s.store, k, f, prefix)
	}
	return listPaged(ctx, s.store, k, f, page, req.Limit)
}

func listAll(ctx context.Context, store *storage.Store, k *scheme.Kind, f *filter, prefix string) (*apipb.ListResponse, error) {
	kvs, rev, err := store.List(ctx, prefix)
	if err != nil {
		return nil, apierrors.FromStorage(err, k, "")
	}
	resp := &apipb.ListResponse{ResourceVersion: rev, Items: make([][]byte, 0, len(kvs))}
	return resp, f.appendMatching(ctx, resp, kvs)
}

// appendMatching adds the objects that match the filter to a list. A
// selector decodes every object: it stops when the request's context
// ends (its client gone, or --request-timeout), checked every 1,000.
func (f *filter) appendMatching(ctx context.Context, resp *apipb.ListResponse, kvs []storage.KV) error {
	for i, kv := range kvs {
		if i%1000 == 999 && ctx.Err() != nil {
			return ctx.Err()
		}
		ok, err := f.matchesStored(kv.Value)
		if err != nil {
			return status.Errorf(codes.Internal, "decode stored %s: %v", kv.Key, err)
		}
		if ok {
			b, err := answered(ctx, f.kind, kv.Value, kv.Revision)
			if err != nil {
				return err
			}
			resp.Items = append(resp.Items, b)
		}
	}
	return nil
}

// listPage is where a page starts: a key (exclusive of what was sent)
// and the revision every page of one list reads.
type listPage struct {
	prefix, start string
	rev           int64
}

// listPaged reads one page: etcd is read in batches of at most limit keys
// until limit objects match, so a page holds at most one page of objects
// in memory however large the list is.
func listPaged(ctx context.Context, store *storage.Store, k *scheme.Kind, f *filter, page listPage, limit int64) (*apipb.ListResponse, error) {
	resp := &apipb.ListResponse{}
	start, rev := page.start, page.rev
	for {
		batch := limit - int64(len(resp.Items))
		if limit == 0 {
			batch = 0
		}
		kvs, read, after, more, err := store.ListPage(ctx, page.prefix, start, rev, batch)
		if errors.Is(err, storage.ErrExpired) && page.start != "" {
			// As kube-apiserver: 410, with a token that goes on from the
			// same key at the newest revision, for a client that can live
			// with an inconsistent list.
			return nil, apierrors.ExpiredContinue("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
				encodeContinue(listPage{start: start, rev: latestRevision}, page.prefix))
		}
		if err != nil {
			return nil, apierrors.FromStorage(err, k, "")
		}
		rev = read
		if err := f.appendMatching(ctx, resp, kvs); err != nil {
			return nil, err
		}
		resp.ResourceVersion = rev
		if !more {
			return resp, nil
		}
		start = kvs[len(kvs)-1].Key + "\x00"
		if limit > 0 && int64(len(resp.Items)) >= limit {
			resp.Continue = encodeContinue(listPage{start: start, rev: rev}, page.prefix)
			if f.everything() { // with a selector, what follows is not counted (as Kubernetes)
				resp.RemainingItemCount = &after
			}
			return resp, nil
		}
	}
}

// continueToken is a continue token's content, as Kubernetes' (base64
// JSON): the revision of the list and the key to go on from, relative to
// the list's prefix so that a token cannot read outside it.
type continueToken struct {
	Version string `json:"v"`
	RV      int64  `json:"rv"`
	Start   string `json:"start"`
}

func encodeContinue(p listPage, prefix string) string {
	b, _ := json.Marshal(continueToken{Version: "meta.k8s.io/v1", RV: p.rev, Start: strings.TrimPrefix(p.start, prefix)})
	return base64.RawURLEncoding.EncodeToString(b)
}

// latestRevision in a continue token: read the next page at the newest
// revision (the token of an expired list, as kube-apiserver's -1).
const latestRevision = -1

func decodeContinue(tok, prefix string) (listPage, error) {
	bad := func(why string) (listPage, error) {
		// A 400, as kube-apiserver's "continue key is not valid".
		return listPage{}, apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "continue: Invalid value: %q: %s: list again without it", tok, why)
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return bad("not a continue token")
	}
	var c continueToken
	if json.Unmarshal(b, &c) != nil || c.Version != "meta.k8s.io/v1" || c.RV <= 0 && c.RV != latestRevision {
		return bad("not a continue token")
	}
	return listPage{prefix: prefix, start: prefix + c.Start, rev: max(c.RV, 0)}, nil
}

// Version implements the Version RPC.
func (s *Registry) Version(context.Context, *apipb.VersionRequest) (*apipb.VersionResponse, error) {
	return &apipb.VersionResponse{Version: version.Kobune, EtcdVersion: s.cfg.EtcdVersion}, nil
}

// Discovery implements the Discovery RPC: every kind served, custom ones
// included.
func (s *Registry) Discovery(context.Context, *apipb.DiscoveryRequest) (*apipb.DiscoveryReply, error) {
	out := &apipb.DiscoveryReply{}
	for _, k := range s.cfg.Kinds.All() {
		d := &apipb.DiscoveredKind{Kind: k.Kind, ApiVersion: k.APIVersion, Resource: k.Resource, Plural: k.PluralName(),
			Singular: strings.ToLower(k.Kind), Namespaced: k.Namespaced, ShortNames: k.ShortNames, HasStatus: k.HasStatus}
		for _, v := range k.Versions {
			d.OtherVersions = append(d.OtherVersions, v.APIVersion)
		}
		if c := k.Custom; c != nil {
			d.Custom, d.Singular, d.Categories = true, c.Singular, c.Categories
			d.ConvertedByWebhook = c.Convert != nil
			for _, col := range c.Columns {
				d.Columns = append(d.Columns, &apipb.PrinterColumn{Name: col.Name, Type: col.Type, JsonPath: col.JSONPath, Priority: col.Priority})
			}
		}
		out.Kinds = append(out.Kinds, d)
	}
	return out, nil
}

func bookmark(k *scheme.Kind, rev int64) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"resourceVersion":"%d"}}`, k.APIVersion, k.Kind, rev))
}

// bookmarkAnnotated is a bookmark with annotations (a JSON object).
func bookmarkAnnotated(k *scheme.Kind, rev int64, annotations string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"resourceVersion":"%d","annotations":%s}}`, k.APIVersion, k.Kind, rev, annotations))
}

// Revision is the store's current revision: a watch from it sees changes
// from now on.
func (s *Registry) Revision(ctx context.Context) (int64, error) { return s.store.Revision(ctx) }
