// Package encryption is the API server's encryption at rest
// (kube-apiserver's --encryption-provider-config and its storage
// transformers): an EncryptionConfiguration file names, per resource, an
// ordered list of providers — aesgcm, aescbc, secretbox, identity. The
// first provider (with its first key) encrypts everything written; every
// provider is tried to read, so a key is rotated by putting a new one
// first, rewriting the objects, then removing the old one.
//
// Stored values have Kubernetes' format, "k8s:enc:<provider>:v1:<key
// name>:" followed by the nonce and the ciphertext; aesgcm authenticates
// the etcd key as additional data, so a ciphertext copied under another
// key does not decrypt. A value read with anything but the first provider
// and key is reported stale, and the API server writes it again on the
// next update, even one that changes nothing.
package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/nacl/secretbox"
	"sigs.k8s.io/yaml"
)

// Config is the EncryptionConfiguration file (apiserver.config.k8s.io/v1).
type Config struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Resources  []ResourceConfig `json:"resources"`
}

// ResourceConfig is the providers of some resources.
type ResourceConfig struct {
	// Resources are plural resource names ("secrets", "configmaps").
	Resources []string         `json:"resources"`
	Providers []ProviderConfig `json:"providers"`
}

// ProviderConfig is one provider: exactly one field set.
type ProviderConfig struct {
	AESGCM    *KeysConfig `json:"aesgcm,omitempty"`
	AESCBC    *KeysConfig `json:"aescbc,omitempty"`
	Secretbox *KeysConfig `json:"secretbox,omitempty"`
	Identity  *struct{}   `json:"identity,omitempty"`
	// KMS is named so the error can say it is not supported.
	KMS any `json:"kms,omitempty"`
}

// KeysConfig is a provider's keys, the first used to encrypt.
type KeysConfig struct {
	Keys []Key `json:"keys"`
}

// Key is a named key, base64-encoded.
type Key struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// Transformer encrypts and decrypts the values of one resource.
type Transformer struct {
	providers []provider // the first encrypts
}

type provider interface {
	// prefix is what values it wrote start with ("" for identity).
	prefix() string
	seal(plain, aad []byte) ([]byte, error)
	open(body, aad []byte) ([]byte, error)
}

const envelope = "k8s:enc:"

// Load reads an EncryptionConfiguration file and returns a transformer per
// resource. Every error names the field.
func Load(path string) (map[string]*Transformer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption provider config: %w", err)
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("encryption provider config %s: %w", path, err)
	}
	out, err := Build(&c)
	if err != nil {
		return nil, fmt.Errorf("encryption provider config %s: %w", path, err)
	}
	return out, nil
}

// Build checks a configuration and makes its transformers.
func Build(c *Config) (map[string]*Transformer, error) {
	if c.Kind != "EncryptionConfiguration" || (c.APIVersion != "apiserver.config.k8s.io/v1" && c.APIVersion != "v1") {
		return nil, fmt.Errorf("want apiVersion apiserver.config.k8s.io/v1, kind EncryptionConfiguration (got %q, %q)", c.APIVersion, c.Kind)
	}
	out := map[string]*Transformer{}
	for i, rc := range c.Resources {
		p := fmt.Sprintf("resources[%d]", i)
		if len(rc.Resources) == 0 {
			return nil, fmt.Errorf("%s.resources: required", p)
		}
		if len(rc.Providers) == 0 {
			return nil, fmt.Errorf("%s.providers: required (identity: {} stores in plain text)", p)
		}
		t := &Transformer{}
		for j, pc := range rc.Providers {
			pp := fmt.Sprintf("%s.providers[%d]", p, j)
			prov, err := buildProvider(pp, pc)
			if err != nil {
				return nil, err
			}
			t.providers = append(t.providers, prov...)
		}
		for j, r := range rc.Resources {
			r = strings.ToLower(r)
			if r == "" || strings.ContainsAny(r, "*/.") {
				return nil, fmt.Errorf("%s.resources[%d]: %q: name a resource by its plural (secrets), without groups or wildcards", p, j, rc.Resources[j])
			}
			if _, dup := out[r]; dup {
				return nil, fmt.Errorf("%s.resources[%d]: %q is listed twice", p, j, r)
			}
			out[r] = t
		}
	}
	return out, nil
}

func buildProvider(path string, pc ProviderConfig) ([]provider, error) {
	set := 0
	for _, b := range []bool{pc.AESGCM != nil, pc.AESCBC != nil, pc.Secretbox != nil, pc.Identity != nil, pc.KMS != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("%s: exactly one of aesgcm, aescbc, secretbox, identity is required (got %d)", path, set)
	}
	switch {
	case pc.KMS != nil:
		return nil, fmt.Errorf("%s.kms: not supported by kobune (use aesgcm, aescbc or secretbox)", path)
	case pc.Identity != nil:
		return []provider{identity{}}, nil
	}
	name, keys := "aesgcm", pc.AESGCM
	if pc.AESCBC != nil {
		name, keys = "aescbc", pc.AESCBC
	} else if pc.Secretbox != nil {
		name, keys = "secretbox", pc.Secretbox
	}
	if len(keys.Keys) == 0 {
		return nil, fmt.Errorf("%s.%s.keys: at least one key is required", path, name)
	}
	var out []provider
	seen := map[string]bool{}
	for i, k := range keys.Keys {
		kp := fmt.Sprintf("%s.%s.keys[%d]", path, name, i)
		if k.Name == "" || strings.Contains(k.Name, ":") {
			return nil, fmt.Errorf("%s.name: required, without ':'", kp)
		}
		if seen[k.Name] {
			return nil, fmt.Errorf("%s.name: %q is used twice", kp, k.Name)
		}
		seen[k.Name] = true
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("%s.secret: not base64: %v", kp, err)
		}
		var p provider
		switch name {
		case "aesgcm":
			if len(secret) != 16 && len(secret) != 24 && len(secret) != 32 {
				return nil, fmt.Errorf("%s.secret: an aesgcm key is 16, 24 or 32 bytes (got %d)", kp, len(secret))
			}
			block, _ := aes.NewCipher(secret)
			gcm, _ := cipher.NewGCM(block)
			p = gcmProvider{name: k.Name, aead: gcm}
		case "aescbc":
			if len(secret) != 32 {
				return nil, fmt.Errorf("%s.secret: an aescbc key is 32 bytes (got %d)", kp, len(secret))
			}
			block, _ := aes.NewCipher(secret)
			p = cbcProvider{name: k.Name, block: block}
		case "secretbox":
			if len(secret) != 32 {
				return nil, fmt.Errorf("%s.secret: a secretbox key is 32 bytes (got %d)", kp, len(secret))
			}
			var key [32]byte
			copy(key[:], secret)
			p = boxProvider{name: k.Name, key: key}
		}
		out = append(out, p)
	}
	return out, nil
}

// ToStorage encrypts a value stored at key with the first provider.
func (t *Transformer) ToStorage(key string, plain []byte) ([]byte, error) {
	p := t.providers[0]
	body, err := p.seal(plain, []byte(key))
	if err != nil {
		return nil, err
	}
	return append([]byte(p.prefix()), body...), nil
}

// FromStorage decrypts a value read at key; stale says it was not written
// by the first provider and key (it should be written again).
func (t *Transformer) FromStorage(key string, stored []byte) (plain []byte, stale bool, err error) {
	var errs []error
	for i, p := range t.providers {
		pre := p.prefix()
		if pre == "" {
			if bytes.HasPrefix(stored, []byte(envelope)) {
				continue // identity reads only what no provider wrote
			}
			return stored, i != 0, nil
		}
		if !bytes.HasPrefix(stored, []byte(pre)) {
			continue
		}
		out, err := p.open(stored[len(pre):], []byte(key))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", strings.TrimSuffix(pre, ":"), err))
			continue
		}
		return out, i != 0, nil
	}
	if len(errs) > 0 {
		return nil, false, fmt.Errorf("decrypt %s: %w", key, errors.Join(errs...))
	}
	if bytes.HasPrefix(stored, []byte(envelope)) {
		end := bytes.IndexByte(stored[len(envelope):], ':')
		return nil, false, fmt.Errorf("decrypt %s: no configured provider reads %q values (add its key back to the encryption config)", key, stored[:len(envelope)+max(end, 0)])
	}
	return nil, false, fmt.Errorf("decrypt %s: the value is not encrypted and the encryption config has no identity provider to read it", key)
}

type identity struct{}

func (identity) prefix() string                       { return "" }
func (identity) seal(plain, _ []byte) ([]byte, error) { return plain, nil }
func (identity) open(body, _ []byte) ([]byte, error)  { return body, nil }

type gcmProvider struct {
	name string
	aead cipher.AEAD
}

func (g gcmProvider) prefix() string { return envelope + "aesgcm:v1:" + g.name + ":" }
func (g gcmProvider) seal(plain, aad []byte) ([]byte, error) {
	nonce := make([]byte, g.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return g.aead.Seal(nonce, nonce, plain, aad), nil
}
func (g gcmProvider) open(body, aad []byte) ([]byte, error) {
	n := g.aead.NonceSize()
	if len(body) < n {
		return nil, errors.New("value too short")
	}
	return g.aead.Open(nil, body[:n], body[n:], aad)
}

type cbcProvider struct {
	name  string
	block cipher.Block
}

func (c cbcProvider) prefix() string { return envelope + "aescbc:v1:" + c.name + ":" }
func (c cbcProvider) seal(plain, _ []byte) ([]byte, error) {
	bs := c.block.BlockSize()
	pad := bs - len(plain)%bs
	padded := append(append([]byte(nil), plain...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, bs+len(padded))
	if _, err := rand.Read(out[:bs]); err != nil {
		return nil, err
	}
	cipher.NewCBCEncrypter(c.block, out[:bs]).CryptBlocks(out[bs:], padded)
	return out, nil
}
func (c cbcProvider) open(body, _ []byte) ([]byte, error) {
	bs := c.block.BlockSize()
	if len(body) < 2*bs || len(body)%bs != 0 {
		return nil, errors.New("value is not whole blocks")
	}
	out := make([]byte, len(body)-bs)
	cipher.NewCBCDecrypter(c.block, body[:bs]).CryptBlocks(out, body[bs:])
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || !bytes.Equal(out[len(out)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, errors.New("bad padding (wrong key?)")
	}
	return out[:len(out)-pad], nil
}

type boxProvider struct {
	name string
	key  [32]byte
}

func (b boxProvider) prefix() string { return envelope + "secretbox:v1:" + b.name + ":" }
func (b boxProvider) seal(plain, _ []byte) ([]byte, error) {
	var nonce [24]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	return secretbox.Seal(nonce[:], plain, &nonce, &b.key), nil
}
func (b boxProvider) open(body, _ []byte) ([]byte, error) {
	if len(body) < 24 {
		return nil, errors.New("value too short")
	}
	var nonce [24]byte
	copy(nonce[:], body[:24])
	out, ok := secretbox.Open(nil, body[24:], &nonce, &b.key)
	if !ok {
		return nil, errors.New("authentication failed (wrong key?)")
	}
	return out, nil
}
