package podio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func NewCmdPortForward(o *cmdutil.Options) *cobra.Command {
	var addresses []string
	cmd := &cobra.Command{
		Use:   "port-forward TYPE/NAME [LOCAL_PORT:]REMOTE_PORT [...]",
		Short: "Forward local ports to a pod, through the API server (kubectl port-forward)",
		Long: `Listen on local ports and carry each connection to a port on a pod's
loopback, through the API server and the pod's node (pods/portforward).
For a Service, Deployment, ReplicaSet, StatefulSet or DaemonSet one of
its running pods is chosen; a Service's port is translated to its
targetPort. Runs until interrupted (Ctrl-C).`,
		Example: `  # Local port 8080 to port 8080 of pod web-0
  kobectl port-forward pod/web-0 8080

  # Local 9000 to the pod port behind port 80 of Service web
  kobectl port-forward svc/web 9000:80 -n demo

  # A free local port (printed) to a pod of Deployment web, on every address
  kobectl port-forward deploy/web :8080 --address 0.0.0.0`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ns := o.NamespaceOrDefault()
			pod, remote, err := forwardTarget(ctx, c, ns, args[0], args[1:])
			if err != nil {
				return err
			}
			return forwardPorts(ctx, o, c, pod, remote, args[1:], addresses)
		},
	}
	cmd.Flags().StringSliceVar(&addresses, "address", []string{"localhost"}, "addresses to listen on (comma separated); localhost means 127.0.0.1 and ::1")
	return cmd
}

// portSpec is one [LOCAL:]REMOTE argument.
type portSpec struct {
	local  int    // 0: any free port
	remote string // a number or a port name
}

func parsePortSpec(arg string) (portSpec, error) {
	local, remote, hasLocal := strings.Cut(arg, ":")
	if !hasLocal {
		remote, local = arg, arg
	}
	if remote == "" {
		return portSpec{}, fmt.Errorf("%q: name the remote port, as in 8080 or 9000:80", arg)
	}
	sp := portSpec{remote: remote}
	if local != "" {
		n, err := strconv.Atoi(local)
		if err != nil || n < 0 || n > 65535 {
			if !hasLocal { // a named remote port needs a local number
				return portSpec{}, fmt.Errorf("%q: a named port needs a local port, as in 8080:%s", arg, remote)
			}
			return portSpec{}, fmt.Errorf("%q: the local port must be a number between 0 and 65535", arg)
		}
		sp.local = n
	}
	return sp, nil
}

// forwardTarget resolves TYPE/NAME to a running pod and each port
// argument to a port number on that pod, as kubectl does: a Service's
// port becomes its targetPort, a port name the container port of that
// name.
func forwardTarget(ctx context.Context, c *client.Client, ns, arg string, ports []string) (*core.Pod, []int32, error) {
	ref, err := resolvePod(ctx, c, ns, arg)
	if err != nil {
		return nil, nil, err
	}
	pod := ref.pod
	if pod.Status.Phase != core.PodRunning {
		return nil, nil, fmt.Errorf("unable to forward port because pod is not running. Current status=%s", pod.Status.Phase)
	}
	remote := make([]int32, len(ports))
	for i, arg := range ports {
		sp, err := parsePortSpec(arg)
		if err != nil {
			return nil, nil, err
		}
		if remote[i], err = podPort(pod, ref.svc, sp.remote); err != nil {
			return nil, nil, err
		}
	}
	return pod, remote, nil
}

// podPort is the pod's port number for a port argument.
func podPort(pod *core.Pod, svc *core.Service, remote string) (int32, error) {
	named := func(name string) (int32, error) {
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == name {
					return p.ContainerPort, nil
				}
			}
		}
		return 0, fmt.Errorf("pod %s has no container port named %q", pod.Name, name)
	}
	n, err := strconv.Atoi(remote)
	if svc == nil {
		if err != nil {
			return named(remote)
		}
		if n < 1 || n > 65535 {
			return 0, fmt.Errorf("port %d: must be between 1 and 65535", n)
		}
		return int32(n), nil
	}
	for _, sp := range svc.Spec.Ports {
		if err == nil && sp.Port == int32(n) || err != nil && sp.Name == remote {
			return core.FindPort(pod, &sp) // the targetPort on this pod, as the Service resolves it
		}
	}
	return 0, fmt.Errorf("service %s does not have a service port %s", svc.Name, remote)
}

// forwardPorts listens on each address and port and carries every
// connection to the pod, printing what kubectl prints.
func forwardPorts(ctx context.Context, o *cmdutil.Options, c *client.Client, pod *core.Pod, remote []int32, args, addresses []string) error {
	var hosts []string
	for _, a := range addresses {
		if a == "localhost" {
			hosts = append(hosts, "127.0.0.1", "::1")
			continue
		}
		if net.ParseIP(a) == nil {
			return fmt.Errorf("--address %q: give IP addresses or localhost", a)
		}
		hosts = append(hosts, a)
	}
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	var outMu sync.Mutex
	say := func(format string, a ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(o.Out, format+"\n", a...)
	}
	for i, arg := range args {
		sp, _ := parsePortSpec(arg) // checked by forwardTarget
		local, opened := sp.local, 0
		for _, h := range hosts {
			l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(local)))
			if err != nil {
				if h == "::1" && len(addresses) == 1 && addresses[0] == "localhost" {
					continue // no IPv6 loopback: 127.0.0.1 is enough, as for kubectl
				}
				return fmt.Errorf("unable to listen on %s: %w", net.JoinHostPort(h, strconv.Itoa(local)), err)
			}
			listeners = append(listeners, l)
			opened++
			port := l.Addr().(*net.TCPAddr).Port
			if local == 0 {
				local = port // every address gets the same free port
			}
			say("Forwarding from %s -> %d", l.Addr(), remote[i])
			go acceptForward(ctx, l, func(conn net.Conn) {
				say("Handling connection for %d", port)
				if err := c.PortForward(ctx, pod.Namespace, pod.Name, remote[i], conn); err != nil && ctx.Err() == nil {
					outMu.Lock()
					fmt.Fprintf(o.ErrOut, "error: an error occurred forwarding %d -> %d: %s\n", port, remote[i], status.Convert(err).Message())
					outMu.Unlock()
				}
			})
		}
		if opened == 0 {
			return fmt.Errorf("unable to listen on any of the requested addresses for port %s", arg)
		}
	}
	<-ctx.Done()
	return nil
}

// acceptForward serves connections until the listener closes.
func acceptForward(ctx context.Context, l net.Listener, handle func(net.Conn)) {
	for {
		conn, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
				continue
			}
			return
		}
		go func() {
			defer conn.Close()
			handle(conn)
		}()
	}
}
