package nodeproxy

import (
	"context"

	"google.golang.org/grpc/codes"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/proto/apipb"
)

// Attach, exec and port-forward are CONNECT requests to admission, as in
// kube-apiserver: the admission webhooks judge them on their options
// (PodAttachOptions, PodExecOptions, PodPortForwardOptions) before any
// stream opens, and before Kobune's own refusals (an attach with stdin),
// so that a webhook's denial is what the client reads. The gRPC door's
// PodAttach, PodExec and PodPortForward admit each call; the REST door
// admits a session once, before it upgrades the connection, and marks
// its context Admitted.

type admittedKey struct{}

// Admitted marks ctx as a session already admitted (REST, before its
// upgrade): the proxy's calls in it are not judged again.
func Admitted(ctx context.Context) context.Context {
	return context.WithValue(ctx, admittedKey{}, true)
}

func admitted(ctx context.Context) bool { return ctx.Value(admittedKey{}) != nil }

// AdmitAttach judges a pods/attach; stdout and stderr are what the client
// asked to read.
func (s *Proxy) AdmitAttach(ctx context.Context, req *apipb.PodAttachRequest, stdout, stderr bool) error {
	err := s.admit(ctx, "attach", &admission.ConnectOptions{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "PodAttachOptions"},
		Meta: meta.ObjectMeta{Namespace: req.Namespace, Name: req.Name}, Stdin: req.Stdin, Stdout: stdout, Stderr: stderr, TTY: req.Tty, Container: req.Container})
	if err == nil && (req.Stdin || req.Tty) {
		err = apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "attach: kobune starts containers without stdin or a terminal (the container fields stdin and tty are not supported), so an attach carries output only: leave out -i and -t, or use exec -it for a shell")
	}
	return err
}

// AdmitExec judges a pods/exec.
func (s *Proxy) AdmitExec(ctx context.Context, first *apipb.PodExecInput, stdout, stderr bool) error {
	return s.admit(ctx, "exec", &admission.ConnectOptions{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "PodExecOptions"},
		Meta: meta.ObjectMeta{Namespace: first.Namespace, Name: first.Name}, Stdin: first.Stdin, Stdout: stdout, Stderr: stderr, TTY: first.Tty,
		Container: first.Container, Command: first.Command})
}

// AdmitPortForward judges a pods/portforward to these ports.
func (s *Proxy) AdmitPortForward(ctx context.Context, namespace, name string, ports []int32) error {
	return s.admit(ctx, "portforward", &admission.ConnectOptions{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "PodPortForwardOptions"},
		Meta: meta.ObjectMeta{Namespace: namespace, Name: name}, Ports: ports})
}

func (s *Proxy) admit(ctx context.Context, sub string, o *admission.ConnectOptions) error {
	if s.Admission == nil {
		return nil
	}
	if o.Meta.Namespace == "" {
		o.Meta.Namespace = "default"
	}
	pk, _ := scheme.ByResource("pods")
	return s.Admission.AdmitConnect(ctx, pk, sub, o)
}
