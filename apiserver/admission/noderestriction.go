package admission

import (
	"context"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/request"
)

// NodeLeaseNamespace holds the agents' heartbeat Leases.
const NodeLeaseNamespace = "kube-node-lease"

// NodeRestrictionLabelPrefix marks node labels an agent may not set on
// its own Node (so workloads can rely on them to pick trusted nodes).
const NodeRestrictionLabelPrefix = "node-restriction.kubernetes.io/"

// NodeRestriction is Kubernetes' admission plugin of the same name: an
// agent (system:node:<name>) writes only its own Node (not the
// node-restriction.kubernetes.io/ labels), its own Lease and CSINode (and
// Kobune's: its kube-dns-<node> EndpointSlice), and
// only the status of pods bound to it, and deletes only those pods. The
// Node authorizer lets agents write these kinds at all; this says which
// objects.
type NodeRestriction struct {
	// Pod reads a stored pod (a PodCertificateRequest names one).
	Pod func(ctx context.Context, namespace, name string) (*core.Pod, error)
}

// Name implements Validator.
func (NodeRestriction) Name() string { return "NodeRestriction" }

func nodeOf(ctx context.Context) (request.UserInfo, string, error) {
	u := request.UserFrom(ctx)
	if !u.InGroup(request.NodesGroup) {
		return u, "", nil
	}
	node := u.NodeName()
	if node == "" {
		return u, "", status.Errorf(codes.PermissionDenied, "user %q is in group system:nodes but is not named system:node:<node name>: refused", u.Name)
	}
	return u, node, nil
}

func nodeForbidden(node, what, why string) error {
	return status.Errorf(codes.PermissionDenied, "%s is forbidden: node %q %s", what, node, why)
}

// Validate implements Validator.
func (n NodeRestriction) Validate(ctx context.Context, a *Attributes) error {
	_, node, err := nodeOf(ctx)
	if node == "" {
		return err
	}
	m := a.Object.GetObjectMeta()
	what := a.Kind.Resource + " \"" + m.Name + "\""
	switch a.Kind.Resource {
	case "nodes":
		if m.Name != node {
			return nodeForbidden(node, what, "may only create or update its own Node")
		}
		var old map[string]string
		if a.OldObject != nil {
			old = a.OldObject.GetObjectMeta().Labels
		}
		for k, v := range m.Labels {
			if strings.HasPrefix(k, NodeRestrictionLabelPrefix) && old[k] != v {
				return nodeForbidden(node, what, "may not set the label "+k+" (labels under "+NodeRestrictionLabelPrefix+" are the administrator's)")
			}
		}
		for k := range old {
			if _, kept := m.Labels[k]; !kept && strings.HasPrefix(k, NodeRestrictionLabelPrefix) {
				return nodeForbidden(node, what, "may not remove the label "+k)
			}
		}
	case "pods":
		if a.Operation == Create {
			return nodeForbidden(node, what, "may not create pods (Kobune has no mirror pods)")
		}
		if old, ok := a.OldObject.(*core.Pod); !ok || old.Spec.NodeName != node {
			return nodeForbidden(node, what, "may only update the status of pods bound to it")
		}
	case "leases":
		if m.Namespace != NodeLeaseNamespace || m.Name != node {
			return nodeForbidden(node, what, "may only write its own Lease ("+NodeLeaseNamespace+"/"+node+")")
		}
	case "csinodes":
		if m.Name != node {
			return nodeForbidden(node, what, "may only write its own CSINode")
		}
	case "podcertificaterequests":
		// Only for a pod bound to it, by the pod's own uid and
		// ServiceAccount (Kubernetes' NodeRestriction).
		r, ok := a.Object.(*certificates.PodCertificateRequest)
		if !ok || a.Operation != Create {
			return nodeForbidden(node, what, "may only create PodCertificateRequests")
		}
		if r.Spec.NodeName != node {
			return nodeForbidden(node, what, "may only create PodCertificateRequests naming itself in spec.nodeName")
		}
		if n.Pod == nil {
			return nil
		}
		pod, err := n.Pod(ctx, m.Namespace, r.Spec.PodName)
		if err != nil || pod.UID != r.Spec.PodUID || pod.Spec.NodeName != node || core.PodServiceAccount(pod) != r.Spec.ServiceAccountName {
			return nodeForbidden(node, what, "may only create PodCertificateRequests for a pod bound to it, with the pod's uid and ServiceAccount")
		}
	case "endpointslices":
		if m.Namespace != "kube-system" || m.Name != NodeDNSSlice(node) {
			return nodeForbidden(node, what, "may only write its own cluster DNS EndpointSlice (kube-system/"+NodeDNSSlice(node)+")")
		}
	}
	return nil
}

// NodeDNSSlice is the EndpointSlice of kube-dns that a node's agent
// publishes for the DNS server it runs.
func NodeDNSSlice(node string) string { return "kube-dns-" + node }

// ValidateStatus implements StatusValidator: the same rules.
func (n NodeRestriction) ValidateStatus(ctx context.Context, a *Attributes) error {
	return n.Validate(ctx, a)
}

// ValidateDelete implements DeleteValidator.
func (NodeRestriction) ValidateDelete(ctx context.Context, k *scheme.Kind, stored meta.Object) error {
	_, node, err := nodeOf(ctx)
	if node == "" {
		return err
	}
	m := stored.GetObjectMeta()
	what := k.Resource + " \"" + m.Name + "\""
	switch k.Resource {
	case "pods":
		if stored.(*core.Pod).Spec.NodeName != node {
			return nodeForbidden(node, what, "may only delete pods bound to it")
		}
	case "nodes", "csinodes":
		if m.Name != node {
			return nodeForbidden(node, what, "may only delete its own "+k.Kind)
		}
	case "leases":
		if m.Namespace != NodeLeaseNamespace || m.Name != node {
			return nodeForbidden(node, what, "may only delete its own Lease")
		}
	case "endpointslices":
		if m.Namespace != "kube-system" || m.Name != NodeDNSSlice(node) {
			return nodeForbidden(node, what, "may only delete its own cluster DNS EndpointSlice")
		}
	}
	return nil
}
