package nodeproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/proto/apipb"
	"github.com/kobune/kobune/proto/nodepb"
)

// PodNode finds a pod and the address of its node's agent, for the
// pods/log and pods/exec subresources, which the API server proxies to the
// node (as kube-apiserver proxies to the kubelet).
func (s *Proxy) PodNode(ctx context.Context, namespace, name string) (*core.Pod, string, error) {
	if namespace == "" {
		namespace = "default"
	}
	pod, err := registry.GetStored[*core.Pod](ctx, s.store, "pods", namespace, name)
	if err != nil {
		return nil, "", err
	}
	if pod.Spec.NodeName == "" {
		return nil, "", status.Errorf(codes.FailedPrecondition, "pod %s is not scheduled to a node yet", name)
	}
	addr, err := s.nodeAddr(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, "", err
	}
	return pod, addr, nil
}

// nodeAddr is the address of a node's agent (its InternalIP and the port
// in status.daemonEndpoints).
func (s *Proxy) nodeAddr(ctx context.Context, name string) (string, error) {
	node, err := registry.GetStored[*core.Node](ctx, s.store, "nodes", "", name)
	if err != nil {
		return "", err
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	ip := ""
	for _, a := range node.Status.Addresses {
		if a.Type == "InternalIP" {
			ip = a.Address
		}
	}
	if port == 0 || ip == "" {
		return "", status.Errorf(codes.FailedPrecondition, "node %s publishes no agent address (a simulated node has no logs, exec or Service rules)", node.Name)
	}
	return net.JoinHostPort(ip, strconv.Itoa(int(port))), nil
}

// nodeClient dials a node's agent. With --kubelet-certificate-authority
// the connection is TLS 1.3: the API server shows its kubelet-client
// certificate, and the agent's serving certificate must be signed by that
// CA for the node's name — so a Node object that publishes someone else's
// address (a fake node, or a hijacked one) gets no exec session, and
// nothing it says is believed.
func (s *Proxy) nodeClient(node, addr string) (nodepb.NodeAPIClient, func(), error) {
	creds := insecure.NewCredentials()
	if s.kubeletTLS != nil {
		tc := s.kubeletTLS.Clone()
		tc.ServerName = node
		creds = credentials.NewTLS(tc)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, nil, status.Errorf(codes.Unavailable, "node agent at %s: %v", addr, err)
	}
	return nodepb.NewNodeAPIClient(conn), func() { conn.Close() }, nil
}

// PodLogs implements the pods/log subresource.
func (s *Proxy) PodLogs(ctx context.Context, req *apipb.PodLogsRequest, stream registry.Sender[apipb.LogChunk]) error {
	since, err := logsSince(req.SinceSeconds, req.SinceTime, time.Now())
	if err != nil {
		return err
	}
	return s.relayLog(ctx, stream, req.Namespace, req.Name, &nodepb.LogsRequest{Container: req.Container,
		Follow: req.Follow, TailLines: req.TailLines, Previous: req.Previous, Timestamps: req.Timestamps, SinceUnixNano: since})
}

// logsSince is the time from which a log is shown, in Unix nanoseconds (0:
// from the start): sinceSeconds before now, or sinceTime, with
// Kubernetes' validation of PodLogOptions.
func logsSince(seconds int64, at string, now time.Time) (int64, error) {
	switch {
	case seconds != 0 && at != "":
		return 0, status.Error(codes.InvalidArgument, "at most one of `sinceTime` or `sinceSeconds` may be specified")
	case seconds < 0:
		return 0, status.Errorf(codes.InvalidArgument, "sinceSeconds: Invalid value: %d: must be greater than 0", seconds)
	case seconds > 0:
		return now.Add(-time.Duration(seconds) * time.Second).UnixNano(), nil
	case at != "":
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return 0, status.Errorf(codes.InvalidArgument, "sinceTime: Invalid value: %q: must be a time in RFC 3339 form, such as 2024-01-02T15:04:05Z", at)
		}
		return t.UnixNano(), nil
	}
	return 0, nil
}

// PodAttach implements the pods/attach subresource: the container's
// output from now on, until it exits. Kobune starts containers without
// stdin or a terminal (their stdin and tty fields are named unsupported),
// so there is no input to attach to, as on Kubernetes for a container
// without stdin: true.
func (s *Proxy) PodAttach(ctx context.Context, req *apipb.PodAttachRequest, stream registry.Sender[apipb.LogChunk]) error {
	if !admitted(ctx) {
		if err := s.AdmitAttach(ctx, req, true, true); err != nil {
			return err
		}
	}
	return s.relayLog(ctx, stream, req.Namespace, req.Name, &nodepb.LogsRequest{Container: req.Container, Follow: true, FromEnd: true})
}

// relayLog streams a container log from the pod's node: pods/log and
// pods/attach.
func (s *Proxy) relayLog(ctx context.Context, stream registry.Sender[apipb.LogChunk], namespace, name string, req *nodepb.LogsRequest) error {
	pod, addr, err := s.PodNode(ctx, namespace, name)
	if err != nil {
		return err
	}
	nc, closeConn, err := s.nodeClient(pod.Spec.NodeName, addr)
	if err != nil {
		return err
	}
	defer closeConn()
	req.PodUid, req.Namespace, req.Name = pod.UID, pod.Namespace, pod.Name
	logs, err := nc.Logs(ctx, req)
	if err != nil {
		return err
	}
	if req.Follow {
		// Followed logs may be quiet for long: the client hears at once
		// that the stream is open (REST answers its headers).
		if err := stream.SendHeader(metadata.MD{}); err != nil {
			return err
		}
	}
	for {
		c, err := logs.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&apipb.LogChunk{Data: c.Data}); err != nil {
			return err
		}
	}
}

// PodExec implements the pods/exec subresource: first names the pod,
// the container and the command; the stream carries stdin in and the
// output back.
func (s *Proxy) PodExec(ctx context.Context, first *apipb.PodExecInput, stream registry.Duplex[apipb.PodExecInput, apipb.PodExecOutput]) error {
	if len(first.Command) == 0 {
		return apierrors.Invalid("exec: a command is required")
	}
	if !admitted(ctx) {
		if err := s.AdmitExec(ctx, first, true, true); err != nil {
			return err
		}
	}
	pod, addr, err := s.PodNode(ctx, first.Namespace, first.Name)
	if err != nil {
		return err
	}
	nc, closeConn, err := s.nodeClient(pod.Spec.NodeName, addr)
	if err != nil {
		return err
	}
	defer closeConn()
	ns, err := nc.Exec(ctx)
	if err != nil {
		return err
	}
	start := &nodepb.ExecStart{PodUid: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Container: first.Container,
		Command: first.Command, Stdin: first.Stdin, Tty: first.Tty}
	if err := ns.Send(&nodepb.ExecInput{Start: start, Stdin: first.StdinData, StdinClosed: first.StdinClosed}); err != nil {
		return err
	}
	go func() { // stdin: client → node
		for {
			in, err := stream.Recv()
			if err != nil {
				_ = ns.Send(&nodepb.ExecInput{StdinClosed: true})
				return
			}
			m := &nodepb.ExecInput{Stdin: in.StdinData, StdinClosed: in.StdinClosed}
			if in.Width > 0 && in.Height > 0 {
				m.Resize = &nodepb.TerminalSize{Width: in.Width, Height: in.Height}
			}
			if err := ns.Send(m); err != nil {
				return
			}
		}
	}()
	for { // output: node → client
		out, err := ns.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&apipb.PodExecOutput{Stdout: out.Stdout, Stderr: out.Stderr, Exited: out.Exited, ExitCode: out.ExitCode}); err != nil {
			return err
		}
		if out.Exited {
			return nil
		}
	}
}

// PodPortForward implements the pods/portforward subresource: one TCP
// connection to a port of the pod, relayed to and from its node's agent.
func (s *Proxy) PodPortForward(ctx context.Context, first *apipb.PodPortForwardData, stream registry.Duplex[apipb.PodPortForwardData, apipb.PodPortForwardData]) error {
	if first.Port < 1 || first.Port > 65535 {
		return apierrors.Invalid("port: Invalid value: %d: must be between 1 and 65535", first.Port)
	}
	if !admitted(ctx) {
		if err := s.AdmitPortForward(ctx, first.Namespace, first.Name, []int32{first.Port}); err != nil {
			return err
		}
	}
	pod, addr, err := s.PodNode(ctx, first.Namespace, first.Name)
	if err != nil {
		return err
	}
	nc, closeConn, err := s.nodeClient(pod.Spec.NodeName, addr)
	if err != nil {
		return err
	}
	defer closeConn()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ns, err := nc.PortForward(ctx)
	if err != nil {
		return err
	}
	start := &nodepb.PortForwardStart{PodUid: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Port: first.Port}
	if err := ns.Send(&nodepb.PortForwardData{Start: start, Data: first.Data, Closed: first.Closed}); err != nil {
		return err
	}
	if !first.Closed {
		go func() { // client → node
			for {
				in, err := stream.Recv()
				if err != nil {
					cancel()
					return
				}
				if err := ns.Send(&nodepb.PortForwardData{Data: in.Data, Closed: in.Closed}); err != nil || in.Closed {
					return
				}
			}
		}()
	}
	for { // node → client
		out, err := ns.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&apipb.PodPortForwardData{Data: out.Data, Closed: out.Closed}); err != nil {
			return err
		}
	}
}

// ServicePath asks a node's agent for the way a packet to a Service port
// takes through its rules (kobectl explain-path).
func (s *Proxy) ServicePath(ctx context.Context, req *apipb.ServicePathRequest) (*apipb.ServicePathReply, error) {
	switch {
	case req.Policy != "" && req.Policy != "ingress" && req.Policy != "egress":
		return nil, apierrors.Invalid("servicePath: policy %q: ingress or egress", req.Policy)
	case req.Node == "" || net.ParseIP(req.Ip) == nil:
		return nil, apierrors.Invalid("servicePath: node and a valid ip are required")
	case req.Policy == "" && (req.Port < 1 || req.Port > 65535):
		return nil, apierrors.Invalid("servicePath: a port (1-65535) is required")
	}
	addr, err := s.nodeAddr(ctx, req.Node)
	if err != nil {
		return nil, err
	}
	nc, closeConn, err := s.nodeClient(req.Node, addr)
	if err != nil {
		return nil, err
	}
	defer closeConn()
	r, err := nc.ServicePath(ctx, &nodepb.ServicePathRequest{Ip: req.Ip, Protocol: req.Protocol, Port: req.Port, SourceIp: req.SourceIp, Policy: req.Policy})
	if err != nil {
		return nil, err
	}
	out := &apipb.ServicePathReply{}
	for _, h := range r.Hops {
		out.Hops = append(out.Hops, &apipb.ServicePathHop{Object: h.Object, Lines: h.Lines, Explain: h.Explain})
	}
	return out, nil
}
