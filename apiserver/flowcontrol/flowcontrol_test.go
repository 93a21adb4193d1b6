package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fc "github.com/kobune/kobune/api/flowcontrol"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/request"
)

// newWith builds a controller from the given objects instead of the
// bootstrap ones.
func newWith(t *testing.T, seats int, wait time.Duration, objs ...meta.Object) *Controller {
	t.Helper()
	c := New(Config{ServerConcurrencyLimit: seats, QueueWaitLimit: wait})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.have = map[string]map[string]meta.Object{"flowschemas": {}, "prioritylevelconfigurations": {}}
	for _, o := range objs {
		switch x := o.(type) {
		case *fc.FlowSchema:
			fc.SetDefaultsFlowSchema(x)
			if errs := fc.ValidateFlowSchema(x); len(errs) > 0 {
				t.Fatalf("flow schema %s: %v", x.Name, errs.ToError())
			}
			c.have["flowschemas"][x.Name] = x
		case *fc.PriorityLevelConfiguration:
			fc.SetDefaultsPriorityLevelConfiguration(x)
			if errs := fc.ValidatePriorityLevelConfiguration(x); len(errs) > 0 {
				t.Fatalf("priority level %s: %v", x.Name, errs.ToError())
			}
			c.have["prioritylevelconfigurations"][x.Name] = x
		}
	}
	c.rebuild()
	return c
}

func limited(name string, shares, lendable int32, borrow *int32, r fc.LimitResponse) *fc.PriorityLevelConfiguration {
	return &fc.PriorityLevelConfiguration{ObjectMeta: meta.ObjectMeta{Name: name, UID: "uid-" + name}, Spec: fc.PriorityLevelConfigurationSpec{
		Type: fc.PriorityLevelLimited, Limited: &fc.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares,
			LendablePercent: &lendable, BorrowingLimitPercent: borrow, LimitResponse: r}}}
}

func queuing(queues, hand, length int32) fc.LimitResponse {
	return fc.LimitResponse{Type: fc.LimitResponseQueue, Queuing: &fc.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: length}}
}

// forUsers sends the named users' requests to level, one flow per user.
func forUsers(name, level string, precedence int32, users ...string) *fc.FlowSchema {
	var subjects []fc.Subject
	for _, u := range users {
		subjects = append(subjects, fc.Subject{Kind: fc.SubjectUser, User: &fc.UserSubject{Name: u}})
	}
	return &fc.FlowSchema{ObjectMeta: meta.ObjectMeta{Name: name, UID: "uid-" + name}, Spec: fc.FlowSchemaSpec{
		PriorityLevelConfiguration: fc.PriorityLevelConfigurationReference{Name: level}, MatchingPrecedence: precedence,
		DistinguisherMethod: &fc.FlowDistinguisherMethod{Type: fc.ByUser},
		Rules: []fc.PolicyRulesWithSubjects{{Subjects: subjects, ResourceRules: []fc.ResourcePolicyRule{{Verbs: []string{"*"},
			APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"}}}}}}}
}

var listPods = request.Attributes{Verb: "list", Resource: "pods", Namespace: "default", APIVersion: "v1"}

// admitted is one request sent in the background: ran is closed once it
// holds a seat, err says why it did not.
type admitted struct {
	ran  chan struct{}
	done func()
	err  error
	end  chan struct{}
}

func send(ctx context.Context, c *Controller, user string) *admitted {
	return sendWide(ctx, c, user, 1)
}

// sendWide sends a request that holds width seats.
func sendWide(ctx context.Context, c *Controller, user string, width int) *admitted {
	a := &admitted{ran: make(chan struct{}), end: make(chan struct{})}
	go func() {
		defer close(a.end)
		attrs := listPods
		_, done, err := c.Admit(ctx, request.UserInfo{Name: user, Groups: []string{request.AllAuthenticated}}, &attrs, width)
		a.done, a.err = done, err
		if err == nil {
			close(a.ran)
		}
	}()
	return a
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (c *Controller) waitingIn(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.levels[name].waiting
}

// TestAFloodingFlowDoesNotStarveAnother is fair queuing's promise: one
// user with 40 requests queued ahead does not make another user's one
// request wait behind all of them.
func TestAFloodingFlowDoesNotStarveAnother(t *testing.T) {
	c := newWith(t, 1, time.Minute, limited("work", 1, 0, nil, queuing(8, 2, 100)), forUsers("users", "work", 100, "mallory", "alice"))
	ctx := context.Background()
	first := send(ctx, c, "mallory")
	<-first.ran
	var flood []*admitted
	for range 40 {
		flood = append(flood, send(ctx, c, "mallory"))
	}
	waitFor(t, "mallory's 40 requests queued", func() bool { return c.waitingIn("work") == 40 })
	alice := send(ctx, c, "alice")
	waitFor(t, "alice's request queued", func() bool { return c.waitingIn("work") == 41 })

	// One seat: release the running request and see who runs next, until
	// alice does.
	var finished []*admitted
	running := first
	for turn := 1; ; turn++ {
		running.done()
		var next *admitted
		waitFor(t, "the next request to run", func() bool {
			for _, a := range append(flood, alice) {
				select {
				case <-a.ran:
					if a != running && a.done != nil && !contains(finished, a) {
						next = a
						return true
					}
				default:
				}
			}
			return false
		})
		finished = append(finished, running)
		if next == alice {
			if turn > 2 {
				t.Fatalf("alice ran after %d of mallory's requests, want at most 1: her queue waited behind mallory's", turn-1)
			}
			break
		}
		running = next
	}
	alice.done()
	// The rest run one after another, in whatever order the queues give.
	for len(finished) < len(flood)+1 {
		waitFor(t, "mallory's remaining requests", func() bool {
			for _, a := range flood {
				select {
				case <-a.ran:
					if !contains(finished, a) {
						finished = append(finished, a)
						a.done()
						return true
					}
				default:
				}
			}
			return false
		})
	}
}

func contains(l []*admitted, a *admitted) bool {
	for _, x := range l {
		if x == a {
			return true
		}
	}
	return false
}

// TestQueueFullLevelThatRejectsAndWaitLimitAnswer429 checks each way a
// request is refused: its queue full, a level that does not queue, and
// waiting longer than the limit. A client that leaves while waiting
// leaves no trace in the queue.
func TestQueueFullLevelThatRejectsAndWaitLimitAnswer429(t *testing.T) {
	c := newWith(t, 2, 200*time.Millisecond,
		limited("queued", 1, 0, nil, queuing(1, 1, 2)), forUsers("q", "queued", 100, "qa"),
		limited("rejecting", 1, 0, nil, fc.LimitResponse{Type: fc.LimitResponseReject}), forUsers("r", "rejecting", 200, "ra"))
	ctx := context.Background()
	hold := send(ctx, c, "qa")
	<-hold.ran
	w1, w2 := send(ctx, c, "qa"), send(ctx, c, "qa")
	waitFor(t, "two queued", func() bool { return c.waitingIn("queued") == 2 })
	full := send(ctx, c, "qa")
	<-full.end
	if status.Code(full.err) != codes.ResourceExhausted {
		t.Fatalf("third request in a queue of two: %v, want ResourceExhausted (429)", full.err)
	}
	<-w1.end
	<-w2.end
	for _, w := range []*admitted{w1, w2} {
		if status.Code(w.err) != codes.ResourceExhausted {
			t.Fatalf("request that waited past the limit: %v, want ResourceExhausted (429)", w.err)
		}
	}
	if n := c.waitingIn("queued"); n != 0 {
		t.Fatalf("%d requests still counted in the queue after timing out", n)
	}

	rhold := send(ctx, c, "ra")
	<-rhold.ran
	rejected := send(ctx, c, "ra")
	<-rejected.end
	if status.Code(rejected.err) != codes.ResourceExhausted {
		t.Fatalf("a level that rejects, with its seat taken: %v, want ResourceExhausted", rejected.err)
	}

	gone, cancel := context.WithCancel(ctx)
	left := send(gone, c, "qa")
	waitFor(t, "queued", func() bool { return c.waitingIn("queued") == 1 })
	cancel()
	<-left.end
	if !errors.Is(left.err, context.Canceled) {
		t.Fatalf("client left while queued: %v, want context.Canceled", left.err)
	}
	hold.done()
	next := send(ctx, c, "qa")
	<-next.ran // the seat is free again: nothing stale holds it
	next.done()
	rhold.done()

	var rejectedByReason = map[string]int{}
	c.mu.Lock()
	for r, n := range c.levels["queued"].rejected {
		rejectedByReason["queued/"+r] = n
	}
	for r, n := range c.levels["rejecting"].rejected {
		rejectedByReason["rejecting/"+r] = n
	}
	c.mu.Unlock()
	want := map[string]int{"queued/" + ReasonQueueFull: 1, "queued/" + ReasonTimeOut: 2, "rejecting/" + ReasonConcurrencyLimit: 1}
	if fmt.Sprint(rejectedByReason) != fmt.Sprint(want) {
		t.Fatalf("rejections counted %v, want %v", rejectedByReason, want)
	}
}

// TestIdleSeatsAreLentAndComeBack: a level may run on another's idle
// lendable seats, and the lender gets them back as those requests end.
func TestIdleSeatsAreLentAndComeBack(t *testing.T) {
	c := newWith(t, 2, time.Minute,
		limited("lender", 1, 100, nil, queuing(4, 1, 10)), forUsers("l", "lender", 100, "la"),
		limited("borrower", 1, 0, nil, queuing(4, 1, 10)), forUsers("b", "borrower", 200, "ba"))
	ctx := context.Background()
	b1 := send(ctx, c, "ba")
	<-b1.ran
	b2 := send(ctx, c, "ba")
	<-b2.ran // the second on the lender's idle seat
	l1 := send(ctx, c, "la")
	waitFor(t, "the lender's request waits for its lent seat", func() bool { return c.waitingIn("lender") == 1 })
	b3 := send(ctx, c, "ba")
	waitFor(t, "the borrower queues a third", func() bool { return c.waitingIn("borrower") == 1 })
	b2.done() // the lent seat comes back: to its owner, not to the borrower
	<-l1.ran
	if n := c.waitingIn("borrower"); n != 1 {
		t.Fatalf("the borrower's third request ran on the seat its lender was waiting for (%d waiting)", n)
	}
	b1.done()
	<-b3.ran
	b3.done()
	l1.done()

	c = newWith(t, 2, time.Minute,
		limited("lender", 1, 100, nil, queuing(4, 1, 10)), forUsers("l", "lender", 100, "la"),
		limited("borrower", 1, 0, new(int32), queuing(4, 1, 10)), forUsers("b", "borrower", 200, "ba"))
	b1 = send(ctx, c, "ba")
	<-b1.ran
	send(ctx, c, "ba")
	waitFor(t, "a level with borrowingLimitPercent 0 queues instead of borrowing", func() bool { return c.waitingIn("borrower") == 1 })
}

// TestBootstrapClassifiesAsKubernetes: the built-in schemas send each
// kind of caller where kube-apiserver's do.
func TestBootstrapClassifiesAsKubernetes(t *testing.T) {
	c := New(Config{})
	auth := []string{request.AllAuthenticated}
	cases := []struct {
		user          request.UserInfo
		attrs         request.Attributes
		schema, level string
	}{
		{request.UserInfo{Name: "admin", Groups: []string{request.SystemPrivilegedGroup, request.AllAuthenticated}}, listPods, "exempt", "exempt"},
		{request.UserInfo{Name: "system:node:n1", Groups: []string{request.NodesGroup, request.AllAuthenticated}},
			request.Attributes{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "kube-node-lease", Name: "n1"}, "system-node-high", "node-high"},
		{request.UserInfo{Name: "system:node:n1", Groups: []string{request.NodesGroup, request.AllAuthenticated}}, listPods, "system-nodes", "system"},
		{request.UserInfo{Name: "system:kube-scheduler", Groups: auth},
			request.Attributes{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system", Name: "kube-scheduler"}, "system-leader-election", "leader-election"},
		{request.UserInfo{Name: "system:kube-scheduler", Groups: auth}, listPods, "kube-scheduler", "workload-high"},
		{request.UserInfo{Name: "system:kube-controller-manager", Groups: auth},
			request.Attributes{Verb: "update", Resource: "endpoints", Namespace: "default", Name: "web"}, "endpoint-controller", "workload-high"},
		{request.UserInfo{Name: "system:serviceaccount:kube-system:coredns", Groups: append([]string{"system:serviceaccounts"}, auth...)}, listPods, "kube-system-service-accounts", "workload-high"},
		{request.UserInfo{Name: "system:serviceaccount:team:app", Groups: append([]string{"system:serviceaccounts"}, auth...)}, listPods, "service-accounts", "workload-low"},
		{request.UserInfo{Name: "alice", Groups: auth}, listPods, "global-default", "global-default"},
		{request.UserInfo{Name: "system:anonymous", Groups: []string{request.AllUnauthenticated}}, request.Attributes{Verb: "get", Path: "/healthz"}, "probes", "exempt"},
		{request.UserInfo{Name: "system:anonymous", Groups: []string{request.AllUnauthenticated}}, listPods, "global-default", "global-default"},
	}
	for _, k := range cases {
		d, ok := c.Classify(k.user, &k.attrs)
		if !ok || d.FlowSchema != k.schema || d.PriorityLevel != k.level {
			t.Errorf("%s %s %s: schema %q level %q, want %q %q", k.user.Name, k.attrs.Verb, k.attrs.Resource+k.attrs.Path, d.FlowSchema, d.PriorityLevel, k.schema, k.level)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// 600 seats over shares 30+40+10+40+100+20+5 = 245: workload-low gets
	// ceil(600×100/245) = 245, catch-all ceil(600×5/245) = 13.
	if got := c.levels["workload-low"].limit; got != 245 {
		t.Errorf("workload-low's nominal limit %d, want 245", got)
	}
	if got := c.levels["catch-all"].limit; got != 13 {
		t.Errorf("catch-all's nominal limit %d, want 13", got)
	}
}

// TestChangingTheConfigurationKeepsWaitingRequests: requests queued when
// their level's queues are resized still run, and those of a level that
// is deleted run at once rather than hang.
func TestChangingTheConfigurationKeepsWaitingRequests(t *testing.T) {
	pl := limited("work", 1, 0, nil, queuing(4, 2, 10))
	fs := forUsers("users", "work", 100, "a", "b", "c")
	c := newWith(t, 1, time.Minute, pl, fs)
	ctx := context.Background()
	hold := send(ctx, c, "a")
	<-hold.ran
	b, cc := send(ctx, c, "b"), send(ctx, c, "c")
	waitFor(t, "two queued", func() bool { return c.waitingIn("work") == 2 })
	c.mu.Lock()
	resized := limited("work", 1, 0, nil, queuing(16, 4, 10))
	fc.SetDefaultsPriorityLevelConfiguration(resized)
	c.have["prioritylevelconfigurations"]["work"] = resized
	c.rebuild()
	c.mu.Unlock()
	if n := c.waitingIn("work"); n != 2 {
		t.Fatalf("%d waiting after the queues were resized, want 2", n)
	}
	c.mu.Lock()
	delete(c.have["prioritylevelconfigurations"], "work")
	c.rebuild()
	c.mu.Unlock()
	<-b.ran
	<-cc.ran
	b.done()
	cc.done()
	hold.done()
}

// TestListsHoldSeatsByTheirSize: a list of many objects holds several
// seats (one per 100 objects, at most the level's limit), so a user's large lists run a
// few at a time instead of all at once, and a small request waits for
// the seats they hold.
func TestListsHoldSeatsByTheirSize(t *testing.T) {
	c := newWith(t, 10, time.Minute, limited("work", 1, 0, nil, queuing(8, 2, 100)), forUsers("users", "work", 100, "mallory", "alice"))
	c.mu.Lock()
	c.counts["configmaps"], c.counts["secrets"] = 20000, 250
	c.mu.Unlock()
	for _, k := range []struct {
		attrs request.Attributes
		limit int64
		want  int
	}{
		{request.Attributes{Verb: "list", Resource: "configmaps"}, 0, 200},
		{request.Attributes{Verb: "list", Resource: "configmaps"}, 500, 5},
		{request.Attributes{Verb: "list", Resource: "secrets"}, 0, 3},
		{request.Attributes{Verb: "list", Resource: "pods"}, 0, 1},
		{request.Attributes{Verb: "get", Resource: "configmaps", Name: "x"}, 0, 1},
		{request.Attributes{Verb: "create", Resource: "configmaps"}, 0, 1},
	} {
		if got := c.Width(context.Background(), &k.attrs, k.limit); got != k.want {
			t.Errorf("%s %s (limit %d): width %d, want %d", k.attrs.Verb, k.attrs.Resource, k.limit, got, k.want)
		}
	}
	ctx := context.Background()
	big := sendWide(ctx, c, "mallory", 10)
	<-big.ran
	small := send(ctx, c, "alice")
	waitFor(t, "a one-seat request waits while a ten-seat list holds the level's ten", func() bool { return c.waitingIn("work") == 1 })
	big2 := sendWide(ctx, c, "mallory", 10)
	waitFor(t, "the second list queued", func() bool { return c.waitingIn("work") == 2 })
	big.done()
	// The queues take turns: either alice's request or the second list
	// runs now, never both (11 seats on a level of 10).
	var ran, other *admitted
	waitFor(t, "one of the two to run", func() bool {
		select {
		case <-small.ran:
			ran, other = small, big2
			return true
		case <-big2.ran:
			ran, other = big2, small
			return true
		default:
			return false
		}
	})
	time.Sleep(50 * time.Millisecond)
	select {
	case <-other.ran:
		t.Fatal("a ten-seat list ran beside a one-seat request on a level of ten")
	default:
	}
	ran.done()
	<-other.ran
	other.done()
	wide := sendWide(ctx, c, "alice", 50) // wider than the level: clamped to its 10
	<-wide.ran
	wide.done()
}

// TestARequestThatCanBorrowDoesNotWaitForARelease: a one-seat request
// that arrives while its level's queues hold a wide one (waiting for ten
// seats nobody can lend) runs at once on a seat another level lends,
// instead of waiting for some running request to end (under a flood of
// long lists, that was after its 15 s in the queue).
func TestARequestThatCanBorrowDoesNotWaitForARelease(t *testing.T) {
	c := newWith(t, 20, time.Minute,
		limited("work", 1, 0, nil, queuing(8, 2, 100)), forUsers("users", "work", 100, "mallory", "alice"),
		limited("idle", 1, 50, nil, queuing(8, 2, 100)), forUsers("others", "idle", 200, "nobody"))
	ctx := context.Background()
	running := sendWide(ctx, c, "mallory", 10) // the level's ten seats
	<-running.ran
	wide := sendWide(ctx, c, "mallory", 10) // "idle" lends only five
	waitFor(t, "the wide request queued", func() bool { return c.waitingIn("work") == 1 })
	small := send(ctx, c, "alice")
	select {
	case <-small.ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a one-seat request that could borrow waited in its queue with nothing ending")
	}
	small.done()
	running.done()
	<-wide.ran
	wide.done()
}
