package rest

import (
	"context"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/proto/apipb"
)

// restMetrics serves metrics.k8s.io/v1beta1 over REST, for kubectl top:
// /nodes[/NAME], /pods, /namespaces/NS/pods[/NAME] (parts: what follows
// the group version).
func (s *Handler) restMetrics(ctx context.Context, w http.ResponseWriter, r *http.Request, parts []string) {
	if r.Method != http.MethodGet {
		writeError(w, statusWithCode(http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" is not allowed on "+r.URL.Path), nil)
		return
	}
	req := &apipb.MetricsRequest{LabelSelector: r.URL.Query().Get("labelSelector")}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		req.Namespace, parts = parts[1], parts[2:]
	}
	if len(parts) == 0 || len(parts) > 2 || (parts[0] != "nodes" && parts[0] != "pods") || (parts[0] == "nodes" && req.Namespace != "") {
		writeError(w, errNotFound(r.URL.Path), nil)
		return
	}
	req.Resource = parts[0]
	if len(parts) == 2 {
		req.Name = parts[1]
	}
	if fs := r.URL.Query().Get("fieldSelector"); fs != "" {
		// kubectl top pods NAME asks for metadata.name=NAME.
		name, ok := strings.CutPrefix(fs, "metadata.name=")
		if !ok || strings.Contains(name, ",") {
			writeError(w, status.Errorf(codes.InvalidArgument, "fieldSelector %q: only metadata.name=NAME is served on metrics", fs), nil)
			return
		}
		req.Name = name
	}
	resp, err := filters.Unary(ctx, s.chain, "Metrics", req, s.proxy.Metrics)
	if err != nil {
		writeError(w, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, resp.Data)
}

// restNodeProxy serves the two node pages kubectl get --raw reads through
// nodes/proxy: stats/summary and metrics/cadvisor.
func (s *Handler) restNodeProxy(ctx context.Context, w http.ResponseWriter, r *http.Request, node, page string) {
	format := map[string]string{"stats/summary": "summary", "metrics/cadvisor": "cadvisor", "pods": "pods"}[page]
	if format == "" || r.Method != http.MethodGet {
		writeError(w, status.Errorf(codes.NotFound, "nodes/%s/proxy/%s: Kobune's node proxy serves only stats/summary, metrics/cadvisor and pods", node, page), nil)
		return
	}
	resp, err := filters.Unary(ctx, s.chain, "NodeStats", &apipb.NodeStatsRequest{Node: node, Format: format}, s.proxy.NodeStats)
	if err != nil {
		writeError(w, err, nil)
		return
	}
	b := resp.Data
	if format == "cadvisor" {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(b)
		return
	}
	writeJSON(w, http.StatusOK, b)
}
