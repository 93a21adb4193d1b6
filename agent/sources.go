package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kobune/kobune/agent/volume"
	"github.com/kobune/kobune/api/authorization"
	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/client"
)

// sources are the ConfigMaps and Secrets the node's pods use, each watched
// on its own — a watch with the field selector metadata.name=<name>, the
// kubelet's Watch strategy — for as long as a pod uses it. The agent never
// lists every Secret of the cluster: it reads only what its pods name.
// A change requeues the pods that use the object, so their volumes are
// rewritten within moments (the kubelet's periodic sync takes up to a
// minute or more).
type sources struct {
	client   *client.Client
	ctx      context.Context // the agent's: watches end with it
	requeue  func(podKey string)
	syncWait time.Duration

	mu      sync.Mutex
	watches map[sourceRef]*sourceWatch
	byPod   map[string][]sourceRef
	// tokens are the pods' ServiceAccount tokens, by pod uid, audience and
	// lifetime.
	tokens map[tokenKey]token
	// certs are the pods' podCertificate keys and certificates
	// (podcertificates.go), by pod uid and where they are written.
	certs map[certKey]*podCert
}

type tokenKey struct {
	pod, audience string
	seconds       int64
}

type token struct {
	value          string
	issued, expiry time.Time
}

type sourceRef struct{ kind, namespace, name string }

type sourceWatch struct {
	cancel context.CancelFunc
	pods   map[string]bool
	synced func() bool
	cm     *client.Informer[*core.ConfigMap]
	secret *client.Informer[*core.Secret]
}

func newSources(c *client.Client, requeue func(string)) *sources {
	return &sources{client: c, ctx: context.Background(), requeue: requeue, syncWait: 10 * time.Second,
		watches: map[sourceRef]*sourceWatch{}, byPod: map[string][]sourceRef{}, tokens: map[tokenKey]token{}, certs: map[certKey]*podCert{}}
}

// refs are the ConfigMaps and Secrets a pod names, in env and volumes
// (claims are read when the volume is set up).
func refs(pod *core.Pod) []sourceRef {
	var out []sourceRef
	for _, r := range core.PodReferences(pod) {
		if r.Kind == "ConfigMap" || r.Kind == "Secret" {
			out = append(out, sourceRef{r.Kind, pod.Namespace, r.Name})
		}
	}
	return out
}

// use registers what pod names (replacing what it named before) and
// starts the watches not yet running; the ones nobody uses any more stop.
func (s *sources) use(pod *core.Pod) {
	key := meta.Key(pod)
	now := refs(pod)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.byPod[key] {
		if w := s.watches[r]; w != nil {
			delete(w.pods, key)
		}
	}
	for _, r := range now {
		w := s.watches[r]
		if w == nil {
			w = s.start(r)
			s.watches[r] = w
		}
		w.pods[key] = true
	}
	s.byPod[key] = now
	s.gc()
}

// release forgets a pod; the watches only it used stop.
func (s *sources) release(podKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.byPod[podKey] {
		if w := s.watches[r]; w != nil {
			delete(w.pods, podKey)
		}
	}
	delete(s.byPod, podKey)
	s.gc()
}

// forgetTokens drops a pod's tokens (by uid) once it is gone.
func (s *sources) forgetTokens(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.tokens {
		if k.pod == uid {
			delete(s.tokens, k)
		}
	}
	for k := range s.certs {
		if k.pod == uid {
			delete(s.certs, k)
		}
	}
}

// Token implements volume.Sources: a TokenRequest for the pod's
// ServiceAccount, bound to the pod, kept until 80 % of its life has
// passed (or 24 hours), then requested again — the kubelet's rule, so a
// pod always finds a token that is valid for a while yet.
func (s *sources) Token(ctx context.Context, pod *core.Pod, audience string, seconds int64) (string, error) {
	k := tokenKey{pod.UID, audience, seconds}
	s.mu.Lock()
	t, ok := s.tokens[k]
	s.mu.Unlock()
	now := time.Now()
	if ok && now.Before(t.issued.Add(min(t.expiry.Sub(t.issued)*8/10, 24*time.Hour))) {
		return t.value, nil
	}
	spec := authorization.TokenRequestSpec{ExpirationSeconds: &seconds,
		BoundObjectRef: &authorization.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}
	if audience != "" {
		spec.Audiences = []string{audience}
	}
	st, err := s.client.CreateToken(ctx, pod.Namespace, core.PodServiceAccount(pod), spec)
	if err != nil {
		if ok && now.Before(t.expiry) {
			return t.value, nil // keep the one that still works; try again at the next sync
		}
		return "", errors.New(client.Message(err))
	}
	s.mu.Lock()
	s.tokens[k] = token{value: st.Token, issued: now, expiry: st.ExpirationTimestamp.Time}
	s.mu.Unlock()
	return st.Token, nil
}

func (s *sources) gc() {
	for r, w := range s.watches {
		if len(w.pods) == 0 {
			w.cancel()
			delete(s.watches, r)
		}
	}
}

// watching is the number of objects watched (for tests and metrics).
func (s *sources) watching() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches)
}

func (s *sources) start(r sourceRef) *sourceWatch {
	ctx, cancel := context.WithCancel(s.ctx)
	w := &sourceWatch{cancel: cancel, pods: map[string]bool{}}
	opts := client.ListOptions{FieldSelector: "metadata.name=" + r.name}
	notify := func() {
		s.mu.Lock()
		var keys []string
		for k := range w.pods {
			keys = append(keys, k)
		}
		s.mu.Unlock()
		for _, k := range keys {
			s.requeue(k)
		}
	}
	switch r.kind {
	case "ConfigMap":
		w.cm = client.NewInformer(client.For[*core.ConfigMap](s.client), r.namespace, opts)
		w.cm.AddHandler(client.Handler[*core.ConfigMap]{OnAdd: func(*core.ConfigMap) { notify() },
			OnUpdate: func(_, _ *core.ConfigMap) { notify() }, OnDelete: func(*core.ConfigMap) { notify() }})
		w.synced = w.cm.HasSynced
		go w.cm.Run(ctx)
	default:
		w.secret = client.NewInformer(client.For[*core.Secret](s.client), r.namespace, opts)
		w.secret.AddHandler(client.Handler[*core.Secret]{OnAdd: func(*core.Secret) { notify() },
			OnUpdate: func(_, _ *core.Secret) { notify() }, OnDelete: func(*core.Secret) { notify() }})
		w.synced = w.secret.HasSynced
		go w.secret.Run(ctx)
	}
	return w
}

// watch is the running watch of r, synced (waiting for it a moment when
// it just started).
func (s *sources) watch(ctx context.Context, r sourceRef) (*sourceWatch, error) {
	s.mu.Lock()
	w := s.watches[r]
	s.mu.Unlock()
	if w == nil {
		return nil, fmt.Errorf("%s %s/%s is not watched: no pod of this node names it", r.kind, r.namespace, r.name)
	}
	if w.synced() {
		return w, nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.syncWait)
	defer cancel()
	if !client.WaitForSync(wctx, w.synced) {
		return nil, fmt.Errorf("%s %s/%s: the watch did not sync within %v", r.kind, r.namespace, r.name, s.syncWait)
	}
	return w, nil
}

// ConfigMap implements volume.Sources.
func (s *sources) ConfigMap(ctx context.Context, namespace, name string) (*core.ConfigMap, error) {
	w, err := s.watch(ctx, sourceRef{"ConfigMap", namespace, name})
	if err != nil {
		return nil, err
	}
	if cm, ok := w.cm.Get(namespace, name); ok {
		return cm, nil
	}
	return nil, volume.ErrNotFound
}

// Secret implements volume.Sources.
func (s *sources) Secret(ctx context.Context, namespace, name string) (*core.Secret, error) {
	w, err := s.watch(ctx, sourceRef{"Secret", namespace, name})
	if err != nil {
		return nil, err
	}
	if sec, ok := w.secret.Get(namespace, name); ok {
		return sec, nil
	}
	return nil, volume.ErrNotFound
}

// Claim implements volume.Sources: read when a pod's volumes are made
// (a claim's binding does not change under a running pod).
func (s *sources) Claim(ctx context.Context, namespace, name string) (*core.PersistentVolumeClaim, error) {
	c, err := client.For[*core.PersistentVolumeClaim](s.client).Get(ctx, namespace, name)
	if client.IsNotFound(err) {
		return nil, volume.ErrNotFound
	}
	return c, err
}

// Volume implements volume.Sources.
func (s *sources) Volume(ctx context.Context, name string) (*core.PersistentVolume, error) {
	v, err := client.For[*core.PersistentVolume](s.client).Get(ctx, "", name)
	if client.IsNotFound(err) {
		return nil, volume.ErrNotFound
	}
	return v, err
}

// CSIDriver implements volume.Sources: read when a pod's CSI volumes are
// published (as the kubelet reads it through its informer).
func (s *sources) CSIDriver(ctx context.Context, name string) (*storage.CSIDriver, error) {
	d, err := client.For[*storage.CSIDriver](s.client).Get(ctx, "", name)
	if client.IsNotFound(err) {
		return nil, volume.ErrNotFound
	}
	return d, err
}

// ClusterTrustBundles implements volume.Sources: listed when a pod's
// volumes are made (every node may read them).
func (s *sources) ClusterTrustBundles(ctx context.Context) ([]*certificates.ClusterTrustBundle, error) {
	bundles, _, err := client.For[*certificates.ClusterTrustBundle](s.client).List(ctx, "", client.ListOptions{})
	return bundles, err
}
