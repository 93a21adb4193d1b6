// Package pki makes a cluster's certificates, as `kubeadm init phase
// certs` and `kubeadm init phase kubeconfig` do: a cluster CA, the API
// server's serving certificate (its IPs and names), and a kubeconfig with
// a client certificate for each identity — the admin (group
// system:masters), the scheduler (system:kube-scheduler), the controller
// (system:kube-controller-manager) and each node's agent
// (system:node:<name>, group system:nodes) and CSI provisioner; and for
// the agents' node API, each agent's serving certificate (for its node's
// name) and the API server's client certificate towards them (kubeadm's
// apiserver-kubelet-client). ECDSA P-256 keys, written 0600 in a 0700
// directory. kobectl pki init runs it.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/client"
)

// KubeletClientUser is the API server's identity towards the agents'
// node API.
const KubeletClientUser = "kube-apiserver-kubelet-client"

// Options say what to make.
type Options struct {
	// Server is the API server's URL the kubeconfigs name
	// (https://172.31.0.1:6443).
	Server string
	// Names are the API server's IPs and DNS names, beyond the defaults
	// (127.0.0.1, localhost, kubernetes.default.svc ..., 10.96.0.1).
	Names []string
	// Nodes get an agent and a CSI provisioner kubeconfig each.
	Nodes []string
	// Users get a kubeconfig each (user-<name>.kubeconfig), with no
	// permission until a binding grants some: "alice" or
	// "alice:developers:ops" (the user, then its groups).
	Users []string
	// Validity of the certificates (1 year); the CA gets 10.
	Validity time.Duration
}

// Identity is a client certificate's subject.
type Identity struct {
	File   string // <File>.kubeconfig
	User   string
	Groups []string
}

// Identities are the kubeconfigs Init writes for opts.
func Identities(opts Options) []Identity {
	ids := []Identity{
		{"admin", "kubernetes-admin", []string{"system:masters"}},
		{"scheduler", "system:kube-scheduler", nil},
		{"controller", "system:kube-controller-manager", nil},
	}
	for _, n := range opts.Nodes {
		ids = append(ids, Identity{"agent-" + n, "system:node:" + n, []string{"system:nodes"}},
			Identity{"csi-" + n, "system:kobune-csi-local:" + n, []string{"system:kobune-csi-provisioners"}})
	}
	for _, u := range opts.Users {
		parts := strings.Split(u, ":")
		ids = append(ids, Identity{"user-" + parts[0], parts[0], parts[1:]})
	}
	return ids
}

// Init writes the CA (or reuses one already in dir), the API server's
// certificate and the kubeconfigs, and returns the files it wrote.
func Init(dir string, opts Options) ([]string, error) {
	if opts.Server == "" {
		return nil, errors.New("the API server's URL (https://IP:6443) is required")
	}
	if opts.Validity == 0 {
		opts.Validity = 365 * 24 * time.Hour
	}
	for _, u := range opts.Users {
		name, _, _ := strings.Cut(u, ":")
		if name == "" || strings.ContainsAny(name, "/ \t") || strings.HasPrefix(name, "system:") {
			return nil, fmt.Errorf("--user %q: want NAME or NAME:GROUP[:GROUP...], a name without spaces or slashes and not under system:", u)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	ca, caKey, err := loadOrMakeCA(dir)
	if err != nil {
		return nil, err
	}
	wrote := []string{filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")}
	now := time.Now()
	// The serving certificate.
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"}, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(opts.Validity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}}
	for _, n := range opts.Names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	pairs := []struct {
		file string
		tmpl *x509.Certificate
	}{{"apiserver", tmpl},
		// The API server's client certificate for the agents' node API
		// (kubeadm's apiserver-kubelet-client): the only caller an agent
		// accepts.
		{"apiserver-kubelet-client", &x509.Certificate{Subject: pkix.Name{CommonName: KubeletClientUser, Organization: []string{"system:masters"}},
			NotBefore: now.Add(-time.Minute), NotAfter: now.Add(opts.Validity), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}}}
	for _, n := range opts.Nodes {
		// Each agent's serving certificate names its node, and the API
		// server checks that name (not the address a Node object claims).
		pairs = append(pairs, struct {
			file string
			tmpl *x509.Certificate
		}{"agent-" + n + "-serving", &x509.Certificate{Subject: pkix.Name{CommonName: "system:node:" + n, Organization: []string{"system:nodes"}},
			NotBefore: now.Add(-time.Minute), NotAfter: now.Add(opts.Validity), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: []string{n}}})
	}
	for _, pair := range pairs {
		certPEM, keyPEM, err := Issue(ca, caKey, pair.tmpl)
		if err != nil {
			return nil, err
		}
		for name, b := range map[string][]byte{pair.file + ".crt": certPEM, pair.file + ".key": keyPEM} {
			if err := writeFile(filepath.Join(dir, name), b); err != nil {
				return nil, err
			}
			wrote = append(wrote, filepath.Join(dir, name))
		}
	}
	saFiles, err := serviceAccountKey(dir)
	if err != nil {
		return nil, err
	}
	wrote = append(wrote, saFiles...)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	for _, id := range Identities(opts) {
		tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: id.User, Organization: id.Groups}, NotBefore: now.Add(-time.Minute),
			NotAfter: now.Add(opts.Validity), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		cert, key, err := Issue(ca, caKey, tmpl)
		if err != nil {
			return nil, err
		}
		b, err := Kubeconfig(opts.Server, caPEM, cert, key, id.User)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, id.File+".kubeconfig")
		if err := writeFile(path, b); err != nil {
			return nil, err
		}
		wrote = append(wrote, path)
	}
	return wrote, nil
}

// Kubeconfig is a kubeconfig for one user of one cluster, everything
// embedded.
func Kubeconfig(server string, caPEM, certPEM, keyPEM []byte, user string) ([]byte, error) {
	enc := base64.StdEncoding.EncodeToString
	return kubeconfigFor(server, caPEM, user, client.User{ClientCertificateData: enc(certPEM), ClientKeyData: enc(keyPEM)})
}

// TokenKubeconfig is a kubeconfig that authenticates with a token (a
// bootstrap token, for an agent's --bootstrap-kubeconfig).
func TokenKubeconfig(server string, caPEM []byte, token, user string) ([]byte, error) {
	return kubeconfigFor(server, caPEM, user, client.User{Token: token})
}

func kubeconfigFor(server string, caPEM []byte, user string, u client.User) ([]byte, error) {
	k := client.Kubeconfig{APIVersion: "v1", Kind: "Config", CurrentContext: user + "@kobune",
		Clusters: []client.NamedCluster{{Name: "kobune", Cluster: client.Cluster{Server: server, CertificateAuthorityData: base64.StdEncoding.EncodeToString(caPEM)}}},
		Users:    []client.NamedUser{{Name: user, User: u}},
		Contexts: []client.NamedContext{{Name: user + "@kobune", Context: client.Context{Cluster: "kobune", User: user}}}}
	return yaml.Marshal(k)
}

func loadOrMakeCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if cb, err := os.ReadFile(certFile); err == nil {
		kb, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("%s exists but its key does not: %w", certFile, err)
		}
		cblock, _ := pem.Decode(cb)
		kblock, _ := pem.Decode(kb)
		if cblock == nil || kblock == nil {
			return nil, nil, fmt.Errorf("%s or %s is not PEM", certFile, keyFile)
		}
		ca, err := x509.ParseCertificate(cblock.Bytes)
		if err != nil {
			return nil, nil, err
		}
		key, err := x509.ParseECPrivateKey(kblock.Bytes)
		return ca, key, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "kobune-ca"}, NotBefore: now.Add(-time.Minute),
		NotAfter: now.AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	ca, _ := x509.ParseCertificate(der)
	kder, _ := x509.MarshalECPrivateKey(key)
	if err := writeFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return nil, nil, err
	}
	if err := writeFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})); err != nil {
		return nil, nil, err
	}
	return ca, key, nil
}

// serviceAccountKey writes sa.key and sa.pub, the key pair the API server
// signs and verifies ServiceAccount tokens with (kubeadm's), unless they
// exist: replacing it would invalidate every token.
func serviceAccountKey(dir string) ([]string, error) {
	keyFile, pubFile := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if _, err := os.Stat(keyFile); err == nil {
		return []string{keyFile, pubFile}, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	pder, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := writeFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder})); err != nil {
		return nil, err
	}
	if err := writeFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})); err != nil {
		return nil, err
	}
	return []string{keyFile, pubFile}, nil
}

// Issue signs a new key's certificate from tmpl with the CA, and returns
// both as PEM.
func Issue(ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// LoadCAFiles reads a CA certificate and its EC key.
func LoadCAFiles(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	kb, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	cblock, _ := pem.Decode(cb)
	kblock, _ := pem.Decode(kb)
	if cblock == nil || kblock == nil {
		return nil, nil, errors.New("no PEM block in the CA files")
	}
	ca, err := x509.ParseCertificate(cblock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kblock.Bytes)
	return ca, key, err
}

// LoadCA reads dir's CA, to issue more certificates with Issue.
func LoadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	if _, err := os.Stat(filepath.Join(dir, "ca.crt")); err != nil {
		return nil, nil, err
	}
	return loadOrMakeCA(dir)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
