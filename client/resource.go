package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/metrics"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/proto/apipb"
)

// Resource is the untyped client for one kind: objects travel as JSON, the
// way kobectl handles them (it learns the kind from the manifest it reads),
// like client-go's dynamic client. Typed is built on it. Callers never see
// the wire format (proto/apipb), so the gRPC API can change beneath them.
type Resource struct {
	c    *Client
	Kind *scheme.Kind
}

// Resource returns the untyped client for kind k.
func (c *Client) Resource(k *scheme.Kind) *Resource { return &Resource{c: c, Kind: k} }

// WriteOptions are the options of create and update.
type WriteOptions struct {
	// FieldValidation is Kubernetes' fieldValidation: "Warn" (default),
	// "Strict" (a field Kubernetes does not have is an error) or "Ignore";
	// or "KobuneStrict": Strict, and a Kubernetes field Kobune does not
	// support is an error too (otherwise a warning).
	FieldValidation string
	// DryRun validates and defaults without storing (dryRun=All).
	DryRun bool
}

// Written is an object as the server stored it (or would have, in a dry run),
// with the server's warnings.
type Written struct {
	Object   []byte
	Warnings []string
}

// Create stores a new object given as JSON.
func (r *Resource) Create(ctx context.Context, namespace string, obj []byte, opts WriteOptions) (Written, error) {
	resp, err := r.c.API.Create(ctx, &apipb.CreateRequest{Resource: r.Kind.Resource, Namespace: namespace, Object: obj,
		FieldValidation: opts.FieldValidation, DryRun: opts.DryRun})
	return written(resp, err)
}

// Update writes spec and metadata; the object's resourceVersion is the
// revision expected (IsConflict tells when it moved).
func (r *Resource) Update(ctx context.Context, namespace string, obj []byte, opts WriteOptions) (Written, error) {
	resp, err := r.c.API.Update(ctx, r.updateRequest(namespace, obj, opts))
	return written(resp, err)
}

// UpdateStatus writes the status subresource.
func (r *Resource) UpdateStatus(ctx context.Context, namespace string, obj []byte, opts WriteOptions) (Written, error) {
	resp, err := r.c.API.UpdateStatus(ctx, r.updateRequest(namespace, obj, opts))
	return written(resp, err)
}

func (r *Resource) updateRequest(namespace string, obj []byte, opts WriteOptions) *apipb.UpdateRequest {
	return &apipb.UpdateRequest{Resource: r.Kind.Resource, Namespace: namespace, Object: obj,
		FieldValidation: opts.FieldValidation, DryRun: opts.DryRun}
}

// PatchOptions are the options of a patch.
type PatchOptions struct {
	WriteOptions
	// Subresource is "", "status", "scale", or for pods
	// "ephemeralcontainers" or "resize".
	Subresource string
	// FieldManager names the writer; it is required for an apply
	// (ApplyPatch), and Force takes fields other managers own.
	FieldManager string
	Force        bool
}

// Patch types (Kubernetes' PATCH Content-Types).
const (
	JSONPatch           = "application/json-patch+json"
	MergePatch          = "application/merge-patch+json"
	StrategicMergePatch = "application/strategic-merge-patch+json"
	// ApplyPatch is server-side apply: the patch is the whole applied
	// configuration, as JSON.
	ApplyPatch = "application/apply-patch+yaml"
)

// Patch applies a patch of the given type to an object on the server.
func (r *Resource) Patch(ctx context.Context, namespace, name, patchType string, patch []byte, opts PatchOptions) (Written, error) {
	resp, err := r.c.API.Patch(ctx, &apipb.PatchRequest{Resource: r.Kind.Resource, Namespace: namespace, Name: name, PatchType: patchType,
		Patch: patch, Subresource: opts.Subresource, FieldValidation: opts.FieldValidation, DryRun: opts.DryRun, FieldManager: opts.FieldManager, Force: opts.Force})
	return written(resp, err)
}

func written(resp *apipb.ObjectResponse, err error) (Written, error) {
	if err != nil {
		return Written{}, err
	}
	return Written{Object: resp.Object, Warnings: resp.Warnings}, nil
}

// Get reads one object (namespace "" for cluster-scoped kinds) as JSON.
func (r *Resource) Get(ctx context.Context, namespace, name string) ([]byte, error) {
	resp, err := r.c.API.Get(ctx, &apipb.GetRequest{Resource: r.Kind.Resource, Namespace: namespace, Name: name})
	if err != nil {
		return nil, err
	}
	return resp.Object, nil
}

// List reads the matching objects (namespace "" for all) and the revision
// to watch from.
func (r *Resource) List(ctx context.Context, namespace string, opts ListOptions) ([][]byte, int64, error) {
	resp, err := r.c.API.List(ctx, &apipb.ListRequest{Resource: r.Kind.Resource, Namespace: namespace,
		LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector})
	if err != nil {
		return nil, 0, err
	}
	return resp.Items, resp.ResourceVersion, nil
}

// Delete deletes (or starts the graceful deletion of) an object.
func (r *Resource) Delete(ctx context.Context, namespace, name string, opts DeleteOptions) error {
	req := &apipb.DeleteRequest{Resource: r.Kind.Resource, Namespace: namespace, Name: name,
		GracePeriodSeconds: opts.GracePeriodSeconds, PropagationPolicy: opts.PropagationPolicy, DryRun: opts.DryRun}
	if opts.UID != "" || opts.ResourceVersion != "" {
		req.Preconditions = &apipb.Preconditions{Uid: opts.UID, ResourceVersion: opts.ResourceVersion}
	}
	_, err := r.c.API.Delete(ctx, req)
	return err
}

// RawEvent is one watch event with the object as JSON.
type RawEvent struct {
	Type            string // ADDED, MODIFIED, DELETED, BOOKMARK
	Object          []byte // for BOOKMARK only its resourceVersion is set
	ResourceVersion int64
}

// RawStream is an open watch; Next blocks for the next event.
type RawStream struct {
	recv func() (*apipb.WatchEvent, error)
}

// Next returns the next event, or the stream's error (IsExpired when the
// revision was compacted; the context's error after it ended).
func (s *RawStream) Next() (RawEvent, error) {
	ev, err := s.recv()
	if err != nil {
		return RawEvent{}, err
	}
	return RawEvent{Type: ev.Type, Object: ev.Object, ResourceVersion: ev.ResourceVersion}, nil
}

// Watch streams changes after revision rv (0: the current objects as ADDED,
// then changes), with BOOKMARK events when bookmarks is set.
func (r *Resource) Watch(ctx context.Context, namespace string, opts ListOptions, rv int64, bookmarks bool) (*RawStream, error) {
	stream, err := r.c.API.Watch(ctx, &apipb.WatchRequest{Resource: r.Kind.Resource, Namespace: namespace,
		LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector, ResourceVersion: rv, AllowBookmarks: bookmarks})
	if err != nil {
		return nil, err
	}
	return &RawStream{recv: stream.Recv}, nil
}

// LogOptions select a container log (kubectl logs' flags).
type LogOptions struct {
	Container string // "" for the pod's only container
	Follow    bool
	TailLines int64 // -1 (or 0 with Tail unset): all
	Previous  bool  // the previous attempt of a restarted container
	// Timestamps begins each line with the time it was written.
	Timestamps bool
	// SinceSeconds or SinceTime (RFC 3339): only lines written from then
	// on; at most one of them.
	SinceSeconds int64
	SinceTime    string
}

// PodLogs opens a pod's container log; read it to its end (io.EOF, or the
// context's end when following).
func (c *Client) PodLogs(ctx context.Context, namespace, name string, opts LogOptions) (io.Reader, error) {
	stream, err := c.API.PodLogs(ctx, &apipb.PodLogsRequest{Namespace: namespace, Name: name,
		Container: opts.Container, Follow: opts.Follow, TailLines: opts.TailLines, Previous: opts.Previous,
		Timestamps: opts.Timestamps, SinceSeconds: opts.SinceSeconds, SinceTime: opts.SinceTime})
	if err != nil {
		return nil, err
	}
	return logReader(stream.Recv), nil
}

// Attach streams what a running container writes from now on, until it
// exits (kubectl attach). Kobune's containers have no stdin, so an attach
// carries output only: stdin or tty are refused by the server.
func (c *Client) Attach(ctx context.Context, namespace, name, container string, stdin, tty bool) (io.Reader, error) {
	stream, err := c.API.PodAttach(ctx, &apipb.PodAttachRequest{Namespace: namespace, Name: name, Container: container, Stdin: stdin, Tty: tty})
	if err != nil {
		return nil, err
	}
	return logReader(stream.Recv), nil
}

// logReader reads a stream of log chunks.
func logReader(recv func() (*apipb.LogChunk, error)) io.Reader {
	return &chunkReader{next: func() ([]byte, error) {
		chunk, err := recv()
		if err != nil {
			return nil, err
		}
		return chunk.Data, nil
	}}
}

// chunkReader turns a stream of chunks into an io.Reader.
type chunkReader struct {
	next func() ([]byte, error)
	buf  []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		b, err := r.next()
		if err != nil {
			return 0, err
		}
		r.buf = b
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// ExecOptions describe a command to run in a container (kubectl exec).
type ExecOptions struct {
	Container string // "" for the pod's only container
	Command   []string
	// Stdin, when set, is copied to the command until it ends (then the
	// command's standard input is closed); nil runs it without input.
	Stdin  io.Reader
	TTY    bool
	Stdout io.Writer
	Stderr io.Writer
	// Resize, with TTY, carries the client terminal's sizes: the
	// container's terminal follows them.
	Resize <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct{ Width, Height uint32 }

// Exec runs a command in a container, copying its output as it comes, and
// returns its exit code.
func (c *Client) Exec(ctx context.Context, namespace, name string, opts ExecOptions) (int, error) {
	stream, err := c.API.PodExec(ctx)
	if err != nil {
		return 0, err
	}
	first := &apipb.PodExecInput{Namespace: namespace, Name: name, Container: opts.Container, Command: opts.Command,
		Stdin: opts.Stdin != nil, Tty: opts.TTY}
	if err := stream.Send(first); err != nil {
		if errors.Is(err, io.EOF) {
			// The server ended the stream (refused it): its status says why.
			_, err = stream.Recv()
		}
		return 0, err
	}
	var sendMu sync.Mutex // stdin and terminal sizes share the stream
	send := func(m *apipb.PodExecInput) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	if opts.Stdin != nil {
		go func() {
			buf := make([]byte, 32*1024)
			for {
				n, err := opts.Stdin.Read(buf)
				if n > 0 && send(&apipb.PodExecInput{StdinData: append([]byte(nil), buf[:n]...)}) != nil {
					return
				}
				if err != nil {
					_ = send(&apipb.PodExecInput{StdinClosed: true})
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	defer close(done)
	if opts.TTY && opts.Resize != nil {
		go func() {
			for {
				select {
				case sz := <-opts.Resize:
					if send(&apipb.PodExecInput{Width: sz.Width, Height: sz.Height}) != nil {
						return
					}
				case <-done:
					return
				}
			}
		}()
	} else if opts.Stdin == nil {
		_ = stream.CloseSend()
	}
	for {
		out, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, errors.New("the exec stream ended before the command's exit status arrived")
			}
			return 0, err
		}
		if opts.Stdout != nil {
			_, _ = opts.Stdout.Write(out.Stdout)
		}
		if opts.Stderr != nil {
			_, _ = opts.Stderr.Write(out.Stderr)
		}
		if out.Exited {
			return int(out.ExitCode), nil
		}
	}
}

// PortForward carries one connection to port on the pod's loopback,
// through the API server and the pod's node (kubectl port-forward's
// per-connection stream). Each side's end of data reaches the other as a
// half close; PortForward returns when both have ended, or ctx has.
func (c *Client) PortForward(ctx context.Context, namespace, name string, port int32, conn io.ReadWriter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.API.PodPortForward(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&apipb.PodPortForwardData{Namespace: namespace, Name: name, Port: port}); err != nil {
		if errors.Is(err, io.EOF) {
			_, err = stream.Recv()
		}
		return err
	}
	go func() { // conn → pod
		buf := make([]byte, 32*1024)
		for {
			n, err := conn.Read(buf)
			if n > 0 && stream.Send(&apipb.PodPortForwardData{Data: append([]byte(nil), buf[:n]...)}) != nil {
				return
			}
			if err != nil {
				_ = stream.Send(&apipb.PodPortForwardData{Closed: true})
				_ = stream.CloseSend()
				return
			}
		}
	}()
	for { // pod → conn
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(m.Data) > 0 {
			if _, err := conn.Write(m.Data); err != nil {
				return err
			}
		}
		if m.Closed {
			if cw, ok := conn.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
		}
	}
}

// PathHop is one step of a packet's way to a Service on a node: the
// nftables map or chain, its live element or rules, and what it does.
type PathHop struct {
	Object  string
	Lines   []string
	Explain string
}

// ServicePath asks node's agent, through the API server, how a packet to
// ip:port/protocol (from sourceIP, when a pod sends it) goes through that
// node's Service rules.
func (c *Client) ServicePath(ctx context.Context, node, ip, protocol string, port int32, sourceIP string) ([]PathHop, error) {
	return c.path(ctx, &apipb.ServicePathRequest{Node: node, Ip: ip, Protocol: protocol, Port: port, SourceIp: sourceIP})
}

// PolicyPath asks node's agent for the NetworkPolicy rules it applies to
// the pod at ip in direction ("ingress" or "egress"), as its kernel has
// them (the same nodes/proxy permission as ServicePath).
func (c *Client) PolicyPath(ctx context.Context, node, ip, direction string) ([]PathHop, error) {
	return c.path(ctx, &apipb.ServicePathRequest{Node: node, Ip: ip, Policy: direction})
}

func (c *Client) path(ctx context.Context, req *apipb.ServicePathRequest) ([]PathHop, error) {
	r, err := c.API.ServicePath(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]PathHop, len(r.Hops))
	for i, h := range r.Hops {
		out[i] = PathHop{Object: h.Object, Lines: h.Lines, Explain: h.Explain}
	}
	return out, nil
}

// NodeStats reads a node's usage through the API server (nodes/proxy):
// format "summary" is the kubelet's Summary API (api/stats) as JSON,
// "cadvisor" the Prometheus text of /metrics/cadvisor, "pods" the node's
// pods as a v1 PodList (the kubelet's /pods).
func (c *Client) NodeStats(ctx context.Context, node, format string) ([]byte, error) {
	r, err := c.API.NodeStats(ctx, &apipb.NodeStatsRequest{Node: node, Format: format})
	if err != nil {
		return nil, err
	}
	return r.Data, nil
}

// NodeMetrics reads metrics.k8s.io NodeMetrics: every node's matching
// labelSelector.
func (c *Client) NodeMetrics(ctx context.Context, labelSelector string) (*metrics.NodeMetricsList, error) {
	var out metrics.NodeMetricsList
	return &out, c.metrics(ctx, &apipb.MetricsRequest{Resource: "nodes", LabelSelector: labelSelector}, &out)
}

// PodMetrics reads metrics.k8s.io PodMetrics of a namespace ("": all)
// matching labelSelector.
func (c *Client) PodMetrics(ctx context.Context, namespace, labelSelector string) (*metrics.PodMetricsList, error) {
	var out metrics.PodMetricsList
	return &out, c.metrics(ctx, &apipb.MetricsRequest{Resource: "pods", Namespace: namespace, LabelSelector: labelSelector}, &out)
}

func (c *Client) metrics(ctx context.Context, req *apipb.MetricsRequest, out any) error {
	r, err := c.API.Metrics(ctx, req)
	if err != nil {
		return err
	}
	return json.Unmarshal(r.Data, out)
}

// GetScale reads the scale subresource of a Deployment, ReplicaSet or
// StatefulSet (resource: "deployments" ...).
func (c *Client) GetScale(ctx context.Context, resource, namespace, name string) (*autoscaling.Scale, error) {
	resp, err := c.API.Get(ctx, &apipb.GetRequest{Resource: resource, Namespace: namespace, Name: name, Subresource: "scale"})
	if err != nil {
		return nil, err
	}
	var s autoscaling.Scale
	return &s, json.Unmarshal(resp.Object, &s)
}

// SetScale writes spec.replicas through the scale subresource.
func (c *Client) SetScale(ctx context.Context, resource, namespace, name string, replicas int32) error {
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}})
	_, err := c.API.Patch(ctx, &apipb.PatchRequest{Resource: resource, Namespace: namespace, Name: name, PatchType: MergePatch, Patch: patch, Subresource: "scale"})
	return err
}

// Evict asks for a pod to go within its PodDisruptionBudget (the
// pods/eviction subresource); grace, when set, is its grace period. A
// refusal by the budget is codes.ResourceExhausted (HTTP 429): try again
// later (IsTooManyRequests).
func (c *Client) Evict(ctx context.Context, namespace, name string, grace *int64) error {
	ev := map[string]any{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": map[string]any{"name": name, "namespace": namespace}}
	if grace != nil {
		ev["deleteOptions"] = map[string]any{"gracePeriodSeconds": *grace}
	}
	b, _ := json.Marshal(ev)
	_, err := c.API.Create(ctx, &apipb.CreateRequest{Resource: EvictionSubresource, Namespace: namespace, Object: b})
	return err
}
