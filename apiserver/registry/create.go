package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/servicealloc"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// Create implements the Create RPC.
func (s *Registry) Create(ctx context.Context, req *apipb.CreateRequest) (*apipb.ObjectResponse, error) {
	if create, ok := s.cfg.Creators[req.Resource]; ok {
		return create(ctx, req)
	}
	if req.Resource == client.EvictionSubresource {
		return s.createEviction(ctx, req)
	}
	k, o, warnings, err := decodeRequest(ctx, s.cfg.Kinds, req.Resource, req.Namespace, req.Object, req.FieldValidation)
	if err != nil {
		return nil, err
	}
	ctx, admitted := admission.WithWarnings(ctx)
	if req.DryRun {
		ctx = admission.WithDryRun(ctx)
		resp, err := dryRunCreate(ctx, s.admission, k, o, warnings)
		if resp != nil {
			resp.Warnings = append(resp.Warnings, *admitted...)
		}
		return resp, err
	}
	b, err := s.create(ctx, k, o)
	if err != nil {
		return nil, err
	}
	return &apipb.ObjectResponse{Object: b, Warnings: append(warnings, *admitted...)}, nil
}

// KobuneStrict is Kobune's own field validation mode (kobectl --strict):
// Strict, and a Kubernetes field Kobune does not support is an error too.
const KobuneStrict = "KobuneStrict"

// decodeRequest checks size and kind, collects warnings for unknown and
// unsupported fields (errors as fieldValidation says) and fills the
// namespace.
func decodeRequest(ctx context.Context, kinds *scheme.Kinds, resource, namespace string, raw []byte, fieldValidation string) (*scheme.Kind, meta.Object, []string, error) {
	k, ok := kinds.ByResource(resource)
	if !ok {
		return nil, nil, nil, apierrors.Invalid("unknown resource %q (see kobectl api-resources)", resource)
	}
	if len(raw) > MaxObjectBytes {
		return nil, nil, nil, TooLarge(len(raw))
	}
	switch fieldValidation {
	case "", "Warn", "Strict", "Ignore", KobuneStrict:
	default:
		return nil, nil, nil, apierrors.Invalid("fieldValidation %q: must be Warn, Strict or Ignore (or %s)", fieldValidation, KobuneStrict)
	}
	if c := k.Custom; c != nil && c.Convert != nil && !bytes.HasPrefix(raw, []byte(`{"apiVersion":"`+k.APIVersion+`"`)) {
		// An object of a custom kind's other served version, converted to
		// the storage version by the kind's webhook (any front door).
		var tm meta.TypeMeta
		if json.Unmarshal(raw, &tm) == nil && tm.APIVersion != "" && tm.APIVersion != k.APIVersion {
			if _, served := k.ServedAt(tm.APIVersion); served {
				out, err := c.Convert(ctx, [][]byte{raw}, k.APIVersion)
				if err != nil {
					return nil, nil, nil, conversionFailed(err)
				}
				raw = out[0]
			}
		}
	}
	// Fast path: a strict decode succeeds when every field is known, which
	// is what typed clients always send. Only otherwise is the body walked
	// again to name every field it does not know.
	o, unknown, err := k.DecodeStrict(raw)
	if err != nil { // as kube-apiserver: 400, the body cannot be read as the kind
		return nil, nil, nil, apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "%s in version %q cannot be handled as a %s: %v", k.Kind, k.APIVersion, k.Kind, err)
	}
	tm := o.GetTypeMeta()
	if tm.Kind != "" && tm.Kind != k.Kind {
		return nil, nil, nil, apierrors.Invalid("kind %q does not match resource %q (expected kind %s)", tm.Kind, resource, k.Kind)
	}
	if tm.APIVersion != "" && tm.APIVersion != k.APIVersion {
		// A custom kind's other served versions differ in apiVersion only
		// (conversion None): an object read at one, or stored before the
		// storage version moved, is the same object at the stored one.
		if _, served := k.ServedAt(tm.APIVersion); k.Custom == nil || !served {
			return nil, nil, nil, apierrors.Invalid("apiVersion %q is not served for kind %s: use %q", tm.APIVersion, k.Kind, k.APIVersion)
		}
	}
	*tm = meta.TypeMeta{APIVersion: k.APIVersion, Kind: k.Kind}
	var warnings []string
	// A key twice in one object: Go's decoder kept the last; Kubernetes'
	// strict decoding names it, beside the unknown fields.
	var dups []string
	if fieldValidation != "Ignore" {
		dups = scheme.DuplicateFields(raw)
	}
	if (unknown || len(dups) > 0) && fieldValidation != "Ignore" {
		var generic map[string]any
		if err := json.Unmarshal(raw, &generic); err != nil {
			return nil, nil, nil, apierrors.Invalid("request body is not a JSON object: %v", err)
		}
		// A field Kubernetes does not have is a typo: under Strict (what
		// kubectl sends by default) it is refused as kube-apiserver refuses
		// it. A Kubernetes field Kobune does not support is a warning,
		// and an error only under Kobune's own strict mode.
		var typos, unsupported []string
		if unknown {
			typos, unsupported = scheme.CheckFields(k, generic)
		}
		typos = append(typos, dups...)
		if len(typos) > 0 && (fieldValidation == "Strict" || fieldValidation == KobuneStrict) {
			return nil, nil, nil, apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "%s in version %q cannot be handled as a %s: strict decoding error: %s",
				k.Kind, k.APIVersion, k.Kind, strings.Join(typos, ", "))
		}
		if len(unsupported) > 0 && fieldValidation == KobuneStrict {
			var errs validation.ErrorList
			for _, u := range unsupported {
				path, _, _ := strings.Cut(u, ": ")
				errs = append(errs, &validation.Error{Type: validation.Forbidden, Field: path, Detail: "not supported by kobune (" + KobuneStrict + " field validation)"})
			}
			return nil, nil, nil, admission.InvalidError(fmt.Sprintf("%s %q is invalid: %v", k.Kind, o.GetObjectMeta().Name, errs.ToError()), errs)
		}
		warnings = append(typos, unsupported...)
	}
	m := o.GetObjectMeta()
	switch {
	case !k.Namespaced && m.Namespace != "":
		return nil, nil, nil, apierrors.Invalid("metadata.namespace: Forbidden: %s is cluster-scoped and takes no namespace", k.Kind)
	case k.Namespaced && m.Namespace == "":
		m.Namespace = namespace
		if m.Namespace == "" {
			m.Namespace = "default"
		}
	case k.Namespaced && namespace != "" && m.Namespace != namespace:
		return nil, nil, nil, apierrors.Invalid("metadata.namespace: Invalid value: %q: does not match the namespace of the request (%q)", m.Namespace, namespace)
	}
	return k, o, warnings, nil
}

// TooLarge refuses an object over MaxObjectBytes.
func TooLarge(n int) error {
	return apierrors.WithReason(codes.ResourceExhausted, apierrors.ReasonRequestEntityTooLarge, "object is %.2f MiB, over the limit of %.1f MiB per object: keep large data out of the API (in an image or a volume)",
		float64(n)/(1<<20), float64(MaxObjectBytes)/(1<<20))
}

// prepareForCreate sets the fields the server owns on a new object.
func prepareForCreate(k *scheme.Kind, o meta.Object) error {
	m := o.GetObjectMeta()
	if m.Name == "" && m.GenerateName != "" {
		m.Name = m.GenerateName + randomSuffix()
	}
	m.UID = uuid.NewString()
	m.CreationTimestamp = meta.Now()
	m.ResourceVersion = ""
	m.Generation = 1
	m.DeletionTimestamp = nil
	m.DeletionGracePeriodSeconds = nil
	*o.GetTypeMeta() = meta.TypeMeta{APIVersion: k.APIVersion, Kind: k.Kind}
	if !strategyFor(k).keepStatusOnCreate && (k.HasStatus || k.Custom == nil) {
		resetStatus(o)
	}
	return nil
}

// finishCreate fills status that follows from the spec after defaulting.
func finishCreate(k *scheme.Kind, o meta.Object) {
	if f := strategyFor(k).finishCreate; f != nil {
		f(o)
	}
}

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = suffixAlphabet[int(b[i])%len(suffixAlphabet)]
	}
	return string(b)
}

// admitCreate runs everything before the write: server fields, admission,
// size check. It returns the bytes to store.
func admitCreate(ctx context.Context, chain *admission.Chain, k *scheme.Kind, o meta.Object) ([]byte, error) {
	if err := prepareForCreate(k, o); err != nil {
		return nil, err
	}
	if err := chain.Admit(ctx, &admission.Attributes{Operation: admission.Create, Kind: k, Object: o}); err != nil {
		return nil, err
	}
	finishCreate(k, o)
	b, err := encodeForStorage(o)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode %s: %v", k.Kind, err)
	}
	if len(b) > MaxObjectBytes {
		return nil, TooLarge(len(b))
	}
	return b, nil
}

// create admits and stores a new object; it returns the object as stored.
// A claim (storage/claims.go) that another object took meanwhile is
// allocated again when the server chose it, and an error on the field
// when the client asked for it.
func (s *Registry) create(ctx context.Context, k *scheme.Kind, o meta.Object) ([]byte, error) {
	var orig meta.Object
	if strategyFor(k).allocates || s.quotas.mayCharge(o.GetObjectMeta().Namespace) {
		orig = copyObject(k, o)
	}
	fresh := false
	for attempt := 0; ; attempt++ {
		actx, charges := admission.WithQuotaCharges(ctx, fresh)
		b, err := admitCreate(actx, s.admission, k, o)
		if err != nil {
			return nil, err
		}
		also, err := alsoWrites(charges)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "encode quota charges: %v", err)
		}
		key := objectKey(k, o)
		rev, err := s.store.Create(ctx, key, b, also...)
		if errors.Is(err, storage.ErrMoved) {
			if orig == nil || attempt >= maxQuotaRetries {
				return nil, status.Errorf(codes.Aborted, "the ResourceQuotas of namespace %s changed while this %s was admitted: try again", o.GetObjectMeta().Namespace, k.Kind)
			}
			// A quota moved since it was judged: judge again, on the store.
			fresh, o = true, copyObject(k, orig)
			continue
		}
		var claimed *storage.ClaimedError
		if errors.As(err, &claimed) {
			if orig == nil { // nothing was picked here (an IPAddress's claim is its name)
				return nil, servicealloc.ClaimedError(o, claimed)
			}
			asked, _ := encodeForStorage(orig)
			if attempt < 5 && !slices.Contains(s.store.ClaimsOf(key, asked), claimed.Claim) {
				o = copyObject(k, orig) // picked here, taken by a concurrent create: pick again
				continue
			}
			return nil, servicealloc.ClaimedError(o, claimed)
		}
		if err != nil {
			return nil, apierrors.FromStorage(err, k, o.GetObjectMeta().Name)
		}
		return withRevision(b, rev), nil
	}
}

// maxQuotaRetries bounds how often one write is judged again because the
// quotas it charges moved (each retry reads them fresh; only a steady
// stream of concurrent writes to the same quota can use them all up).
const maxQuotaRetries = 20

func dryRunCreate(ctx context.Context, chain *admission.Chain, k *scheme.Kind, o meta.Object, warnings []string) (*apipb.ObjectResponse, error) {
	if _, err := admitCreate(ctx, chain, k, o); err != nil {
		return nil, err
	}
	b, err := scheme.Encode(o)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return &apipb.ObjectResponse{Object: b, Warnings: warnings}, nil
}

// IsAlreadyExists: the object exists.
func IsAlreadyExists(err error) bool { return status.Code(err) == codes.AlreadyExists }

// IsConflict: the write lost to another (a stale resourceVersion).
func IsConflict(err error) bool { return status.Code(err) == codes.Aborted }
