package etcd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// writePeerTLS makes, for one start of the embedded etcd, a CA and a
// certificate for 127.0.0.1 signed by it (server and client use), writes
// them into dir (0700; keys 0600) and returns etcd's peer TLS settings:
// the peer port then admits only a holder of that certificate — etcd
// itself. They are made anew at every start; nothing else trusts them.
func writePeerTLS(dir string) (transport.TLSInfo, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return transport.TLSInfo{}, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return transport.TLSInfo{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kobune embedded etcd peer CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return transport.TLSInfo{}, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return transport.TLSInfo{}, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kobune embedded etcd peer"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.AddDate(10, 0, 0), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return transport.TLSInfo{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return transport.TLSInfo{}, err
	}
	info := transport.TLSInfo{CertFile: filepath.Join(dir, "peer.crt"), KeyFile: filepath.Join(dir, "peer.key"),
		TrustedCAFile: filepath.Join(dir, "ca.crt"), ClientCertAuth: true}
	for _, f := range []struct {
		path, typ string
		der       []byte
		mode      os.FileMode
	}{
		{info.TrustedCAFile, "CERTIFICATE", caDER, 0o644},
		{info.CertFile, "CERTIFICATE", leafDER, 0o644},
		{info.KeyFile, "EC PRIVATE KEY", keyDER, 0o600},
	} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), f.mode); err != nil {
			return transport.TLSInfo{}, err
		}
	}
	return info, nil
}
