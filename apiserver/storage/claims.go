package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Claims are unique things an object holds — a Service's cluster IP, its
// node ports — each kept as a key of its own under ClaimPrefix whose value
// is the holder's key (Kubernetes keeps allocated Service IPs as IPAddress
// objects the same way). The store writes an object and the claims it
// gains or drops in one etcd transaction, so that two objects can never
// hold the same claim, and deleting an object releases its claims in the
// same write: nothing is allocated twice, nothing leaks, whoever writes.
//
// ClaimsFunc names the claims a stored value holds (as claim names, such
// as "ip/10.96.0.10"); RegisterClaims attaches one to a key prefix.
type ClaimsFunc func(value []byte) []string

// ClaimPrefix is where claims live.
const ClaimPrefix = Prefix + "claims/"

// ClaimedError says a claim is held by another object.
type ClaimedError struct {
	Claim  string // "ip/10.96.0.10"
	Holder string // the holder's key
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("%s is already held by %s", e.Claim, strings.TrimPrefix(e.Holder, Prefix))
}

type claimers struct {
	mu sync.RWMutex
	m  map[string]ClaimsFunc // key prefix → claims
}

// RegisterClaims makes every write of a key under prefix keep the claims
// f names.
func (s *Store) RegisterClaims(prefix string, f ClaimsFunc) {
	s.claims.mu.Lock()
	defer s.claims.mu.Unlock()
	if s.claims.m == nil {
		s.claims.m = map[string]ClaimsFunc{}
	}
	s.claims.m[prefix] = f
}

func (s *Store) claimsFor(key string) ClaimsFunc {
	s.claims.mu.RLock()
	defer s.claims.mu.RUnlock()
	for p, f := range s.claims.m {
		if strings.HasPrefix(key, p) {
			return f
		}
	}
	return nil
}

// ClaimsOf is the claims value would hold if stored at key.
func (s *Store) ClaimsOf(key string, value []byte) []string {
	if f := s.claimsFor(key); f != nil {
		return f(value)
	}
	return nil
}

// ClaimKey is the etcd key of a claim.
func ClaimKey(claim string) string { return ClaimPrefix + claim }

// Holder returns the key of the object holding claim ("" when free).
func (s *Store) Holder(ctx context.Context, claim string) (string, error) {
	kv, err := s.Get(ctx, ClaimKey(claim))
	if err == ErrNotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(kv.Value), nil
}

// Claims lists every claim and its holder's key.
func (s *Store) Claims(ctx context.Context, prefix string) (map[string]string, error) {
	kvs, _, err := s.List(ctx, ClaimKey(prefix))
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[strings.TrimPrefix(kv.Key, ClaimPrefix)] = string(kv.Value)
	}
	return out, nil
}

// claimChange is what a write does to claims: the ones to take (they must
// be free) and the ones to release.
type claimChange struct{ take, release []string }

func diffClaims(old, new []string) claimChange {
	var c claimChange
	for _, n := range new {
		if !slices.Contains(old, n) && !slices.Contains(c.take, n) {
			c.take = append(c.take, n)
		}
	}
	for _, o := range old {
		if !slices.Contains(new, o) && !slices.Contains(c.release, o) {
			c.release = append(c.release, o)
		}
	}
	return c
}

// txn adds the change to a transaction for holder: compares that the
// claims taken are free, puts them, deletes the released ones (only if
// holder still holds them).
func (c claimChange) apply(holder string, cmps []clientv3.Cmp, ops []clientv3.Op) ([]clientv3.Cmp, []clientv3.Op) {
	for _, t := range c.take {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(ClaimKey(t)), "=", 0))
		ops = append(ops, clientv3.OpPut(ClaimKey(t), holder))
	}
	for _, r := range c.release {
		ops = append(ops, clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Value(ClaimKey(r)), "=", holder)},
			[]clientv3.Op{clientv3.OpDelete(ClaimKey(r))}, nil))
	}
	return cmps, ops
}

// taken finds which claim of c.take another holder has, after a failed
// transaction (nil: none; the failure was the object's own compare).
func (s *Store) taken(ctx context.Context, c claimChange) error {
	for _, t := range c.take {
		h, err := s.Holder(ctx, t)
		if err != nil {
			return err
		}
		if h != "" {
			return &ClaimedError{Claim: t, Holder: h}
		}
	}
	return nil
}

// PutClaim takes claim for holder if it is free (repair); false if held.
func (s *Store) PutClaim(ctx context.Context, claim, holder string) (bool, error) {
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(ClaimKey(claim)), "=", 0)).
		Then(clientv3.OpPut(ClaimKey(claim), holder)).
		Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// DropClaim releases claim if holder still holds it (repair).
func (s *Store) DropClaim(ctx context.Context, claim, holder string) error {
	_, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(ClaimKey(claim)), "=", holder)).
		Then(clientv3.OpDelete(ClaimKey(claim))).
		Commit()
	return err
}
