// Package certificates is kube-controller-manager's certificate
// controllers for TLS bootstrap: the approver, which approves a joining
// agent's request for its client certificate (from a bootstrap token,
// for system:node:<name> in system:nodes, client usages only) and a
// node's request for its node API's serving certificate (by that node,
// for exactly its name) or for its CSI driver's identity
// (system:kobune-csi-local:<name>, a Kobune addition: kobeadm join asks
// for it), and the signer, which signs approved requests of those
// signers and of kubernetes.io/kube-apiserver-client with the cluster CA
// (--cluster-signing-cert-file, --cluster-signing-key-file). Anything
// else stays pending for a person (kobectl certificate approve|deny).
package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs.
const Name = "certificate-controller"

// Controller approves and signs.
type Controller struct {
	client *client.Client
	csrs   *client.Informer[*certificates.CertificateSigningRequest]
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey // nil: approve only
	Loop   *reconcile.Loop
}

// New returns the controller; with ca and caKey it also signs.
func New(c *client.Client, inf *controller.Informers, ca *x509.Certificate, caKey *ecdsa.PrivateKey) *Controller {
	cc := &Controller{client: c, csrs: inf.CSRs, ca: ca, caKey: caKey}
	cc.Loop = reconcile.NewLoop(Name, cc, 2)
	inf.CSRs.AddHandler(client.Handler[*certificates.CertificateSigningRequest]{
		OnAdd:    func(r *certificates.CertificateSigningRequest) { cc.Loop.Queue.Add(r.Name) },
		OnUpdate: func(_, r *certificates.CertificateSigningRequest) { cc.Loop.Queue.Add(r.Name) }})
	return cc
}

// Reconcile implements reconcile.Reconciler for a request's name.
func (cc *Controller) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	r, ok := cc.csrs.Get("", name)
	if !ok || r.Has(certificates.Denied) || r.Has(certificates.Failed) || len(r.Status.Certificate) > 0 {
		return reconcile.Result{}, nil
	}
	csrs := client.For[*certificates.CertificateSigningRequest](cc.client)
	if !r.Has(certificates.Approved) {
		reason, ok := autoApprovable(r)
		if !ok {
			return reconcile.Result{}, nil // for a person to decide
		}
		u := *r
		now := meta.Now()
		u.Status.Conditions = append(slices.Clone(r.Status.Conditions), certificates.Condition{Type: certificates.Approved, Status: "True",
			Reason: "AutoApproved", Message: reason, LastUpdateTime: now, LastTransitionTime: now})
		_, err := csrs.UpdateStatus(ctx, &u)
		return reconcile.Result{}, err // the update brings it back, approved, to be signed
	}
	if cc.caKey == nil || (r.Spec.SignerName != certificates.KubeletClientSigner && r.Spec.SignerName != certificates.KubeletServingSigner &&
		r.Spec.SignerName != certificates.APIServerClientSigner) {
		return reconcile.Result{}, nil
	}
	certPEM, err := cc.sign(r)
	u := *r
	if err != nil {
		now := meta.Now()
		u.Status.Conditions = append(slices.Clone(r.Status.Conditions), certificates.Condition{Type: certificates.Failed, Status: "True",
			Reason: "SignerValidationFailure", Message: err.Error(), LastUpdateTime: now, LastTransitionTime: now})
	} else {
		u.Status.Certificate = certPEM
	}
	_, err = csrs.UpdateStatus(ctx, &u)
	return reconcile.Result{}, err
}

// autoApprovable: a node client request from a bootstrap token (or the
// node renewing its own), a node's serving request for its own name, or a
// node's request for its own kobune-csi-local identity.
func autoApprovable(r *certificates.CertificateSigningRequest) (string, bool) {
	req, err := certificates.ParseRequest(r.Spec.Request)
	if err != nil {
		return "", false
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return "", false
	}
	// A node's request for its CSI driver's identity (kobeadm join asks
	// with the node's certificate): its own node's name only.
	if csiNode, ok := strings.CutPrefix(req.Subject.CommonName, certificates.CSIUserPrefix); ok {
		if r.Spec.SignerName == certificates.APIServerClientSigner && csiNode != "" && r.Spec.Username == "system:node:"+csiNode &&
			slices.Equal(req.Subject.Organization, []string{certificates.CSIProvisioners}) && len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 &&
			usagesWithin(r.Spec.Usages, "client auth") {
			return "Auto approving the node's kobune-csi-local identity.", true
		}
		return "", false
	}
	node, ok := strings.CutPrefix(req.Subject.CommonName, "system:node:")
	if !ok || node == "" || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return "", false
	}
	switch r.Spec.SignerName {
	case certificates.KubeletClientSigner:
		if len(req.DNSNames) > 0 || len(req.IPAddresses) > 0 || !usagesWithin(r.Spec.Usages, "client auth") {
			return "", false
		}
		if slices.Contains(r.Spec.Groups, "system:bootstrappers") {
			return "Auto approving agent client certificate after TLS bootstrapping.", true
		}
		if r.Spec.Username == req.Subject.CommonName {
			return "Auto approving agent client certificate renewal.", true
		}
	case certificates.KubeletServingSigner:
		if r.Spec.Username == req.Subject.CommonName && slices.Equal(req.DNSNames, []string{node}) && len(req.IPAddresses) == 0 &&
			usagesWithin(r.Spec.Usages, "server auth") {
			return "Auto approving node API serving certificate for the node's own name.", true
		}
	}
	return "", false
}

// usagesWithin: the usages include the one needed and nothing beyond
// digital signature and key encipherment.
func usagesWithin(usages []string, needed string) bool {
	if !slices.Contains(usages, needed) {
		return false
	}
	for _, u := range usages {
		if u != needed && u != "digital signature" && u != "key encipherment" {
			return false
		}
	}
	return true
}

// sign issues the certificate: the request's subject and names, a year
// (or spec.expirationSeconds, if shorter), the signer's usage.
func (cc *Controller) sign(r *certificates.CertificateSigningRequest) ([]byte, error) {
	req, err := certificates.ParseRequest(r.Spec.Request)
	if err != nil {
		return nil, err
	}
	life := 365 * 24 * time.Hour
	if e := r.Spec.ExpirationSeconds; e != nil && time.Duration(*e)*time.Second < life {
		life = time.Duration(*e) * time.Second
	}
	eku := x509.ExtKeyUsageClientAuth
	if r.Spec.SignerName == certificates.KubeletServingSigner {
		eku = x509.ExtKeyUsageServerAuth
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: req.Subject, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(life), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{eku}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, cc.ca, req.PublicKey, cc.caKey)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
