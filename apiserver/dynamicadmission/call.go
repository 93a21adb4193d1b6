package dynamicadmission

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kobune/kobune/api/admissionregistration"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/storage"
)

// maxResponseBytes bounds what a webhook's answer may make the server
// hold (Kubernetes reads at most the same).
const maxResponseBytes = 3 * 1024 * 1024

// clients are HTTP clients by CA bundle and server name, reused across
// calls (a TLS handshake per request would dominate a webhook's cost);
// at most maxClients are kept.
type clients struct {
	mu sync.Mutex
	m  map[string]*http.Client
}

const maxClients = 256

// idleConnsPerWebhook is how many kept-alive connections to one webhook
// wait for the next call (client-go's transports keep 25). With 8, 16
// concurrent creates kept opening new TLS connections: creates through a
// no-op webhook ran at 31 % of plain ones, with 25 at 55 % (make bench).
// What this can hold is bounded: maxClients × this many idle connections.
const idleConnsPerWebhook = 25

func (c *clients) get(caBundle []byte, serverName string) (*http.Client, error) {
	key := fmt.Sprintf("%x/%s", sha256.Sum256(caBundle), serverName)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[key]; ok {
		return cl, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("caBundle holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: idleConnsPerWebhook,
		IdleConnTimeout: 90 * time.Second, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if c.m == nil || len(c.m) >= maxClients {
		c.m = map[string]*http.Client{}
	}
	c.m[key] = cl
	return cl, nil
}

// address is where a webhook is called: its URL, or its Service's ready
// endpoint (the API server calls the pod behind the Service directly, as
// kube-apiserver does with --enable-aggregator-routing), with the name its
// certificate must carry (<service>.<namespace>.svc).
func address(ctx context.Context, st *storage.Store, cc *admissionregistration.WebhookClientConfig) (url, serverName string, err error) {
	if cc.URL != nil {
		return *cc.URL, "", nil
	}
	s := cc.Service
	port := int32(443)
	if s.Port != nil {
		port = *s.Port
	}
	p := ""
	if s.Path != nil {
		p = *s.Path
	}
	svc, err := registry.GetStored[*core.Service](ctx, st, "services", s.Namespace, s.Name)
	if err != nil {
		return "", "", fmt.Errorf("service %s/%s: %w", s.Namespace, s.Name, err)
	}
	var sp *core.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return "", "", fmt.Errorf("service %s/%s has no port %d", s.Namespace, s.Name, port)
	}
	slices, err := registry.ListStoredIn[*discovery.EndpointSlice](ctx, st, "endpointslices", s.Namespace)
	if err != nil {
		return "", "", err
	}
	for _, es := range slices {
		if es.Labels[discovery.LabelServiceName] != s.Name {
			continue
		}
		var target int32
		for _, ep := range es.Ports {
			if ep.Port != nil && (ep.Name != nil && *ep.Name == sp.Name || sp.Name == "") {
				target = *ep.Port
			}
		}
		for _, e := range es.Endpoints {
			if target == 0 || len(e.Addresses) == 0 || e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			host := net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(target)))
			return "https://" + host + p, s.Name + "." + s.Namespace + ".svc", nil
		}
	}
	return "", "", fmt.Errorf("service %s/%s has no ready endpoint for port %d", s.Namespace, s.Name, port)
}

// call sends a review and reads the answer, within the webhook's timeout.
func (w *Webhooks) call(ctx context.Context, hook *admissionregistration.Webhook, review *admissionReview) (*admissionResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(hook.TimeoutSeconds)*time.Second)
	defer cancel()
	url, serverName, err := address(ctx, w.cfg.Store, &hook.ClientConfig)
	if err != nil {
		return nil, err
	}
	cl, err := w.clients.get(hook.ClientConfig.CABundle, serverName)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	// The webhook learns its deadline from the URL, as kube-apiserver
	// tells it (?timeout=10s).
	q := req.URL.Query()
	q.Set("timeout", (time.Duration(hook.TimeoutSeconds) * time.Second).String())
	req.URL.RawQuery = q.Encode()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := cl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the webhook's response: %w", err)
	}
	if len(b) > maxResponseBytes {
		return nil, fmt.Errorf("the webhook's response is over %d bytes", maxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the webhook answered %s: %.200s", resp.Status, b)
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
