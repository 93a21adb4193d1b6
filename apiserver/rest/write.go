package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/patch"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// The write verbs over REST: create, update, patch, bind and delete
// (one object or a collection), with their dryRun and DeleteOptions. Each
// passes the handler chain to the registry's verb of the same name.

// readWrite reads what a create, update or patch sends: the body and the
// dryRun parameter.
func readWrite(r *http.Request) ([]byte, bool, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, false, err
	}
	dry, err := dryRun(r.URL.Query().Get("dryRun"))
	return body, dry, err
}

func (s *Handler) restCreate(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget, resource string) {
	body, dry, err := readWrite(r)
	if err != nil {
		writeError(w, err, t)
		return
	}
	if t.name == "" {
		named := *t
		named.objectName = request.MetadataName(body)
		t = &named
	}
	body, warnings, err := t.toStored(body, r.URL.Query().Get("fieldValidation"))
	if err != nil {
		writeError(w, err, t)
		return
	}
	writeWarnings(w, warnings)
	q := r.URL.Query()
	ns := t.namespace
	if t.sub == "token" {
		body, err = tokenRequestFor(body, t.name)
		if err != nil {
			writeError(w, err, t)
			return
		}
	}
	resp, err := filters.Unary(ctx, s.chain, "Create", &apipb.CreateRequest{Resource: resource, Namespace: ns, Object: body,
		FieldValidation: q.Get("fieldValidation"), DryRun: dry}, s.registry.Create)
	// 201 also for reviews and token requests, which are answered, not
	// stored: kube-apiserver's create handler answers every create so.
	respond(w, r, http.StatusCreated, resp, err, t)
}

func (s *Handler) restUpdate(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	body, dry, err := readWrite(r)
	if err != nil {
		writeError(w, err, t)
		return
	}
	if n := request.MetadataName(body); n != t.name {
		writeError(w, statusWithCode(http.StatusBadRequest, "BadRequest", fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", n, t.name)), t)
		return
	}
	body, warnings, err := t.toStored(body, r.URL.Query().Get("fieldValidation"))
	if err != nil {
		writeError(w, err, t)
		return
	}
	writeWarnings(w, warnings)
	q := r.URL.Query()
	req := &apipb.UpdateRequest{Resource: t.resource, Namespace: t.namespace, Object: body,
		FieldValidation: q.Get("fieldValidation"), DryRun: dry, FieldManager: q.Get("fieldManager")}
	var resp *apipb.ObjectResponse
	switch t.sub {
	case "status":
		resp, err = filters.Unary(ctx, s.chain, "UpdateStatus", req, s.registry.UpdateStatus)
	case "finalize": // namespaces only (handler.go routes no other)
		req.Resource = client.NamespaceFinalizeSubresource
		resp, err = filters.Unary(ctx, s.chain, "Update", req, s.registry.Update)
	case "ephemeralcontainers": // pods only
		req.Resource = client.PodEphemeralContainersSubresource
		resp, err = filters.Unary(ctx, s.chain, "Update", req, s.registry.Update)
	case "resize": // pods only
		req.Resource = client.PodResizeSubresource
		resp, err = filters.Unary(ctx, s.chain, "Update", req, s.registry.Update)
	case "approval": // certificatesigningrequests only
		req.Resource = client.CSRApprovalSubresource
		resp, err = filters.Unary(ctx, s.chain, "Update", req, s.registry.Update)
	default:
		resp, err = filters.Unary(ctx, s.chain, "Update", req, s.registry.Update)
	}
	respond(w, r, http.StatusOK, resp, err, t)
}

// respond answers with the object a write returned, and its warnings: as
// a one-row Table when the client asks for Tables first (kube-apiserver
// transforms every response it can), and 406 Not Acceptable when it
// accepts nothing but a Table and the answer is a review, which has no
// Table form (kube-apiserver's reviews implement no TableConvertor).
func respond(w http.ResponseWriter, r *http.Request, code int, o *apipb.ObjectResponse, err error, t *restTarget) {
	if err != nil {
		writeError(w, err, t)
		return
	}
	writeWarnings(w, o.Warnings)
	if wantsTable(r) && t.sub == "" {
		if t.kind != nil {
			tb, err := buildTable(t.kind, [][]byte{o.Object}, "", r.URL.Query().Get("includeObject"), true)
			if err != nil {
				writeError(w, err, t)
				return
			}
			writeObject(w, code, tb)
			return
		}
		if onlyTable(r) {
			writeError(w, statusWithCode(http.StatusNotAcceptable, "NotAcceptable",
				fmt.Sprintf("the resource %s has no Table form: accept application/json", t.resource)), t)
			return
		}
	}
	obj, err := t.fromStored(r.Context(), o.Object)
	if err != nil {
		writeError(w, err, t)
		return
	}
	writeJSON(w, code, obj)
}

// restPatch serves PATCH: the Content-Type is the patch type.
func (s *Handler) restPatch(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case patch.JSONPatchType, patch.MergePatchType, patch.StrategicMergePatchType, patch.ApplyPatchType:
	default:
		writeError(w, statusWithCode(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
			fmt.Sprintf("PATCH needs the patch type as its Content-Type: %s, %s or %s (not %q)", patch.JSONPatchType, patch.MergePatchType, patch.StrategicMergePatchType, mt)), t)
		return
	}
	body, dry, err := readWrite(r)
	if err != nil {
		writeError(w, err, t)
		return
	}
	switch {
	case t.conv != nil && t.kind.Custom != nil && !t.converted() && mt == patch.ApplyPatchType:
		// A custom kind's versions differ in apiVersion only (conversion
		// None): an apply at another served version is the same apply at
		// the stored one, and its answer goes back to the URL's version.
		// (With a conversion webhook, restPatchConverted refuses it.)
		if body, err = applyAtStored(body, t.conv.APIVersion, t.kind.APIVersion); err != nil {
			writeError(w, err, t)
			return
		}
	case t.conv != nil:
		s.restPatchConverted(ctx, w, r, t, mt, body, dry)
		return
	}
	q := r.URL.Query()
	force := false
	switch v := q.Get("force"); v {
	case "", "false":
	case "true":
		force = true
	default:
		writeError(w, apierrors.Invalid("force: Invalid value: %q: must be true or false", v), t)
		return
	}
	resp, err := filters.Unary(ctx, s.chain, "Patch", &apipb.PatchRequest{Resource: t.resource, Namespace: t.namespace, Name: t.name, PatchType: mt, Patch: body,
		Subresource: t.sub, FieldValidation: q.Get("fieldValidation"), DryRun: dry, FieldManager: q.Get("fieldManager"), Force: force}, s.registry.Patch)
	respond(w, r, http.StatusOK, resp, err, t)
}

// restBind serves pods/binding (a Binding: the scheduler's verb, which
// client-go schedulers use).
func (s *Handler) restBind(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err, t)
		return
	}
	var b struct {
		Metadata struct {
			Name        string            `json:"name"`
			UID         string            `json:"uid"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Target struct {
			Kind, Name string
		} `json:"target"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		writeError(w, apierrors.Invalid("Binding: %v", err), t)
		return
	}
	if b.Metadata.Name != "" && b.Metadata.Name != t.name {
		writeError(w, apierrors.Invalid("metadata.name: Invalid value: %q: does not match the pod (%q)", b.Metadata.Name, t.name), t)
		return
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		writeError(w, apierrors.Invalid("target.kind: Unsupported value: %q: supported values: \"Node\"", b.Target.Kind), t)
		return
	}
	if _, err := filters.Unary(ctx, s.chain, "Bind", &apipb.BindRequest{Namespace: t.namespace, Name: t.name, NodeName: b.Target.Name, Uid: b.Metadata.UID, Annotations: b.Metadata.Annotations}, s.registry.Bind); err != nil {
		writeError(w, err, t)
		return
	}
	writeObject(w, http.StatusCreated, restStatus{Kind: "Status", APIVersion: "v1", Status: "Success", Code: http.StatusCreated})
}

// restDeleteCollection serves DELETE on a collection: each object the
// selectors match is deleted through the Delete RPC with the request's
// options — dryRun, propagationPolicy, gracePeriodSeconds, preconditions,
// from the query or the DeleteOptions body — so each deletion is
// authorized, admitted and finalized as a single one would be (Kubernetes
// authorizes the deletecollection verb once instead). The answer is the
// list of what was deleted, each object as its delete left it, as
// kube-apiserver's.
func (s *Handler) restDeleteCollection(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	// Read before anything is deleted: a bad option deletes nothing.
	opts, err := deleteRequest(r, t)
	if err == nil {
		err = registry.CheckDeleteOptions(opts)
	}
	if err != nil {
		writeError(w, err, t)
		return
	}
	q := r.URL.Query()
	lreq := &apipb.ListRequest{Resource: t.resource, Namespace: t.namespace, LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector")}
	vs, err := t.versionFields(lreq.FieldSelector)
	if err != nil {
		writeError(w, err, t)
		return
	}
	if vs != nil {
		withoutFields(lreq)
	}
	list, err := filters.Unary(ctx, s.chain, "List", lreq, s.registry.List)
	if err != nil {
		writeError(w, err, t)
		return
	}
	if vs != nil { // selected at the URL's version
		conv, err := t.fromStoredAll(ctx, list.Items)
		if err != nil {
			writeError(w, err, t)
			return
		}
		var keep [][]byte
		for i, c := range conv {
			if vs.matches(c) {
				keep = append(keep, list.Items[i])
			}
		}
		list.Items = keep
	}
	deleted := make([]json.RawMessage, 0, len(list.Items))
	for _, it := range list.Items {
		if ctx.Err() != nil {
			return // the client went: stop deleting
		}
		var m struct {
			Metadata struct{ Name, Namespace string } `json:"metadata"`
		}
		if err := json.Unmarshal(it, &m); err != nil {
			writeError(w, status.Errorf(codes.Internal, "decode: %v", err), t)
			return
		}
		one := proto.Clone(opts).(*apipb.DeleteRequest)
		one.Namespace, one.Name = m.Metadata.Namespace, m.Metadata.Name
		resp, err := filters.Unary(ctx, s.chain, "Delete", one, s.registry.Delete)
		if status.Code(err) == codes.NotFound {
			continue // gone meanwhile
		}
		if err != nil {
			writeError(w, err, t)
			return
		}
		obj, err := t.fromStored(ctx, resp.Object)
		if err != nil {
			writeError(w, err, t)
			return
		}
		deleted = append(deleted, obj)
	}
	writeObject(w, http.StatusOK, struct {
		Kind       string            `json:"kind"`
		APIVersion string            `json:"apiVersion"`
		Metadata   map[string]string `json:"metadata"`
		Items      []json.RawMessage `json:"items"`
	}{t.kind.Kind + "List", t.apiVersion(), map[string]string{"resourceVersion": strconv.FormatInt(list.ResourceVersion, 10)}, deleted})
}

// deleteOptionsBody is metav1.DeleteOptions as clients send it.
type deleteOptionsBody struct {
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds"`
	Preconditions      *struct {
		UID             *string `json:"uid"`
		ResourceVersion *string `json:"resourceVersion"`
	} `json:"preconditions"`
	PropagationPolicy *string  `json:"propagationPolicy"`
	OrphanDependents  *bool    `json:"orphanDependents"`
	DryRun            []string `json:"dryRun"`
}

func (s *Handler) restDelete(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	req, err := deleteRequest(r, t)
	if err != nil {
		writeError(w, err, t)
		return
	}
	req.Name = t.name
	resp, err := filters.Unary(ctx, s.chain, "Delete", req, s.registry.Delete)
	if err != nil {
		writeError(w, err, t)
		return
	}
	obj, err := t.fromStored(ctx, resp.Object)
	if err != nil {
		writeError(w, err, t)
		return
	}
	writeJSON(w, http.StatusOK, obj)
}

// deleteRequest reads a delete's options — the DeleteOptions body (JSON,
// YAML or protobuf: client-go's typed clients send it as protobuf when
// they speak it, as Kubernetes' e2e framework does) and the query
// parameters, which win — into the request every object is deleted with.
func deleteRequest(r *http.Request, t *restTarget) (*apipb.DeleteRequest, error) {
	var opts deleteOptionsBody
	b, err := readBodyUpTo(r, 64<<10)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err = json.Unmarshal(b, &opts); err != nil {
			return nil, statusWithCode(http.StatusBadRequest, "BadRequest", "DeleteOptions: "+err.Error())
		}
	}
	q := r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		g, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.Invalid("gracePeriodSeconds: Invalid value: %q", v)
		}
		opts.GracePeriodSeconds = &g
	}
	if v := q.Get("propagationPolicy"); v != "" {
		opts.PropagationPolicy = &v
	}
	// dryRun, in the query or the body: "All" or nothing (an unknown
	// value is refused, never taken for a real delete).
	dry, err := dryRun(q.Get("dryRun"))
	if err != nil {
		return nil, err
	}
	for _, v := range opts.DryRun {
		d, err := dryRun(v)
		if err != nil || v == "" {
			return nil, apierrors.Invalid("dryRun: Unsupported value: %q: supported values: \"All\"", v)
		}
		dry = dry || d
	}
	req := &apipb.DeleteRequest{Resource: t.resource, Namespace: t.namespace, GracePeriodSeconds: opts.GracePeriodSeconds, DryRun: dry}
	switch {
	case opts.PropagationPolicy != nil:
		req.PropagationPolicy = *opts.PropagationPolicy
	case opts.OrphanDependents != nil && *opts.OrphanDependents:
		req.PropagationPolicy = "Orphan"
	}
	if p := opts.Preconditions; p != nil {
		req.Preconditions = &apipb.Preconditions{}
		if p.UID != nil {
			req.Preconditions.Uid = *p.UID
		}
		if p.ResourceVersion != nil {
			req.Preconditions.ResourceVersion = *p.ResourceVersion
		}
	}
	return req, nil
}

// dryRun reads the dryRun query parameter: "All" or nothing.
func dryRun(v string) (bool, error) {
	switch v {
	case "":
		return false, nil
	case "All":
		return true, nil
	}
	return false, apierrors.Invalid("dryRun: Unsupported value: %q: supported values: \"All\"", v)
}

// tokenRequestFor gives a TokenRequest body the ServiceAccount's name from
// the URL (serviceaccounts/NAME/token), as the Create RPC expects.
func tokenRequestFor(body []byte, account string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, apierrors.Invalid("TokenRequest: %v", err)
	}
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["name"] = account
	m["metadata"] = md
	return json.Marshal(m)
}

// applyAtStored turns an apply configuration (YAML or JSON) written at
// apiVersion into the same at stored.
func applyAtStored(body []byte, apiVersion, stored string) ([]byte, error) {
	js, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, apierrors.Invalid("the apply configuration is not YAML or JSON: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil || doc == nil {
		return nil, apierrors.Invalid("the apply configuration must be an object")
	}
	if v, _ := doc["apiVersion"].(string); v != apiVersion {
		return nil, apierrors.Invalid("apiVersion: Invalid value: %q: the URL is of %s", v, apiVersion)
	}
	doc["apiVersion"] = stored
	return json.Marshal(doc)
}
