package dynamicadmission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kobune/kobune/api/admissionregistration"
	"github.com/kobune/kobune/apiserver/webhook"
)

// call sends a review and reads the answer, within the webhook's timeout.
func (w *Webhooks) call(ctx context.Context, hook *admissionregistration.Webhook, review *admissionReview) (*admissionResponse, error) {
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	b, err := w.caller.Post(ctx, clientConfig(&hook.ClientConfig), time.Duration(hook.TimeoutSeconds)*time.Second, body)
	if err != nil {
		return nil, err
	}
	var out admissionReview
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("the webhook's response is not an AdmissionReview: %w", err)
	}
	switch {
	case out.Response == nil:
		return nil, errors.New("the webhook's AdmissionReview has no response")
	case out.Response.UID != review.Request.UID:
		return nil, fmt.Errorf("expected response.uid=%q, got %q", review.Request.UID, out.Response.UID)
	}
	return out.Response, nil
}

// clientConfig is an admission webhook's address as the webhook package
// reads it.
func clientConfig(cc *admissionregistration.WebhookClientConfig) *webhook.ClientConfig {
	out := &webhook.ClientConfig{URL: cc.URL, CABundle: cc.CABundle}
	if s := cc.Service; s != nil {
		out.Service = &webhook.Service{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port}
	}
	return out
}
