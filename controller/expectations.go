package controller

import (
	"sync"
	"time"
)

// Expectations remember the creates and deletes a controller has asked
// for and not yet seen in its informer, per owner key (client-go's
// ControllerExpectations). Until they are seen, the controller does not
// trust its cache for that owner: a slow watch must not make it create the
// same pods twice. They expire after ExpectationsTimeout, in case a
// create failed in a way the controller never learnt of.
type Expectations struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*expectation
}

type expectation struct {
	adds, dels int
	at         time.Time
}

// ExpectationsTimeout is how long unmet expectations are trusted.
const ExpectationsTimeout = 5 * time.Minute

// NewExpectations returns empty expectations.
func NewExpectations() *Expectations {
	return &Expectations{now: time.Now, m: map[string]*expectation{}}
}

// Expect records that adds creates and dels deletes were asked for.
func (e *Expectations) Expect(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{adds: adds, dels: dels, at: e.now()}
}

// Observed lowers the count when the informer shows a create (add) or a
// delete; it is also how a failed request takes back its expectation.
func (e *Expectations) Observed(key string, add bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		if add {
			x.adds--
		} else {
			x.dels--
		}
	}
}

// Satisfied reports whether the owner's cache can be trusted: nothing
// pending, or the expectations expired.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	return !ok || (x.adds <= 0 && x.dels <= 0) || e.now().Sub(x.at) > ExpectationsTimeout
}

// Delete forgets an owner (it is gone).
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
