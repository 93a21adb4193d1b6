package agent

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
)

// BootstrapConfig is the agent's TLS bootstrap (the kubelet's
// --bootstrap-kubeconfig): with a bootstrap token it asks for its client
// certificate (system:node:<name>), writes Kubeconfig with it, then, as
// the node, asks for its node API's serving certificate (for its name).
// Files that exist are kept: a restart does not ask again, and once all
// exist the bootstrap kubeconfig is not read (its token is short-lived).
type BootstrapConfig struct {
	BootstrapKubeconfig, Kubeconfig, NodeName string
	// CertFile, KeyFile and ClientCAFile are the node API's; "" skips.
	CertFile, KeyFile, ClientCAFile string
	Logf                            func(string, ...any)
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// Bootstrap does the TLS bootstrap where files are missing.
func Bootstrap(ctx context.Context, cfg BootstrapConfig) error {
	if cfg.Kubeconfig == "" {
		return errors.New("--bootstrap-kubeconfig needs --kubeconfig: where the agent writes its own kubeconfig")
	}
	serving := cfg.CertFile != "" && cfg.KeyFile != "" && (!exists(cfg.CertFile) || !exists(cfg.KeyFile))
	if exists(cfg.Kubeconfig) && !serving && (cfg.ClientCAFile == "" || exists(cfg.ClientCAFile)) {
		return nil // bootstrapped: the token's kubeconfig may be gone (kobeadm join removes it)
	}
	bc, err := client.LoadKubeconfig(cfg.BootstrapKubeconfig, "")
	if err != nil {
		return fmt.Errorf("--bootstrap-kubeconfig: %w", err)
	}
	subject := pkix.Name{CommonName: "system:node:" + cfg.NodeName, Organization: []string{"system:nodes"}}
	write := func(path string, b []byte) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		return os.WriteFile(path, b, 0o600)
	}
	if !exists(cfg.Kubeconfig) {
		cl, err := client.NewFromConfig(bc)
		if err != nil {
			return err
		}
		defer cl.Close()
		cfg.Logf("TLS bootstrap: asking for node %s's client certificate (a CertificateSigningRequest with the bootstrap token)", cfg.NodeName)
		cert, key, err := cl.RequestCertificate(ctx, "node-csr-"+cfg.NodeName, certificates.KubeletClientSigner, subject, nil, []string{"digital signature", "client auth"})
		if err != nil {
			return err
		}
		kc, err := pki.Kubeconfig(bc.Server, bc.CA, cert, key, subject.CommonName)
		if err != nil {
			return err
		}
		if err := write(cfg.Kubeconfig, kc); err != nil {
			return err
		}
		cfg.Logf("TLS bootstrap: wrote %s", cfg.Kubeconfig)
	}
	if cfg.ClientCAFile != "" && !exists(cfg.ClientCAFile) {
		if err := write(cfg.ClientCAFile, bc.CA); err != nil {
			return err
		}
	}
	if serving {
		nc, err := client.Dial("", cfg.Kubeconfig)
		if err != nil {
			return err
		}
		defer nc.Close()
		cfg.Logf("TLS bootstrap: asking for the node API's serving certificate for %q", cfg.NodeName)
		cert, key, err := nc.RequestCertificate(ctx, "node-serving-"+cfg.NodeName, certificates.KubeletServingSigner, subject, []string{cfg.NodeName},
			[]string{"digital signature", "server auth"})
		if err != nil {
			return err
		}
		if err := write(cfg.KeyFile, key); err != nil {
			return err
		}
		if err := write(cfg.CertFile, cert); err != nil {
			return err
		}
	}
	return nil
}
