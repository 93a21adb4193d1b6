// Package e2e holds Kobune's end-to-end tests: the real API server, real
// containerd and runc, real CNI plugins, the real kobune-agent binary in a
// network namespace of its own. They need root and the Debian packages
// containerd, runc, containernetworking-plugins, iproute2 and
// busybox-static; without them they are skipped with a message saying why.
//
// Safety: every packet stays on this machine. The node's namespace has no
// default route; it reaches the API server over a veth pair with a /30, and
// the tests talk to pods only from inside that namespace.
package e2e
