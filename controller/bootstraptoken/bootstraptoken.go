// Package bootstraptoken holds kube-controller-manager's two controllers
// of bootstrap tokens: the bootstrap signer, which signs kube-public's
// cluster-info ConfigMap (the cluster's CA and address) with every token
// that may sign, so that a joining machine that knows a token can trust
// what it reads there (kobeadm join); and the token cleaner, which deletes
// a token's Secret when it expires. Tokens themselves are
// client.BootstrapToken; the API server authenticates them.
package bootstraptoken

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Names of the two controllers, in logs (Kubernetes' names).
const (
	SignerName  = "bootstrap-signer"
	CleanerName = "token-cleaner"
)

// Signer keeps cluster-info's jws-kubeconfig-<id> signatures, one per
// token that may sign and has not expired.
type Signer struct {
	client *client.Client
	tokens *client.Informer[*core.Secret]
	info   *client.Informer[*core.ConfigMap]
	Loop   *reconcile.Loop
}

// NewSigner returns the bootstrap signer (one key: cluster-info).
func NewSigner(c *client.Client, inf *controller.Informers) *Signer {
	s := &Signer{client: c, tokens: inf.BootstrapTokens, info: inf.ClusterInfo}
	s.Loop = reconcile.NewLoop(SignerName, s, 1)
	queue := func() { s.Loop.Queue.Add(client.ClusterInfoName) }
	inf.BootstrapTokens.AddHandler(client.Handler[*core.Secret]{OnAdd: func(*core.Secret) { queue() },
		OnUpdate: func(_, _ *core.Secret) { queue() }, OnDelete: func(*core.Secret) { queue() }})
	inf.ClusterInfo.AddHandler(client.Handler[*core.ConfigMap]{OnAdd: func(*core.ConfigMap) { queue() },
		OnUpdate: func(_, _ *core.ConfigMap) { queue() }})
	return s
}

// Reconcile implements reconcile.Reconciler: it signs cluster-info's
// kubeconfig with each signing token and drops the signatures of tokens
// that are gone or expired. A signature is deterministic (HS256 of the
// same header and content), so an unchanged cluster-info is not written.
func (s *Signer) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	cm, ok := s.info.Get(client.ClusterInfoNamespace, client.ClusterInfoName)
	if !ok {
		return reconcile.Result{}, nil
	}
	content, ok := cm.Data[client.ClusterInfoKubeconfig]
	if !ok {
		return reconcile.Result{}, nil
	}
	want := map[string]string{}
	for k, v := range cm.Data {
		if !strings.HasPrefix(k, client.ClusterInfoJWSPrefix) {
			want[k] = v
		}
	}
	now := time.Now()
	var next time.Duration
	for _, sec := range s.tokens.List() {
		b, ok := client.ParseBootstrapTokenSecret(sec)
		if !ok || b.Expired(now) || !slices.Contains(b.Usages, "signing") {
			continue
		}
		sig, err := client.SignClusterInfo(content, b)
		if err != nil {
			return reconcile.Result{}, err
		}
		want[client.ClusterInfoJWSPrefix+b.ID] = sig
		if left := b.Expires.Sub(now); !b.Expires.IsZero() && (next == 0 || left < next) {
			next = left + time.Second // its signature goes when it expires
		}
	}
	if !maps.Equal(want, cm.Data) {
		updated := *cm
		updated.Data = want
		if _, err := client.For[*core.ConfigMap](s.client).Update(ctx, &updated); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// Cleaner deletes expired tokens (keys: token Secret names).
type Cleaner struct {
	client *client.Client
	tokens *client.Informer[*core.Secret]
	Loop   *reconcile.Loop
}

// NewCleaner returns the token cleaner.
func NewCleaner(c *client.Client, inf *controller.Informers) *Cleaner {
	tc := &Cleaner{client: c, tokens: inf.BootstrapTokens}
	tc.Loop = reconcile.NewLoop(CleanerName, tc, 1)
	inf.BootstrapTokens.AddHandler(client.Handler[*core.Secret]{OnAdd: func(s *core.Secret) { tc.Loop.Queue.Add(s.Name) },
		OnUpdate: func(_, s *core.Secret) { tc.Loop.Queue.Add(s.Name) }})
	return tc
}

// Reconcile implements reconcile.Reconciler: an expired token's Secret is
// deleted (its precondition the UID seen, so a token made again under the
// same name stays); one that expires later is looked at again then.
func (tc *Cleaner) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	sec, ok := tc.tokens.Get(client.BootstrapTokenNamespace, name)
	if !ok {
		return reconcile.Result{}, nil
	}
	b, ok := client.ParseBootstrapTokenSecret(sec)
	if !ok || b.Expires.IsZero() {
		return reconcile.Result{}, nil
	}
	if left := time.Until(b.Expires); left > 0 {
		return reconcile.Result{RequeueAfter: left + time.Second}, nil
	}
	err := client.For[*core.Secret](tc.client).Delete(ctx, client.BootstrapTokenNamespace, name, client.DeleteOptions{UID: sec.UID})
	if client.IsNotFound(err) || client.IsConflict(err) {
		err = nil
	}
	return reconcile.Result{}, err
}
