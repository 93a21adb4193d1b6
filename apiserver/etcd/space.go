package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultQuotaBytes is etcd's default backend quota (2 GiB).
const DefaultQuotaBytes = 2 << 30

// Space watches etcd's NOSPACE alarm. etcd raises it when its database file
// reaches the quota; from then on every write fails ("database space
// exceeded") while reads and deletes still work. etcd does not clear it by
// itself: the history must be compacted, the file defragmented (deleted
// objects leave free pages, not a smaller file) and the alarm disarmed.
// The API server does all three once the live data fits again, so that
// deleting objects is all an operator has to do (docs/operations.md).
type Space struct {
	cli      *clientv3.Client // a network client: Status needs an endpoint
	quota    int64
	interval time.Duration
	logf     func(string, ...any)
	// report is told the alarm and the sizes after every check.
	report func(alarmed bool, size, inUse, quota int64)

	mu       sync.Mutex
	alarmed  bool
	size     int64 // the database file
	sizeUsed int64 // the pages holding live data
}

// State returns whether the alarm is raised and the database sizes, as last seen.
func (sp *Space) State() (alarmed bool, size, used int64) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.alarmed, sp.size, sp.sizeUsed
}

// Describe is the alarm in words, with what to do.
func (sp *Space) Describe() string {
	_, size, used := sp.State()
	return fmt.Sprintf("etcd raised its NOSPACE alarm: the database (%d MiB, %d MiB of it live data) reached its quota of %d MiB, so every write fails while reads and deletes work; delete objects you do not need, and the API server compacts, defragments and clears the alarm by itself once the live data is below 90%% of the quota",
		size>>20, used>>20, sp.quota>>20)
}

// run checks the alarm every interval and recovers when it can.
func (sp *Space) Run(ctx context.Context) {
	t := time.NewTicker(sp.interval)
	defer t.Stop()
	for {
		if err := sp.check(ctx); err != nil && ctx.Err() == nil {
			sp.logf("etcd space check: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (sp *Space) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	alarms, err := sp.cli.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("list alarms: %w", err)
	}
	alarmed := false
	for _, a := range alarms.Alarms {
		alarmed = alarmed || a.Alarm == etcdserverpb.AlarmType_NOSPACE
	}
	st, err := sp.status(ctx)
	if err != nil {
		return err
	}
	sp.mu.Lock()
	was := sp.alarmed
	sp.alarmed, sp.size, sp.sizeUsed = alarmed, st.DbSize, st.DbSizeInUse
	sp.mu.Unlock()
	sp.report(alarmed, st.DbSize, st.DbSizeInUse, sp.quota)
	if !alarmed {
		return nil
	}
	if !was {
		sp.logf("%s", sp.Describe())
	}
	return sp.recover(ctx)
}

func (sp *Space) status(ctx context.Context) (*clientv3.StatusResponse, error) {
	eps := sp.cli.Endpoints()
	if len(eps) == 0 {
		return nil, errors.New("no etcd endpoint")
	}
	st, err := sp.cli.Status(ctx, eps[0])
	if err != nil {
		return nil, fmt.Errorf("etcd status: %w", err)
	}
	return st, nil
}

// recover compacts all history, and once the live data is below 90% of
// the quota, defragments and disarms the alarm.
func (sp *Space) recover(ctx context.Context) error {
	rev, err := sp.cli.Get(ctx, "/kobune/revision-probe")
	if err != nil {
		return fmt.Errorf("read revision: %w", err)
	}
	// Watches from before this revision expire and their clients relist:
	// the price of getting writes back.
	if _, err := sp.cli.Compact(ctx, rev.Header.Revision, clientv3.WithCompactPhysical()); err != nil && !strings.Contains(err.Error(), "compacted") {
		return fmt.Errorf("compact: %w", err)
	}
	st, err := sp.status(ctx)
	if err != nil {
		return err
	}
	if st.DbSizeInUse >= sp.quota/10*9 {
		return nil // still too full: waiting for deletes
	}
	sp.logf("etcd: live data is %d MiB of the %d MiB quota again: defragmenting and clearing the NOSPACE alarm", st.DbSizeInUse>>20, sp.quota>>20)
	for _, ep := range sp.cli.Endpoints() {
		if _, err := sp.cli.Defragment(ctx, ep); err != nil {
			return fmt.Errorf("defragment %s: %w", ep, err)
		}
	}
	alarms, err := sp.cli.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("list alarms: %w", err)
	}
	for _, a := range alarms.Alarms {
		if a.Alarm != etcdserverpb.AlarmType_NOSPACE {
			continue
		}
		if _, err := sp.cli.AlarmDisarm(ctx, (*clientv3.AlarmMember)(a)); err != nil {
			return fmt.Errorf("disarm the NOSPACE alarm of member %x: %w", a.MemberID, err)
		}
	}
	if st, err = sp.status(ctx); err != nil {
		return err
	}
	sp.mu.Lock()
	sp.alarmed, sp.size, sp.sizeUsed = false, st.DbSize, st.DbSizeInUse
	sp.mu.Unlock()
	sp.report(false, st.DbSize, st.DbSizeInUse, sp.quota)
	sp.logf("etcd: NOSPACE alarm cleared; writes work again")
	return nil
}

// NewSpace watches the alarm of b's etcd, whose quota is quota, every
// interval; report hears each check's result (the metrics).
func NewSpace(b *Backend, quota int64, interval time.Duration, logf func(string, ...any), report func(alarmed bool, size, inUse, quota int64)) *Space {
	return &Space{cli: b.WatchClient, quota: quota, interval: interval, logf: logf, report: report}
}
