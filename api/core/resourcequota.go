package core

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/selector"
	v "github.com/kobune/kobune/api/validation"
)

// ResourceQuota caps what a namespace may hold: object counts (pods,
// services, count/<resource>...), the sums of its pods' requests and
// limits, and the storage its claims request. The ResourceQuota
// admission plugin refuses a create or update that would take status.used
// over spec.hard, and charges status.used in the same write; the
// resourcequota controller recomputes status.used from the objects (it
// releases what deleted and finished objects held).
type ResourceQuota struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ResourceQuotaSpec   `json:"spec,omitzero"`
	Status          ResourceQuotaStatus `json:"status,omitzero"`
}

// ResourceQuotaSpec is the limits, and which pods they count (scopes; a
// quota with scopes counts only pods).
type ResourceQuotaSpec struct {
	Hard          resource.List  `json:"hard,omitempty"`
	Scopes        []string       `json:"scopes,omitempty"`
	ScopeSelector *ScopeSelector `json:"scopeSelector,omitempty"`
}

// ScopeSelector is scopes as expressions, all of which must hold.
type ScopeSelector struct {
	MatchExpressions []ScopedResourceSelectorRequirement `json:"matchExpressions,omitempty"`
}

// ScopedResourceSelectorRequirement is one scope with an operator: In or
// NotIn a list of values (PriorityClass only), Exists or DoesNotExist.
type ScopedResourceSelectorRequirement struct {
	ScopeName string   `json:"scopeName"`
	Operator  string   `json:"operator"`
	Values    []string `json:"values,omitempty"`
}

// ResourceQuotaStatus is the enforced limits and what the namespace uses
// of them.
type ResourceQuotaStatus struct {
	Hard resource.List `json:"hard,omitempty"`
	Used resource.List `json:"used,omitempty"`
}

// Quota scopes.
const (
	ScopeTerminating    = "Terminating"
	ScopeNotTerminating = "NotTerminating"
	ScopeBestEffort     = "BestEffort"
	ScopeNotBestEffort  = "NotBestEffort"
	ScopePriorityClass  = "PriorityClass"
	// ScopeCrossNamespacePodAffinity is Kubernetes' scope for pods with
	// cross-namespace affinity terms; Kobune names it unsupported.
	ScopeCrossNamespacePodAffinity = "CrossNamespacePodAffinity"
)

// Scope selector operators.
const (
	ScopeOpIn           = "In"
	ScopeOpNotIn        = "NotIn"
	ScopeOpExists       = "Exists"
	ScopeOpDoesNotExist = "DoesNotExist"
)

// The quota resource names Kobune counts besides count/<resource>.
const (
	QuotaPods                   resource.Name = "pods"
	QuotaServices               resource.Name = "services"
	QuotaServicesNodePorts      resource.Name = "services.nodeports"
	QuotaServicesLoadBalancers  resource.Name = "services.loadbalancers"
	QuotaSecrets                resource.Name = "secrets"
	QuotaConfigMaps             resource.Name = "configmaps"
	QuotaPersistentVolumeClaims resource.Name = "persistentvolumeclaims"
	QuotaRequestsStorage        resource.Name = "requests.storage"
	// QuotaResourceQuotas counts the namespace's quotas (the resourcequota
	// controller does; creating one is not judged by the others).
	QuotaResourceQuotas resource.Name = "resourcequotas"
	// QuotaReplicationControllers counts ReplicationControllers.
	QuotaReplicationControllers resource.Name = "replicationcontrollers"
	QuotaRequestsCPU            resource.Name = "requests.cpu"
	QuotaRequestsMemory         resource.Name = "requests.memory"
	QuotaRequestsEphemeral      resource.Name = "requests.ephemeral-storage"
	QuotaLimitsCPU              resource.Name = "limits.cpu"
	QuotaLimitsMemory           resource.Name = "limits.memory"
	QuotaLimitsEphemeral        resource.Name = "limits.ephemeral-storage"
	storageClassQuotaSuffix                   = ".storageclass.storage.k8s.io/"
	countPrefix                               = "count/"
)

// podComputeNames are the names pod-scoped quotas may track (with pods):
// "cpu" is requests.cpu, as in Kubernetes.
var podComputeNames = map[resource.Name]bool{
	resource.CPU: true, resource.Memory: true, resource.EphemeralStorage: true,
	QuotaRequestsCPU: true, QuotaRequestsMemory: true, QuotaRequestsEphemeral: true,
	QuotaLimitsCPU: true, QuotaLimitsMemory: true, QuotaLimitsEphemeral: true,
}

var standardQuotaNames = map[resource.Name]bool{
	QuotaPods: true, QuotaServices: true, QuotaServicesNodePorts: true, QuotaServicesLoadBalancers: true,
	QuotaSecrets: true, QuotaConfigMaps: true, QuotaPersistentVolumeClaims: true, QuotaRequestsStorage: true,
	QuotaResourceQuotas: true, QuotaReplicationControllers: true,
}

// IsExtendedRequestQuotaName: n is requests.<extended resource>
// ("requests.example.com/dongle"), the sum of the pods' requests of a
// resource with a domain, as Kubernetes quotas extended resources (by
// requests only: their limits equal them).
func IsExtendedRequestQuotaName(n resource.Name) bool {
	rest, ok := strings.CutPrefix(string(n), "requests.")
	return ok && strings.Contains(rest, "/") && !strings.Contains(rest, storageClassQuotaSuffix)
}

// IsExtendedResourceName: n is an extended resource, one with a domain
// outside kubernetes.io ("example.com/dongle"), which a node advertises
// in its capacity and a pod asks for in whole units with its limit equal
// to its request — Kubernetes' rule (the name must also make a qualified
// name behind "requests.", its quota name).
func IsExtendedResourceName(n resource.Name) bool {
	s := string(n)
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") || strings.HasPrefix(s, "requests.") {
		return false
	}
	return selector.ValidLabelKey("requests."+s) == nil
}

// QuotaCountName is the count/ name of a resource: count/pods for the
// core group, count/deployments.apps otherwise.
func QuotaCountName(resourceName, group string) resource.Name {
	if group == "" {
		return resource.Name(countPrefix + resourceName)
	}
	return resource.Name(countPrefix + resourceName + "." + group)
}

// ValidateResourceQuota checks a quota with Kubernetes' rules: known
// resource names with non-negative (for counts, whole) values, known
// scopes that do not contradict each other, and scopes only on quotas
// that track pods. countable says whether a count/ name names a kind the
// API serves (the scheme knows; this package does not).
func ValidateResourceQuota(q *ResourceQuota, countable func(resource.Name) bool) v.ErrorList {
	errs := v.ValidateObjectMeta(&q.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	hard := v.NewPath("spec", "hard")
	scoped := len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil
	bestEffortOnly := false
	for _, s := range quotaScopes(&q.Spec) {
		if s.ScopeName == ScopeBestEffort && s.Operator == ScopeOpExists {
			bestEffortOnly = true
		}
	}
	for _, n := range q.Spec.Hard.Names() {
		qty := q.Spec.Hard[n]
		p := hard.Key(string(n))
		switch {
		case standardQuotaNames[n] || podComputeNames[n] || IsExtendedRequestQuotaName(n):
		case strings.HasPrefix(string(n), countPrefix):
			if !countable(n) {
				errs = append(errs, v.NewInvalid(p, string(n), "count/ must name a resource the API serves, as count/<resource> or count/<resource>.<group> (see kobectl api-resources)"))
			}
		case strings.Contains(string(n), storageClassQuotaSuffix):
			class, what, _ := strings.Cut(string(n), storageClassQuotaSuffix)
			if v.IsDNS1123Subdomain(class) != "" || (what != string(QuotaRequestsStorage) && what != string(QuotaPersistentVolumeClaims)) {
				errs = append(errs, v.NewInvalid(p, string(n), "must be <storage class>.storageclass.storage.k8s.io/requests.storage or .../persistentvolumeclaims"))
			}
		default:
			errs = append(errs, v.NewInvalid(p, string(n), "not a resource Kobune's quota counts: "+strings.Join(QuotaNamesHelp(), ", ")))
			continue
		}
		if qty.Sign() < 0 {
			errs = append(errs, v.NewInvalid(p, qty.String(), "must be greater than or equal to 0"))
		}
		if !podComputeNames[n] && n != QuotaRequestsStorage && !strings.HasSuffix(string(n), "/"+string(QuotaRequestsStorage)) && qty.MilliValue()%1000 != 0 {
			errs = append(errs, v.NewInvalid(p, qty.String(), "must be an integer"))
		}
		if scoped && n != QuotaPods && n != countPrefix+"pods" && !podComputeNames[n] && !IsExtendedRequestQuotaName(n) {
			errs = append(errs, v.NewInvalid(p, string(n), "unsupported scope applied to resource"))
		} else if bestEffortOnly && podComputeNames[n] {
			errs = append(errs, v.NewInvalid(p, string(n), "unsupported scope applied to resource"))
		}
	}
	seen := map[string]bool{}
	check := func(p *v.Path, s ScopedResourceSelectorRequirement) {
		switch s.ScopeName {
		case ScopeTerminating, ScopeNotTerminating, ScopeBestEffort, ScopeNotBestEffort:
			if s.Operator != ScopeOpExists && s.Operator != ScopeOpDoesNotExist {
				errs = append(errs, v.NewInvalid(p.Child("operator"), s.Operator, "must be 'Exists' or 'DoesNotExist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort and ResourceQuotaScopeNotBestEffort"))
			}
		case ScopePriorityClass:
			switch s.Operator {
			case ScopeOpIn, ScopeOpNotIn:
				if len(s.Values) == 0 {
					errs = append(errs, v.NewRequired(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
				}
			case ScopeOpExists, ScopeOpDoesNotExist:
				if len(s.Values) > 0 {
					errs = append(errs, v.NewInvalid(p.Child("values"), s.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
				}
			default:
				errs = append(errs, v.NewNotSupported(p.Child("operator"), s.Operator, []string{ScopeOpIn, ScopeOpNotIn, ScopeOpExists, ScopeOpDoesNotExist}))
			}
		case ScopeCrossNamespacePodAffinity:
			errs = append(errs, v.NewInvalid(p.Child("scopeName"), s.ScopeName, "not supported by Kobune (its pods' affinity terms are not counted per namespace)"))
		default:
			errs = append(errs, v.NewNotSupported(p.Child("scopeName"), s.ScopeName, []string{ScopeBestEffort, ScopeNotBestEffort, ScopeNotTerminating, ScopePriorityClass, ScopeTerminating}))
		}
		if s.Operator == ScopeOpExists {
			seen[s.ScopeName] = true
		}
	}
	for i, s := range q.Spec.Scopes {
		p := v.NewPath("spec", "scopes").Index(i)
		switch s {
		case ScopeTerminating, ScopeNotTerminating, ScopeBestEffort, ScopeNotBestEffort, ScopePriorityClass:
			seen[s] = true // a plain scope means Exists
		case ScopeCrossNamespacePodAffinity:
			errs = append(errs, v.NewInvalid(p, s, "not supported by Kobune (its pods' affinity terms are not counted per namespace)"))
		default:
			errs = append(errs, v.NewNotSupported(p, s, []string{ScopeBestEffort, ScopeNotBestEffort, ScopeNotTerminating, ScopePriorityClass, ScopeTerminating}))
		}
	}
	if q.Spec.ScopeSelector != nil {
		for i, s := range q.Spec.ScopeSelector.MatchExpressions {
			check(v.NewPath("spec", "scopeSelector", "matchExpressions").Index(i), s)
		}
	}
	for _, pair := range [][2]string{{ScopeTerminating, ScopeNotTerminating}, {ScopeBestEffort, ScopeNotBestEffort}} {
		if seen[pair[0]] && seen[pair[1]] {
			errs = append(errs, v.NewInvalid(v.NewPath("spec", "scopes"), []string{pair[0], pair[1]}, "conflicting scopes"))
		}
	}
	return errs
}

// QuotaNamesHelp lists the names a quota may track, for error messages.
func QuotaNamesHelp() []string {
	var out []string
	for n := range standardQuotaNames {
		out = append(out, string(n))
	}
	for n := range podComputeNames {
		out = append(out, string(n))
	}
	sort.Strings(out)
	return append(out, "requests.<extended resource> (requests.example.com/dongle)", "<class>.storageclass.storage.k8s.io/requests.storage", "<class>.storageclass.storage.k8s.io/persistentvolumeclaims", "count/<resource>[.<group>]")
}

// quotaScopes is every scope of a spec as a requirement (plain scopes
// are Exists).
func quotaScopes(s *ResourceQuotaSpec) []ScopedResourceSelectorRequirement {
	out := make([]ScopedResourceSelectorRequirement, 0, len(s.Scopes))
	for _, sc := range s.Scopes {
		out = append(out, ScopedResourceSelectorRequirement{ScopeName: sc, Operator: ScopeOpExists})
	}
	if s.ScopeSelector != nil {
		out = append(out, s.ScopeSelector.MatchExpressions...)
	}
	return out
}

// QuotaScoped reports whether a quota has scopes (then it counts only pods).
func QuotaScoped(q *ResourceQuota) bool {
	return len(q.Spec.Scopes) > 0 || (q.Spec.ScopeSelector != nil && len(q.Spec.ScopeSelector.MatchExpressions) > 0)
}

// QuotaMatchesPod reports whether every scope of the quota holds for the
// pod (a quota without scopes matches every pod).
func QuotaMatchesPod(q *ResourceQuota, p *Pod) bool {
	for _, s := range quotaScopes(&q.Spec) {
		var has bool
		switch s.ScopeName {
		case ScopeTerminating:
			has = p.Spec.ActiveDeadlineSeconds != nil && *p.Spec.ActiveDeadlineSeconds >= 0
		case ScopeNotTerminating:
			has = p.Spec.ActiveDeadlineSeconds == nil || *p.Spec.ActiveDeadlineSeconds < 0
		case ScopeBestEffort:
			has = PodQOSClass(&p.Spec) == QOSBestEffort
		case ScopeNotBestEffort:
			has = PodQOSClass(&p.Spec) != QOSBestEffort
		case ScopePriorityClass:
			switch s.Operator {
			case ScopeOpIn, ScopeOpNotIn:
				in := false
				for _, val := range s.Values {
					in = in || val == p.Spec.PriorityClassName
				}
				if in != (s.Operator == ScopeOpIn) {
					return false
				}
				continue
			default:
				has = p.Spec.PriorityClassName != ""
			}
		default:
			return false
		}
		if has != (s.Operator != ScopeOpDoesNotExist) {
			return false
		}
	}
	return true
}

// PodCountsForQuota reports whether a pod still holds its compute quota:
// not finished (Succeeded or Failed), and not past its deletion's grace
// period (Kubernetes' rule, also used by its controller).
func PodCountsForQuota(p *Pod, now time.Time) bool {
	if p.Status.Phase == PodSucceeded || p.Status.Phase == PodFailed {
		return false
	}
	if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil {
		if now.After(p.DeletionTimestamp.Add(time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)) {
			return false
		}
	}
	return true
}

// QuotaUsage is what one object counts against quotas: 1 of its count/
// name (countName), and for pods, services and claims Kubernetes' usage
// (a pod that no longer counts holds only its count/pods).
func QuotaUsage(countName resource.Name, o meta.Object, now time.Time) resource.List {
	one := resource.NewQuantity(1, resource.DecimalSI)
	u := resource.List{countName: one}
	switch x := o.(type) {
	case *Pod:
		if !PodCountsForQuota(x, now) {
			return u
		}
		u[QuotaPods] = one
		req, lim := PodRequestsAndLimits(&x.Spec)
		for _, r := range []resource.Name{resource.CPU, resource.Memory, resource.EphemeralStorage} {
			if q, ok := req[r]; ok {
				u[r] = q
				u["requests."+r] = q
			}
			if q, ok := lim[r]; ok {
				u["limits."+r] = q
			}
		}
		for r, q := range req {
			if strings.Contains(string(r), "/") {
				u["requests."+r] = q // an extended resource
			}
		}
	case *Service:
		u[QuotaServices] = one
		if x.Spec.Type == ServiceTypeNodePort || x.Spec.Type == ServiceTypeLoadBalancer {
			u[QuotaServicesNodePorts] = resource.NewQuantity(int64(len(x.Spec.Ports)), resource.DecimalSI)
		}
		if x.Spec.Type == ServiceTypeLoadBalancer {
			u[QuotaServicesLoadBalancers] = one
		}
	case *PersistentVolumeClaim:
		u[QuotaPersistentVolumeClaims] = one
		class := ClaimClass(x)
		if class != "" {
			u[resource.Name(class+storageClassQuotaSuffix+string(QuotaPersistentVolumeClaims))] = one
		}
		if q, ok := x.Spec.Resources.Requests[resource.Storage]; ok {
			u[QuotaRequestsStorage] = q
			if class != "" {
				u[resource.Name(class+storageClassQuotaSuffix+string(QuotaRequestsStorage))] = q
			}
		}
	case *ResourceQuota:
		u[QuotaResourceQuotas] = one
	case *Secret:
		u[QuotaSecrets] = one
	case *ConfigMap:
		u[QuotaConfigMaps] = one
	case *ReplicationController:
		u[QuotaReplicationControllers] = one
	}
	return u
}

// QuotaConstraints names what a pod must specify for a quota that tracks
// it: a request (limit) of cpu or memory in every container when the
// quota tracks requests (limits) of it, in Kubernetes' words ("must
// specify limits.cpu for: app; requests.memory for: app,init").
func QuotaConstraints(hard resource.List, p *Pod) string {
	var missing []string
	need := func(name resource.Name, in func(c *Container) resource.List, r resource.Name) {
		var who []string
		for _, list := range [][]Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range list {
				if _, ok := in(&list[i])[r]; !ok {
					who = append(who, list[i].Name)
				}
			}
		}
		if len(who) > 0 {
			sort.Strings(who)
			missing = append(missing, fmt.Sprintf("%s for: %s", name, strings.Join(who, ",")))
		}
	}
	requests := func(c *Container) resource.List { return c.Resources.Requests }
	limits := func(c *Container) resource.List { return c.Resources.Limits }
	for _, r := range []resource.Name{resource.CPU, resource.Memory} {
		_, plain := hard[r]
		_, req := hard["requests."+r]
		if plain || req {
			need("requests."+r, requests, r)
		}
		if _, ok := hard["limits."+r]; ok {
			need("limits."+r, limits, r)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	sort.Strings(missing)
	return "must specify " + strings.Join(missing, "; ")
}

// PodRequestsAndLimits sums a pod's containers' requests and limits; an
// init container runs alone (beside the sidecars started before it), so
// it counts only where it asks for more than the sum (as in Kubernetes:
// PodAggregate); the pod's overhead is added.
func PodRequestsAndLimits(spec *PodSpec) (requests, limits resource.List) {
	requests = PodAggregate(spec, func(c *Container) resource.List { return c.Resources.Requests }, sumLists, largerLists)
	limits = PodAggregate(spec, func(c *Container) resource.List { return c.Resources.Limits }, sumLists, largerLists)
	if len(spec.Overhead) > 0 {
		// The RuntimeClass's overhead is the pod's too (Kubernetes adds
		// it to requests, and to limits where the containers set them).
		requests = sumLists(requests, spec.Overhead)
		for name, q := range spec.Overhead {
			if l, ok := limits[name]; ok {
				limits[name] = l.Add(q)
			}
		}
	}
	if requests == nil {
		requests = resource.List{}
	}
	if limits == nil {
		limits = resource.List{}
	}
	return requests, limits
}

// sumLists and largerLists combine resource lists into new ones.
func sumLists(a, b resource.List) resource.List {
	out := resource.List{}
	addTo(out, a)
	addTo(out, b)
	return out
}

func largerLists(a, b resource.List) resource.List {
	out := resource.List{}
	addTo(out, a)
	raiseTo(out, b)
	return out
}

func addTo(sum, l resource.List) {
	for n, q := range l {
		if s, ok := sum[n]; ok {
			sum[n] = s.Add(q)
		} else {
			sum[n] = q.Copy()
		}
	}
}

func raiseTo(sum, l resource.List) {
	for n, q := range l {
		if s, ok := sum[n]; !ok || q.Cmp(s) > 0 {
			sum[n] = q.Copy()
		}
	}
}

// QuotaList prints a list as Kubernetes' quota messages do:
// "limits.cpu=2,pods=3", in name order.
func QuotaList(l resource.List) string {
	parts := make([]string, 0, len(l))
	for _, n := range l.Names() {
		q := l[n]
		parts = append(parts, string(n)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// IsStorageClassQuotaName reports whether a quota name is one of a
// storage class's (<class>.storageclass.storage.k8s.io/...).
func IsStorageClassQuotaName(n resource.Name) bool {
	return strings.Contains(string(n), storageClassQuotaSuffix)
}
