package admission

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
)

// Pod Security levels and the namespace labels that choose them.
const (
	LevelPrivileged = "privileged"
	LevelBaseline   = "baseline"
	LevelRestricted = "restricted"

	LabelEnforce = "pod-security.kubernetes.io/enforce"
	LabelWarn    = "pod-security.kubernetes.io/warn"
	LabelAudit   = "pod-security.kubernetes.io/audit"
)

// NamespaceLabeler gives a namespace's labels (the API server's cache).
type NamespaceLabeler interface {
	NamespaceLabels(ctx context.Context, name string) (map[string]string, bool, error)
}

// PodSecurity is Kubernetes' Pod Security admission: a namespace's labels
// pod-security.kubernetes.io/enforce, warn and audit name a level —
// privileged (no checks), baseline, restricted — and pods that break the
// enforced level are refused, with every check they fail named; the warn
// level adds a warning to the response; pods and the pod templates of
// workloads (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob)
// are checked against warn and audit, pods only against enforce, as in
// Kubernetes. The audit level goes into the request's audit event
// (annotation pod-security.kubernetes.io/audit-violations) and the API
// server's log. The checks are those of the Pod Security Standards,
// latest version (the -version labels are accepted; every version gets
// the latest checks).
type PodSecurity struct {
	Namespaces NamespaceLabeler
	// Pods lists a namespace's pods, to warn about those a new enforce
	// level would refuse (nil: no such warning).
	Pods func(ctx context.Context, namespace string) ([]*core.Pod, error)
	// Logf receives audit-level violations.
	Logf func(format string, args ...any)
}

// Name implements Validator.
func (PodSecurity) Name() string { return "PodSecurity" }

// Validate implements Validator.
func (ps PodSecurity) Validate(ctx context.Context, a *Attributes) error {
	if ns, ok := a.Object.(*core.Namespace); ok {
		if err := validateLevels(ns); err != nil {
			return err
		}
		ps.warnExisting(ctx, a, ns)
		return nil
	}
	spec, isPod := podSpecOf(a)
	if spec == nil || ps.Namespaces == nil {
		return nil
	}
	if isPod && a.Operation == Update {
		return nil // a pod's spec changes only in its images; it was checked when made
	}
	meta := a.Object.GetObjectMeta()
	labels, ok, err := ps.Namespaces.NamespaceLabels(ctx, meta.Namespace)
	if err != nil || !ok {
		return err // a missing namespace is NamespaceLifecycle's to refuse
	}
	what := fmt.Sprintf("%s %q", a.Kind.Resource, meta.Name)
	for _, mode := range []string{LabelEnforce, LabelWarn, LabelAudit} {
		level, ok := labels[mode]
		if !ok || level == LevelPrivileged {
			continue
		}
		if level != LevelBaseline && level != LevelRestricted {
			if mode == LabelEnforce {
				return status.Errorf(codes.PermissionDenied, "%s is forbidden: namespace %s has %s=%q: want privileged, baseline or restricted", what, meta.Namespace, mode, level)
			}
			continue
		}
		failed := PodSecurityViolations(level, spec)
		if len(failed) == 0 {
			continue
		}
		checks := fmt.Sprintf("PodSecurity %q: %s", level+":latest", strings.Join(failed, ", "))
		switch mode {
		case LabelEnforce:
			if isPod {
				return status.Errorf(codes.PermissionDenied, "%s is forbidden: violates %s", what, checks)
			}
			// A workload's pods are checked when they are made; say so now.
			Warn(ctx, "would violate "+checks)
		case LabelWarn:
			if !isPod || labels[LabelEnforce] != level {
				Warn(ctx, "would violate "+checks)
			}
		case LabelAudit:
			// Into the request's audit event, as Kubernetes does.
			Annotate(ctx, "pod-security.kubernetes.io/audit-violations", "would violate "+checks)
			if ps.Logf != nil {
				ps.Logf("pod security audit: %s in namespace %s violates %s", what, meta.Namespace, checks)
			}
		}
	}
	return nil
}

// ValidateSubresource implements SubresourceValidator: a pod with
// the ephemeral containers it is given is judged as a new pod is (a debug
// container is no way around the namespace's level); a resize changes
// nothing Pod Security looks at.
func (ps PodSecurity) ValidateSubresource(ctx context.Context, a *Attributes) error {
	if a.Subresource != "ephemeralcontainers" {
		return nil
	}
	create := *a
	create.Operation = Create
	return ps.Validate(ctx, &create)
}

// warnExisting warns, when a namespace's enforce level is raised, about
// the pods already in it that the new level would refuse (they keep
// running), as Kubernetes does.
func (ps PodSecurity) warnExisting(ctx context.Context, a *Attributes, ns *core.Namespace) {
	level := ns.Labels[LabelEnforce]
	if a.Operation != Update || ps.Pods == nil || level == "" || level == LevelPrivileged {
		return
	}
	if old, ok := a.OldObject.(*core.Namespace); ok && old.Labels[LabelEnforce] == level {
		return
	}
	pods, err := ps.Pods(ctx, ns.Name)
	if err != nil {
		return
	}
	var bad []string
	for _, p := range pods {
		if len(PodSecurityViolations(level, &p.Spec)) > 0 {
			bad = append(bad, p.Name)
		}
	}
	if len(bad) == 0 {
		return
	}
	sort.Strings(bad)
	more := ""
	if len(bad) > 10 {
		more, bad = fmt.Sprintf(" and %d other pods", len(bad)-10), bad[:10]
	}
	Warn(ctx, fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q: %s%s", ns.Name, level+":latest", strings.Join(bad, ", "), more))
}

// validateLevels refuses a namespace whose pod-security labels name no
// level or version, as Kubernetes does.
func validateLevels(ns *core.Namespace) error {
	var errs []string
	for _, mode := range []string{LabelEnforce, LabelWarn, LabelAudit} {
		if v, ok := ns.Labels[mode]; ok && v != LevelPrivileged && v != LevelBaseline && v != LevelRestricted {
			errs = append(errs, fmt.Sprintf("metadata.labels[%s]: Unsupported value: %q: supported values: \"privileged\", \"baseline\", \"restricted\"", mode, v))
		}
		if v, ok := ns.Labels[mode+"-version"]; ok && v != "latest" && !versionLabel.MatchString(v) {
			errs = append(errs, fmt.Sprintf("metadata.labels[%s-version]: Invalid value: %q: must be \"latest\" or \"v1.<minor>\"", mode, v))
		}
	}
	if errs != nil {
		return status.Errorf(codes.InvalidArgument, "Namespace %q is invalid: %s", ns.Name, strings.Join(errs, "; "))
	}
	return nil
}

var versionLabel = regexp.MustCompile(`^v1\.[0-9]+$`)

// podSpecOf is the pod spec an object carries: a pod's own, or a
// workload's template.
func podSpecOf(a *Attributes) (*core.PodSpec, bool) {
	switch o := a.Object.(type) {
	case *core.Pod:
		return &o.Spec, true
	case *apps.Deployment:
		return &o.Spec.Template.Spec, false
	case *apps.ReplicaSet:
		return &o.Spec.Template.Spec, false
	case *apps.StatefulSet:
		return &o.Spec.Template.Spec, false
	case *apps.DaemonSet:
		return &o.Spec.Template.Spec, false
	case *batch.Job:
		return &o.Spec.Template.Spec, false
	case *batch.CronJob:
		return &o.Spec.JobTemplate.Spec.Template.Spec, false
	}
	return nil, false
}

// baselineCapabilities may be added under baseline.
var baselineCapabilities = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
	"SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// restrictedVolumes are the volume types restricted admits.
var restrictedVolumes = map[string]bool{"configMap": true, "csi": true, "downwardAPI": true, "emptyDir": true, "ephemeral": true,
	"persistentVolumeClaim": true, "projected": true, "secret": true}

// PodSecurityViolations lists the checks of the Pod Security Standards a
// pod spec fails at a level, each worded as Kubernetes words it
// ("privileged (container "app" must not set securityContext.privileged=true)").
func PodSecurityViolations(level string, s *core.PodSpec) []string {
	if level != LevelBaseline && level != LevelRestricted {
		return nil
	}
	p := newPodView(s)
	var out []string
	for _, c := range podSecurityChecks {
		if c.level == LevelBaseline || level == LevelRestricted {
			out = append(out, c.check(p)...)
		}
	}
	return out
}

// podSecurityCheck is one rule of the Pod Security Standards: the level
// it belongs to (restricted includes baseline's) and what it finds wrong
// with a pod, in Kubernetes' words (none: it passes). Pod Security
// admission in Kubernetes keeps its checks the same way, one each
// (k8s.io/pod-security-admission/policy/check_*.go).
type podSecurityCheck struct {
	level string
	check func(p *podView) []string
}

// podSecurityChecks are the checks in the order their findings are told.
var podSecurityChecks = []podSecurityCheck{
	{LevelBaseline, checkHostNamespaces},
	{LevelBaseline, checkPrivileged},
	{LevelBaseline, checkBaselineCapabilities},
	{LevelBaseline, checkHostPathVolumes},
	{LevelBaseline, checkHostPorts},
	{LevelBaseline, checkSeccompUnconfined},
	{LevelBaseline, checkSysctls},
	{LevelRestricted, checkVolumeTypes},
	{LevelRestricted, checkPrivilegeEscalation},
	{LevelRestricted, checkRestrictedCapabilities},
	{LevelRestricted, checkRunAsNonRoot},
	{LevelRestricted, checkRunAsUser},
	{LevelRestricted, checkSeccompSet},
}

// podView is a pod spec as the checks read it: every container (init
// ones too) and security contexts that are never nil.
type podView struct {
	spec       *core.PodSpec
	containers []core.Container
	pod        *core.PodSecurityContext
}

func newPodView(s *core.PodSpec) *podView {
	p := &podView{spec: s, containers: append(append([]core.Container(nil), s.InitContainers...), s.Containers...), pod: s.SecurityContext}
	for _, ec := range s.EphemeralContainers {
		p.containers = append(p.containers, ec.Container)
	}
	if p.pod == nil {
		p.pod = &core.PodSecurityContext{}
	}
	return p
}

// each names the containers bad says yes to.
func (p *podView) each(bad func(c *core.Container) bool) []string {
	var names []string
	for i := range p.containers {
		if bad(&p.containers[i]) {
			names = append(names, p.containers[i].Name)
		}
	}
	return names
}

// sc is a container's security context, empty when it has none.
func sc(c *core.Container) *core.SecurityContext {
	if c.SecurityContext == nil {
		return &core.SecurityContext{}
	}
	return c.SecurityContext
}

// unconfined: the pod's seccomp profile is Unconfined.
func (p *podView) unconfined() bool {
	return p.pod.SeccompProfile != nil && p.pod.SeccompProfile.Type == core.SeccompUnconfined
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func plural(names []string) string {
	if len(names) == 1 {
		return "container " + quoted(names)
	}
	return "containers " + quoted(names)
}

func checkHostNamespaces(p *podView) []string {
	var host []string
	if p.spec.HostNetwork {
		host = append(host, "hostNetwork=true")
	}
	if p.spec.HostPID {
		host = append(host, "hostPID=true")
	}
	if p.spec.HostIPC {
		host = append(host, "hostIPC=true")
	}
	if len(host) > 0 {
		return []string{fmt.Sprintf("host namespaces (%s)", strings.Join(host, ", "))}
	}
	return nil
}

func checkPrivileged(p *podView) []string {
	if names := p.each(func(c *core.Container) bool { pr := sc(c).Privileged; return pr != nil && *pr }); names != nil {
		return []string{fmt.Sprintf("privileged (%s must not set securityContext.privileged=true)", plural(names))}
	}
	return nil
}

func checkBaselineCapabilities(p *podView) []string {
	var addedCaps []string
	names := p.each(func(c *core.Container) bool {
		bad := false
		for _, a := range capsOf(sc(c).Capabilities, true) {
			if !slices.Contains(baselineCapabilities, a) {
				addedCaps, bad = append(addedCaps, a), true
			}
		}
		return bad
	})
	if names == nil {
		return nil
	}
	sort.Strings(addedCaps)
	return []string{fmt.Sprintf("non-default capabilities (%s must not include %s in securityContext.capabilities.add)", plural(names), quoted(slices.Compact(addedCaps)))}
}

func checkHostPathVolumes(p *podView) []string {
	var hostPaths []string
	for _, v := range p.spec.Volumes {
		if v.HostPath != nil {
			hostPaths = append(hostPaths, v.Name)
		}
	}
	if hostPaths != nil {
		return []string{fmt.Sprintf("hostPath volumes (volumes %s)", quoted(hostPaths))}
	}
	return nil
}

func checkHostPorts(p *podView) []string {
	var ports []string
	names := p.each(func(c *core.Container) bool {
		bad := false
		for _, cp := range c.Ports {
			if cp.HostPort != 0 {
				ports, bad = append(ports, fmt.Sprint(cp.HostPort)), true
			}
		}
		return bad
	})
	if names != nil {
		return []string{fmt.Sprintf("hostPort (%s uses hostPorts %s)", plural(names), strings.Join(ports, ", "))}
	}
	return nil
}

func checkSeccompUnconfined(p *podView) []string {
	unconfined := p.unconfined()
	names := p.each(func(c *core.Container) bool {
		sp := sc(c).SeccompProfile
		return sp != nil && sp.Type == core.SeccompUnconfined
	})
	switch {
	case !unconfined && names == nil:
		return nil
	case unconfined && names == nil:
		return []string{`seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")`}
	case unconfined:
		return []string{fmt.Sprintf(`seccompProfile (pod and %s must not set securityContext.seccompProfile.type to "Unconfined")`, plural(names))}
	default:
		return []string{fmt.Sprintf(`seccompProfile (%s must not set securityContext.seccompProfile.type to "Unconfined")`, plural(names))}
	}
}

// checkSysctls: under baseline only the safe sysctls (Kubernetes' list
// for this version, core.SafeSysctls).
func checkSysctls(p *podView) []string {
	var bad []string
	for _, s := range p.pod.Sysctls {
		if !slices.Contains(core.SafeSysctls, core.NormalizeSysctl(s.Name)) {
			bad = append(bad, s.Name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("forbidden sysctls (%s)", strings.Join(bad, ", "))}
}

func checkVolumeTypes(p *podView) []string {
	var volumes []string
	for _, v := range p.spec.Volumes {
		if t := volumeType(&v.VolumeSource); !restrictedVolumes[t] {
			volumes = append(volumes, fmt.Sprintf("%q uses restricted volume type %q", v.Name, t))
		}
	}
	if volumes != nil {
		return []string{fmt.Sprintf("restricted volume types (volume %s)", strings.Join(volumes, ", "))}
	}
	return nil
}

func checkPrivilegeEscalation(p *podView) []string {
	if names := p.each(func(c *core.Container) bool { pe := sc(c).AllowPrivilegeEscalation; return pe == nil || *pe }); names != nil {
		return []string{fmt.Sprintf("allowPrivilegeEscalation != false (%s must set securityContext.allowPrivilegeEscalation=false)", plural(names))}
	}
	return nil
}

func checkRestrictedCapabilities(p *podView) []string {
	var out []string
	if names := p.each(func(c *core.Container) bool {
		return !slices.Contains(capsOf(sc(c).Capabilities, false), "ALL")
	}); names != nil {
		out = append(out, fmt.Sprintf(`unrestricted capabilities (%s must set securityContext.capabilities.drop=["ALL"])`, plural(names)))
	}
	if names := p.each(func(c *core.Container) bool {
		for _, a := range capsOf(sc(c).Capabilities, true) {
			if a != "NET_BIND_SERVICE" {
				return true
			}
		}
		return false
	}); names != nil {
		out = append(out, fmt.Sprintf(`unrestricted capabilities (%s must not include capabilities other than "NET_BIND_SERVICE" in securityContext.capabilities.add)`, plural(names)))
	}
	return out
}

func checkRunAsNonRoot(p *podView) []string {
	podNonRoot := p.pod.RunAsNonRoot != nil && *p.pod.RunAsNonRoot
	explicitFalse := p.each(func(c *core.Container) bool { n := sc(c).RunAsNonRoot; return n != nil && !*n })
	unset := p.each(func(c *core.Container) bool { return sc(c).RunAsNonRoot == nil })
	switch {
	case explicitFalse != nil:
		return []string{fmt.Sprintf("runAsNonRoot != true (%s must not set securityContext.runAsNonRoot=false)", plural(explicitFalse))}
	case !podNonRoot && unset != nil:
		return []string{fmt.Sprintf("runAsNonRoot != true (pod or %s must set securityContext.runAsNonRoot=true)", plural(unset))}
	}
	return nil
}

func checkRunAsUser(p *podView) []string {
	rootUser := p.each(func(c *core.Container) bool { u := sc(c).RunAsUser; return u != nil && *u == 0 })
	if p.pod.RunAsUser != nil && *p.pod.RunAsUser == 0 {
		return []string{"runAsUser=0 (pod must not set runAsUser=0)"}
	} else if rootUser != nil {
		return []string{fmt.Sprintf("runAsUser=0 (%s must not set runAsUser=0)", plural(rootUser))}
	}
	return nil
}

// checkSeccompSet: restricted needs a profile on the pod or every
// container (an Unconfined pod profile was told by the baseline check).
func checkSeccompSet(p *podView) []string {
	podSeccomp := p.pod.SeccompProfile != nil && (p.pod.SeccompProfile.Type == core.SeccompRuntimeDefault || p.pod.SeccompProfile.Type == core.SeccompLocalhost)
	if names := p.each(func(c *core.Container) bool { return sc(c).SeccompProfile == nil }); !podSeccomp && names != nil && !p.unconfined() {
		return []string{fmt.Sprintf(`seccompProfile (pod or %s must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`, plural(names))}
	}
	return nil
}

// capsOf is a capabilities' add (or drop) list.
func capsOf(c *core.Capabilities, add bool) []string {
	if c == nil {
		return nil
	}
	if add {
		return c.Add
	}
	return c.Drop
}

// volumeType is the field name of a volume's source.
func volumeType(v *core.VolumeSource) string {
	switch {
	case v.EmptyDir != nil:
		return "emptyDir"
	case v.HostPath != nil:
		return "hostPath"
	case v.ConfigMap != nil:
		return "configMap"
	case v.Secret != nil:
		return "secret"
	case v.DownwardAPI != nil:
		return "downwardAPI"
	case v.Projected != nil:
		return "projected"
	case v.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case v.CSI != nil:
		return "csi"
	}
	return "unknown"
}

type warningsKey struct{}

// WithWarnings returns a context that collects the warnings admission
// plugins give (Warn), and the list they go into.
func WithWarnings(ctx context.Context) (context.Context, *[]string) {
	w := &[]string{}
	return context.WithValue(ctx, warningsKey{}, w), w
}

// Warn adds a warning to the response of the request ctx belongs to (the
// Warning header of Kubernetes' API; kobectl prints "Warning: ...").
func Warn(ctx context.Context, msg string) {
	if w, ok := ctx.Value(warningsKey{}).(*[]string); ok && !slices.Contains(*w, msg) {
		*w = append(*w, msg)
	}
}

type annotationsKey struct{}

// WithAnnotations returns a context that collects the audit annotations
// admission plugins give (Annotate), and the map they go into.
func WithAnnotations(ctx context.Context) (context.Context, map[string]string) {
	m := map[string]string{}
	return context.WithValue(ctx, annotationsKey{}, m), m
}

// Annotate adds an annotation to the audit event of the request ctx
// belongs to.
func Annotate(ctx context.Context, key, value string) {
	if m, ok := ctx.Value(annotationsKey{}).(map[string]string); ok {
		m[key] = value
	}
}
