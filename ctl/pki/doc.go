// Package pki is Kobune's kobectl pki: the cluster's certificate
// authority and the certificates and keys of its components, made for a
// lab or an install (kubeadm's certs phase, as a command).
package pki
