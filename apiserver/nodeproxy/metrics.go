package nodeproxy

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	metricsv1beta1 "github.com/kobune/kobune/api/metrics"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/api/stats"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/proto/apipb"
	"github.com/kobune/kobune/proto/nodepb"
)

// The resource metrics API (metrics.k8s.io/v1beta1). Kubernetes serves it
// from metrics-server, an add-on that scrapes every kubelet's Summary
// every 15 s and keeps the result in memory; the API server aggregates
// it. Kobune's API server asks the agents themselves when the API is read
// (each agent samples its cgroups every second and rates CPU over the
// last 5 s), so what kubectl top shows is at most a few seconds old and
// nothing else has to run. Nodes that do not answer within statsTimeout
// are left out, as metrics-server leaves out a node it could not scrape.

const statsTimeout = 5 * time.Second

// metricsWindow is the window the agents' CPU rates cover.
const metricsWindow = "5s"

// NodeStats implements the NodeStats RPC.
func (s *Proxy) NodeStats(ctx context.Context, req *apipb.NodeStatsRequest) (*apipb.NodeStatsReply, error) {
	if req.Node == "" {
		return nil, apierrors.Invalid("nodeStats: a node name is required")
	}
	if req.Format != "" && req.Format != "summary" && req.Format != "cadvisor" && req.Format != "pods" {
		return nil, apierrors.Invalid("nodeStats: format %q: summary, cadvisor or pods", req.Format)
	}
	b, err := s.nodeStats(ctx, req.Node, req.Format)
	if err != nil {
		return nil, err
	}
	return &apipb.NodeStatsReply{Data: b}, nil
}

func (s *Proxy) nodeStats(ctx context.Context, node, format string) ([]byte, error) {
	addr, err := s.nodeAddr(ctx, node)
	if err != nil {
		return nil, err
	}
	nc, closeConn, err := s.nodeClient(node, addr)
	if err != nil {
		return nil, err
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	r, err := nc.Stats(ctx, &nodepb.StatsRequest{Format: format})
	if err != nil {
		return nil, err
	}
	return r.Data, nil
}

// summaries reads the Summary of each named node at once; a node that
// fails is missing from the result, with its error in errs.
func (s *Proxy) summaries(ctx context.Context, nodes []string) (map[string]*stats.Summary, map[string]error) {
	out, errs := map[string]*stats.Summary{}, map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			b, err := s.nodeStats(ctx, n, "summary")
			var sum stats.Summary
			if err == nil {
				err = json.Unmarshal(b, &sum)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[n] = err
				return
			}
			out[n] = &sum
		}()
	}
	wg.Wait()
	return out, errs
}

// Metrics implements the Metrics RPC.
func (s *Proxy) Metrics(ctx context.Context, req *apipb.MetricsRequest) (*apipb.MetricsReply, error) {
	sel, err := selector.ParseLabels(req.LabelSelector)
	if err != nil {
		return nil, apierrors.Invalid("labelSelector: %v", err)
	}
	var v any
	switch req.Resource {
	case "nodes":
		v, err = s.nodeMetrics(ctx, req.Name, sel)
	case "pods":
		v, err = s.podMetrics(ctx, req.Namespace, req.Name, sel)
	default:
		return nil, apierrors.Invalid("metrics: resource %q: nodes or pods", req.Resource)
	}
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode metrics: %v", err)
	}
	return &apipb.MetricsReply{Data: b}, nil
}

func cpuQuantity(c *stats.CPUStats) (resource.Quantity, bool) {
	if c == nil || c.UsageNanoCores == nil {
		return resource.Quantity{}, false
	}
	return resource.NewNanoQuantity(int64(*c.UsageNanoCores), resource.DecimalSI), true
}

func memoryQuantity(m *stats.MemoryStats) (resource.Quantity, bool) {
	if m == nil || m.WorkingSetBytes == nil {
		return resource.Quantity{}, false
	}
	// metrics-server reports Ki.
	return resource.NewQuantity(int64(*m.WorkingSetBytes/1024*1024), resource.BinarySI), true
}

func (s *Proxy) nodeMetrics(ctx context.Context, name string, sel selector.Selector) (any, error) {
	nodes, err := registry.ListStored[*core.Node](ctx, s.store, "nodes")
	if err != nil {
		return nil, apierrors.FromStorage(err, kindOf("nodes"), name)
	}
	var names []string
	byName := map[string]*core.Node{}
	for _, n := range nodes {
		if (name == "" || n.Name == name) && sel.Matches(n.Labels) {
			names = append(names, n.Name)
			byName[n.Name] = n
		}
	}
	if name != "" && len(names) == 0 {
		return nil, status.Errorf(codes.NotFound, "nodes.metrics.k8s.io %q not found", name)
	}
	sums, errs := s.summaries(ctx, names)
	list := metricsv1beta1.NodeMetricsList{TypeMeta: meta.TypeMeta{APIVersion: metricsv1beta1.GroupVersion, Kind: "NodeMetricsList"}, Items: []metricsv1beta1.NodeMetrics{}}
	sort.Strings(names)
	for _, n := range names {
		sum := sums[n]
		if sum == nil {
			continue
		}
		cpu, ok1 := cpuQuantity(sum.Node.CPU)
		mem, ok2 := memoryQuantity(sum.Node.Memory)
		if !ok1 || !ok2 {
			continue
		}
		list.Items = append(list.Items, metricsv1beta1.NodeMetrics{TypeMeta: meta.TypeMeta{APIVersion: metricsv1beta1.GroupVersion, Kind: "NodeMetrics"},
			ObjectMeta: meta.ObjectMeta{Name: n, Labels: byName[n].Labels, CreationTimestamp: meta.Now()},
			Timestamp:  meta.Time{Time: sum.Node.CPU.Time}, Window: metricsWindow, Usage: resource.List{resource.CPU: cpu, resource.Memory: mem}})
	}
	if name != "" {
		if len(list.Items) == 0 {
			why := "its agent has not sampled twice yet"
			if err := errs[name]; err != nil {
				why = status.Convert(err).Message()
			}
			return nil, status.Errorf(codes.NotFound, "nodes.metrics.k8s.io %q not found: no metrics for the node: %s", name, why)
		}
		return list.Items[0], nil
	}
	return list, nil
}

func (s *Proxy) podMetrics(ctx context.Context, namespace, name string, sel selector.Selector) (any, error) {
	pods, err := registry.ListStoredIn[*core.Pod](ctx, s.store, "pods", namespace)
	if err != nil {
		return nil, apierrors.FromStorage(err, kindOf("pods"), name)
	}
	var chosen []*core.Pod
	nodeSet := map[string]bool{}
	for _, p := range pods {
		if (name == "" || p.Name == name) && sel.Matches(p.Labels) && p.Spec.NodeName != "" && p.Status.Phase == core.PodRunning {
			chosen = append(chosen, p)
			nodeSet[p.Spec.NodeName] = true
		}
	}
	if name != "" && len(chosen) == 0 {
		return nil, status.Errorf(codes.NotFound, "podmetrics.metrics.k8s.io %q not found", namespace+"/"+name)
	}
	var nodes []string
	for n := range nodeSet {
		nodes = append(nodes, n)
	}
	sums, errs := s.summaries(ctx, nodes)
	byUID := map[string]*stats.PodStats{}
	for _, sum := range sums {
		for i := range sum.Pods {
			byUID[sum.Pods[i].PodRef.UID] = &sum.Pods[i]
		}
	}
	sort.Slice(chosen, func(i, j int) bool {
		if chosen[i].Namespace != chosen[j].Namespace {
			return chosen[i].Namespace < chosen[j].Namespace
		}
		return chosen[i].Name < chosen[j].Name
	})
	list := metricsv1beta1.PodMetricsList{TypeMeta: meta.TypeMeta{APIVersion: metricsv1beta1.GroupVersion, Kind: "PodMetricsList"}, Items: []metricsv1beta1.PodMetrics{}}
	for _, p := range chosen {
		ps := byUID[p.UID]
		if ps == nil || len(ps.Containers) == 0 {
			continue
		}
		pm := metricsv1beta1.PodMetrics{TypeMeta: meta.TypeMeta{APIVersion: metricsv1beta1.GroupVersion, Kind: "PodMetrics"},
			ObjectMeta: meta.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: meta.Now()}, Window: metricsWindow}
		complete := true
		for _, c := range ps.Containers {
			cpu, ok1 := cpuQuantity(c.CPU)
			mem, ok2 := memoryQuantity(c.Memory)
			if !ok1 || !ok2 {
				complete = false // metrics-server too leaves out a pod it cannot rate yet
				break
			}
			pm.Timestamp = meta.Time{Time: c.CPU.Time}
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: resource.List{resource.CPU: cpu, resource.Memory: mem}, Throttling: c.CPU.Throttling})
		}
		if complete {
			list.Items = append(list.Items, pm)
		}
	}
	if name != "" {
		if len(list.Items) == 0 {
			why := "its node's agent has not sampled it twice yet"
			if err := errs[chosen[0].Spec.NodeName]; err != nil {
				why = status.Convert(err).Message()
			}
			return nil, status.Errorf(codes.NotFound, "podmetrics.metrics.k8s.io %q not found: no metrics for the pod: %s", namespace+"/"+name, why)
		}
		return list.Items[0], nil
	}
	return list, nil
}

func kindOf(resource string) *scheme.Kind { k, _ := scheme.ByResource(resource); return k }
