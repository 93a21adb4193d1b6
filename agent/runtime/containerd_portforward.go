package runtime

import (
	"context"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/kobune/kobune/agent/network"
	"github.com/kobune/kobune/api/core"
)

// DialPod opens a TCP connection to port on the pod's loopback, inside the
// pod's network namespace, as the kubelet's port forwarding does (through
// the CRI): a server that listens only on 127.0.0.1 in the pod is reached
// too. A hostNetwork pod shares the node's namespace, the agent's own.
func (r *Containerd) DialPod(ctx context.Context, pod *core.Pod, port int32) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	var d net.Dialer
	if pod.Spec.HostNetwork {
		return d.DialContext(ctx, "tcp", addr)
	}
	return dialInNetns(ctx, network.NetnsPath(sandboxID(pod.UID)), addr)
}

// dialInNetns dials addr from the network namespace at path. The socket
// keeps the namespace it was created in, so only the dial runs there: on
// a goroutine locked to its OS thread, which never unlocks, so that the
// thread (now in the pod's namespace) ends with the goroutine instead of
// running other goroutines.
func dialInNetns(ctx context.Context, path, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		goruntime.LockOSThread()
		f, err := os.Open(path)
		if err != nil {
			done <- result{nil, fmt.Errorf("the pod's network namespace: %w", err)}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{nil, fmt.Errorf("entering the pod's network namespace: %w", err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		done <- result{c, err}
	}()
	res := <-done
	return res.c, res.err
}
