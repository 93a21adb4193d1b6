// Package installer is kobeadm's: it installs Kobune on a machine, as
// kubeadm installs Kubernetes (and k3s's installer does at its scale). It
// owns the install's phases, each of which can run alone and says what it
// did: today the preflight checks (preflight.go: kubeadm's
// `init phase preflight`, the same check names, [ERROR]/[WARNING] lines
// and --ignore-preflight-errors). The PKI it will write comes from
// client/pki, the API it talks to through client; it imports no component.
package installer
