package scheduler

import (
	"sort"
	"sync"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/scheduler/framework"
)

// cache is the scheduler's picture of the cluster, kept up to date from the
// informers' events rather than rebuilt for each pod: a NodeInfo per node
// with the pods placed there — bound pods, and pods assumed there before
// their bind returned — and the pending pods nominated to a node by
// preemption. A scheduling cycle holds the read lock for its whole
// decision, so it sees one consistent picture (kube-scheduler copies a
// snapshot instead; with one scheduling goroutine the lock is simpler);
// events wait for the cycle to end.
type cache struct {
	mu        sync.RWMutex
	nodes     map[string]*framework.NodeInfo // includes placeholders (Node nil) for pods seen before their node
	sorted    []*framework.NodeInfo          // nodes with a Node, by name; nil when it must be rebuilt
	podNode   map[string]string              // pod key → the node it is counted on
	assumed   map[string]bool                // pod keys counted before their bind is visible
	nominated map[string]*core.Pod           // pending pods with status.nominatedNodeName
	index     *index                         // counts for spread and inter-pod affinity
}

func newCache() *cache {
	c := &cache{nodes: map[string]*framework.NodeInfo{}, podNode: map[string]string{}, assumed: map[string]bool{}, nominated: map[string]*core.Pod{}}
	c.index = newIndex(c)
	return c
}

func (c *cache) nodeInfo(name string) *framework.NodeInfo {
	ni, ok := c.nodes[name]
	if !ok {
		ni = &framework.NodeInfo{}
		c.nodes[name] = ni
	}
	return ni
}

// setNode adds or updates a node.
func (c *cache) setNode(n *core.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni := c.nodeInfo(n.Name)
	old := ni.Node
	ni.SetNode(n)
	switch {
	case old == nil && len(ni.Pods) == 0:
		c.sorted = nil
		c.index.nodeAdded(n, 1)
	case old == nil: // its pods were seen first, on a placeholder
		c.sorted = nil
		c.index.reset()
	case !sameLabels(old.Labels, n.Labels):
		c.index.reset()
	}
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// removeNode forgets a node; its pods stay counted on a placeholder until
// they are deleted too.
func (c *cache) removeNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ni, ok := c.nodes[name]; ok {
		ni.SetNode(nil)
		c.sorted = nil
		if len(ni.Pods) == 0 {
			delete(c.nodes, name)
		}
		c.index.reset()
	}
}

// setPod records a pod as the informer sees it: counted on its node while
// it is bound and not finished; a pending pod with a nominated node is
// remembered as a nomination.
func (c *cache) setPod(p *core.Pod) {
	key := meta.Key(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.Spec.NodeName == "" && p.Status.NominatedNodeName != "" && p.DeletionTimestamp == nil {
		c.nominated[key] = p
	} else {
		delete(c.nominated, key)
	}
	placed := p.Spec.NodeName != "" && p.Status.Phase != core.PodSucceeded && p.Status.Phase != core.PodFailed
	if c.assumed[key] && p.Spec.NodeName == "" {
		return // our bind has not shown up yet: keep the assumption
	}
	c.removeLocked(key, p)
	if placed {
		c.place(key, p, p.Spec.NodeName)
	}
}

// removePod forgets a deleted pod.
func (c *cache) removePod(p *core.Pod) {
	key := meta.Key(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nominated, key)
	c.removeLocked(key, p)
}

func (c *cache) removeLocked(key string, p *core.Pod) {
	delete(c.assumed, key)
	node, ok := c.podNode[key]
	if !ok {
		return
	}
	delete(c.podNode, key)
	if ni, ok := c.nodes[node]; ok {
		if old := ni.RemovePod(p); old != nil {
			c.index.podChanged(old, ni.Node, -1)
		}
		if ni.Node == nil && len(ni.Pods) == 0 {
			delete(c.nodes, node)
		}
	}
}

// assume counts a pod on the node it is about to be bound to.
func (c *cache) assume(p *core.Pod, node string) {
	key := meta.Key(p)
	assumed := *p
	assumed.Spec.NodeName = node
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(key, p)
	c.place(key, &assumed, node)
	c.assumed[key] = true
}

func (c *cache) place(key string, p *core.Pod, node string) {
	ni := c.nodeInfo(node)
	ni.AddPod(p)
	c.podNode[key] = node
	c.index.podChanged(p, ni.Node, 1)
}

// forget undoes an assumption whose bind failed (a no-op once the
// informer has shown the pod bound).
func (c *cache) forget(p *core.Pod) {
	key := meta.Key(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.assumed[key] {
		c.removeLocked(key, p)
	}
}

// isPlaced reports whether the pod is counted on a node (bound or assumed).
func (c *cache) isPlaced(key string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.podNode[key]
	return ok
}

// snapshot is what one scheduling cycle sees of the cache: the nodes
// sorted by name, the cluster index over them, and the pending pods
// nominated to each node (by preemption) at a priority not below the
// pod's, which the cycle counts as placed.
type snapshot struct {
	nodes     []*framework.NodeInfo
	index     framework.ClusterIndex
	nominated map[string][]*core.Pod
}

// read calls fn with the snapshot for pod's cycle, under the read lock, so
// that the whole decision sees one consistent picture; events wait.
func (c *cache) read(pod *core.Pod, fn func(snapshot)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	fn(snapshot{nodes: c.list(), index: c.index, nominated: c.nominationsFor(pod)})
}

// nominationsFor maps node name → pending pods nominated there whose
// priority is at least pod's (they get the room preemption made first).
// Call with the read lock held.
func (c *cache) nominationsFor(pod *core.Pod) map[string][]*core.Pod {
	if len(c.nominated) == 0 {
		return nil
	}
	self, prio := meta.Key(pod), framework.PodPriority(pod)
	out := map[string][]*core.Pod{}
	for key, p := range c.nominated {
		if key != self && framework.PodPriority(p) >= prio {
			out[p.Status.NominatedNodeName] = append(out[p.Status.NominatedNodeName], p)
		}
	}
	return out
}

// list returns the nodes sorted by name; call with the read lock held.
func (c *cache) list() []*framework.NodeInfo {
	if c.sorted != nil {
		return c.sorted
	}
	c.mu.RUnlock()
	c.mu.Lock()
	if c.sorted == nil {
		out := make([]*framework.NodeInfo, 0, len(c.nodes))
		for _, ni := range c.nodes {
			if ni.Node != nil {
				out = append(out, ni)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Node.Name < out[j].Node.Name })
		c.sorted = out
	}
	c.mu.Unlock()
	c.mu.RLock()
	return c.list()
}
