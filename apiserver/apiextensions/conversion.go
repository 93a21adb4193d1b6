package apiextensions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	apiext "github.com/kobune/kobune/api/apiextensions"
	v "github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/apiserver/webhook"
)

// A definition whose versions differ in more than apiVersion names a
// conversion webhook (spec.conversion.strategy Webhook): the API server
// sends it a ConversionReview of the objects to convert and the version
// wanted, and takes back the converted objects, as kube-apiserver's
// apiextensions-apiserver does (its webhook converter):
//
//   - objects already at the wanted version are not sent; a list's objects
//     go in one review;
//   - the answer must hold as many objects as were sent, each of the wanted
//     apiVersion and the same kind, name, namespace and uid;
//   - of the metadata, only labels and annotations may change (checked as
//     any labels and annotations are); the rest is the original's;
//   - what the wanted version's schema does not name is pruned.
//
// Any failure fails the request that needed the conversion (500, "conversion
// webhook for <group>/<version>, Kind=<kind> failed: ..."): there is no
// failure policy for conversion.

// conversionTimeout is how long a conversion webhook may take: the 30 s of
// kube-apiserver's webhook clients (a definition cannot say otherwise).
const conversionTimeout = 30 * time.Second

// reviewVersions are the ConversionReview versions Kobune speaks: the first
// of the definition's conversionReviewVersions that is one of them is sent.
var reviewVersions = []string{"v1", "v1beta1"}

// webhookConverter converts a definition's objects by its webhook.
type webhookConverter struct {
	caller        *webhook.Caller
	cc            *webhook.ClientConfig
	reviewVersion string
	group, kind   string
	// schemas are each version's schema, by apiVersion, to prune the
	// webhook's answers.
	schemas map[string]*apiext.JSONSchemaProps
}

// newWebhookConverter returns the converter of crd, or nil when its
// strategy is None.
func newWebhookConverter(crd *apiext.CustomResourceDefinition, caller *webhook.Caller) *webhookConverter {
	cv := crd.Spec.Conversion
	if cv == nil || cv.Strategy != apiext.WebhookConverter || cv.Webhook == nil || cv.Webhook.ClientConfig == nil || caller == nil {
		return nil
	}
	c := &webhookConverter{caller: caller, group: crd.Spec.Group, kind: crd.Spec.Names.Kind, schemas: map[string]*apiext.JSONSchemaProps{}}
	cc := cv.Webhook.ClientConfig
	c.cc = &webhook.ClientConfig{URL: cc.URL, CABundle: cc.CABundle}
	if s := cc.Service; s != nil {
		c.cc.Service = &webhook.Service{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port}
	}
	for _, rv := range cv.Webhook.ConversionReviewVersions {
		if slices.Contains(reviewVersions, rv) {
			c.reviewVersion = rv
			break
		}
	}
	for i := range crd.Spec.Versions {
		ver := &crd.Spec.Versions[i]
		if ver.Schema != nil {
			c.schemas[crd.Spec.Group+"/"+ver.Name] = ver.Schema.OpenAPIV3Schema
		}
	}
	return c
}

// conversionReview is apiextensions.k8s.io's ConversionReview (v1 and
// v1beta1 have the same fields).
type conversionReview struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Request    *conversionRequest  `json:"request,omitempty"`
	Response   *conversionResponse `json:"response,omitempty"`
}

type conversionRequest struct {
	UID               string            `json:"uid"`
	DesiredAPIVersion string            `json:"desiredAPIVersion"`
	Objects           []json.RawMessage `json:"objects"`
}

type conversionResponse struct {
	UID              string            `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"result"`
}

// convert returns objs at apiVersion: those at another version converted
// by the webhook, in one review.
func (c *webhookConverter) convert(ctx context.Context, objs [][]byte, apiVersion string) ([][]byte, error) {
	var idx []int
	var originals []map[string]any
	from := ""
	for i, b := range objs {
		m, err := decodeNumbers(b)
		if err != nil {
			return nil, fmt.Errorf("conversion of %s: %w", c.kind, err)
		}
		if av, _ := m["apiVersion"].(string); av != apiVersion {
			idx = append(idx, i)
			originals = append(originals, m)
			if from == "" {
				from = av
			}
		}
	}
	if len(idx) == 0 {
		return objs, nil
	}
	gvk := fmt.Sprintf("%s, Kind=%s", from, c.kind)
	converted, err := c.call(ctx, objs, idx, apiVersion)
	if err != nil {
		return nil, fmt.Errorf("conversion webhook for %s failed: %w", gvk, err)
	}
	if len(converted) != len(idx) {
		return nil, fmt.Errorf("conversion webhook for %s returned %d objects, expected %d", gvk, len(converted), len(idx))
	}
	out := slices.Clone(objs)
	for n, raw := range converted {
		b, err := c.checked(originals[n], raw, apiVersion)
		if err != nil {
			return nil, fmt.Errorf("conversion webhook for %s returned invalid converted object at index %d: %w", gvk, n, err)
		}
		out[idx[n]] = b
	}
	return out, nil
}

// call sends the review of objs[idx] and returns the converted objects.
func (c *webhookConverter) call(ctx context.Context, objs [][]byte, idx []int, apiVersion string) ([]json.RawMessage, error) {
	if c.reviewVersion == "" {
		return nil, errors.New("no supported conversion review versions (Kobune sends v1 or v1beta1)")
	}
	review := conversionReview{APIVersion: "apiextensions.k8s.io/" + c.reviewVersion, Kind: "ConversionReview",
		Request: &conversionRequest{UID: uuid.NewString(), DesiredAPIVersion: apiVersion}}
	for _, i := range idx {
		review.Request.Objects = append(review.Request.Objects, objs[i])
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	b, err := c.caller.Post(ctx, c.cc, conversionTimeout, body)
	if err != nil {
		return nil, err
	}
	var answer conversionReview
	if err := json.Unmarshal(b, &answer); err != nil {
		return nil, fmt.Errorf("the webhook's answer is not a ConversionReview: %w", err)
	}
	switch r := answer.Response; {
	case answer.Kind != "ConversionReview" || answer.APIVersion != review.APIVersion:
		return nil, fmt.Errorf("expected webhook response of %s, Kind=ConversionReview, got %s, Kind=%s", review.APIVersion, answer.APIVersion, answer.Kind)
	case r == nil:
		return nil, errors.New("no response provided")
	case r.UID != review.Request.UID:
		return nil, fmt.Errorf("expected response.uid=%q, got %q", review.Request.UID, r.UID)
	case r.Result.Status != "Success" && r.Result.Message != "":
		return nil, errors.New(r.Result.Message)
	case r.Result.Status != "Success":
		return nil, fmt.Errorf("response.result.status was '%s', not 'Success'", r.Result.Status)
	}
	return answer.Response.ConvertedObjects, nil
}

// checked is one converted object as it is kept: checked against the
// original, its metadata the original's but for labels and annotations,
// pruned by apiVersion's schema.
func (c *webhookConverter) checked(original map[string]any, raw json.RawMessage, apiVersion string) ([]byte, error) {
	m, err := decodeNumbers(raw)
	if err != nil {
		return nil, err
	}
	if av, _ := m["apiVersion"].(string); av != apiVersion {
		return nil, fmt.Errorf("invalid groupVersion (expected %s, received %s)", apiVersion, av)
	}
	if k, _ := m["kind"].(string); k != c.kind {
		return nil, fmt.Errorf("invalid kind (expected %s, received %s)", c.kind, k)
	}
	om, _ := original["metadata"].(map[string]any)
	cm, ok := m["metadata"].(map[string]any)
	if !ok {
		return nil, errors.New("missing metadata in converted object")
	}
	for _, f := range []string{"name", "namespace", "uid"} {
		if om[f] != cm[f] {
			return nil, fmt.Errorf("must have the same %s: %v != %v", f, om[f], cm[f])
		}
	}
	md := make(map[string]any, len(om))
	for k, val := range om {
		md[k] = val
	}
	delete(md, "labels")
	delete(md, "annotations")
	for _, f := range []string{"labels", "annotations"} {
		val, ok := cm[f]
		if !ok || val == nil {
			continue
		}
		fields, ok := val.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("invalid metadata.%s of type %T in converted object", f, val)
		}
		strs := make(map[string]string, len(fields))
		for k, x := range fields {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("metadata.%s[%s] must be a string, but is %T in converted object", f, k, x)
			}
			strs[k] = s
		}
		var errs v.ErrorList
		if f == "labels" {
			errs = v.ValidateLabels(strs, v.NewPath("metadata", f))
		} else {
			errs = v.ValidateAnnotations(strs, v.NewPath("metadata", f))
		}
		if len(errs) > 0 {
			return nil, errs.ToError()
		}
		md[f] = fields
	}
	m["metadata"] = md
	var pruned []string
	prune(m, rootForPruning(c.schemas[apiVersion]), "", &pruned)
	return json.Marshal(m)
}

// decodeNumbers decodes a JSON object keeping numbers' digits.
func decodeNumbers(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("an object must be a JSON object")
	}
	return m, nil
}
