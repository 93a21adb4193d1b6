package authorizer

import (
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/rbac"
)

// Bootstrap users and groups (client/pki issues their certificates).
const (
	SchedulerUser         = "system:kube-scheduler"
	ControllerManagerUser = "system:kube-controller-manager"
	CSIProvisionersGroup  = "system:kobune-csi-provisioners"
)

var (
	read   = []string{"get", "list", "watch"}
	write  = []string{"create", "update", "patch", "delete", "deletecollection"}
	all    = []string{"*"}
	events = rule([]string{"create", "update", "patch"}, "", "events")
)

func rule(verbs []string, group string, resources ...string) rbac.PolicyRule {
	return rbac.PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

func named(r rbac.PolicyRule, names ...string) rbac.PolicyRule {
	r.ResourceNames = names
	return r
}

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// NodeRules are what an agent may do beyond the graph (the system:node
// ClusterRole, which the Node authorizer applies; NodeRestriction narrows
// the writes to its own objects): kubelet's part (its Node and Lease, its
// pods and their status, events, CSINode), kube-proxy's and the DNS's
// (Services, EndpointSlices) and the network plugin's (namespaces,
// NetworkPolicies).
var NodeRules = []rbac.PolicyRule{
	rule(join(read, []string{"create", "update", "patch", "delete"}), "", "nodes"),
	rule([]string{"update", "patch"}, "", "nodes/status"),
	rule(join(read, []string{"delete"}), "", "pods"),
	rule([]string{"update", "patch"}, "", "pods/status"),
	rule(read, "", "services"),
	// Kobune's agent also serves cluster DNS and publishes its own
	// kube-system/kube-dns-<node> EndpointSlice (NodeRestriction: only that one).
	rule(join(read, []string{"create", "update", "delete"}), "discovery.k8s.io", "endpointslices"),
	events,
	rule([]string{"get", "create", "update", "patch", "delete"}, "coordination.k8s.io", "leases"),
	rule([]string{"get", "create", "update", "patch", "delete"}, "storage.k8s.io", "csinodes"),
	rule(read, "storage.k8s.io", "storageclasses", "csidrivers"),
	// A pod's RuntimeClass: its handler must be one the node has.
	rule(read, "node.k8s.io", "runtimeclasses"),
	// And the network plugin's (Calico's or Cilium's agent, which have
	// their own ServiceAccounts on Kubernetes): it enforces NetworkPolicies,
	// whose peers are chosen by pod and namespace labels.
	rule(read, "", "namespaces"),
	rule(read, "networking.k8s.io", "networkpolicies"),
	// Its node API's serving certificate, asked for after joining.
	rule([]string{"create", "get", "list", "watch"}, "certificates.k8s.io", "certificatesigningrequests"),
	// The trust anchors pods mount (clusterTrustBundle projections).
	rule(read, "certificates.k8s.io", "clustertrustbundles"),
	// Its pods' podCertificate projections (NodeRestriction: only for
	// pods bound to it).
	rule([]string{"create", "get", "list", "watch"}, "certificates.k8s.io", "podcertificaterequests"),
}

// controllerRoles are the least-privilege roles of kobune-controller's
// controllers, one per controller, named as Kubernetes names its
// system:controller:* roles. Kubernetes binds each to its controller's
// ServiceAccount in kube-system; kobune-controller runs them all under one
// certificate, so each is bound to system:kube-controller-manager (see
// docs/security.md).
var controllerRoles = map[string][]rbac.PolicyRule{
	"deployment-controller": {
		rule(join(read, []string{"update"}), "apps", "deployments"), rule([]string{"update"}, "apps", "deployments/status"),
		rule(join(read, write), "apps", "replicasets"), rule(join(read, []string{"update"}), "", "pods"), events},
	"replicaset-controller": {
		rule(join(read, []string{"update"}), "apps", "replicasets"), rule([]string{"update"}, "apps", "replicasets/status"),
		rule(join(read, []string{"create", "update", "delete"}), "", "pods"), events},
	"replication-controller": {
		rule(join(read, []string{"update"}), "", "replicationcontrollers"), rule([]string{"update"}, "", "replicationcontrollers/status"),
		rule(join(read, []string{"create", "update", "delete"}), "", "pods"), events},
	"statefulset-controller": {
		rule(join(read, []string{"update"}), "apps", "statefulsets"), rule([]string{"update"}, "apps", "statefulsets/status"),
		rule(join(read, []string{"create", "update", "delete"}), "", "pods"),
		rule(join(read, []string{"create", "update", "delete"}), "", "persistentvolumeclaims"),
		rule(join(read, []string{"create", "update", "delete"}), "apps", "controllerrevisions"), events},
	"daemon-set-controller": {
		rule(join(read, []string{"update"}), "apps", "daemonsets"), rule([]string{"update"}, "apps", "daemonsets/status"),
		rule(join(read, []string{"create", "update", "delete"}), "", "pods"), rule(read, "", "nodes"),
		rule(join(read, []string{"create", "update", "delete"}), "apps", "controllerrevisions"), events},
	"job-controller": {
		rule(join(read, []string{"update", "delete"}), "batch", "jobs"), rule([]string{"update"}, "batch", "jobs/status"),
		rule(join(read, []string{"create", "update", "delete"}), "", "pods"), events},
	"cronjob-controller": {
		rule(join(read, []string{"update"}), "batch", "cronjobs"), rule([]string{"update"}, "batch", "cronjobs/status"),
		rule(join(read, []string{"create", "update", "delete"}), "batch", "jobs"), rule(read, "", "pods"), events},
	"endpointslice-controller": {
		rule(read, "", "services", "pods", "nodes"), rule(join(read, []string{"create", "update", "delete"}), "discovery.k8s.io", "endpointslices"),
		rule(join(read, []string{"create", "update", "delete"}), "", "endpoints"), events},
	"endpointslicemirroring-controller": {
		rule(read, "", "services", "endpoints"), rule(join(read, []string{"create", "update", "delete"}), "discovery.k8s.io", "endpointslices"), events},
	"service-cidrs-controller": {
		rule(join(read, []string{"update"}), "networking.k8s.io", "servicecidrs"), rule([]string{"update"}, "networking.k8s.io", "servicecidrs/status"),
		rule(read, "networking.k8s.io", "ipaddresses"), rule(read, "", "services"), events},
	"node-ipam-controller": {rule(join(read, []string{"update"}), "", "nodes"), events},
	"node-controller": {
		rule(join(read, []string{"update", "delete"}), "", "nodes"), rule([]string{"update"}, "", "nodes/status"),
		rule(read, "coordination.k8s.io", "leases"), rule(join(read, []string{"delete"}), "", "pods"), rule([]string{"update"}, "", "pods/status"), events},
	"persistent-volume-binder": {
		rule(join(read, []string{"create", "update", "delete"}), "", "persistentvolumes"), rule([]string{"update"}, "", "persistentvolumes/status"),
		rule(join(read, []string{"update"}), "", "persistentvolumeclaims"), rule([]string{"update"}, "", "persistentvolumeclaims/status"),
		rule(read, "storage.k8s.io", "storageclasses"), rule(read, "", "pods", "nodes"), events},
	"generic-garbage-collector": {{Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
	// It rewrites every object of the resource a migration names, any
	// resource (as Kubernetes' storage-version-migrator may).
	"storage-version-migrator-controller": {{Verbs: []string{"get", "list", "update"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		rule(read, "storagemigration.k8s.io", "storageversionmigrations"), rule([]string{"update"}, "storagemigration.k8s.io", "storageversionmigrations/status")},
	"clusterrole-aggregation-controller": {rule([]string{"get", "list", "watch", "update", "escalate"}, rbac.GroupName, "clusterroles")},
	// Approves joining nodes' requests and signs approved ones.
	"certificate-controller": {rule(read, "certificates.k8s.io", "certificatesigningrequests"),
		rule([]string{"update"}, "certificates.k8s.io", "certificatesigningrequests/status"), events},
	// It recomputes every quota's usage from the objects it counts, which
	// may be of any kind (count/<resource>): list and watch everything, as
	// Kubernetes' resourcequota-controller role does.
	"resourcequota-controller": {rule(read, "", "resourcequotas"), rule([]string{"update"}, "", "resourcequotas/status"),
		{Verbs: []string{"list", "watch"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, events},
	"horizontal-pod-autoscaler": {rule(read, "autoscaling", "horizontalpodautoscalers"), rule([]string{"update"}, "autoscaling", "horizontalpodautoscalers/status"),
		rule([]string{"get", "update", "patch"}, "apps", "deployments/scale", "replicasets/scale", "statefulsets/scale"),
		rule([]string{"get", "update", "patch"}, "", "replicationcontrollers/scale"), rule(read, "", "pods"),
		rule([]string{"get", "list"}, "metrics.k8s.io", "pods"), events},
	"disruption-controller": {rule(read, "policy", "poddisruptionbudgets"), rule([]string{"update"}, "policy", "poddisruptionbudgets/status"),
		rule(read, "", "pods", "replicationcontrollers"), rule(read, "apps", "replicasets", "deployments", "statefulsets"), events},
	"service-account-controller": {rule(read, "", "namespaces"), rule(join(read, []string{"create"}), "", "serviceaccounts"), events},
	// It reads and writes only kube-root-ca.crt (its list and watch name it
	// with a field selector), and may create ConfigMaps.
	"root-ca-cert-publisher": {rule(read, "", "namespaces"), named(rule(join(read, []string{"update"}), "", "configmaps"), "kube-root-ca.crt"),
		rule([]string{"create"}, "", "configmaps"), events},
}

// Labels that aggregate a ClusterRole's rules into admin, edit and view.
const (
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// the namespaced resources the user-facing roles cover.
var (
	viewResources = []rbac.PolicyRule{
		rule(read, "", "pods", "pods/log", "pods/status", "services", "endpoints", "configmaps", "persistentvolumeclaims", "persistentvolumeclaims/status", "events", "namespaces", "serviceaccounts", "limitranges", "resourcequotas", "resourcequotas/status",
			"replicationcontrollers", "replicationcontrollers/status", "replicationcontrollers/scale"),
		rule(read, "apps", "deployments", "deployments/status", "replicasets", "replicasets/status", "statefulsets", "statefulsets/status", "daemonsets", "daemonsets/status",
			"deployments/scale", "replicasets/scale", "statefulsets/scale", "controllerrevisions"),
		rule(read, "batch", "jobs", "jobs/status", "cronjobs", "cronjobs/status"),
		rule(read, "autoscaling", "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(read, "policy", "poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(read, "discovery.k8s.io", "endpointslices"),
		rule(read, "networking.k8s.io", "networkpolicies", "ingresses", "ingresses/status"),
		// metrics-server's system:aggregated-metrics-reader, aggregated to
		// view as metrics-server's manifest does.
		rule(read, "metrics.k8s.io", "pods", "nodes"),
	}
	editResources = []rbac.PolicyRule{
		rule(join(read, write), "", "secrets"),
		rule(write, "", "pods", "services", "endpoints", "configmaps", "persistentvolumeclaims", "serviceaccounts", "replicationcontrollers", "replicationcontrollers/scale"),
		rule([]string{"create", "get"}, "", "pods/exec", "pods/attach", "pods/portforward"),
		rule([]string{"create"}, "", "pods/eviction"),
		rule([]string{"impersonate"}, "", "serviceaccounts"),
		rule(write, "apps", "deployments", "replicasets", "statefulsets", "daemonsets", "deployments/scale", "replicasets/scale", "statefulsets/scale"),
		rule(write, "batch", "jobs", "cronjobs"),
		rule(write, "autoscaling", "horizontalpodautoscalers"),
		rule(write, "policy", "poddisruptionbudgets"),
		rule(write, "networking.k8s.io", "networkpolicies", "ingresses"),
	}
	adminResources = []rbac.PolicyRule{
		rule(join(read, write), rbac.GroupName, "roles", "rolebindings"),
		rule([]string{"create"}, "authorization.k8s.io", "localsubjectaccessreviews"),
	}
)

func clusterRole(name string, labels map[string]string, rules ...rbac.PolicyRule) *rbac.ClusterRole {
	return &rbac.ClusterRole{TypeMeta: meta.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: meta.ObjectMeta{Name: name, Labels: merge(map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}, labels),
			Annotations: map[string]string{rbac.AutoUpdateAnnotation: "true"}}, Rules: rules}
}

func merge(a, b map[string]string) map[string]string {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func aggregated(name string, labels map[string]string, selectorLabel string) *rbac.ClusterRole {
	r := clusterRole(name, labels)
	r.AggregationRule = &rbac.AggregationRule{ClusterRoleSelectors: []meta.LabelSelector{{MatchLabels: map[string]string{selectorLabel: "true"}}}}
	return r
}

func binding(name, role string, subjects ...rbac.Subject) *rbac.ClusterRoleBinding {
	return &rbac.ClusterRoleBinding{TypeMeta: meta.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"},
			Annotations: map[string]string{rbac.AutoUpdateAnnotation: "true"}},
		RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}
}

func user(name string) rbac.Subject {
	return rbac.Subject{Kind: rbac.UserKind, APIGroup: rbac.GroupName, Name: name}
}
func group(name string) rbac.Subject {
	return rbac.Subject{Kind: rbac.GroupKind, APIGroup: rbac.GroupName, Name: name}
}

// BootstrapClusterRoles are the ClusterRoles the API server makes at start
// (and puts back while they carry autoupdate=true), aggregated ones with
// their rules already aggregated.
func BootstrapClusterRoles() []*rbac.ClusterRole {
	roles := []*rbac.ClusterRole{
		clusterRole("cluster-admin", nil, rbac.PolicyRule{Verbs: all, APIGroups: all, Resources: all}, rbac.PolicyRule{Verbs: all, NonResourceURLs: all}),
		aggregated("admin", nil, AggregateToAdmin),
		aggregated("edit", map[string]string{AggregateToAdmin: "true"}, AggregateToEdit),
		aggregated("view", map[string]string{AggregateToEdit: "true"}, AggregateToView),
		clusterRole("system:aggregate-to-admin", map[string]string{AggregateToAdmin: "true"}, adminResources...),
		clusterRole("system:aggregate-to-edit", map[string]string{AggregateToEdit: "true"}, editResources...),
		clusterRole("system:aggregate-to-view", map[string]string{AggregateToView: "true"}, viewResources...),
		clusterRole("system:basic-user", nil, rule([]string{"create"}, "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, "authentication.k8s.io", "selfsubjectreviews")),
		// What a server that delegates authentication and authorization
		// to the API server needs (an extension server, a webhook).
		clusterRole("system:auth-delegator", nil, rule([]string{"create"}, "authentication.k8s.io", "tokenreviews"),
			rule([]string{"create"}, "authorization.k8s.io", "subjectaccessreviews")),
		clusterRole("system:discovery", nil, rbac.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/"}}),
		// Kubernetes' role for the ServiceAccount issuer's OIDC discovery
		// (bound to no one by default).
		clusterRole("system:service-account-issuer-discovery", nil, rbac.PolicyRule{Verbs: []string{"get"},
			NonResourceURLs: []string{"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"}}),
		clusterRole("system:public-info-viewer", nil, rbac.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}}),
		clusterRole("system:node", nil, NodeRules...),
		clusterRole("system:kube-scheduler", nil,
			rule(join(read, []string{"delete"}), "", "pods"), rule([]string{"create"}, "", "pods/binding"), rule([]string{"update", "patch"}, "", "pods/status"),
			rule(read, "", "nodes", "namespaces"), rule(join(read, []string{"update"}), "", "persistentvolumeclaims", "persistentvolumes"),
			rule(read, "storage.k8s.io", "storageclasses", "csinodes", "csidrivers", "csistoragecapacities"), rule(read, "scheduling.k8s.io", "priorityclasses"), events,
			rule(read, "policy", "poddisruptionbudgets"),
			rule([]string{"get", "create", "update"}, "coordination.k8s.io", "leases")),
		// What a bootstrap token may do: ask for a certificate (kubeadm's
		// kubeadm:kubelet-bootstrap binding of system:node-bootstrapper).
		clusterRole("system:node-bootstrapper", nil, rule([]string{"create", "get", "list", "watch"}, "certificates.k8s.io", "certificatesigningrequests")),
		clusterRole("system:kube-controller-manager", nil, events, rule([]string{"get", "create", "update"}, "coordination.k8s.io", "leases")),
		clusterRole("system:kobune-csi-provisioner", nil,
			rule(join(read, []string{"create", "update", "delete"}), "", "persistentvolumes"),
			rule(join(read, []string{"update"}), "", "persistentvolumeclaims"), rule([]string{"update"}, "", "persistentvolumeclaims/status"),
			rule(read, "storage.k8s.io", "storageclasses"), rule(read, "", "nodes"), events),
	}
	for _, name := range controllerNames() {
		roles = append(roles, clusterRole("system:controller:"+name, nil, controllerRoles[name]...))
	}
	byName := map[string]*rbac.ClusterRole{}
	for _, r := range roles {
		byName[r.Name] = r
	}
	for _, name := range []string{"view", "edit", "admin"} { // each feeds the next
		byName[name].Rules, _ = rbac.AggregatedRules(byName[name], roles)
	}
	return roles
}

func controllerNames() []string {
	return []string{"clusterrole-aggregation-controller", "cronjob-controller", "daemon-set-controller", "deployment-controller", "endpointslice-controller", "endpointslicemirroring-controller",
		"certificate-controller", "generic-garbage-collector", "job-controller", "node-controller", "node-ipam-controller", "persistent-volume-binder", "replicaset-controller", "replication-controller",
		"root-ca-cert-publisher", "service-account-controller", "service-cidrs-controller", "statefulset-controller", "storage-version-migrator-controller"}
}

// BootstrapClusterRoleBindings grant the bootstrap roles.
func BootstrapClusterRoleBindings() []*rbac.ClusterRoleBinding {
	bs := []*rbac.ClusterRoleBinding{
		binding("cluster-admin", "cluster-admin", group("system:masters")),
		binding("system:basic-user", "system:basic-user", group("system:authenticated")),
		binding("system:discovery", "system:discovery", group("system:authenticated")),
		binding("system:public-info-viewer", "system:public-info-viewer", group("system:authenticated"), group("system:unauthenticated")),
		binding("system:kube-scheduler", "system:kube-scheduler", user(SchedulerUser)),
		binding("system:kube-controller-manager", "system:kube-controller-manager", user(ControllerManagerUser)),
		binding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", group("system:bootstrappers")),
		binding("system:kobune-csi-provisioner", "system:kobune-csi-provisioner", group(CSIProvisionersGroup)),
	}
	for _, name := range controllerNames() {
		bs = append(bs, binding("system:controller:"+name, "system:controller:"+name, user(ControllerManagerUser)))
	}
	return bs
}

// BootstrapRoles are the namespaced roles the API server makes at start,
// as Kubernetes' bootstrap policy does: the bootstrap signer reads the
// token Secrets of kube-system and signs kube-public's cluster-info; the
// token cleaner deletes expired tokens. Roles of their namespaces, not
// ClusterRoles: neither may read any other Secret.
func BootstrapRoles() []*rbac.Role {
	role := func(ns, name string, rules ...rbac.PolicyRule) *rbac.Role {
		return &rbac.Role{TypeMeta: meta.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"},
				Annotations: map[string]string{rbac.AutoUpdateAnnotation: "true"}}, Rules: rules}
	}
	return []*rbac.Role{
		role("kube-system", "system:controller:bootstrap-signer", rule(read, "", "secrets")),
		role("kube-system", "system:controller:token-cleaner", rule(join(read, []string{"delete"}), "", "secrets"), events),
		role("kube-public", "system:controller:bootstrap-signer", rule(read, "", "configmaps"),
			named(rule([]string{"update"}, "", "configmaps"), "cluster-info"), events),
	}
}

// BootstrapRoleBindings bind BootstrapRoles to kobune-controller.
func BootstrapRoleBindings() []*rbac.RoleBinding {
	var bs []*rbac.RoleBinding
	for _, r := range BootstrapRoles() {
		bs = append(bs, &rbac.RoleBinding{TypeMeta: meta.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: meta.ObjectMeta{Namespace: r.Namespace, Name: r.Name, Labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"},
				Annotations: map[string]string{rbac.AutoUpdateAnnotation: "true"}},
			RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "Role", Name: r.Name}, Subjects: []rbac.Subject{user(ControllerManagerUser)}})
	}
	return bs
}
