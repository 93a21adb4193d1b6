package controller

import (
	"context"
	"sync"
	"time"

	"github.com/kobune/kobune/client/reconcile"
)

// Runner is a controller the Manager runs: its Loop.
type Runner interface {
	Run(ctx context.Context)
}

// Manager runs the shared informers and a set of controllers' loops, and
// the event writer, for as long as its context lasts.
type Manager struct {
	Informers *Informers
	// Metrics are every loop's reconcile counts, durations and queue depth.
	Metrics *Metrics
	loops   []Runner
	extra   []func(ctx context.Context)
}

// NewManager returns a manager over the informers.
func NewManager(inf *Informers) *Manager { return &Manager{Informers: inf, Metrics: NewMetrics()} }

// Add adds a controller's loop; a *reconcile.Loop also reports to m.Metrics.
func (m *Manager) Add(r Runner) {
	if l, ok := r.(*reconcile.Loop); ok {
		l.Observe = func(result string, d time.Duration) { m.Metrics.observe(l.Name, result, d) }
		m.Metrics.watchQueue(l)
	}
	m.loops = append(m.loops, r)
}

// Go adds a background function (the event writer).
func (m *Manager) Go(f func(ctx context.Context)) { m.extra = append(m.extra, f) }

// Run starts the informers, waits for their caches, then runs every loop
// until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	m.Informers.Run(ctx)
	var wg sync.WaitGroup
	for _, f := range m.extra {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	if !m.Informers.WaitForSync(ctx) {
		wg.Wait()
		return
	}
	for _, l := range m.loops {
		wg.Add(1)
		go func() { defer wg.Done(); l.Run(ctx) }()
	}
	wg.Wait()
}
