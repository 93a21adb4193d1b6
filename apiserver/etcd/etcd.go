// Package etcd owns the API server's etcd: an embedded etcd started in
// the API server's process (its client endpoint a unix socket only root
// can open, its peer port TLS with a CA made at each start), or a
// connection to an external cluster (--etcd-servers, with TLS); and the
// watch on etcd's NOSPACE alarm, which the server clears by itself once
// enough objects are deleted (space.go). Only apiserver/storage reads and
// writes through it.
//
// It mirrors kube-apiserver's storage backend factory
// (k8s.io/apiserver/pkg/storage/storagebackend/factory) and, for the
// embedded etcd, what k3s does.
package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	etcdversion "go.etcd.io/etcd/api/v3/version"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)

// TLSConfig is an external etcd's servers and client TLS files
// (kube-apiserver's --etcd-servers, --etcd-cafile, --etcd-certfile,
// --etcd-keyfile).
type TLSConfig struct {
	Servers, CAFile, CertFile, KeyFile string
}

// Backend is a connected etcd: embedded in this process or external.
type Backend struct {
	// client serves reads and writes. For the embedded etcd it calls the
	// server in-process, without a network hop.
	Client *clientv3.Client
	// watchClient serves watches; it is a real gRPC connection, because each
	// API watch gets its own etcd watch stream.
	WatchClient *clientv3.Client
	embed       *embed.Etcd
	// Version is the etcd server's version.
	Version string
}

// StartEmbedded runs etcd inside the apiserver with its data in dir
// (mode 0700). Its client endpoint is a unix socket in dir (0600), so only
// root and the API server itself can reach it — a local user cannot read
// or write the cluster's objects past the API server. etcd also listens
// for raft peers, on a TCP loopback port (it takes no unix socket there):
// that port speaks TLS and admits only a client certificate of a CA made
// for this start, whose key is in dir (peertls.go).
func StartEmbedded(dir, logLevel string, quota int64) (*Backend, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	client := filepath.Join(dir, "client.sock")
	_ = os.Remove(client) // left by a killed server
	clientURL := url.URL{Scheme: "unix", Path: client}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	peerTLS, err := writePeerTLS(filepath.Join(dir, "peer-tls"))
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: peer certificates: %w", err)
	}
	cfg.PeerTLSInfo = peerTLS
	peer, _ := url.Parse("https://127.0.0.1:0")
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.Name + "=https://127.0.0.1:0"
	cfg.LogLevel = logLevel
	// Our own limit (1.5 MiB per object) must trigger before etcd's.
	cfg.MaxRequestBytes = 3 * 1024 * 1024
	cfg.QuotaBackendBytes = quota
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd in %s: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s did not become ready within 60s", dir)
	}
	if err := os.Chmod(client, 0o600); err != nil {
		e.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	watchCli, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL.String()}, DialTimeout: 10 * time.Second})
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("connect to embedded etcd: %w", err)
	}
	return &Backend{Client: v3client.New(e.Server), WatchClient: watchCli, embed: e, Version: "embedded " + etcdversion.Version}, nil
}

// Connect connects to an external etcd cluster ("http://a:2379,http://b:2379").
func Connect(ctx context.Context, servers string, tc *tls.Config) (*Backend, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(servers, ","), DialTimeout: 10 * time.Second, TLS: tc})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %s: %w", servers, err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := cli.Status(sctx, cli.Endpoints()[0])
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd %s is not answering: %w (is it running? check --etcd-servers)", servers, err)
	}
	return &Backend{Client: cli, WatchClient: cli, Version: st.Version}, nil
}

// ClientTLS is the client TLS to an external etcd (--etcd-cafile,
// --etcd-certfile, --etcd-keyfile: kube-apiserver's flags), nil without
// them. https:// servers need the CA; a client certificate is mutual TLS.
func ClientTLS(cfg TLSConfig) (*tls.Config, error) {
	if cfg.CAFile == "" && cfg.CertFile == "" && cfg.KeyFile == "" {
		for _, s := range strings.Split(cfg.Servers, ",") {
			if strings.HasPrefix(strings.TrimSpace(s), "https://") {
				return nil, fmt.Errorf("--etcd-servers %s is https://: give --etcd-cafile (and --etcd-certfile/--etcd-keyfile for a client certificate)", s)
			}
		}
		return nil, nil
	}
	if cfg.CAFile == "" {
		return nil, errors.New("--etcd-certfile/--etcd-keyfile need --etcd-cafile, the CA of etcd's serving certificate")
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("--etcd-certfile and --etcd-keyfile go together")
	}
	b, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("--etcd-cafile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--etcd-cafile %s: no PEM certificate in it", cfg.CAFile)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	if cfg.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--etcd-certfile/--etcd-keyfile: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// Close closes the clients and stops an embedded etcd.
func (b *Backend) Close() {
	if b.WatchClient != b.Client {
		b.WatchClient.Close()
	}
	b.Client.Close()
	if b.embed != nil {
		b.embed.Close()
	}
}
