package flowcontrol

import (
	"github.com/kobune/kobune/api/meta"
)

// AutoUpdateAnnotation marks the objects the API server created
// (Kubernetes' apf.kubernetes.io/autoupdate-spec). Kobune creates the
// missing ones at every start and never rewrites one that exists: an
// operator's edit stays (docs/differences.md).
const AutoUpdateAnnotation = "apf.kubernetes.io/autoupdate-spec"

// Users, groups and the namespace the schemas below name: Kubernetes'
// component identities, which Kobune's components carry too.
const (
	controllerManager = "system:kube-controller-manager"
	scheduler         = "system:kube-scheduler"
	nodesGroup        = "system:nodes"
	mastersGroup      = "system:masters"
	serviceAccounts   = "system:serviceaccounts"
	authenticated     = "system:authenticated"
	unauthenticated   = "system:unauthenticated"
	kubeSystem        = "kube-system"
)

// Bootstrap is the configuration a cluster starts with: Kubernetes'
// mandatory objects (exempt and catch-all) and its suggested ones, with
// the same names, shares and precedences, so that what a course reads
// about kube-apiserver's defaults is what `kobectl get flowschemas`
// shows.
func Bootstrap() ([]*PriorityLevelConfiguration, []*FlowSchema) {
	levels := []*PriorityLevelConfiguration{
		exemptLevel(),
		queued("system", 30, 33, 64, 6),
		queued("node-high", 40, 25, 64, 6),
		queued("leader-election", 10, 0, 16, 4),
		queued("workload-high", 40, 50, 128, 6),
		queued("workload-low", 100, 90, 128, 6),
		queued("global-default", 20, 50, 128, 6),
		catchAllLevel(),
	}
	schemas := []*FlowSchema{
		schema(NameExempt, NameExempt, 1, "", rules(subjects(group(mastersGroup)), everything)),
		schema("probes", NameExempt, 2, "", PolicyRulesWithSubjects{
			Subjects:         subjects(group(unauthenticated), group(authenticated)),
			NonResourceRules: []NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz", "/livez"}}},
		}),
		schema("system-leader-election", "leader-election", 100, ByUser, PolicyRulesWithSubjects{
			Subjects:      subjects(user(controllerManager), user(scheduler), sa(kubeSystem, "kube-controller-manager"), sa(kubeSystem, "kube-scheduler")),
			ResourceRules: []ResourcePolicyRule{leases},
		}),
		schema("endpoint-controller", "workload-high", 150, ByUser, PolicyRulesWithSubjects{
			Subjects: subjects(user(controllerManager), sa(kubeSystem, "endpoint-controller")),
			ResourceRules: []ResourcePolicyRule{{Verbs: []string{"get", "create", "update"}, APIGroups: []string{""},
				Resources: []string{"endpoints"}, Namespaces: []string{"*"}}},
		}),
		schema("workload-leader-election", "leader-election", 200, ByUser, PolicyRulesWithSubjects{
			Subjects: subjects(sa(kubeSystem, "*")), ResourceRules: []ResourcePolicyRule{leases},
		}),
		schema("system-node-high", "node-high", 400, ByUser, PolicyRulesWithSubjects{
			Subjects: subjects(group(nodesGroup)),
			ResourceRules: []ResourcePolicyRule{
				{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status"}, ClusterScope: true},
				{Verbs: []string{"*"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Namespaces: []string{"*"}},
			},
		}),
		schema("system-nodes", "system", 500, ByUser, rules(subjects(group(nodesGroup)), everything)),
		schema("kube-controller-manager", "workload-high", 800, ByNamespace, rules(subjects(user(controllerManager)), everything)),
		schema("kube-scheduler", "workload-high", 800, ByNamespace, rules(subjects(user(scheduler)), everything)),
		schema("kube-system-service-accounts", "workload-high", 900, ByNamespace, rules(subjects(sa(kubeSystem, "*")), everything)),
		schema("service-accounts", "workload-low", 9000, ByUser, rules(subjects(group(serviceAccounts)), everything)),
		schema("global-default", "global-default", 9900, ByUser, rules(subjects(group(unauthenticated), group(authenticated)), everything)),
		schema(NameCatchAll, NameCatchAll, 10000, ByUser, rules(subjects(group(unauthenticated), group(authenticated)), everything)),
	}
	return levels, schemas
}

// everything is a rule that matches every request.
var everything = PolicyRulesWithSubjects{
	ResourceRules: []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
		ClusterScope: true, Namespaces: []string{"*"}}},
	NonResourceRules: []NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
}

// leases is leader election's requests.
var leases = ResourcePolicyRule{Verbs: []string{"get", "create", "update"}, APIGroups: []string{"coordination.k8s.io"},
	Resources: []string{"leases"}, Namespaces: []string{"*"}}

func rules(s []Subject, r PolicyRulesWithSubjects) PolicyRulesWithSubjects {
	r.Subjects = s
	return r
}

func subjects(s ...Subject) []Subject { return s }

func user(name string) Subject { return Subject{Kind: SubjectUser, User: &UserSubject{Name: name}} }

func group(name string) Subject { return Subject{Kind: SubjectGroup, Group: &GroupSubject{Name: name}} }

func sa(ns, name string) Subject {
	return Subject{Kind: SubjectServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: ns, Name: name}}
}

func bootstrapMeta(name string) meta.ObjectMeta {
	return meta.ObjectMeta{Name: name, Annotations: map[string]string{AutoUpdateAnnotation: "true"}}
}

func schema(name, level string, precedence int32, distinguisher string, r PolicyRulesWithSubjects) *FlowSchema {
	fs := &FlowSchema{TypeMeta: meta.TypeMeta{APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: "FlowSchema"}, ObjectMeta: bootstrapMeta(name),
		Spec: FlowSchemaSpec{PriorityLevelConfiguration: PriorityLevelConfigurationReference{Name: level}, MatchingPrecedence: precedence,
			Rules: []PolicyRulesWithSubjects{r}}}
	if distinguisher != "" {
		fs.Spec.DistinguisherMethod = &FlowDistinguisherMethod{Type: distinguisher}
	}
	return fs
}

func level(name string, spec PriorityLevelConfigurationSpec) *PriorityLevelConfiguration {
	return &PriorityLevelConfiguration{TypeMeta: meta.TypeMeta{APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: "PriorityLevelConfiguration"},
		ObjectMeta: bootstrapMeta(name), Spec: spec}
}

func ptr(i int32) *int32 { return &i }

func queued(name string, shares, lendable, queues, hand int32) *PriorityLevelConfiguration {
	return level(name, PriorityLevelConfigurationSpec{Type: PriorityLevelLimited, Limited: &LimitedPriorityLevelConfiguration{
		NominalConcurrencyShares: ptr(shares), LendablePercent: ptr(lendable),
		LimitResponse: LimitResponse{Type: LimitResponseQueue, Queuing: &QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: 50}},
	}})
}

func exemptLevel() *PriorityLevelConfiguration {
	return level(NameExempt, PriorityLevelConfigurationSpec{Type: PriorityLevelExempt,
		Exempt: &ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr(0), LendablePercent: ptr(0)}})
}

func catchAllLevel() *PriorityLevelConfiguration {
	return level(NameCatchAll, PriorityLevelConfigurationSpec{Type: PriorityLevelLimited, Limited: &LimitedPriorityLevelConfiguration{
		NominalConcurrencyShares: ptr(5), LendablePercent: ptr(0), LimitResponse: LimitResponse{Type: LimitResponseReject}}})
}
