package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/storage"
)

// MaxResponseBytes bounds what a webhook's answer may make the server
// hold (Kubernetes reads at most the same).
const MaxResponseBytes = 3 * 1024 * 1024

// ClientConfig is where a webhook is called: a URL, or a Service whose
// ready endpoint is called, and the CA bundle its certificate is checked
// against (the system's roots when empty). Admission webhooks and
// conversion webhooks both say it this way.
type ClientConfig struct {
	URL      *string
	Service  *Service
	CABundle []byte
}

// Service names a webhook's Service; Port defaults to 443.
type Service struct {
	Namespace, Name string
	Path            *string
	Port            *int32
}

// Caller calls webhooks: Post sends a body and reads the answer.
type Caller struct {
	// Store is read for a Service's ports and endpoints.
	Store *storage.Store

	mu      sync.Mutex
	clients map[string]*http.Client
}

// maxClients bounds the HTTP clients kept, one per CA bundle and server
// name.
const maxClients = 256

// idleConnsPerWebhook is how many kept-alive connections to one webhook
// wait for the next call (client-go's transports keep 25). With 8, 16
// concurrent creates kept opening new TLS connections: creates through a
// no-op webhook ran at 31 % of plain ones, with 25 at 55 % (make bench).
// What this can hold is bounded: maxClients × this many idle connections.
const idleConnsPerWebhook = 25

func (c *Caller) client(caBundle []byte, serverName string) (*http.Client, error) {
	if len(bytes.TrimSpace(caBundle)) == 0 {
		caBundle = nil // whitespace only is no bundle, as Kubernetes reads it
	}
	key := fmt.Sprintf("%x/%s", sha256.Sum256(caBundle), serverName)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[key]; ok {
		return cl, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caBundle != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("caBundle holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: idleConnsPerWebhook,
		IdleConnTimeout: 90 * time.Second, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if c.clients == nil || len(c.clients) >= maxClients {
		c.clients = map[string]*http.Client{}
	}
	c.clients[key] = cl
	return cl, nil
}

// address is where a webhook is called: its URL, or its Service's ready
// endpoint (the API server calls the pod behind the Service directly, as
// kube-apiserver does with --enable-aggregator-routing), with the name its
// certificate must carry (<service>.<namespace>.svc).
func (c *Caller) address(ctx context.Context, cc *ClientConfig) (url, serverName string, err error) {
	if cc.URL != nil {
		return *cc.URL, "", nil
	}
	s := cc.Service
	if s == nil {
		return "", "", errors.New("the webhook has neither a url nor a service")
	}
	port := int32(443)
	if s.Port != nil {
		port = *s.Port
	}
	p := ""
	if s.Path != nil {
		p = *s.Path
	}
	svc, err := registry.GetStored[*core.Service](ctx, c.Store, "services", s.Namespace, s.Name)
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
	slices, err := registry.ListStoredIn[*discovery.EndpointSlice](ctx, c.Store, "endpointslices", s.Namespace)
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

// Post sends body (JSON) to the webhook within timeout, which the webhook
// also learns from the URL (?timeout=10s, as kube-apiserver tells it), and
// returns its answer: a 200 of at most MaxResponseBytes.
func (c *Caller) Post(ctx context.Context, cc *ClientConfig, timeout time.Duration, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url, serverName, err := c.address(ctx, cc)
	if err != nil {
		return nil, err
	}
	cl, err := c.client(cc.CABundle, serverName)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	q := req.URL.Query()
	q.Set("timeout", timeout.String())
	req.URL.RawQuery = q.Encode()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := cl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the webhook's response: %w", err)
	}
	if len(b) > MaxResponseBytes {
		return nil, fmt.Errorf("the webhook's response is over %d bytes", MaxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the webhook answered %s: %.200s", resp.Status, b)
	}
	return b, nil
}
