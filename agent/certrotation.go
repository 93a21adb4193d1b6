package agent

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
)

// Rotation is the kubelet's certificate rotation (--rotate-certificates):
// before the agent's client certificate (in its kubeconfig) or its node
// API's serving certificate expires — once a random 70–90% of its
// lifetime has passed, as the kubelet — the agent asks for a new one with
// a CertificateSigningRequest as the node itself (kobune-controller
// approves a node's request for its own name) and writes it. The client
// and the node API read the files again at their next connection, so
// nothing restarts, and a cluster does not die when its first
// certificates reach their end.
type Rotation struct {
	// Kubeconfig holds the client certificate; CertFile and KeyFile are
	// the node API's ("" skips them).
	Kubeconfig, CertFile, KeyFile, NodeName string
	// Client is the agent's own, authenticated by the certificate that is
	// renewed (it reads the kubeconfig again when the file changes).
	Client *client.Client
	Logf   func(string, ...any)
	// Now is the clock (tests).
	Now func() time.Time
}

// Run renews until ctx ends.
func (r *Rotation) Run(ctx context.Context) {
	if r.Now == nil {
		r.Now = time.Now
	}
	fraction := map[string]float64{} // per certificate (its serial): drawn once
	deadline := func(file string, read func(string) ([]byte, error)) (time.Time, bool) {
		b, err := read(file)
		if err != nil {
			return time.Time{}, false
		}
		c, err := parseCert(b)
		if err != nil {
			return time.Time{}, false
		}
		f, ok := fraction[c.SerialNumber.String()]
		if !ok {
			f = 0.7 + 0.2*rand.Float64()
			fraction[c.SerialNumber.String()] = f
		}
		return c.NotBefore.Add(time.Duration(f * float64(c.NotAfter.Sub(c.NotBefore)))), true
	}
	retry := 10 * time.Second
	for {
		next, what := time.Time{}, ""
		if t, ok := deadline(r.Kubeconfig, kubeconfigCert); ok {
			next, what = t, "client"
		}
		if r.CertFile != "" {
			if t, ok := deadline(r.CertFile, os.ReadFile); ok && (next.IsZero() || t.Before(next)) {
				next, what = t, "serving"
			}
		}
		if next.IsZero() {
			r.Logf("kobune-agent: certificate rotation: no certificate to rotate in %s", r.Kubeconfig)
			return
		}
		wait := next.Sub(r.Now())
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(wait, time.Hour)): // the clock may jump: look again at least hourly
				continue
			}
		}
		var err error
		if what == "client" {
			err = r.renewClient(ctx)
		} else {
			err = r.renewServing(ctx)
		}
		if err != nil {
			r.Logf("kobune-agent: renewing the %s certificate: %v (trying again in %v)", what, err, retry)
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
			retry = min(2*retry, 5*time.Minute)
			continue
		}
		retry = 10 * time.Second
		r.Logf("kobune-agent: renewed the %s certificate", what)
	}
}

func (r *Rotation) subject() pkix.Name {
	return pkix.Name{CommonName: "system:node:" + r.NodeName, Organization: []string{"system:nodes"}}
}

func (r *Rotation) renewClient(ctx context.Context) error {
	cfg, err := client.LoadKubeconfig(r.Kubeconfig, "")
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cert, key, err := r.Client.RequestCertificate(cctx, "node-csr-"+r.NodeName, certificates.KubeletClientSigner, r.subject(), nil, []string{"digital signature", "client auth"})
	if err != nil {
		return err
	}
	kc, err := pki.Kubeconfig(cfg.Server, cfg.CA, cert, key, r.subject().CommonName)
	if err != nil {
		return err
	}
	return writeAtomic(r.Kubeconfig, kc)
}

func (r *Rotation) renewServing(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cert, key, err := r.Client.RequestCertificate(cctx, "node-serving-"+r.NodeName, certificates.KubeletServingSigner, r.subject(), []string{r.NodeName},
		[]string{"digital signature", "server auth"})
	if err != nil {
		return err
	}
	if err := writeAtomic(r.KeyFile, key); err != nil {
		return err
	}
	return writeAtomic(r.CertFile, cert)
}

// writeAtomic replaces a file whole: a reader sees the old or the new.
func writeAtomic(path string, b []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".new")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func kubeconfigCert(path string) ([]byte, error) {
	cfg, err := client.LoadKubeconfig(path, "")
	if err != nil {
		return nil, err
	}
	if len(cfg.Cert) == 0 {
		return nil, errors.New("no client certificate")
	}
	return cfg.Cert, nil
}

func parseCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
