package authorizer

import (
	"fmt"
	"sync"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/apiserver/request"
)

// Node is Kubernetes' node authorizer. For a user system:node:<name> in
// group system:nodes it allows reading a Secret, ConfigMap or claim only
// when a pod bound to that node names it (and a PersistentVolume only when
// such a claim is bound to it), following a graph of pods; everything
// else an agent does is checked against NodeRules (what a kubelet and
// kube-proxy need). Which object an agent may write (its own Node and
// Lease, its pods' status) is NodeRestriction admission's business, as in
// Kubernetes. Other users: no opinion.
type Node struct {
	mu sync.RWMutex
	// pods: namespace/name → the pod's node and what it names.
	pods map[string]nodePod
	// refs: node → "Kind namespace/name" → how many of its pods name it.
	refs map[string]map[string]int
	// claimVolume: claim namespace/name → the PersistentVolume bound to it.
	claimVolume map[string]string
	// Fallback, when set, is asked before a graph miss is denied: the graph
	// follows a watch and may lag a pod bound a moment ago, which the API
	// server answers from storage.
	Fallback func(node string, a *request.Attributes) bool
}

type nodePod struct {
	node string
	refs []string
}

// NewNode is a node authorizer with an empty graph.
func NewNode() *Node {
	return &Node{pods: map[string]nodePod{}, refs: map[string]map[string]int{}, claimVolume: map[string]string{}}
}

func refKey(kind, ns, name string) string { return kind + " " + ns + "/" + name }

// podRefs are the graph keys of what a pod names.
func podRefs(p *core.Pod) []string {
	var out []string
	for _, r := range core.PodReferences(p) {
		out = append(out, refKey(r.Kind, p.Namespace, r.Name))
	}
	return out
}

// SetPod records a pod (only a pod bound to a node adds edges).
func (n *Node) SetPod(p *core.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	n.removePod(key)
	if p.Spec.NodeName == "" {
		return
	}
	e := nodePod{node: p.Spec.NodeName, refs: podRefs(p)}
	n.pods[key] = e
	m := n.refs[e.node]
	if m == nil {
		m = map[string]int{}
		n.refs[e.node] = m
	}
	for _, r := range e.refs {
		m[r]++
	}
}

// DeletePod forgets a pod.
func (n *Node) DeletePod(namespace, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.removePod(namespace + "/" + name)
}

func (n *Node) removePod(key string) {
	e, ok := n.pods[key]
	if !ok {
		return
	}
	delete(n.pods, key)
	m := n.refs[e.node]
	for _, r := range e.refs {
		if m[r]--; m[r] <= 0 {
			delete(m, r)
		}
	}
	if len(m) == 0 {
		delete(n.refs, e.node)
	}
}

// SetClaim records the volume a claim is bound to ("" for none).
func (n *Node) SetClaim(namespace, name, volume string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if volume == "" {
		delete(n.claimVolume, namespace+"/"+name)
		return
	}
	n.claimVolume[namespace+"/"+name] = volume
}

// ResetGraph forgets every pod and claim (before a relist).
func (n *Node) ResetGraph() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pods, n.refs, n.claimVolume = map[string]nodePod{}, map[string]map[string]int{}, map[string]string{}
}

// graphKinds are the resources the graph decides, by their kind.
var graphKinds = map[string]string{"secrets": "Secret", "configmaps": "ConfigMap", "persistentvolumeclaims": "PersistentVolumeClaim", "persistentvolumes": "PersistentVolume",
	"serviceaccounts": "ServiceAccount"}

// Authorize implements Authorizer.
func (n *Node) Authorize(u request.UserInfo, a *request.Attributes) (Decision, string) {
	node := u.NodeName()
	if node == "" {
		return NoOpinion, ""
	}
	if kind, ok := graphKinds[a.Resource]; ok && a.APIGroup == "" && a.Subresource == "" {
		if a.Verb != "get" && a.Verb != "list" && a.Verb != "watch" {
			return Deny, fmt.Sprintf("node %q may only read %s", node, a.Resource)
		}
		if a.Name == "" {
			return Deny, fmt.Sprintf("node %q may only read single %s (by name, or with the field selector metadata.name=...), not all of them", node, a.Resource)
		}
		if n.related(node, kind, a.Namespace, a.Name) || (n.Fallback != nil && n.Fallback(node, a)) {
			return Allow, fmt.Sprintf("Node: a pod bound to %q names %s %s", node, kind, a.Name)
		}
		return Deny, fmt.Sprintf("no relationship found between node %q and this object (no pod bound to the node names %s %s/%s)", node, kind, a.Namespace, a.Name)
	}
	if a.Resource == "serviceaccounts" && a.Subresource == "token" && a.APIGroup == "" {
		// Tokens only for the ServiceAccount of a pod bound to the node (the
		// request itself must be bound to that pod: NodeRestriction, in the
		// token handler).
		if a.Verb == "create" && (n.related(node, "ServiceAccount", a.Namespace, a.Name) || (n.Fallback != nil && n.Fallback(node, a))) {
			return Allow, fmt.Sprintf("Node: a pod bound to %q runs as ServiceAccount %s", node, a.Name)
		}
		return Deny, fmt.Sprintf("no relationship found between node %q and ServiceAccount %s/%s (no pod bound to the node runs as it)", node, a.Namespace, a.Name)
	}
	q := &rbac.Request{Verb: a.Verb, APIGroup: a.APIGroup, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name, Path: a.Path}
	for i := range NodeRules {
		if NodeRules[i].Allows(q) {
			return Allow, "Node: system:node rules"
		}
	}
	return NoOpinion, ""
}

func (n *Node) related(node, kind, ns, name string) bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	m := n.refs[node]
	if kind != "PersistentVolume" {
		return m[refKey(kind, ns, name)] > 0
	}
	for claim, pv := range n.claimVolume {
		if pv == name {
			cns, cname := splitKey(claim)
			if m[refKey("PersistentVolumeClaim", cns, cname)] > 0 {
				return true
			}
		}
	}
	return false
}

func splitKey(k string) (string, string) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return k[:i], k[i+1:]
		}
	}
	return "", k
}

// PodNames reports whether pod names the object (kind "Secret",
// "ConfigMap", "PersistentVolumeClaim"): the fallback's test.
func PodNames(p *core.Pod, kind, name string) bool {
	for _, r := range core.PodReferences(p) {
		if r.Kind == kind && r.Name == name {
			return true
		}
	}
	return false
}

// ListRules implements RuleResolver: a node's rights depend on the pods
// bound to it, which no list of rules says, so for a node the answer is
// incomplete (Kubernetes' node authorizer answers the same); other users
// get nothing from this mode.
func (n *Node) ListRules(u request.UserInfo, _ string) ([]rbac.PolicyRule, bool) {
	if u.NodeName() == "" {
		return nil, false
	}
	return NodeRules, true
}
