package reachability

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ProbeTimeout is how long a probe waits for a connection and an answer:
// a dropped packet is seen as this timeout.
const ProbeTimeout = time.Second

// Probe connects to addr ("ip:port") over proto (TCP, UDP) and waits for
// the server's first bytes: TCP gets an HTTP/1.0 request (any answer
// counts), UDP a datagram (any datagram back counts).
func Probe(proto, addr string) error {
	c, err := net.DialTimeout(strings.ToLower(proto), addr, ProbeTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ProbeTimeout))
	msg := "GET / HTTP/1.0\r\n\r\n"
	if proto == "UDP" {
		msg = "hello"
	}
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	b := make([]byte, 64)
	if _, err := c.Read(b); err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	return nil
}

// InNetns runs f on a thread of its own in the network namespace at path
// (/run/netns/<name>, /proc/<pid>/ns/net); the thread is not given back
// to the runtime afterwards (it stays locked and ends with the
// goroutine), so no other goroutine ever runs in that namespace.
func InNetns(path string, f func() error) error {
	errs := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errs <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errs <- err
			return
		}
		errs <- f()
	}()
	return <-errs
}
