package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Errors the store returns; callers test them with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrConflict = errors.New("conflict: the object has been modified")
	ErrExpired  = errors.New("expired: the requested revision has been compacted")
	// ErrFuture: a read at a revision the store has not reached (a
	// resourceVersion or continue token from elsewhere, or made up).
	ErrFuture = errors.New("too large resource version")
	// ErrMoved fails a write whose Also object changed since it was read:
	// the caller admits the write again on the new state.
	ErrMoved = errors.New("an object written together with this one changed meanwhile")
	// ErrTooSlow closes a watch whose reader fell behind: its buffer stayed
	// full for SlowWatcherBudget. The client resumes from its last revision.
	ErrTooSlow = errors.New("watch closed: the client did not keep up with the events")
)

// IsNoSpace reports whether err is etcd's "database space exceeded": its
// NOSPACE alarm is raised and every write fails until space is freed.
func IsNoSpace(err error) bool {
	return err != nil && strings.Contains(err.Error(), "database space exceeded")
}

// A watch buffers at most WatchBuffer events for its reader; when the
// buffer stays full for SlowWatcherBudget the watch is closed (ErrTooSlow)
// instead of letting etcd's client queue events without limit — a watcher
// that stopped reading once grew the API server by 190 MiB a minute.
// Kubernetes' watch cache closes unresponsive watchers the same way.
var (
	WatchBuffer       = 100
	SlowWatcherBudget = 5 * time.Second
	// WatchBufferBytes bounds the same buffer in bytes (each event counts
	// its key, value and previous value): 100 events of objects near the
	// 1.5 MiB limit would otherwise be 300 MiB for one watcher. An event
	// larger than the bound alone still passes, on its own.
	WatchBufferBytes int64 = 16 << 20
)

// KV is one stored object: its key, its bytes and its modification revision.
type KV struct {
	Key      string
	Value    []byte
	Revision int64
	// Stale: the value was stored under an older encryption key or
	// provider; an update writes it again even if nothing changed.
	Stale bool
}

// Transformer turns values into what etcd stores and back (encryption at
// rest, apiserver/encryption). FromStorage reports a value it read with
// anything but its current key as stale.
type Transformer interface {
	ToStorage(key string, plain []byte) ([]byte, error)
	FromStorage(key string, stored []byte) (plain []byte, stale bool, err error)
}

// Store reads and writes objects in etcd.
type Store struct {
	cli          *clientv3.Client
	watchCli     *clientv3.Client
	claims       claimers
	transformers map[string]Transformer // key prefix → transformer; set before use
}

// SetTransformer makes every value under prefix pass through t on its way
// to and from etcd. It is set once, before the store is used.
func (s *Store) SetTransformer(prefix string, t Transformer) {
	if s.transformers == nil {
		s.transformers = map[string]Transformer{}
	}
	s.transformers[prefix] = t
}

func (s *Store) transformerFor(key string) Transformer {
	for p, t := range s.transformers {
		if strings.HasPrefix(key, p) {
			return t
		}
	}
	return nil
}

// toStorage is what etcd stores for value at key.
func (s *Store) toStorage(key string, value []byte) ([]byte, error) {
	if t := s.transformerFor(key); t != nil {
		out, err := t.ToStorage(key, value)
		if err != nil {
			return nil, fmt.Errorf("encrypt %s: %w", key, err)
		}
		return out, nil
	}
	return value, nil
}

// fromStorage is the value etcd's bytes at key stand for.
func (s *Store) fromStorage(key string, stored []byte) ([]byte, bool, error) {
	if t := s.transformerFor(key); t != nil && stored != nil {
		return t.FromStorage(key, stored)
	}
	return stored, false, nil
}

func (s *Store) kv(kv *mvccpb.KeyValue) (KV, error) {
	v, stale, err := s.fromStorage(string(kv.Key), kv.Value)
	if err != nil {
		return KV{}, err
	}
	return KV{Key: string(kv.Key), Value: v, Revision: kv.ModRevision, Stale: stale}, nil
}

// New returns a store that reads and writes through cli and watches through
// watchCli (which may be the same client; it must be a network client,
// since every Watch opens its own watch stream).
func New(cli, watchCli *clientv3.Client) *Store { return &Store{cli: cli, watchCli: watchCli} }

// Client returns the etcd client (for health checks and compaction).
func (s *Store) Client() *clientv3.Client { return s.cli }

// Also is another object written in the same transaction as a create or
// update, only if it is still at Revision: a ResourceQuota charged for
// the write, so that the object and the charge land together or not at
// all.
type Also struct {
	Key      string
	Value    []byte
	Revision int64
	// Unchanged makes it a guard without a write: no key under the prefix
	// Key was written after Revision (a cached view still holds).
	Unchanged bool
}

// withAlso adds the Also writes to a transaction.
func (s *Store) withAlso(also []Also, cmps []clientv3.Cmp, ops []clientv3.Op) ([]clientv3.Cmp, []clientv3.Op, error) {
	for _, a := range also {
		if a.Unchanged {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(a.Key), "<", a.Revision+1).WithPrefix())
			continue
		}
		stored, err := s.toStorage(a.Key, a.Value)
		if err != nil {
			return nil, nil, err
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(a.Key), "=", a.Revision))
		ops = append(ops, clientv3.OpPut(a.Key, string(stored)))
	}
	return cmps, ops, nil
}

// alsoMoved reports whether an Also object is no longer at its revision.
func (s *Store) alsoMoved(ctx context.Context, also []Also) bool {
	for _, a := range also {
		if a.Unchanged {
			kvs, _, err := s.List(ctx, a.Key)
			if err != nil {
				return true
			}
			for _, kv := range kvs {
				if kv.Revision > a.Revision {
					return true
				}
			}
			continue
		}
		if kv, err := s.Get(ctx, a.Key); err != nil || kv.Revision != a.Revision {
			return true
		}
	}
	return false
}

// Create stores value at key if the key does not exist, and returns the
// new revision; the also objects are written with it (ErrMoved if one
// changed).
func (s *Store) Create(ctx context.Context, key string, value []byte, also ...Also) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err // the client is gone (a killed leader): write nothing for it
	}
	stored, err := s.toStorage(key, value)
	if err != nil {
		return 0, err
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}
	ops := []clientv3.Op{clientv3.OpPut(key, string(stored))}
	var change claimChange
	if f := s.claimsFor(key); f != nil {
		change = diffClaims(nil, f(value))
		cmps, ops = change.apply(key, cmps, ops)
	}
	if cmps, ops, err = s.withAlso(also, cmps, ops); err != nil {
		return 0, err
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd create %s: %w", key, err)
	}
	if !resp.Succeeded {
		if _, err := s.Get(ctx, key); err == nil {
			return 0, ErrExists
		}
		if s.alsoMoved(ctx, also) {
			return 0, ErrMoved
		}
		if err := s.taken(ctx, change); err != nil {
			return 0, err
		}
		return 0, ErrExists
	}
	return resp.Header.Revision, nil
}

// Get reads one key.
func (s *Store) Get(ctx context.Context, key string) (KV, error) {
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return KV{}, fmt.Errorf("etcd get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return KV{}, ErrNotFound
	}
	return s.kv(resp.Kvs[0])
}

// List reads every key under prefix and returns the revision of the read.
func (s *Store) List(ctx context.Context, prefix string) ([]KV, int64, error) {
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("etcd list %s: %w", prefix, err)
	}
	out := make([]KV, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		if out[i], err = s.kv(kv); err != nil {
			return nil, 0, err
		}
	}
	return out, resp.Header.Revision, nil
}

// Count is how many keys are under prefix (etcd counts them without
// sending any): what API Priority and Fairness estimates a list's cost by.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("etcd count %s: %w", prefix, err)
	}
	return resp.Count, nil
}

// ListPage reads at most limit keys under prefix from start on (a key
// under prefix; "" is the first), at revision rev (0: the current one),
// for paginated and exact-revision lists. It returns the revision read,
// how many keys follow the ones read (etcd counts the whole range in the
// same request) and whether any do. A compacted rev is ErrExpired.
func (s *Store) ListPage(ctx context.Context, prefix, start string, rev, limit int64) (kvs []KV, read, after int64, more bool, err error) {
	if start == "" {
		start = prefix
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(limit))
	}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := s.cli.Get(ctx, start, opts...)
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil, 0, 0, false, fmt.Errorf("%w (revision %d)", ErrExpired, rev)
	}
	if errors.Is(err, rpctypes.ErrFutureRev) {
		cur, _ := s.Revision(ctx)
		return nil, 0, 0, false, fmt.Errorf("%w: %d, current: %d", ErrFuture, rev, cur)
	}
	if err != nil {
		return nil, 0, 0, false, fmt.Errorf("etcd list %s: %w", prefix, err)
	}
	out := make([]KV, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		if out[i], err = s.kv(kv); err != nil {
			return nil, 0, 0, false, err
		}
	}
	read = resp.Header.Revision
	if rev > 0 {
		read = rev
	}
	return out, read, resp.Count - int64(len(resp.Kvs)), resp.More, nil
}

// Update replaces value at key if its revision is still expected; the
// also objects are written with it (ErrMoved if one changed).
func (s *Store) Update(ctx context.Context, key string, value []byte, expected int64, also ...Also) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err // the client is gone (a killed leader): write nothing for it
	}
	stored, err := s.toStorage(key, value)
	if err != nil {
		return 0, err
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", expected)}
	ops := []clientv3.Op{clientv3.OpPut(key, string(stored))}
	change, err := s.claimChangeOf(ctx, key, expected, value)
	if err != nil {
		return 0, err
	}
	cmps, ops = change.apply(key, cmps, ops)
	if cmps, ops, err = s.withAlso(also, cmps, ops); err != nil {
		return 0, err
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd update %s: %w", key, err)
	}
	if !resp.Succeeded {
		if kv, err := s.Get(ctx, key); err == nil && kv.Revision == expected && s.alsoMoved(ctx, also) {
			return 0, ErrMoved
		}
		return 0, s.failure(ctx, key, expected, change)
	}
	return resp.Header.Revision, nil
}

// Delete removes key if its revision is still expected, and returns the
// revision of the deletion.
func (s *Store) Delete(ctx context.Context, key string, expected int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err // the client is gone (a killed leader): write nothing for it
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", expected)}
	ops := []clientv3.Op{clientv3.OpDelete(key)}
	change, err := s.claimChangeOf(ctx, key, expected, nil)
	if err != nil {
		return 0, err
	}
	cmps, ops = change.apply(key, cmps, ops)
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd delete %s: %w", key, err)
	}
	if !resp.Succeeded {
		return 0, s.missingOrConflict(ctx, key)
	}
	return resp.Header.Revision, nil
}

// claimChangeOf is what writing value (nil: deleting) over the object at
// key, expected at revision expected, does to its claims. The old value is
// read here; the write's own compare makes sure it is the one replaced.
func (s *Store) claimChangeOf(ctx context.Context, key string, expected int64, value []byte) (claimChange, error) {
	f := s.claimsFor(key)
	if f == nil {
		return claimChange{}, nil
	}
	old, err := s.Get(ctx, key)
	if err != nil {
		return claimChange{}, err
	}
	if old.Revision != expected {
		return claimChange{}, ErrConflict
	}
	var now []string
	if value != nil {
		now = f(value)
	}
	return diffClaims(f(old.Value), now), nil
}

// failure explains a failed update: the object moved or is gone, or a
// claim it would take is held.
func (s *Store) failure(ctx context.Context, key string, expected int64, change claimChange) error {
	if kv, err := s.Get(ctx, key); err != nil || kv.Revision != expected {
		return s.missingOrConflict(ctx, key)
	}
	if err := s.taken(ctx, change); err != nil {
		return err
	}
	return ErrConflict
}

func (s *Store) missingOrConflict(ctx context.Context, key string) error {
	if _, err := s.Get(ctx, key); errors.Is(err, ErrNotFound) {
		return ErrNotFound
	}
	return ErrConflict
}

// Revision returns the store's current revision.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	resp, err := s.cli.Get(ctx, "/kobune/revision-probe")
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// Compact drops history before rev; watches from older revisions expire.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	_, err := s.cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("etcd compact %d: %w", rev, err)
	}
	return nil
}

// EventType says what happened to a key.
type EventType int

// Event types.
const (
	Put EventType = iota
	Deleted
	Progress // no change: the store has reached Revision (a bookmark)
)

// Event is one change seen by a watch.
type Event struct {
	Type     EventType
	Key      string
	Value    []byte // the new value (Put) or nil
	Prev     []byte // the value before (nil on create)
	Created  bool
	Revision int64
}

// Watcher streams events under a prefix.
type Watcher struct {
	Events <-chan Event
	// Err is valid after Events closes: ErrExpired, the context's error, or
	// an etcd error.
	Err func() error
	// RequestProgress asks etcd for a Progress event with the current
	// revision; it arrives only after every earlier event.
	RequestProgress func(context.Context) error
}

// Watch streams changes under prefix after revision from (0: from now).
func (s *Store) Watch(ctx context.Context, prefix string, from int64) *Watcher {
	w := clientv3.NewWatcher(s.watchCli)
	// buf is the watch's buffer (WatchBuffer events, WatchBufferBytes
	// bytes); a relay hands its events to the reader one at a time and
	// counts the bytes out again as the reader takes them.
	buf := make(chan Event, WatchBuffer)
	events := make(chan Event)
	b := &watchBytes{freed: make(chan struct{}, 1)}
	var werr error
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV()}
	if from > 0 {
		opts = append(opts, clientv3.WithRev(from+1))
	}
	reader := ctx
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	wch := w.Watch(ctx, prefix, opts...)
	go func() {
		// The relay delivers what is buffered in order even after the
		// producer has ended (too slow, compacted, an etcd error): the
		// reader then resumes from the last event it got. It stops only
		// when the reader has gone — never between two events it still
		// delivers, which would leave a gap the reader cannot see (a
		// first version selected on the producer's context here and
		// dropped events at random once it ended).
		defer close(events)
		for ev := range buf {
			select {
			case events <- ev:
				b.release(ev.size())
				continue
			case <-reader.Done():
			}
			// The reader has gone: drop the rest, and close events only
			// after the producer has ended, so that Err is set.
			b.release(ev.size())
			for ev := range buf {
				b.release(ev.size())
			}
		}
	}()
	go func() {
		defer close(buf)
		defer w.Close()
		defer cancel()
		for resp := range wch {
			if resp.CompactRevision != 0 || errors.Is(resp.Err(), rpctypes.ErrCompacted) {
				werr = fmt.Errorf("%w (revision %d; oldest available %d)", ErrExpired, from, resp.CompactRevision)
				return
			}
			if err := resp.Err(); err != nil {
				werr = err
				return
			}
			if resp.IsProgressNotify() {
				if werr = send(ctx, buf, b, Event{Type: Progress, Revision: resp.Header.Revision}); werr != nil {
					return
				}
				continue
			}
			for _, ev := range resp.Events {
				e, err := s.convert(ev)
				if err != nil {
					werr = err
					return
				}
				if werr = send(ctx, buf, b, e); werr != nil {
					return
				}
			}
		}
		if werr == nil {
			werr = ctx.Err()
		}
	}()
	return &Watcher{
		Events: events,
		Err:    func() error { return werr },
		// etcd finds the watch stream by the metadata of the context the
		// watch was made with (WithRequireLeader's): a progress request
		// with another context reached no stream, and no bookmark was
		// ever sent.
		RequestProgress: func(context.Context) error { return w.RequestProgress(ctx) },
	}
}

// send puts ev in the watch's buffer, waiting at most SlowWatcherBudget
// for room (events and bytes).
func send(ctx context.Context, ch chan<- Event, b *watchBytes, ev Event) error {
	deadline := time.Now().Add(SlowWatcherBudget)
	if err := b.reserve(ctx, ev.size(), deadline); err != nil {
		return err
	}
	select {
	case ch <- ev:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case ch <- ev:
		return nil
	case <-t.C:
		return fmt.Errorf("%w (%d events waiting for %v)", ErrTooSlow, cap(ch), SlowWatcherBudget)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// size is what an event holds in a watch's buffer.
func (e *Event) size() int64 { return int64(len(e.Key) + len(e.Value) + len(e.Prev)) }

// watchBytes counts the bytes in a watch's buffer.
type watchBytes struct {
	mu    sync.Mutex
	held  int64
	freed chan struct{} // a token after every release
}

// reserve waits until n more bytes fit in WatchBufferBytes (an event
// alone always fits) and counts them, or fails at the deadline.
func (b *watchBytes) reserve(ctx context.Context, n int64, deadline time.Time) error {
	for {
		b.mu.Lock()
		if b.held == 0 || b.held+n <= WatchBufferBytes {
			b.held += n
			b.mu.Unlock()
			return nil
		}
		held := b.held
		b.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			return fmt.Errorf("%w (%d bytes waiting for %v)", ErrTooSlow, held, SlowWatcherBudget)
		}
		t := time.NewTimer(wait)
		select {
		case <-b.freed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// release gives n bytes back once the reader has the event.
func (b *watchBytes) release(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
	select {
	case b.freed <- struct{}{}:
	default:
	}
}

func (s *Store) convert(ev *clientv3.Event) (Event, error) {
	out := Event{Key: string(ev.Kv.Key), Revision: ev.Kv.ModRevision}
	if ev.PrevKv != nil {
		prev, _, err := s.fromStorage(out.Key, ev.PrevKv.Value)
		if err != nil {
			return out, err
		}
		out.Prev = prev
	}
	if ev.Type == mvccpb.DELETE {
		out.Type = Deleted
		return out, nil
	}
	out.Type = Put
	v, _, err := s.fromStorage(out.Key, ev.Kv.Value)
	if err != nil {
		return out, err
	}
	out.Value = v
	out.Created = ev.IsCreate()
	return out, nil
}
