package apiserver_test

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
)

// TestExternalEtcdOverTLS: an external etcd that requires client
// certificates is used with --etcd-cafile/--etcd-certfile/--etcd-keyfile;
// without a client certificate, or without the CA, the API server does
// not start and says why.
func TestExternalEtcdOverTLS(t *testing.T) {
	dir := t.TempDir()
	p := func(f string) string { return filepath.Join(dir, "pki", f) }
	if _, err := pki.Init(filepath.Join(dir, "pki"), pki.Options{Server: "https://127.0.0.1:6443"}); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.LogLevel = "fatal"
	u, _ := url.Parse("https://" + addr)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*u}, []url.URL{*u}
	peer, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.Name + "=http://127.0.0.1:0"
	// The API server's serving certificate (127.0.0.1) serves etcd here;
	// clients must show a certificate of the cluster CA.
	cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = p("apiserver.crt"), p("apiserver.key")
	cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = p("ca.crt"), true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd did not start")
	}
	server := "https://" + addr
	start := func(mut func(*apiserver.Config)) (*testserver.Server, error) {
		return testserver.Start(t.TempDir(), "", func(c *apiserver.Config) { c.EtcdServers = server; mut(c) })
	}
	if _, err := start(func(*apiserver.Config) {}); err == nil || !strings.Contains(err.Error(), "--etcd-cafile") {
		t.Errorf("https etcd without --etcd-cafile: %v, want an error naming it", err)
	}
	if s, err := start(func(c *apiserver.Config) { c.EtcdCAFile = p("ca.crt") }); err == nil {
		s.Stop()
		t.Error("an etcd that requires client certificates accepted the API server without one")
	}
	s, err := start(func(c *apiserver.Config) {
		c.EtcdCAFile, c.EtcdCertFile, c.EtcdKeyFile = p("ca.crt"), p("apiserver-kubelet-client.crt"), p("apiserver-kubelet-client.key")
	})
	if err != nil {
		t.Fatalf("with the CA and a client certificate: %v", err)
	}
	defer s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.For[*core.ConfigMap](s.Client).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "over-tls"}}); err != nil {
		t.Fatal(err)
	}
}
