package apiserver

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apiextensions"
	"github.com/kobune/kobune/apiserver/dynamicadmission"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/servicealloc"
)

// admissionChain is every write's admission, in the order it runs — one
// list, as kube-apiserver's AllOrderedPlugins: what the seed chapter
// teaches as "authentication → authorization → admission → validation →
// etcd" happens for a write between authorization
// (apiserver/authorization) and the store. Every mutating step runs first, in this order; then every
// validating one, in this order (a step may be both: LimitRanger). Kobune
// runs the kind's validation as a step of the chain (Validation), where
// kube-apiserver runs it between the two phases. docs/architecture.md
// shows the same list, and TestAdmissionChainOrder holds the two equal.
func (s *Server) admissionChain(cfg Config, ranges *servicealloc.Ranges) *admission.Chain {
	var escalation, nodeRestriction any
	if e := s.authz.Escalation(); e != nil {
		escalation = e
	}
	if s.authz.NodeMode() {
		nodeRestriction = admission.NodeRestriction{Pod: func(ctx context.Context, ns, name string) (*core.Pod, error) {
			return registry.GetStored[*core.Pod](ctx, s.store, "pods", ns, name)
		}}
	}
	return admission.NewChain(
		// Mutating.
		admission.Step{Plugin: admission.Defaulting{}, Why: "first: what Kubernetes defaults (restartPolicy, replicas, ...), so that every later step sees the whole object"},
		admission.Step{Plugin: servicealloc.Allocation{Ranges: ranges, Store: s.store, ServiceCIDRs: serviceCIDRs{s.store}.ranges}, Why: "a Service's cluster IP and node ports, before validation checks them"},
		admission.Step{Plugin: admission.ServiceAccount{Accounts: serviceAccountGetter{s}, Tokens: s.tokens}, Why: "a pod's ServiceAccount and its token volume, which validation and Pod Security then see"},
		admission.Step{Plugin: admission.Priority{Classes: priorityClasses{s.store}}, Why: "a pod's priorityClassName becomes spec.priority (the scheduler's queue and preemption read it)"},
		admission.Step{Plugin: admission.RuntimeClass{Classes: runtimeClasses{s.store}}, Why: "a pod's RuntimeClass must exist; its overhead and scheduling become the pod's"},
		admission.Step{Plugin: admission.DefaultTolerationSeconds{Seconds: cfg.DefaultTolerationSeconds}, Why: "pods tolerate not-ready and unreachable nodes for a while before eviction"},
		admission.Step{Plugin: admission.StorageObjectInUseProtection{}, Why: "new claims and volumes get the finalizer that keeps them while in use"},
		admission.Step{Plugin: admission.DefaultStorageClass{Classes: storageClasses{s.store}}, Why: "a new claim that names no class gets the default one"},
		admission.Step{Plugin: admission.CertificateSigningRequest{}, Why: "a request's username and groups are the requester's, whatever it claims"},
		admission.Step{Plugin: admission.DefaultIngressClass{Classes: ingressClasses{s.store}}, Why: "an Ingress that names no class gets the default one"},
		// Validating.
		admission.Step{Plugin: admission.NamespaceLifecycle{Namespaces: s.namespaces}, Why: "the namespace must exist and not be terminating"},
		admission.Step{Plugin: admission.Validation{}, Why: "the kind's rules, each error with its field path"},
		admission.Step{Plugin: apiextensions.RuleCheck{}, Why: "a CustomResourceDefinition's CEL rules compile, return a bool and fit the cost budget"},
		admission.Step{Plugin: dynamicadmission.ExpressionCheck(), Why: "an admission policy's or webhook configuration's CEL expressions compile"},
		admission.Step{Plugin: admission.PersistentVolumeClaimResize{Classes: storageClasses{s.store}}, Why: "a claim grows only if its class allows expansion"},
		admission.Step{Plugin: admission.LimitRanger{Ranges: limitRanges{s.store}}, Why: "both: the namespace's LimitRanges default requests and limits (the last built-in mutation), then refuse what breaks them"},
		admission.Step{Plugin: s.webhooks.MutatingPolicies(), Why: "the MutatingAdmissionPolicies' CEL mutations, after every built-in mutation and before the webhooks, as in Kubernetes"},
		admission.Step{Plugin: s.webhooks.Mutating(), Why: "the mutating admission webhooks, after every built-in mutation, as in Kubernetes; the object they return is validated like any other"},
		admission.Step{Plugin: admission.PodSecurity{Namespaces: s.namespaces, Logf: cfg.Logf, Pods: s.podsIn}, Why: "the namespace's Pod Security level, on the pod as it will run"},
		admission.Step{Plugin: escalation, Why: "with RBAC: no one grants permissions they do not hold"},
		admission.Step{Plugin: nodeRestriction, Why: "with the node authorizer: a node writes only its own Node and its pods' status"},
		admission.Step{Plugin: s.webhooks.Policies(), Why: "the ValidatingAdmissionPolicies' CEL checks, before the webhooks as in Kubernetes"},
		admission.Step{Plugin: s.webhooks.Validating(), Why: "the validating admission webhooks, on the object as it will be stored (deletes and status updates too)"},
		admission.Step{Plugin: admission.ResourceQuota{Quotas: s.quotas}, Why: "last, as in Kubernetes: a quota is charged only for what every other step let through"},
	)
}
