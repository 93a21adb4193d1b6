// Package flowcontrol is API Priority and Fairness, the API server's
// overload protection (kube-apiserver's k8s.io/apiserver/pkg/util/flowcontrol):
// every request is classified by the first FlowSchema that matches it
// (match.go) into a priority level and a flow; each limited level has a
// share of the server's seats (--max-requests-inflight +
// --max-mutating-requests-inflight), may lend idle seats to others and
// borrow theirs, and queues what it cannot run at once in shuffle-sharded
// queues, so that one flow (one user, one namespace) cannot crowd out
// another of the same level (dispatch.go). What finds its queue full, or
// waits too long, is refused with 429 and Retry-After. The configuration
// is the FlowSchema and PriorityLevelConfiguration objects (api/flowcontrol),
// followed from the store (config.go).
package flowcontrol
