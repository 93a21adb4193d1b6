package runtime

import (
	"strings"
	"testing"
	"time"
)

// TestNormalizeImage: the names real manifests use resolve as the kubelet
// and containerd resolve them.
func TestNormalizeImage(t *testing.T) {
	const digest = "sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa"
	tests := []struct{ in, want, err string }{
		{in: "nginx", want: "docker.io/library/nginx:latest"},
		{in: "nginx:1.14.2", want: "docker.io/library/nginx:1.14.2"},
		{in: "redis", want: "docker.io/library/redis:latest"},
		{in: "busybox:1.36", want: "docker.io/library/busybox:1.36"},
		{in: "bitnami/redis:7.2", want: "docker.io/bitnami/redis:7.2"},
		{in: "docker.io/nginx", want: "docker.io/library/nginx:latest"},
		{in: "registry.k8s.io/pause:3.10", want: "registry.k8s.io/pause:3.10"},
		{in: "localhost:5000/app", want: "localhost:5000/app:latest"},
		{in: "kobune.local/labapp:1.0", want: "kobune.local/labapp:1.0"},
		{in: "quay.io/prometheus/node-exporter@" + digest, want: "quay.io/prometheus/node-exporter@" + digest},
		{in: "nginx:1.25@" + digest, want: "docker.io/library/nginx@" + digest},
		{in: "Nginx", err: "must be lowercase"},
		{in: "nginx:", err: "invalid reference format"},
		{in: "", err: "invalid reference format"},
	}
	for _, tt := range tests {
		got, err := NormalizeImage(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("NormalizeImage(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("NormalizeImage(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if got := imageID("docker.io/library/nginx:1.14.2", digest); got != "docker.io/library/nginx@"+digest {
		t.Errorf("imageID = %q", got)
	}
}

// TestPullBackOff: 10 s after the first failure, doubling to five minutes;
// a success forgets; old entries go.
func TestPullBackOff(t *testing.T) {
	var b pullBackOff
	now := time.Unix(1000, 0)
	if d := b.waiting("p_nginx", now); d != 0 {
		t.Fatalf("held back before any failure: %v", d)
	}
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for i, w := range want {
		b.failed("p_nginx", now)
		if d := b.waiting("p_nginx", now); d != w*time.Second {
			t.Fatalf("after failure %d: held back %v, want %v", i+1, d, w*time.Second)
		}
		now = now.Add(w * time.Second) // retried when the back-off ends
		if d := b.waiting("p_nginx", now); d != 0 {
			t.Fatalf("after failure %d: still held back when it ended: %v", i+1, d)
		}
	}
	b.succeeded("p_nginx")
	b.failed("p_nginx", now)
	if d := b.waiting("p_nginx", now); d != 10*time.Second {
		t.Errorf("after a success the back-off starts again at 10s, got %v", d)
	}
	b.failed("other", now.Add(time.Hour))
	if _, ok := b.entries["p_nginx"]; ok || len(b.entries) != 1 {
		t.Errorf("an entry idle for an hour stayed: %v", b.entries)
	}
}
