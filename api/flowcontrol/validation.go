package flowcontrol

import (
	"math"
	"strconv"
	"strings"

	v "github.com/kobune/kobune/api/validation"
)

// Defaults as Kubernetes' v1 defaults them.
const (
	DefaultMatchingPrecedence       = 1000
	DefaultNominalConcurrencyShares = 30
	DefaultQueues                   = 64
	DefaultHandSize                 = 8
	DefaultQueueLengthLimit         = 50
)

// Names of the two mandatory objects (bootstrap.go).
const (
	NameExempt   = "exempt"
	NameCatchAll = "catch-all"
)

// SetDefaultsFlowSchema defaults matchingPrecedence to 1000.
func SetDefaultsFlowSchema(fs *FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = DefaultMatchingPrecedence
	}
}

// SetDefaultsPriorityLevelConfiguration defaults the shares (30 for a
// limited level, 0 for the exempt one), lendablePercent (0) and the
// queues (64 queues, hands of 8, 50 requests each).
func SetDefaultsPriorityLevelConfiguration(pl *PriorityLevelConfiguration) {
	i32 := func(p **int32, d int32) {
		if *p == nil {
			*p = &d
		}
	}
	if l := pl.Spec.Limited; l != nil {
		i32(&l.NominalConcurrencyShares, DefaultNominalConcurrencyShares)
		i32(&l.LendablePercent, 0)
		if q := l.LimitResponse.Queuing; q != nil {
			if q.Queues == 0 {
				q.Queues = DefaultQueues
			}
			if q.HandSize == 0 {
				q.HandSize = DefaultHandSize
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = DefaultQueueLengthLimit
			}
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		i32(&e.NominalConcurrencyShares, 0)
		i32(&e.LendablePercent, 0)
	}
}

// ValidateFlowSchema checks a FlowSchema as kube-apiserver does.
func ValidateFlowSchema(fs *FlowSchema) v.ErrorList {
	errs := v.ValidateObjectMeta(&fs.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	spec := v.NewPath("spec")
	if p := fs.Spec.MatchingPrecedence; p <= 0 || p > 10000 {
		errs = append(errs, v.NewInvalid(spec.Child("matchingPrecedence"), p, "must be between 1 and 10000, inclusive"))
	}
	switch {
	case fs.Name == NameExempt && fs.Spec.MatchingPrecedence != 1:
		errs = append(errs, v.NewInvalid(spec.Child("matchingPrecedence"), fs.Spec.MatchingPrecedence, "the mandatory FlowSchema exempt must have matchingPrecedence 1"))
	case fs.Name == NameCatchAll && fs.Spec.MatchingPrecedence != 10000:
		errs = append(errs, v.NewInvalid(spec.Child("matchingPrecedence"), fs.Spec.MatchingPrecedence, "the mandatory FlowSchema catch-all must have matchingPrecedence 10000"))
	}
	if fs.Spec.PriorityLevelConfiguration.Name == "" {
		errs = append(errs, v.NewRequired(spec.Child("priorityLevelConfiguration", "name"), "must reference a priority level"))
	} else if msg := v.IsDNS1123Subdomain(fs.Spec.PriorityLevelConfiguration.Name); msg != "" {
		errs = append(errs, v.NewInvalid(spec.Child("priorityLevelConfiguration", "name"), fs.Spec.PriorityLevelConfiguration.Name, msg))
	}
	if d := fs.Spec.DistinguisherMethod; d != nil && d.Type != ByUser && d.Type != ByNamespace {
		errs = append(errs, v.NewNotSupported(spec.Child("distinguisherMethod", "type"), d.Type, []string{ByUser, ByNamespace}))
	}
	for i, r := range fs.Spec.Rules {
		errs = append(errs, validateRule(&r, spec.Child("rules").Index(i))...)
	}
	return errs
}

func validateRule(r *PolicyRulesWithSubjects, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	if len(r.Subjects) == 0 {
		errs = append(errs, v.NewRequired(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i, s := range r.Subjects {
		errs = append(errs, validateSubject(&s, p.Child("subjects").Index(i))...)
	}
	if len(r.ResourceRules) == 0 && len(r.NonResourceRules) == 0 {
		errs = append(errs, v.NewRequired(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i, rr := range r.ResourceRules {
		q := p.Child("resourceRules").Index(i)
		errs = append(errs, validateStarList(rr.Verbs, q.Child("verbs"), "verbs")...)
		errs = append(errs, validateStarList(rr.APIGroups, q.Child("apiGroups"), "resource rules must supply at least one api group")...)
		errs = append(errs, validateStarList(rr.Resources, q.Child("resources"), "resource rules must supply at least one resource")...)
		if len(rr.Namespaces) == 0 && !rr.ClusterScope {
			errs = append(errs, v.NewRequired(q.Child("namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"))
		}
		for j, ns := range rr.Namespaces {
			if ns == "*" {
				if len(rr.Namespaces) > 1 {
					errs = append(errs, v.NewInvalid(q.Child("namespaces").Index(j), rr.Namespaces, "if '*' is present, must not specify other namespaces"))
				}
			} else if msg := v.IsDNS1123Label(ns); msg != "" {
				errs = append(errs, v.NewInvalid(q.Child("namespaces").Index(j), ns, msg))
			}
		}
	}
	for i, nr := range r.NonResourceRules {
		q := p.Child("nonResourceRules").Index(i)
		errs = append(errs, validateStarList(nr.Verbs, q.Child("verbs"), "verbs")...)
		errs = append(errs, validateStarList(nr.NonResourceURLs, q.Child("nonResourceURLs"), "nonResourceURLs")...)
		for j, u := range nr.NonResourceURLs {
			if u != "*" && !strings.HasPrefix(u, "/") {
				errs = append(errs, v.NewInvalid(q.Child("nonResourceURLs").Index(j), u, "must start with slash"))
			} else if strings.Contains(strings.TrimSuffix(u, "*"), "*") {
				errs = append(errs, v.NewInvalid(q.Child("nonResourceURLs").Index(j), u, "'*' may only end a path"))
			}
		}
	}
	return errs
}

// validateStarList requires a non-empty list in which "*", if present,
// stands alone.
func validateStarList(l []string, p *v.Path, what string) v.ErrorList {
	if len(l) == 0 {
		if !strings.Contains(what, " ") {
			what = what + " must contain at least one value"
		}
		return v.ErrorList{v.NewRequired(p, what)}
	}
	for _, s := range l {
		if s == "*" && len(l) > 1 {
			return v.ErrorList{v.NewInvalid(p, l, "if '*' is present, must not specify other values")}
		}
	}
	return nil
}

func validateSubject(s *Subject, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	set := map[string]bool{SubjectUser: s.User != nil, SubjectGroup: s.Group != nil, SubjectServiceAccount: s.ServiceAccount != nil}
	switch s.Kind {
	case SubjectUser:
		if s.User == nil || s.User.Name == "" {
			errs = append(errs, v.NewRequired(p.Child("user", "name"), "a User subject names a user"))
		}
	case SubjectGroup:
		if s.Group == nil || s.Group.Name == "" {
			errs = append(errs, v.NewRequired(p.Child("group", "name"), "a Group subject names a group"))
		}
	case SubjectServiceAccount:
		if sa := s.ServiceAccount; sa == nil || sa.Name == "" {
			errs = append(errs, v.NewRequired(p.Child("serviceAccount", "name"), "a ServiceAccount subject names a ServiceAccount or '*'"))
		}
		if sa := s.ServiceAccount; sa == nil || sa.Namespace == "" {
			errs = append(errs, v.NewRequired(p.Child("serviceAccount", "namespace"), "a ServiceAccount subject names its namespace"))
		}
	default:
		return append(errs, v.NewNotSupported(p.Child("kind"), s.Kind, []string{SubjectServiceAccount, SubjectGroup, SubjectUser}))
	}
	for kind, present := range set {
		if present && kind != s.Kind {
			errs = append(errs, v.NewForbidden(p.Child(strings.ToLower(kind[:1])+kind[1:]), "must be empty for a "+s.Kind+" subject"))
		}
	}
	return errs
}

// ValidatePriorityLevelConfiguration checks a level as kube-apiserver does.
func ValidatePriorityLevelConfiguration(pl *PriorityLevelConfiguration) v.ErrorList {
	errs := v.ValidateObjectMeta(&pl.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	spec := v.NewPath("spec")
	if (pl.Name == NameExempt) != (pl.Spec.Type == PriorityLevelExempt) {
		errs = append(errs, v.NewInvalid(spec.Child("type"), pl.Spec.Type, "type must be 'Exempt' if and only if name is 'exempt'"))
	}
	switch pl.Spec.Type {
	case PriorityLevelExempt:
		if pl.Spec.Limited != nil {
			errs = append(errs, v.NewForbidden(spec.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := pl.Spec.Exempt; e != nil {
			errs = append(errs, validateShares(e.NominalConcurrencyShares, e.LendablePercent, spec.Child("exempt"))...)
		}
	case PriorityLevelLimited:
		if pl.Spec.Exempt != nil {
			errs = append(errs, v.NewForbidden(spec.Child("exempt"), "must be nil if the type is Limited"))
		}
		l := pl.Spec.Limited
		if l == nil {
			return append(errs, v.NewRequired(spec.Child("limited"), "must not be empty when type is Limited"))
		}
		lp := spec.Child("limited")
		errs = append(errs, validateShares(l.NominalConcurrencyShares, l.LendablePercent, lp)...)
		if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
			errs = append(errs, v.NewInvalid(lp.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
		}
		errs = append(errs, validateLimitResponse(&l.LimitResponse, lp.Child("limitResponse"))...)
	default:
		errs = append(errs, v.NewNotSupported(spec.Child("type"), pl.Spec.Type, []string{PriorityLevelExempt, PriorityLevelLimited}))
	}
	return errs
}

func validateShares(shares, lendable *int32, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	if shares != nil && *shares < 0 {
		errs = append(errs, v.NewInvalid(p.Child("nominalConcurrencyShares"), *shares, "must be a non-negative integer"))
	}
	if lendable != nil && (*lendable < 0 || *lendable > 100) {
		errs = append(errs, v.NewInvalid(p.Child("lendablePercent"), *lendable, "must be between 0 and 100, inclusive"))
	}
	return errs
}

func validateLimitResponse(r *LimitResponse, p *v.Path) v.ErrorList {
	switch r.Type {
	case LimitResponseReject:
		if r.Queuing != nil {
			return v.ErrorList{v.NewForbidden(p.Child("queuing"), "must be nil if limited.limitResponse.type is not Queue")}
		}
	case LimitResponseQueue:
		q := r.Queuing
		if q == nil {
			return v.ErrorList{v.NewRequired(p.Child("queuing"), "must not be empty if limited.limitResponse.type is Queue")}
		}
		qp := p.Child("queuing")
		var errs v.ErrorList
		if q.QueueLengthLimit <= 0 {
			errs = append(errs, v.NewInvalid(qp.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
		}
		if q.Queues <= 0 {
			errs = append(errs, v.NewInvalid(qp.Child("queues"), q.Queues, "must be positive"))
		}
		if q.HandSize <= 0 {
			errs = append(errs, v.NewInvalid(qp.Child("handSize"), q.HandSize, "must be positive"))
		} else if q.HandSize > q.Queues {
			errs = append(errs, v.NewInvalid(qp.Child("handSize"), q.HandSize, "should not be greater than queues ("+itoa(q.Queues)+")"))
		} else if bits := float64(q.HandSize) * math.Log2(float64(q.Queues)); bits > 60 {
			errs = append(errs, v.NewInvalid(qp.Child("handSize"), q.HandSize, "required entropy bits of deckSize "+itoa(q.Queues)+" and handSize "+itoa(q.HandSize)+" should not be greater than 60"))
		}
		return errs
	default:
		return v.ErrorList{v.NewNotSupported(p.Child("type"), r.Type, []string{LimitResponseQueue, LimitResponseReject})}
	}
	return nil
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
