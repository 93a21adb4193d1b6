// Package token is kobectl token and certificate: bootstrap tokens for
// joining nodes, and certificate signing requests approved or denied
// (kubeadm token, kubectl certificate).
package token
