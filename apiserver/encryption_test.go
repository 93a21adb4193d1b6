package apiserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl"
)

func encryptionConfig(t *testing.T, providers string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "encryption.yaml")
	y := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" + providers
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func aesKey(name string, b byte) string {
	return "  - aesgcm: {keys: [{name: " + name + ", secret: " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) + "}]}\n"
}

// raw is what etcd holds at key, read past the API server.
func raw(t *testing.T, srv *testserver.Server, key string) []byte {
	t.Helper()
	resp, err := srv.Store().Client().Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %v %v", key, resp, err)
	}
	return resp.Kvs[0].Value
}

// TestSecretsEncryptedAtRest: with an aesgcm key, a Secret's bytes in etcd
// hold neither its value nor its base64 (a ConfigMap, not listed, stays
// plain), while get and watch return it; rotating — a new key first, the
// old one second, `kobectl get secrets -A -o json | kobectl replace -f -`
// — rewrites it under the new key, after which the old key can go.
func TestSecretsEncryptedAtRest(t *testing.T) {
	dir, addr := t.TempDir(), testserver.StableAddr()
	start := func(cfg string) *testserver.Server {
		t.Helper()
		srv, err := testserver.Start(dir, addr, func(c *apiserver.Config) { c.EncryptionProviderConfig = cfg })
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start(encryptionConfig(t, aesKey("key1", 1)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	secrets := client.For[*core.Secret](srv.Client)
	if _, err := secrets.Create(ctx, &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "db"},
		Data: map[string][]byte{"password": []byte("hunter2-is-secret")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*core.ConfigMap](srv.Client).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "plain"},
		Data: map[string]string{"k": "visible-value"}}); err != nil {
		t.Fatal(err)
	}
	noPlaintext := func(b []byte, prefix string) {
		t.Helper()
		if !bytes.HasPrefix(b, []byte(prefix)) {
			t.Errorf("etcd holds %.40q, want it to start with %q", b, prefix)
		}
		for _, leak := range []string{"hunter2-is-secret", base64.StdEncoding.EncodeToString([]byte("hunter2-is-secret")), "password"} {
			if bytes.Contains(b, []byte(leak)) {
				t.Errorf("etcd's bytes contain %q", leak)
			}
		}
	}
	noPlaintext(raw(t, srv, "/kobune/secrets/default/db"), "k8s:enc:aesgcm:v1:key1:")
	if b := raw(t, srv, "/kobune/configmaps/default/plain"); !bytes.Contains(b, []byte("visible-value")) {
		t.Errorf("a ConfigMap, not in the config, is not stored as it is: %q", b)
	}
	// etcd's files on disk (write-ahead log and database): the ConfigMap's
	// value is there, the Secret's is not.
	onDisk := func(s string) bool {
		found := false
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(s)) {
					found = true
				}
			}
			return nil
		})
		return found
	}
	if !onDisk("visible-value") {
		t.Error("the ConfigMap's value is not in etcd's files: the scan below proves nothing")
	}
	if onDisk("hunter2-is-secret") || onDisk(base64.StdEncoding.EncodeToString([]byte("hunter2-is-secret"))) {
		t.Error("the Secret's value is in etcd's files on disk")
	}
	s, err := secrets.Get(ctx, "default", "db")
	if err != nil || string(s.Data["password"]) != "hunter2-is-secret" {
		t.Fatalf("get: %v %v", s, err)
	}
	w, err := secrets.Watch(ctx, "default", client.ListOptions{}, client.ResourceVersion(s))
	if err != nil {
		t.Fatal(err)
	}
	s.Data["password"] = []byte("hunter3-is-secret")
	if _, err := secrets.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.Events:
		if string(ev.Object.Data["password"]) != "hunter3-is-secret" {
			t.Errorf("watch event: %+v", ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no watch event (%v)", w.Err())
	}
	srv.Stop()

	// Rotate: key2 first, key1 still there to read.
	srv = start(encryptionConfig(t, aesKey("key2", 2)+aesKey("key1", 1)))
	if s, err := client.For[*core.Secret](srv.Client).Get(ctx, "default", "db"); err != nil || string(s.Data["password"]) != "hunter3-is-secret" {
		t.Fatalf("get under the rotated config: %v %v", s, err)
	}
	var list, out, errOut bytes.Buffer
	if code := ctl.RunContext(ctx, []string{"--server", srv.Addr(), "get", "secrets", "-A", "-o", "json"}, strings.NewReader(""), &list, &errOut); code != 0 {
		t.Fatalf("kobectl get secrets: %s", errOut.String())
	}
	if code := ctl.RunContext(ctx, []string{"--server", srv.Addr(), "replace", "-f", "-"}, &list, &out, &errOut); code != 0 {
		t.Fatalf("kobectl replace: %s%s", out.String(), errOut.String())
	}
	noPlaintext(raw(t, srv, "/kobune/secrets/default/db"), "k8s:enc:aesgcm:v1:key2:")
	srv.Stop()

	// The old key can go.
	srv = start(encryptionConfig(t, aesKey("key2", 2)))
	defer srv.Stop()
	if s, err := client.For[*core.Secret](srv.Client).Get(ctx, "default", "db"); err != nil || string(s.Data["password"]) != "hunter3-is-secret" {
		t.Fatalf("get with only the new key: %v %v", s, err)
	}
}

// TestBadEncryptionConfigStopsTheServer: a config the server cannot use is
// refused at start, naming the flag and the field.
func TestBadEncryptionConfigStopsTheServer(t *testing.T) {
	for cfg, want := range map[string]string{
		encryptionConfig(t, "  - aesgcm: {keys: [{name: k, secret: c2hvcnQ=}]}\n"): "aesgcm.keys[0].secret",
		filepath.Join(t.TempDir(), "missing.yaml"):                                 "no such file",
	} {
		_, err := testserver.Start(t.TempDir(), "", func(c *apiserver.Config) { c.EncryptionProviderConfig = cfg })
		if err == nil || !strings.Contains(err.Error(), "--encryption-provider-config") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", cfg, err, want)
		}
	}
}
