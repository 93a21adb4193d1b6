// Package nodeproxy owns what the API server asks of a node's agent: a
// pod's logs, attach, exec and port-forward relayed between the client and
// the agent's node API, the Service path a node takes to a Service (the
// kobectl trace extra), and the metrics API (metrics.k8s.io: nodes' and
// pods' CPU and memory from the agents' stats summaries); and where
// pods/proxy and services/proxy requests go, which the API server sends to
// the pod itself (podproxy.go). The pod or node
// named is read from storage, the agent dialled at the address the Node
// publishes, over TLS that checks the agent's certificate for the node's
// name when the server has a kubelet CA.
//
// It mirrors kube-apiserver's proxy to the kubelet
// (pkg/registry/core/pod/rest/subresources.go, pkg/kubelet/client) and
// metrics-server's summary scrape.
package nodeproxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"

	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/storage"
)

// Proxy reaches the agents.
type Proxy struct {
	store *storage.Store
	// kubeletTLS is the client side of the node API (nil: plaintext).
	kubeletTLS *tls.Config
	// Admission judges attach, exec and port-forward as CONNECT requests
	// (the admission webhooks); nil: nothing to judge them. Set once,
	// before the first request.
	Admission *admission.Chain
	// PodTransport sends pods/proxy and services/proxy requests to the
	// pods (podproxy.go).
	PodTransport *http.Transport
}

// New returns a proxy that reads pods and nodes from store, dials the
// agents with kubeletTLS (nil: plaintext) and the pods with podDial (nil:
// the network).
func New(store *storage.Store, kubeletTLS *tls.Config, podDial func(ctx context.Context, network, addr string) (net.Conn, error)) *Proxy {
	return &Proxy{store: store, kubeletTLS: kubeletTLS, PodTransport: Transport(podDial)}
}
