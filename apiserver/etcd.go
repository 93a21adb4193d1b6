package apiserver

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	etcdversion "go.etcd.io/etcd/api/v3/version"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)

// etcdBackend is a connected etcd: embedded in this process or external.
type etcdBackend struct {
	// client serves reads and writes. For the embedded etcd it calls the
	// server in-process, without a network hop.
	client *clientv3.Client
	// watchClient serves watches; it is a real gRPC connection, because each
	// API watch gets its own etcd watch stream.
	watchClient *clientv3.Client
	embed       *embed.Etcd
	version     string
}

// startEmbeddedEtcd runs etcd inside the apiserver with its data in dir. It
// listens only on loopback ports chosen by the kernel; the apiserver talks
// to it over loopback.
func startEmbeddedEtcd(dir, logLevel string, quota int64) (*etcdBackend, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	loop, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls = []url.URL{*loop}
	cfg.AdvertiseClientUrls = []url.URL{*loop}
	cfg.ListenPeerUrls = []url.URL{*loop}
	cfg.AdvertisePeerUrls = []url.URL{*loop}
	cfg.InitialCluster = cfg.Name + "=http://127.0.0.1:0"
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
	watchCli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + e.Clients[0].Addr().String()}, DialTimeout: 10 * time.Second})
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("connect to embedded etcd: %w", err)
	}
	return &etcdBackend{client: v3client.New(e.Server), watchClient: watchCli, embed: e, version: "embedded " + etcdversion.Version}, nil
}

// connectEtcd connects to an external etcd cluster ("http://a:2379,http://b:2379").
func connectEtcd(ctx context.Context, servers string) (*etcdBackend, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(servers, ","), DialTimeout: 10 * time.Second})
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
	return &etcdBackend{client: cli, watchClient: cli, version: st.Version}, nil
}

func (b *etcdBackend) close() {
	if b.watchClient != b.client {
		b.watchClient.Close()
	}
	b.client.Close()
	if b.embed != nil {
		b.embed.Close()
	}
}
