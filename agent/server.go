package agent

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/agent/containerlog"
	"github.com/kobune/kobune/agent/netpol"
	"github.com/kobune/kobune/agent/proxy"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client/pki"
	"github.com/kobune/kobune/proto/nodepb"
)

// Streamer is what a runtime offers for logs and exec (containerd does;
// simulated nodes do not).
type Streamer interface {
	LogPath(pod *core.Pod, container string, attempt int32) string
	ExecStream(ctx context.Context, podUID, container string, cmd []string, sio runtime.ExecIO) (int, error)
	DialPod(ctx context.Context, pod *core.Pod, port int32) (net.Conn, error)
}

// nodeServer is the agent's node API (the kubelet's /containerLogs and
// /exec), reached only through the API server.
type nodeServer struct {
	nodepb.UnimplementedNodeAPIServer
	a *Agent
}

// NodeAPITLSConfig is the node API's TLS: TLS 1.3 with the node's serving
// certificate, and a client certificate required, signed by the cluster
// CA and naming the API server's kubelet-client identity — the
// kubelet's --tls-cert-file, --tls-private-key-file and --client-ca-file
// (with authorization reduced to "only the API server": Kobune's node API
// has no other callers).
func NodeAPITLSConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	kp, err := pki.NewKeyPair(certFile, keyFile) // renewed files are served from the next handshake on
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file/--tls-private-key-file: %w", err)
	}
	b, err := os.ReadFile(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--client-ca-file %s: no PEM certificate in it", clientCAFile)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: kp.GetCertificate, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || cs.PeerCertificates[0].Subject.CommonName != pki.KubeletClientUser {
				return fmt.Errorf("node API: only the API server (%s) may call", pki.KubeletClientUser)
			}
			return nil
		}}, nil
}

// serveNodeAPI serves the node API on lis until ctx ends.
func (a *Agent) serveNodeAPI(ctx context.Context, lis net.Listener) {
	var opts []grpc.ServerOption
	if a.cfg.NodeAPITLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(a.cfg.NodeAPITLS)))
	}
	srv := grpc.NewServer(opts...)
	nodepb.RegisterNodeAPIServer(srv, &nodeServer{a: a})
	go func() { <-ctx.Done(); srv.Stop() }()
	if err := srv.Serve(lis); err != nil && ctx.Err() == nil {
		a.cfg.Logf("node API: %v", err)
	}
}

func (s *nodeServer) streamer() (Streamer, error) {
	if s.a.streamer == nil {
		return nil, status.Error(codes.Unimplemented, "this node's runtime (simulated) has no logs and no exec")
	}
	return s.a.streamer, nil
}

func asStreamer(rt runtime.Runtime) Streamer {
	st, _ := rt.(Streamer)
	return st
}

// target finds the pod and the container (the only one when none is named).
func (s *nodeServer) target(namespace, name, uid, container string) (*core.Pod, string, error) {
	pod, err := s.pod(namespace, name, uid)
	if err != nil {
		return nil, "", err
	}
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			var names []string
			for _, c := range pod.Spec.Containers {
				names = append(names, c.Name)
			}
			return nil, "", status.Errorf(codes.InvalidArgument, "a container name must be specified for pod %s, choose one of: [%s]", name, strings.Join(names, " "))
		}
		container = pod.Spec.Containers[0].Name
	}
	return pod, container, nil
}

// pod finds a pod of this node (the one with that UID, when it is named).
func (s *nodeServer) pod(namespace, name, uid string) (*core.Pod, error) {
	pod, ok := s.a.pods.Get(namespace, name)
	if !ok || (uid != "" && pod.UID != uid) {
		return nil, status.Errorf(codes.NotFound, "pod %s/%s is not on node %s", namespace, name, s.a.cfg.Node.Name)
	}
	return pod, nil
}

// attempt returns the container's current attempt and whether it runs.
func (s *nodeServer) attempt(ctx context.Context, uid, container string) (int32, bool, error) {
	pods, err := s.a.runtime.Pods(ctx)
	if err != nil {
		return 0, false, err
	}
	for _, p := range pods {
		if p.UID != uid {
			continue
		}
		for _, c := range p.Containers {
			if c.Name == container {
				return c.Restarts, c.Running, nil
			}
		}
	}
	return 0, false, status.Errorf(codes.NotFound, "container %q has not started yet", container)
}

// Logs implements nodepb.NodeAPIServer.
func (s *nodeServer) Logs(req *nodepb.LogsRequest, stream nodepb.NodeAPI_LogsServer) error {
	ctx := stream.Context()
	st, err := s.streamer()
	if err != nil {
		return err
	}
	pod, container, err := s.target(req.Namespace, req.Name, req.PodUid, req.Container)
	if err != nil {
		return err
	}
	attempt, running, err := s.attempt(ctx, pod.UID, container)
	if status.Code(err) == codes.NotFound && finished(pod) {
		return status.Errorf(codes.NotFound, "the containers of pod %q were removed after it finished (container garbage collection under disk pressure on node %s): its logs went with them", pod.Name, s.a.cfg.Node.Name)
	}
	if err != nil {
		return err
	}
	if req.Previous {
		if attempt == 0 {
			return status.Errorf(codes.NotFound, "previous terminated container %q in pod %q not found", container, pod.Name)
		}
		attempt, running = attempt-1, false
	}
	if req.FromEnd && !running {
		return status.Errorf(codes.FailedPrecondition, "container %q of pod %q is not running: there is nothing to attach to (kobectl logs shows what it wrote)", container, pod.Name)
	}
	f, err := os.Open(st.LogPath(pod, container, attempt))
	if err != nil {
		return status.Errorf(codes.NotFound, "log of container %q: %v", container, err)
	}
	defer f.Close()
	opts := containerlog.Options{Timestamps: req.Timestamps}
	if req.SinceUnixNano != 0 {
		opts.Since = time.Unix(0, req.SinceUnixNano)
	}
	switch {
	case req.FromEnd: // an attach: only what comes from now on
		_, err = f.Seek(0, io.SeekEnd)
	case req.TailLines > 0:
		var off int64
		if off, err = containerlog.TailOffset(f, req.TailLines); err == nil {
			_, err = f.Seek(off, io.SeekStart)
		}
	}
	if err != nil {
		return err
	}
	out := chunkSender{stream}
	rd := containerlog.NewReader(f, opts)
	if err := rd.Copy(out); err != nil {
		return err
	}
	for req.Follow && running {
		// Follow the file until the attempt ends (as kubectl logs -f does).
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
		if err := rd.Copy(out); err != nil {
			return err
		}
		now, still, err := s.attempt(ctx, pod.UID, container)
		running = err == nil && still && now == attempt
	}
	if err := rd.Copy(out); err != nil {
		return err
	}
	return rd.Flush(out)
}

// chunkSender sends each write as one Chunk.
type chunkSender struct{ stream nodepb.NodeAPI_LogsServer }

func (c chunkSender) Write(b []byte) (int, error) {
	if err := c.stream.Send(&nodepb.Chunk{Data: append([]byte(nil), b...)}); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Exec implements nodepb.NodeAPIServer.
func (s *nodeServer) Exec(stream nodepb.NodeAPI_ExecServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.Start
	if start == nil || len(start.Command) == 0 {
		return status.Error(codes.InvalidArgument, "exec: the first message must name a command")
	}
	st, err := s.streamer()
	if err != nil {
		return err
	}
	pod, container, err := s.target(start.Namespace, start.Name, start.PodUid, start.Container)
	if err != nil {
		return err
	}
	// A container that does not run (yet, or any more): say so, not the
	// runtime's error with its ids (an exec right after a pod was replaced
	// reaches the new pod while it is being created).
	if _, running, err := s.attempt(ctx, pod.UID, container); err != nil || !running {
		if finished(pod) {
			return status.Errorf(codes.FailedPrecondition, "cannot exec into a container in a completed pod; current phase is %s", pod.Status.Phase)
		}
		return status.Errorf(codes.FailedPrecondition, "container %q in pod %q is not running yet: wait until it is (kobectl wait --for=condition=Ready pod/%s -n %s), then exec again", container, pod.Name, pod.Name, pod.Namespace)
	}
	out := &execWriter{stream: stream}
	resize := make(chan runtime.TerminalSize, 1)
	sio := runtime.ExecIO{TTY: start.Tty, Stdout: out.to(false), Stderr: out.to(true), Resize: resize}
	pr, pw := io.Pipe()
	if start.Stdin {
		sio.Stdin = pr
	}
	go func() { // stdin and terminal sizes, until the client is done
		defer pw.Close()
		stdinOpen := start.Stdin
		for {
			in, err := stream.Recv()
			if err != nil {
				return
			}
			if sz := in.Resize; sz != nil {
				select { // only the latest size matters
				case <-resize:
				default:
				}
				resize <- runtime.TerminalSize{Width: sz.Width, Height: sz.Height}
			}
			if stdinOpen && len(in.Stdin) > 0 {
				if _, err := pw.Write(in.Stdin); err != nil {
					stdinOpen = false
				}
			}
			if stdinOpen && in.StdinClosed {
				pw.Close()
				stdinOpen = false
			}
		}
	}()
	code, err := st.ExecStream(ctx, pod.UID, container, start.Command, sio)
	if err != nil {
		return status.Errorf(codes.Internal, "error executing command in container: %v", err)
	}
	return out.send(&nodepb.ExecOutput{Exited: true, ExitCode: int32(code)})
}

// PortForward implements nodepb.NodeAPIServer: one connection to a port
// on the pod's loopback, bytes copied both ways until both sides close.
func (s *nodeServer) PortForward(stream nodepb.NodeAPI_PortForwardServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.Start
	if start == nil || start.Port < 1 || start.Port > 65535 {
		return status.Error(codes.InvalidArgument, "port-forward: the first message must name a port between 1 and 65535")
	}
	st, err := s.streamer()
	if err != nil {
		return err
	}
	pod, err := s.pod(start.Namespace, start.Name, start.PodUid)
	if err != nil {
		return err
	}
	conn, err := st.DialPod(ctx, pod, start.Port)
	if err != nil {
		return status.Errorf(codes.Unavailable, "error forwarding port %d to pod %s: %v", start.Port, pod.Name, err)
	}
	defer conn.Close()
	return pipeStream(ctx, conn, first.Data, func() (*nodepb.PortForwardData, error) { return stream.Recv() }, stream.Send)
}

// pipeStream copies between a connection and a stream of PortForwardData
// messages until both directions have ended: each side's end of data is
// passed on as a half close.
func pipeStream(ctx context.Context, conn net.Conn, first []byte, recv func() (*nodepb.PortForwardData, error), send func(*nodepb.PortForwardData) error) error {
	if len(first) > 0 {
		if _, err := conn.Write(first); err != nil {
			return err
		}
	}
	inDone := make(chan error, 1)
	go func() { // stream → connection
		for {
			m, err := recv()
			if err != nil {
				inDone <- err
				return
			}
			if len(m.Data) > 0 {
				if _, err := conn.Write(m.Data); err != nil {
					inDone <- err
					return
				}
			}
			if m.Closed {
				if tc, ok := conn.(interface{ CloseWrite() error }); ok {
					_ = tc.CloseWrite()
				}
				inDone <- nil
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for { // connection → stream
		n, err := conn.Read(buf)
		if n > 0 {
			if serr := send(&nodepb.PortForwardData{Data: append([]byte(nil), buf[:n]...)}); serr != nil {
				return serr
			}
		}
		if err != nil {
			if serr := send(&nodepb.PortForwardData{Closed: true}); serr != nil {
				return serr
			}
			break
		}
	}
	select {
	case err := <-inDone:
		if errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled {
			return nil
		}
		return err
	case <-ctx.Done():
		return nil
	}
}

// execWriter sends stdout and stderr as messages; Send is not safe for
// concurrent use, hence the lock.
type execWriter struct {
	mu     sync.Mutex
	stream nodepb.NodeAPI_ExecServer
}

func (w *execWriter) send(m *nodepb.ExecOutput) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stream.Send(m)
}

func (w *execWriter) to(stderr bool) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		m := &nodepb.ExecOutput{}
		if stderr {
			m.Stderr = append([]byte(nil), p...)
		} else {
			m.Stdout = append([]byte(nil), p...)
		}
		if err := w.send(m); err != nil {
			return 0, err
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var _ Streamer = (*runtime.Containerd)(nil)

// listenNodeAPI opens the node API's listener.
func listenNodeAPI(addr string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("node API on %s: %w", addr, err)
	}
	return lis, nil
}

// ServicePath implements nodepb.NodeAPIServer: the node proxy reads the
// way of a packet to a Service port from this node's live table.
func (s *nodeServer) ServicePath(ctx context.Context, req *nodepb.ServicePathRequest) (*nodepb.ServicePathReply, error) {
	if req.Policy != "" {
		return s.policyPath(ctx, req)
	}
	if s.a.cfg.Proxy == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "node %s runs no Service proxy (kobune-agent --proxy=false, or a simulated node)", s.a.cfg.Node.Name)
	}
	hops, err := s.a.cfg.Proxy.Explain(ctx, proxy.NFTChainText, req.Ip, req.Protocol, req.Port, req.SourceIp)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "reading node %s's rules: %v", s.a.cfg.Node.Name, err)
	}
	return pathReply(hops), nil
}

// policyPath reads the NetworkPolicy rules this node applies to a pod in
// one direction from the kernel's table.
func (s *nodeServer) policyPath(ctx context.Context, req *nodepb.ServicePathRequest) (*nodepb.ServicePathReply, error) {
	if s.a.cfg.NetworkPolicy == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "node %s enforces no NetworkPolicy (kobune-agent --network-policy=false, or a simulated node)", s.a.cfg.Node.Name)
	}
	if req.Policy != "ingress" && req.Policy != "egress" {
		return nil, status.Errorf(codes.InvalidArgument, "policy %q: ingress or egress", req.Policy)
	}
	hops, err := netpol.Explain(ctx, netpol.NFTListText, req.Ip, req.Policy)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "reading node %s's rules: %v", s.a.cfg.Node.Name, err)
	}
	return pathReply(hops), nil
}

func pathReply(hops []proxy.Hop) *nodepb.ServicePathReply {
	out := &nodepb.ServicePathReply{}
	for _, h := range hops {
		out.Hops = append(out.Hops, &nodepb.PathHop{Object: h.Object, Lines: h.Lines, Explain: h.Explain})
	}
	return out
}

// Stats implements the node API's usage read (the kubelet's
// /stats/summary and /metrics/cadvisor).
func (s *nodeServer) Stats(ctx context.Context, req *nodepb.StatsRequest) (*nodepb.StatsReply, error) {
	b, err := s.a.statsBytes(req.Format)
	if err != nil {
		return nil, err
	}
	return &nodepb.StatsReply{Data: b}, nil
}

// statsBytes renders the latest usage: "summary" as JSON, "cadvisor" as
// Prometheus text.
func (a *Agent) statsBytes(format string) ([]byte, error) {
	if format == "pods" {
		return a.podsPage()
	}
	if a.usage == nil {
		return nil, status.Errorf(codes.Unimplemented, "node %s measures no usage: its runtime runs no containers in cgroups (a simulated node), or --stats-interval is negative", a.cfg.Node.Name)
	}
	switch format {
	case "summary", "":
		return json.Marshal(a.usage.Summary())
	case "cadvisor":
		var b bytes.Buffer
		a.usage.WritePrometheus(&b)
		return b.Bytes(), nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "stats format %q: summary, cadvisor or pods", format)
}

// podsPage is the kubelet's /pods: the pods this node runs, as a v1
// PodList (what Kubernetes' e2e framework reads through
// nodes/NAME/proxy/pods when a test fails).
func (a *Agent) podsPage() ([]byte, error) {
	pods := a.pods.List()
	slices.SortFunc(pods, func(x, y *core.Pod) int {
		return cmp.Or(strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Name, y.Name))
	})
	return json.Marshal(struct {
		Kind       string      `json:"kind"`
		APIVersion string      `json:"apiVersion"`
		Metadata   struct{}    `json:"metadata"`
		Items      []*core.Pod `json:"items"`
	}{Kind: "PodList", APIVersion: "v1", Items: pods})
}

// StatsHandlers are the agent's usage pages for its loopback metrics
// port: /stats/summary and /metrics/cadvisor, as a kubelet serves them.
func (a *Agent) StatsHandlers() map[string]http.Handler {
	page := func(format, contentType string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			b, err := a.statsBytes(format)
			if err != nil {
				http.Error(w, status.Convert(err).Message(), http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write(b)
		})
	}
	return map[string]http.Handler{"/stats/summary": page("summary", "application/json"), "/metrics/cadvisor": page("cadvisor", "text/plain; version=0.0.4")}
}
