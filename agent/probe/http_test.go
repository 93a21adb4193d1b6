package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// TestHTTPSProbeDoesNotVerifyTheCertificate: as the kubelet's, an HTTPS
// probe succeeds against a server whose certificate is not for the pod's
// address (an admission webhook's is for its Service's name), and an
// answer of 500 still fails it.
func TestHTTPSProbeDoesNotVerifyTheCertificate(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	handler := core.ProbeHandler{HTTPGet: &core.HTTPGetAction{Path: "/readyz", Port: meta.FromInt(int32(p)), Scheme: "HTTPS"}}
	target := Target{PodIP: host, Container: &core.Container{Name: "c"}}
	if err := Run(context.Background(), nil, target, handler); err != nil {
		t.Errorf("HTTPS probe of a server with a certificate not for its address: %v", err)
	}
	status = http.StatusInternalServerError
	if err := Run(context.Background(), nil, target, handler); err == nil {
		t.Error("an HTTPS probe answered 500 succeeded")
	}
}
