package encryption

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func key(b byte, n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n)) }

func load(t *testing.T, yaml string) map[string]*Transformer {
	t.Helper()
	p := filepath.Join(t.TempDir(), "enc.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ts, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func config(providers string) string {
	return "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" + providers
}

// TestEachProviderRoundTrips: every provider's output has Kubernetes'
// prefix, holds no plaintext, and reads back; a value read with the first
// key is not stale.
func TestEachProviderRoundTrips(t *testing.T) {
	for _, p := range []struct{ name, yaml string }{
		{"aesgcm", "  - aesgcm: {keys: [{name: k1, secret: " + key(1, 32) + "}]}\n"},
		{"aescbc", "  - aescbc: {keys: [{name: k1, secret: " + key(1, 32) + "}]}\n"},
		{"secretbox", "  - secretbox: {keys: [{name: k1, secret: " + key(1, 32) + "}]}\n"},
	} {
		tr := load(t, config(p.yaml))["secrets"]
		plain := []byte(`{"data":{"password":"hunter2-hunter2"}}`)
		for _, size := range []int{0, 1, 15, 16, 17, len(plain)} {
			in := plain[:size]
			out, err := tr.ToStorage("/kobune/secrets/default/s", in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(out, []byte("k8s:enc:"+p.name+":v1:k1:")) || (size > 4 && bytes.Contains(out, in)) {
				t.Errorf("%s: stored %q", p.name, out)
			}
			back, stale, err := tr.FromStorage("/kobune/secrets/default/s", out)
			if err != nil || stale || !bytes.Equal(back, in) {
				t.Errorf("%s, %d bytes: read back %q stale=%v err=%v", p.name, size, back, stale, err)
			}
		}
	}
}

// TestRotation: with a new key first and the old one after it, old values
// still read but are stale, new ones are written with the new key; once
// the old key is gone its values no longer read, with an error that says
// what to do.
func TestRotation(t *testing.T) {
	old := load(t, config("  - aesgcm: {keys: [{name: old, secret: "+key(1, 32)+"}]}\n"))["secrets"]
	both := load(t, config("  - secretbox: {keys: [{name: new, secret: "+key(2, 32)+"}]}\n  - aesgcm: {keys: [{name: old, secret: "+key(1, 32)+"}]}\n"))["secrets"]
	onlyNew := load(t, config("  - secretbox: {keys: [{name: new, secret: "+key(2, 32)+"}]}\n"))["secrets"]
	k := "/kobune/secrets/default/s"
	stored, _ := old.ToStorage(k, []byte("v"))
	if v, stale, err := both.FromStorage(k, stored); err != nil || !stale || string(v) != "v" {
		t.Fatalf("old value under the rotated config: %q stale=%v %v; want it read and stale", v, stale, err)
	}
	rewritten, _ := both.ToStorage(k, []byte("v"))
	if !bytes.HasPrefix(rewritten, []byte("k8s:enc:secretbox:v1:new:")) {
		t.Fatalf("written with %q, want the new key", rewritten[:30])
	}
	if _, stale, err := onlyNew.FromStorage(k, rewritten); err != nil || stale {
		t.Errorf("the rewritten value without the old key: stale=%v %v", stale, err)
	}
	if _, _, err := onlyNew.FromStorage(k, stored); err == nil || !strings.Contains(err.Error(), "add its key back") {
		t.Errorf("an old value without its key: %v", err)
	}
	if _, _, err := onlyNew.FromStorage(k, []byte(`{"plain":true}`)); err == nil || !strings.Contains(err.Error(), "no identity provider") {
		t.Errorf("a plain value without identity: %v", err)
	}
	withIdentity := load(t, config("  - aesgcm: {keys: [{name: k, secret: "+key(3, 16)+"}]}\n  - identity: {}\n"))["secrets"]
	if v, stale, err := withIdentity.FromStorage(k, []byte(`{"plain":true}`)); err != nil || !stale || string(v) != `{"plain":true}` {
		t.Errorf("a plain value with identity second: %q stale=%v %v; want it read and stale", v, stale, err)
	}
}

// TestGCMBindsTheKey: an aesgcm value copied under another etcd key does
// not decrypt (the key is authenticated data), nor does a tampered one.
func TestGCMBindsTheKey(t *testing.T) {
	tr := load(t, config("  - aesgcm: {keys: [{name: k, secret: "+key(1, 32)+"}]}\n"))["secrets"]
	out, _ := tr.ToStorage("/kobune/secrets/a/s", []byte("v"))
	if _, _, err := tr.FromStorage("/kobune/secrets/b/s", out); err == nil {
		t.Error("a value moved to another key decrypted")
	}
	out[len(out)-1] ^= 1
	if _, _, err := tr.FromStorage("/kobune/secrets/a/s", out); err == nil {
		t.Error("a tampered value decrypted")
	}
}

// TestBadConfigNamesTheField: each mistake is refused with its path.
func TestBadConfigNamesTheField(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{config("  - aesgcm: {keys: [{name: k, secret: " + key(1, 5) + "}]}\n"), "resources[0].providers[0].aesgcm.keys[0].secret: an aesgcm key is 16, 24 or 32 bytes (got 5)"},
		{config("  - aescbc: {keys: [{name: k, secret: " + key(1, 16) + "}]}\n"), "aescbc.keys[0].secret: an aescbc key is 32 bytes"},
		{config("  - secretbox: {keys: [{name: k, secret: '%%%'}]}\n"), "secretbox.keys[0].secret: not base64"},
		{config("  - aesgcm: {keys: []}\n"), "providers[0].aesgcm.keys: at least one key"},
		{config("  - aesgcm: {keys: [{name: k, secret: " + key(1, 32) + "}, {name: k, secret: " + key(2, 32) + "}]}\n"), `keys[1].name: "k" is used twice`},
		{config("  - kms: {name: x}\n"), "providers[0].kms: not supported"},
		{config("  - {}\n"), "providers[0]: exactly one of"},
		{config("  - aesgcm: {keys: [{name: k, secret: " + key(1, 32) + "}]}\n    identity: {}\n"), "exactly one of"},
		{config("  - identity: {}\n  - aesgcm: {kees: []}\n"), `unknown field "kees"`},
		{"apiVersion: v1\nkind: Secret\n", "want apiVersion apiserver.config.k8s.io/v1, kind EncryptionConfiguration"},
		{"apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*.*']\n  providers: [{identity: {}}]\n", "resources[0].resources[0]"},
	} {
		p := filepath.Join(t.TempDir(), "enc.yaml")
		os.WriteFile(p, []byte(c.yaml), 0o600)
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n  got %v, want %q", c.yaml, err, c.want)
		}
	}
}
