package core

import (
	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// ServiceAccount is an identity for the processes of pods: they call the
// API as system:serviceaccount:<namespace>:<name> with a token the API
// server signs. kobune-controller makes a "default" one in every
// namespace.
type ServiceAccount struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	// AutomountServiceAccountToken: false keeps its token out of pods
	// that do not ask for it themselves.
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`
	// Secrets (long-lived token Secrets) and ImagePullSecrets are not
	// supported: tokens are short-lived and bound to a pod, and images
	// come from the node.
	Secrets          []ObjectReference      `json:"secrets,omitempty" kobune:"unsupported"`
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets,omitempty" kobune:"unsupported"`
}

// DefaultServiceAccountName is the ServiceAccount of pods that name none.
const DefaultServiceAccountName = "default"

// ServiceAccountTokenMountPath is where a pod's token, the cluster's CA and
// its namespace are mounted.
const ServiceAccountTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// RootCAConfigMapName is the ConfigMap in every namespace holding the
// cluster CA (ca.crt) pods verify the API server with.
const RootCAConfigMapName = "kube-root-ca.crt"

// ValidateServiceAccount checks a ServiceAccount.
func ValidateServiceAccount(sa *ServiceAccount) v.ErrorList {
	return v.ValidateObjectMeta(&sa.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
}

// PodServiceAccount is the ServiceAccount a pod runs as.
func PodServiceAccount(p *Pod) string {
	if p.Spec.ServiceAccountName == "" {
		return DefaultServiceAccountName
	}
	return p.Spec.ServiceAccountName
}
