package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"
)

// KeyPair is a certificate and key read from files and read again when
// the files change (checked at most once a second), so that `kobectl pki
// init` run again — new certificates from the same CA — takes effect on
// the next TLS handshake without a restart: connections already open go
// on, new ones use the new certificate. This is how certificates are
// rotated without downtime.
type KeyPair struct {
	CertFile, KeyFile string

	mu      sync.Mutex
	checked time.Time
	modTime time.Time
	pair    *tls.Certificate
}

// NewKeyPair loads the pair once (an error names the files).
func NewKeyPair(certFile, keyFile string) (*KeyPair, error) {
	k := &KeyPair{CertFile: certFile, KeyFile: keyFile}
	if _, err := k.get(); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *KeyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pair != nil && time.Since(k.checked) < time.Second {
		return k.pair, nil
	}
	k.checked = time.Now()
	fi, err := os.Stat(k.CertFile)
	if err == nil && k.pair != nil && fi.ModTime().Equal(k.modTime) {
		return k.pair, nil
	}
	pair, err := tls.LoadX509KeyPair(k.CertFile, k.KeyFile)
	if err != nil {
		if k.pair != nil {
			return k.pair, nil // half-written files: keep the one that works
		}
		return nil, fmt.Errorf("%s/%s: %w", k.CertFile, k.KeyFile, err)
	}
	k.pair = &pair
	if fi != nil {
		k.modTime = fi.ModTime()
	}
	return k.pair, nil
}

// GetCertificate is for a tls.Config of a server.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) { return k.get() }

// GetClientCertificate is for a tls.Config of a client.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.get()
}

// CAPool is a CA bundle file read again when it changes.
type CAPool struct {
	File string

	mu      sync.Mutex
	checked time.Time
	modTime time.Time
	pool    *x509.CertPool
}

// NewCAPool loads the bundle once.
func NewCAPool(file string) (*CAPool, error) {
	c := &CAPool{File: file}
	if _, err := c.Get(); err != nil {
		return nil, err
	}
	return c, nil
}

// Get is the current pool.
func (c *CAPool) Get() (*x509.CertPool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pool != nil && time.Since(c.checked) < time.Second {
		return c.pool, nil
	}
	c.checked = time.Now()
	fi, err := os.Stat(c.File)
	if err == nil && c.pool != nil && fi.ModTime().Equal(c.modTime) {
		return c.pool, nil
	}
	b, err := os.ReadFile(c.File)
	if err != nil {
		if c.pool != nil {
			return c.pool, nil
		}
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		if c.pool != nil {
			return c.pool, nil
		}
		return nil, fmt.Errorf("%s: no PEM certificate in it", c.File)
	}
	c.pool = pool
	if fi != nil {
		c.modTime = fi.ModTime()
	}
	return c.pool, nil
}
