package apiserver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/kobune/kobune/client/pki"
)

// serverTLS is the API server's TLS 1.3 configuration: its certificate,
// and client certificates verified against the client CA when they are
// given (x509 client-certificate authentication: CN the user, O the
// groups).
func serverTLS(cfg Config) (*tls.Config, error) {
	// Read again when the files change: renewed certificates are served
	// from the next handshake on, with no restart.
	kp, err := pki.NewKeyPair(cfg.TLSCertFile, cfg.TLSPrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file/--tls-private-key-file: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: kp.GetCertificate}
	if cfg.ClientCAFile != "" {
		b, err := os.ReadFile(cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--client-ca-file %s: no PEM certificate in it", cfg.ClientCAFile)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return tc, nil
}

// kubeletTLS is the API server's side of the node API's TLS.
func kubeletTLS(cfg Config) (*tls.Config, error) {
	n := 0
	for _, f := range []string{cfg.KubeletClientCertFile, cfg.KubeletClientKeyFile, cfg.KubeletCertificateAuthority} {
		if f != "" {
			n++
		}
	}
	switch n {
	case 0:
		return nil, nil
	case 3:
	default:
		return nil, errors.New("--kubelet-client-certificate, --kubelet-client-key and --kubelet-certificate-authority go together: give all three, or none (plaintext to the agents)")
	}
	kp, err := pki.NewKeyPair(cfg.KubeletClientCertFile, cfg.KubeletClientKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--kubelet-client-certificate/--kubelet-client-key: %w", err)
	}
	b, err := os.ReadFile(cfg.KubeletCertificateAuthority)
	if err != nil {
		return nil, fmt.Errorf("--kubelet-certificate-authority: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--kubelet-certificate-authority %s: no PEM certificate in it", cfg.KubeletCertificateAuthority)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, GetClientCertificate: kp.GetClientCertificate}, nil
}
