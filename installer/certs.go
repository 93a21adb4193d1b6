package installer

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kobune/kobune/client"
)

// CertInfo is one certificate of an install and when it expires.
type CertInfo struct {
	// Name is the file, relative to EtcDir (admin.conf, pki/apiserver.crt).
	Name     string
	NotAfter time.Time
	// IsCA: the cluster CA itself (10 years; renewing it is a new cluster).
	IsCA bool
	// RenewedBy says what renews it.
	RenewedBy string
}

// Certificates lists the certificates under dir (an install's EtcDir):
// the PKI's and the client certificates of the kubeconfigs.
func Certificates(dir string) ([]CertInfo, error) {
	var out []CertInfo
	crts, _ := filepath.Glob(filepath.Join(dir, "pki", "*.crt"))
	for _, f := range crts {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if info, ok := certInfo(b); ok {
			info.Name = "pki/" + filepath.Base(f)
			out = append(out, info)
		}
	}
	confs, _ := filepath.Glob(filepath.Join(dir, "*.conf"))
	for _, f := range confs {
		cfg, err := client.LoadKubeconfig(f, "")
		if err != nil || len(cfg.Cert) == 0 {
			continue // a token's kubeconfig (bootstrap-agent.conf) has no certificate
		}
		if info, ok := certInfo(cfg.Cert); ok {
			info.Name = filepath.Base(f)
			out = append(out, info)
		}
	}
	for i := range out {
		switch {
		case out[i].IsCA:
			out[i].RenewedBy = "nothing: a new CA is a new cluster (every node joins again)"
		case out[i].Name == "agent.conf" || out[i].Name == "pki/agent-serving.crt":
			out[i].RenewedBy = "the agent itself, at 70-90% of its lifetime (a CertificateSigningRequest)"
		default:
			out[i].RenewedBy = "kobeadm certs renew"
		}
	}
	slices.SortFunc(out, func(a, b CertInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func certInfo(b []byte) (CertInfo, bool) {
	block, _ := pem.Decode(b)
	if block == nil {
		return CertInfo{}, false
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return CertInfo{}, false
	}
	return CertInfo{NotAfter: c.NotAfter, IsCA: c.IsCA}, true
}

// CheckExpiration prints the certificates of the install under dir, when
// each expires and what renews it, as kubeadm certs check-expiration.
func CheckExpiration(out io.Writer, dir string, now time.Time) error {
	certs, err := Certificates(dir)
	if err != nil {
		return err
	}
	if len(certs) == 0 {
		return fmt.Errorf("no certificate in %s: is Kobune installed on this machine?", dir)
	}
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CERTIFICATE\tEXPIRES\tRESIDUAL TIME\tRENEWED BY")
	soon := 0
	for _, c := range certs {
		left := c.NotAfter.Sub(now)
		residual := fmt.Sprintf("%dd", int(left.Hours()/24))
		switch {
		case left <= 0:
			residual = "<expired>"
			soon++
		case left < 30*24*time.Hour && !c.IsCA:
			residual += " (renew soon)"
			soon++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.NotAfter.UTC().Format(time.RFC3339), residual, c.RenewedBy)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if soon > 0 {
		fmt.Fprintf(out, "\n%d certificates expire within 30 days or have: kobeadm certs renew (on a control plane) renews them.\n", soon)
	}
	return nil
}

// renewCerts re-issues every certificate the CA signed on a control
// plane (the PKI and kubeconfigs, as init's certs and kubeconfig phases;
// the CA and the ServiceAccount key are kept). The running components
// read the new files at their next connection: nothing restarts.
func renewCerts(ctx context.Context, c *Config) error {
	if _, err := os.Stat(PKIDir + "/ca.key"); err != nil {
		return fmt.Errorf("no CA key in %s: certs renew runs on a control plane (on a node, the agent renews its own certificates)", PKIDir)
	}
	if err := certs(ctx, c); err != nil {
		return err
	}
	return kubeconfigs(ctx, c)
}
