// Package printers owns the columns `get` prints for each kind — one
// definition, used by kobectl's tables and by the API server's Table
// responses (what kubectl prints), as Kubernetes' server-side printers
// (pkg/printers/internalversion) are. A column that -o wide adds is a
// Table column of priority 1.
package printers

import (
	"cmp"
	"fmt"
	"github.com/kobune/kobune/api/apiregistration"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/flowcontrol"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/api/node"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/api/scheduling"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/api/storage"
)

// Table is how `get` prints one kind: kubectl's columns, and a row of
// cells for one object.
type Table struct {
	Headers []string
	Row     func(meta.Object) []string
}

// For returns a kind's table; wide adds the columns of -o wide (always
// after the others).
func For(k *scheme.Kind, wide bool) Table {
	all := narrow
	if wide {
		all = wideTables
	}
	t := all()[k.Kind]
	if c := k.Custom; c != nil {
		t = Table{} // a custom kind named Pod is not a pod
		if len(c.Columns) > 0 {
			return customTable(c.Columns, wide)
		}
	}
	if t.Row == nil {
		return Table{Headers: []string{"NAME", "AGE"}, Row: func(o meta.Object) []string {
			return []string{o.GetObjectMeta().Name, age(o)}
		}}
	}
	t.Headers = slices.Clip(t.Headers) // shared: a caller's append must not write into it
	return t
}

// The tables, built once (a list of 10,000 pods asks For once per page,
// kobectl get -w once per event).
var (
	narrow     = sync.OnceValue(func() map[string]Table { return tables(false) })
	wideTables = sync.OnceValue(func() map[string]Table { return tables(true) })
)

// widen appends the -o wide columns to the base ones, when wide.
type widen func(base, extra []string) []string

func tables(wide bool) map[string]Table {
	w := func(base, extra []string) []string {
		if wide {
			return append(base, extra...)
		}
		return base
	}
	return map[string]Table{
		"Pod":                        podTable(w),
		"Deployment":                 deploymentTable(w),
		"ReplicaSet":                 replicaSetTable(w),
		"ReplicationController":      replicationControllerTable(w),
		"PodTemplate":                podTemplateTable(w),
		"DaemonSet":                  daemonSetTable(w),
		"ControllerRevision":         controllerRevisionTable(w),
		"StatefulSet":                statefulSetTable(w),
		"Job":                        jobTable(w),
		"CronJob":                    cronJobTable(w),
		"Service":                    serviceTable(w),
		"EndpointSlice":              endpointSliceTable(w),
		"Endpoints":                  endpointsTable(w),
		"Node":                       nodeTable(w),
		"Namespace":                  namespaceTable(w),
		"ConfigMap":                  configMapTable(w),
		"HorizontalPodAutoscaler":    horizontalPodAutoscalerTable(w),
		"PodDisruptionBudget":        podDisruptionBudgetTable(w),
		"ResourceQuota":              resourceQuotaTable(w),
		"Secret":                     secretTable(w),
		"Event":                      eventTable(w),
		"NetworkPolicy":              networkPolicyTable(w),
		"Ingress":                    ingressTable(w),
		"IngressClass":               ingressClassTable(w),
		"ServiceCIDR":                serviceCIDRTable(w),
		"IPAddress":                  ipAddressTable(w),
		"Lease":                      leaseTable(w),
		"PriorityClass":              priorityClassTable(w),
		"RuntimeClass":               runtimeClassTable(w),
		"APIService":                 apiServiceTable(w),
		"PersistentVolume":           persistentVolumeTable(w),
		"PersistentVolumeClaim":      persistentVolumeClaimTable(w),
		"StorageClass":               storageClassTable(w),
		"CSIDriver":                  csiDriverTable(w),
		"CSIStorageCapacity":         csiStorageCapacityTable(w),
		"VolumeAttachment":           volumeAttachmentTable(w),
		"VolumeAttributesClass":      volumeAttributesClassTable(w),
		"CertificateSigningRequest":  certificateSigningRequestTable(w),
		"ClusterTrustBundle":         clusterTrustBundleTable(w),
		"Role":                       roleTable(w),
		"ClusterRole":                clusterRoleTable(w),
		"RoleBinding":                roleBindingTable(w),
		"ClusterRoleBinding":         clusterRoleBindingTable(w),
		"FlowSchema":                 flowSchemaTable(w),
		"PriorityLevelConfiguration": priorityLevelTable(w),
	}
}

// podTable is kubectl get's columns for Pod objects.
func podTable(w widen) Table {
	return Table{w([]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, []string{"IP", "NODE", "NOMINATED NODE"}), func(o meta.Object) []string {
		p := o.(*core.Pod)
		r := podSummary(p)
		return w([]string{p.Name, fmt.Sprintf("%d/%d", r.ready, r.total), r.status, r.restartsColumn(), age(o)},
			[]string{None(p.Status.PodIP), None(p.Spec.NodeName), None(p.Status.NominatedNodeName)})
	}}
}

// deploymentTable is kubectl get's columns for Deployment objects.
func deploymentTable(w widen) Table {
	return Table{w([]string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}, []string{"CONTAINERS", "IMAGES", "SELECTOR"}), func(o meta.Object) []string {
		d := o.(*apps.Deployment)
		return w([]string{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, Deref32(d.Spec.Replicas)), fmt.Sprint(d.Status.UpdatedReplicas), fmt.Sprint(d.Status.AvailableReplicas), age(o)},
			containerCols(&d.Spec.Template, d.Spec.Selector))
	}}
}

// replicaSetTable is kubectl get's columns for ReplicaSet objects.
func replicaSetTable(w widen) Table {
	return Table{w([]string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"}, []string{"CONTAINERS", "IMAGES", "SELECTOR"}), func(o meta.Object) []string {
		r := o.(*apps.ReplicaSet)
		return w([]string{r.Name, fmt.Sprint(Deref32(r.Spec.Replicas)), fmt.Sprint(r.Status.Replicas), fmt.Sprint(r.Status.ReadyReplicas), age(o)},
			containerCols(&r.Spec.Template, r.Spec.Selector))
	}}
}

// replicationControllerTable is kubectl get's columns for ReplicationController objects.
func replicationControllerTable(w widen) Table {
	return Table{w([]string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"}, []string{"CONTAINERS", "IMAGES", "SELECTOR"}), func(o meta.Object) []string {
		r := o.(*core.ReplicationController)
		t := r.Spec.Template
		if t == nil {
			t = &core.PodTemplateSpec{}
		}
		return w([]string{r.Name, fmt.Sprint(Deref32(r.Spec.Replicas)), fmt.Sprint(r.Status.Replicas), fmt.Sprint(r.Status.ReadyReplicas), age(o)},
			containerCols(t, &meta.LabelSelector{MatchLabels: r.Spec.Selector}))
	}}
}

// podTemplateTable is kubectl get's columns for PodTemplate objects.
func podTemplateTable(_ widen) Table {
	return Table{[]string{"NAME", "CONTAINERS", "IMAGES", "POD LABELS"}, func(o meta.Object) []string {
		t := o.(*core.PodTemplate)
		cols := containerCols(&t.Template, nil)
		return []string{t.Name, cols[0], cols[1], LabelString(t.Template.Labels)}
	}}
}

// daemonSetTable is kubectl get's columns for DaemonSet objects.
func daemonSetTable(w widen) Table {
	return Table{w([]string{"NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"}, []string{"CONTAINERS", "IMAGES", "SELECTOR"}), func(o meta.Object) []string {
		d := o.(*apps.DaemonSet)
		s := d.Status
		return w([]string{d.Name, fmt.Sprint(s.DesiredNumberScheduled), fmt.Sprint(s.CurrentNumberScheduled), fmt.Sprint(s.NumberReady), fmt.Sprint(s.UpdatedNumberScheduled), fmt.Sprint(s.NumberAvailable), LabelString(d.Spec.Template.Spec.NodeSelector), age(o)},
			containerCols(&d.Spec.Template, d.Spec.Selector))
	}}
}

// controllerRevisionTable is kubectl get's columns for ControllerRevision objects.
func controllerRevisionTable(_ widen) Table {
	return Table{[]string{"NAME", "CONTROLLER", "REVISION", "AGE"}, func(o meta.Object) []string {
		r := o.(*apps.ControllerRevision)
		ctrl := "<none>"
		if ref := meta.ControllerOf(r); ref != nil { // as kubectl: kind.group/name
			group, _, _ := strings.Cut(ref.APIVersion, "/")
			ctrl = strings.ToLower(ref.Kind) + "." + group + "/" + ref.Name
		}
		return []string{r.Name, ctrl, fmt.Sprint(r.Revision), age(o)}
	}}
}

// statefulSetTable is kubectl get's columns for StatefulSet objects.
func statefulSetTable(w widen) Table {
	return Table{w([]string{"NAME", "READY", "AGE"}, []string{"CONTAINERS", "IMAGES"}), func(o meta.Object) []string {
		s := o.(*apps.StatefulSet)
		return w([]string{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, Deref32(s.Spec.Replicas)), age(o)}, containerCols(&s.Spec.Template, nil)[:2])
	}}
}

// jobTable is kubectl get's columns for Job objects.
func jobTable(w widen) Table {
	return Table{w([]string{"NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"}, []string{"CONTAINERS", "IMAGES", "SELECTOR"}), func(o meta.Object) []string {
		j := o.(*batch.Job)
		// kubectl's STATUS: the first of these conditions that holds.
		status := "Running"
		for _, c := range []struct{ typ, say string }{{"Complete", "Complete"}, {"Failed", "Failed"}, {"", "Terminating"}, {"Suspended", "Suspended"},
			{"FailureTarget", "FailureTarget"}, {"SuccessCriteriaMet", "SuccessCriteriaMet"}} {
			if c.typ == "" && j.DeletionTimestamp != nil || c.typ != "" && jobConditionTrue(j, c.typ) {
				status = c.say
				break
			}
		}
		dur := "<none>"
		if j.Status.StartTime != nil {
			end := time.Now()
			if j.Status.CompletionTime != nil {
				end = j.Status.CompletionTime.Time
			}
			dur = shortDuration(end.Sub(j.Status.StartTime.Time))
		}
		return w([]string{j.Name, status, fmt.Sprintf("%d/%d", j.Status.Succeeded, Deref32(j.Spec.Completions)), dur, age(o)}, containerCols(&j.Spec.Template, j.Spec.Selector))
	}}
}

func jobConditionTrue(j *batch.Job, typ string) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == meta.ConditionTrue {
			return true
		}
	}
	return false
}

// cronJobTable is kubectl get's columns for CronJob objects.
func cronJobTable(w widen) Table {
	return Table{w([]string{"NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"}, []string{"CONTAINERS", "IMAGES"}), func(o meta.Object) []string {
		c := o.(*batch.CronJob)
		last := "<none>"
		if c.Status.LastScheduleTime != nil {
			last = shortDuration(time.Since(c.Status.LastScheduleTime.Time))
		}
		suspend := c.Spec.Suspend != nil && *c.Spec.Suspend
		return w([]string{c.Name, c.Spec.Schedule, fmt.Sprint(suspend), fmt.Sprint(len(c.Status.Active)), last, age(o)}, containerCols(&c.Spec.JobTemplate.Spec.Template, nil)[:2])
	}}
}

// serviceTable is kubectl get's columns for Service objects.
func serviceTable(w widen) Table {
	return Table{w([]string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"}, []string{"SELECTOR"}), func(o meta.Object) []string {
		s := o.(*core.Service)
		var ports []string
		for _, p := range s.Spec.Ports {
			if p.NodePort != 0 {
				ports = append(ports, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
			} else {
				ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
			}
		}
		external := "<none>"
		switch s.Spec.Type {
		case core.ServiceTypeExternalName:
			external = s.Spec.ExternalName
		case core.ServiceTypeLoadBalancer:
			// kubectl's: the load balancer's addresses, <pending> until
			// its controller writes them.
			var addrs []string
			for _, in := range s.Status.LoadBalancer.Ingress {
				if in.IP != "" {
					addrs = append(addrs, in.IP)
				} else if in.Hostname != "" {
					addrs = append(addrs, in.Hostname)
				}
			}
			external = "<pending>"
			if len(addrs) > 0 {
				external = strings.Join(addrs, ",")
			}
		}
		return w([]string{s.Name, s.Spec.Type, None(s.Spec.ClusterIP), external, None(strings.Join(ports, ",")), age(o)}, []string{LabelString(s.Spec.Selector)})
	}}
}

// endpointSliceTable is kubectl get's columns for EndpointSlice objects.
func endpointSliceTable(_ widen) Table {
	return Table{[]string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"}, func(o meta.Object) []string {
		e := o.(*discovery.EndpointSlice)
		var ports, addrs []string
		for _, p := range e.Ports {
			if p.Port != nil {
				ports = append(ports, fmt.Sprint(*p.Port))
			}
		}
		for _, ep := range e.Endpoints {
			addrs = append(addrs, ep.Addresses...)
		}
		return []string{e.Name, e.AddressType, None(strings.Join(ports, ",")), None(FirstFew(addrs)), age(o)}
	}}
}

// endpointsTable is kubectl get's columns for Endpoints objects.
func endpointsTable(_ widen) Table {
	return Table{[]string{"NAME", "ENDPOINTS", "AGE"}, func(o meta.Object) []string {
		e := o.(*core.Endpoints)
		var eps []string
		for _, s := range e.Subsets {
			for _, a := range s.Addresses {
				for _, p := range s.Ports {
					eps = append(eps, fmt.Sprintf("%s:%d", a.IP, p.Port))
				}
			}
		}
		return []string{e.Name, None(FirstFew(eps)), age(o)}
	}}
}

// nodeTable is kubectl get's columns for Node objects.
func nodeTable(w widen) Table {
	return Table{w([]string{"NAME", "STATUS", "ROLES", "AGE", "VERSION"}, []string{"INTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"}), func(o meta.Object) []string {
		n := o.(*core.Node)
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" {
				ip = a.Address
			}
		}
		i := n.Status.NodeInfo
		return w([]string{n.Name, nodeStatus(n), NodeRoles(n), age(o), None(i.KubeletVersion)}, []string{None(ip), None(i.OSImage), None(i.KernelVersion), None(i.ContainerRuntimeVersion)})
	}}
}

// namespaceTable is kubectl get's columns for Namespace objects.
func namespaceTable(_ widen) Table {
	return Table{[]string{"NAME", "STATUS", "AGE"}, func(o meta.Object) []string {
		n := o.(*core.Namespace)
		return []string{n.Name, n.Status.Phase, age(o)}
	}}
}

// configMapTable is kubectl get's columns for ConfigMap objects.
func configMapTable(_ widen) Table {
	return Table{[]string{"NAME", "DATA", "AGE"}, func(o meta.Object) []string {
		c := o.(*core.ConfigMap)
		return []string{c.Name, fmt.Sprint(len(c.Data) + len(c.BinaryData)), age(o)}
	}}
}

// horizontalPodAutoscalerTable is kubectl get's columns for HorizontalPodAutoscaler objects.
func horizontalPodAutoscalerTable(_ widen) Table {
	return Table{[]string{"NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"}, func(o meta.Object) []string {
		h := o.(*autoscaling.HorizontalPodAutoscaler)
		var targets []string
		for _, m := range h.Spec.Metrics {
			if m.Resource == nil {
				continue
			}
			current, want := "<unknown>", ""
			var st *autoscaling.ResourceMetricStatus
			for _, s := range h.Status.CurrentMetrics {
				if s.Resource != nil && s.Resource.Name == m.Resource.Name {
					st = s.Resource
				}
			}
			if t := m.Resource.Target; t.AverageUtilization != nil {
				want = fmt.Sprintf("%d%%", *t.AverageUtilization)
				if st != nil && st.Current.AverageUtilization != nil {
					current = fmt.Sprintf("%d%%", *st.Current.AverageUtilization)
				}
			} else if t.AverageValue != nil {
				want = t.AverageValue.String()
				if st != nil && st.Current.AverageValue != nil {
					current = st.Current.AverageValue.String()
				}
			}
			targets = append(targets, fmt.Sprintf("%s: %s/%s", m.Resource.Name, current, want))
		}
		min := "<unset>"
		if h.Spec.MinReplicas != nil {
			min = fmt.Sprint(*h.Spec.MinReplicas)
		}
		return []string{h.Name, h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name, strings.Join(targets, ", "), min, fmt.Sprint(h.Spec.MaxReplicas), fmt.Sprint(h.Status.CurrentReplicas), age(o)}
	}}
}

// podDisruptionBudgetTable is kubectl get's columns for PodDisruptionBudget objects.
func podDisruptionBudgetTable(_ widen) Table {
	return Table{[]string{"NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"}, func(o meta.Object) []string {
		b := o.(*policy.PodDisruptionBudget)
		minA, maxU := "N/A", "N/A"
		if b.Spec.MinAvailable != nil {
			minA = b.Spec.MinAvailable.String()
		}
		if b.Spec.MaxUnavailable != nil {
			maxU = b.Spec.MaxUnavailable.String()
		}
		return []string{b.Name, minA, maxU, fmt.Sprint(b.Status.DisruptionsAllowed), age(o)}
	}}
}

// resourceQuotaTable is kubectl get's columns for ResourceQuota objects.
func resourceQuotaTable(_ widen) Table {
	return Table{[]string{"NAME", "AGE", "REQUEST", "LIMIT"}, func(o meta.Object) []string {
		q := o.(*core.ResourceQuota)
		var req, lim []string
		for _, n := range q.Spec.Hard.Names() {
			h, u := q.Spec.Hard[n], q.Status.Used[n]
			cell := fmt.Sprintf("%s: %s/%s", n, u.String(), h.String())
			if strings.HasPrefix(string(n), "limits.") {
				lim = append(lim, cell)
			} else {
				req = append(req, cell)
			}
		}
		return []string{q.Name, age(o), strings.Join(req, ", "), strings.Join(lim, ", ")}
	}}
}

// secretTable is kubectl get's columns for Secret objects.
func secretTable(_ widen) Table {
	return Table{[]string{"NAME", "TYPE", "DATA", "AGE"}, func(o meta.Object) []string {
		s := o.(*core.Secret)
		return []string{s.Name, s.Type, fmt.Sprint(len(s.Data)), age(o)}
	}}
}

// eventTable is kubectl get's columns for Event objects.
func eventTable(_ widen) Table {
	return Table{[]string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}, func(o meta.Object) []string {
		e := o.(*core.Event)
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		return []string{SinceOrUnknown(last), e.Type, e.Reason, strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name, e.Message}
	}}
}

// networkPolicyTable is kubectl get's columns for NetworkPolicy objects.
func networkPolicyTable(_ widen) Table {
	return Table{[]string{"NAME", "POD-SELECTOR", "AGE"}, func(o meta.Object) []string {
		np := o.(*networking.NetworkPolicy)
		return []string{np.Name, selectorString(&np.Spec.PodSelector), age(o)}
	}}
}

// ingressTable is kubectl get's columns for Ingress objects.
func ingressTable(_ widen) Table {
	return Table{[]string{"NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"}, func(o meta.Object) []string {
		in := o.(*networking.Ingress)
		class := "<none>"
		if in.Spec.IngressClassName != nil {
			class = *in.Spec.IngressClassName
		}
		var hosts, addrs []string
		for _, r := range in.Spec.Rules {
			if r.Host != "" && !slices.Contains(hosts, r.Host) {
				hosts = append(hosts, r.Host)
			}
		}
		if len(hosts) == 0 {
			hosts = []string{"*"}
		}
		for _, a := range in.Status.LoadBalancer.Ingress {
			addrs = append(addrs, cmp.Or(a.IP, a.Hostname))
		}
		ports := "80"
		if len(in.Spec.TLS) > 0 {
			ports = "80, 443"
		}
		return []string{in.Name, class, FirstFew(hosts), strings.Join(addrs, ","), ports, age(o)}
	}}
}

// ingressClassTable is kubectl get's columns for IngressClass objects.
func ingressClassTable(_ widen) Table {
	return Table{[]string{"NAME", "CONTROLLER", "PARAMETERS", "AGE"}, func(o meta.Object) []string {
		c := o.(*networking.IngressClass)
		params := "<none>"
		if p := c.Spec.Parameters; p != nil {
			params = strings.ToLower(p.Kind) + "/" + p.Name
		}
		return []string{c.Name, c.Spec.Controller, params, age(o)}
	}}
}

// serviceCIDRTable is kubectl get's columns for ServiceCIDR objects.
func serviceCIDRTable(_ widen) Table {
	return Table{[]string{"NAME", "CIDRS", "AGE"}, func(o meta.Object) []string {
		c := o.(*networking.ServiceCIDR)
		return []string{c.Name, strings.Join(c.Spec.CIDRs, ","), age(o)}
	}}
}

// ipAddressTable is kubectl get's columns for IPAddress objects: the
// parent as resource.group/namespace/name.
func ipAddressTable(_ widen) Table {
	return Table{[]string{"NAME", "PARENTREF"}, func(o meta.Object) []string {
		a := o.(*networking.IPAddress)
		parent := "<none>"
		if r := a.Spec.ParentRef; r != nil {
			parent = strings.ToLower(r.Resource)
			if r.Group != "" {
				parent += "." + strings.ToLower(r.Group)
			}
			if r.Namespace != "" {
				parent += "/" + r.Namespace
			}
			parent += "/" + r.Name
		}
		return []string{a.Name, parent}
	}}
}

// leaseTable is kubectl get's columns for Lease objects.
func leaseTable(_ widen) Table {
	return Table{[]string{"NAME", "HOLDER", "AGE"}, func(o meta.Object) []string {
		l := o.(*coordination.Lease)
		h := ""
		if l.Spec.HolderIdentity != nil {
			h = *l.Spec.HolderIdentity
		}
		return []string{l.Name, h, age(o)}
	}}
}

// flowSchemaTable is kubectl get's columns for FlowSchema objects.
func flowSchemaTable(_ widen) Table {
	return Table{[]string{"NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"}, func(o meta.Object) []string {
		fs := o.(*flowcontrol.FlowSchema)
		method, missing := "<none>", "Unknown"
		if d := fs.Spec.DistinguisherMethod; d != nil {
			method = d.Type
		}
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrol.FlowSchemaConditionDangling {
				missing = c.Status
			}
		}
		return []string{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, fmt.Sprint(fs.Spec.MatchingPrecedence), method, age(o), missing}
	}}
}

// priorityLevelTable is kubectl get's columns for PriorityLevelConfiguration objects.
func priorityLevelTable(_ widen) Table {
	return Table{[]string{"NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"}, func(o meta.Object) []string {
		pl := o.(*flowcontrol.PriorityLevelConfiguration)
		shares, queues, hand, qlen := "<none>", "<none>", "<none>", "<none>"
		if l := pl.Spec.Limited; l != nil {
			shares = fmt.Sprint(Deref32(l.NominalConcurrencyShares))
			if q := l.LimitResponse.Queuing; q != nil {
				queues, hand, qlen = fmt.Sprint(q.Queues), fmt.Sprint(q.HandSize), fmt.Sprint(q.QueueLengthLimit)
			}
		}
		return []string{pl.Name, pl.Spec.Type, shares, queues, hand, qlen, age(o)}
	}}
}

// priorityClassTable is kubectl get's columns for PriorityClass objects.
func priorityClassTable(_ widen) Table {
	return Table{[]string{"NAME", "VALUE", "GLOBAL-DEFAULT", "AGE"}, func(o meta.Object) []string {
		p := o.(*scheduling.PriorityClass)
		return []string{p.Name, fmt.Sprint(p.Value), fmt.Sprint(p.GlobalDefault), age(o)}
	}}
}

// apiServiceTable is kubectl get's columns for APIService objects.
func apiServiceTable(_ widen) Table {
	return Table{[]string{"NAME", "SERVICE", "AVAILABLE", "AGE"}, func(o meta.Object) []string {
		a := o.(*apiregistration.APIService)
		svc, avail := "Local", "Unknown"
		if r := a.Spec.Service; r != nil {
			svc = r.Namespace + "/" + r.Name
		}
		for _, c := range a.Status.Conditions {
			if c.Type == apiregistration.Available {
				avail = c.Status
				if c.Status != "True" && c.Reason != "" {
					avail += " (" + c.Reason + ")"
				}
			}
		}
		return []string{a.Name, svc, avail, age(o)}
	}}
}

// runtimeClassTable is kubectl get's columns for RuntimeClass objects.
func runtimeClassTable(_ widen) Table {
	return Table{[]string{"NAME", "HANDLER", "AGE"}, func(o meta.Object) []string {
		r := o.(*node.RuntimeClass)
		return []string{r.Name, r.Handler, age(o)}
	}}
}

// persistentVolumeTable is kubectl get's columns for PersistentVolume objects.
func persistentVolumeTable(w widen) Table {
	return Table{w([]string{"NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"},
		[]string{"VOLUMEMODE"}), func(o meta.Object) []string {
		v := o.(*core.PersistentVolume)
		claim := ""
		if r := v.Spec.ClaimRef; r != nil {
			claim = r.Namespace + "/" + r.Name
		}
		mode := "Filesystem"
		if v.Spec.VolumeMode != nil {
			mode = *v.Spec.VolumeMode
		}
		return w([]string{v.Name, v.Spec.Capacity["storage"].String(), accessModes(v.Spec.AccessModes), string(v.Spec.PersistentVolumeReclaimPolicy),
			v.Status.Phase, claim, v.Spec.StorageClassName, "<unset>", v.Status.Reason, age(o)}, []string{mode})
	}}
}

// persistentVolumeClaimTable is kubectl get's columns for PersistentVolumeClaim objects.
func persistentVolumeClaimTable(w widen) Table {
	return Table{w([]string{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"},
		[]string{"VOLUMEMODE"}), func(o meta.Object) []string {
		c := o.(*core.PersistentVolumeClaim)
		capacity := ""
		if q, ok := c.Status.Capacity["storage"]; ok {
			capacity = q.String()
		}
		mode := "Filesystem"
		if c.Spec.VolumeMode != nil {
			mode = *c.Spec.VolumeMode
		}
		return w([]string{c.Name, c.Status.Phase, c.Spec.VolumeName, capacity, accessModes(c.Status.AccessModes), core.ClaimClass(c), "<unset>", age(o)}, []string{mode})
	}}
}

// storageClassTable is kubectl get's columns for StorageClass objects.
func storageClassTable(_ widen) Table {
	return Table{[]string{"NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"}, func(o meta.Object) []string {
		sc := o.(*storage.StorageClass)
		name := sc.Name
		if sc.Annotations[core.AnnDefaultStorageClass] == "true" {
			name += " (default)"
		}
		policy, mode := "Delete", string(storage.Immediate)
		if sc.ReclaimPolicy != nil {
			policy = string(*sc.ReclaimPolicy)
		}
		if sc.VolumeBindingMode != nil {
			mode = string(*sc.VolumeBindingMode)
		}
		expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
		return []string{name, sc.Provisioner, policy, mode, fmt.Sprint(expand), age(o)}
	}}
}

// csiDriverTable is kubectl get's columns for CSIDriver objects.
func csiDriverTable(_ widen) Table {
	return Table{[]string{"NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS", "REQUIRESREPUBLISH", "MODES", "AGE"},
		func(o meta.Object) []string {
			s := o.(*storage.CSIDriver).Spec
			modes := make([]string, len(s.VolumeLifecycleModes))
			for i, m := range s.VolumeLifecycleModes {
				modes[i] = string(m)
			}
			tokens := "<unset>"
			if len(s.TokenRequests) > 0 {
				tokens = fmt.Sprint(len(s.TokenRequests))
			}
			return []string{o.GetObjectMeta().Name, boolOr(s.AttachRequired, true), boolOr(s.PodInfoOnMount, false), boolOr(s.StorageCapacity, false),
				tokens, boolOr(s.RequiresRepublish, false), strings.Join(modes, ","), age(o)}
		}}
}

// csiStorageCapacityTable is kubectl get's columns for CSIStorageCapacity objects.
func csiStorageCapacityTable(_ widen) Table {
	return Table{[]string{"NAME", "STORAGECLASSNAME", "CAPACITY"}, func(o meta.Object) []string {
		c := o.(*storage.CSIStorageCapacity)
		capacity := "<unset>"
		if c.Capacity != nil {
			capacity = c.Capacity.String()
		}
		return []string{c.Name, c.StorageClassName, capacity}
	}}
}

// volumeAttachmentTable is kubectl get's columns for VolumeAttachment objects.
func volumeAttachmentTable(_ widen) Table {
	return Table{[]string{"NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"}, func(o meta.Object) []string {
		a := o.(*storage.VolumeAttachment)
		pv := ""
		if a.Spec.Source.PersistentVolumeName != nil {
			pv = *a.Spec.Source.PersistentVolumeName
		}
		return []string{a.Name, a.Spec.Attacher, pv, a.Spec.NodeName, fmt.Sprint(a.Status.Attached), age(o)}
	}}
}

// volumeAttributesClassTable is kubectl get's columns for VolumeAttributesClass objects.
func volumeAttributesClassTable(_ widen) Table {
	return Table{[]string{"NAME", "DRIVERNAME", "AGE"}, func(o meta.Object) []string {
		return []string{o.GetObjectMeta().Name, o.(*storage.VolumeAttributesClass).DriverName, age(o)}
	}}
}

// boolOr prints a defaulted yes-or-no field.
func boolOr(b *bool, def bool) string {
	if b == nil {
		return fmt.Sprint(def)
	}
	return fmt.Sprint(*b)
}

// clusterTrustBundleTable is kubectl get's columns for ClusterTrustBundle objects.
func clusterTrustBundleTable(_ widen) Table {
	return Table{[]string{"NAME", "SIGNERNAME"}, func(o meta.Object) []string {
		return []string{o.GetObjectMeta().Name, o.(*certificates.ClusterTrustBundle).Spec.SignerName}
	}}
}

// certificateSigningRequestTable is kubectl get's columns for CertificateSigningRequest objects.
func certificateSigningRequestTable(_ widen) Table {
	return Table{[]string{"NAME", "AGE", "SIGNERNAME", "REQUESTOR", "CONDITION"}, func(o meta.Object) []string {
		r := o.(*certificates.CertificateSigningRequest)
		var conds []string
		for _, c := range r.Status.Conditions {
			if c.Status == "True" {
				conds = append(conds, c.Type)
			}
		}
		if len(r.Status.Certificate) > 0 {
			conds = append(conds, "Issued")
		}
		if len(conds) == 0 {
			conds = []string{"Pending"}
		}
		return []string{r.Name, age(o), r.Spec.SignerName, r.Spec.Username, strings.Join(conds, ",")}
	}}
}

// roleTable is kubectl get's columns for Role objects.
func roleTable(_ widen) Table {
	return Table{[]string{"NAME", "CREATED AT"}, createdAt}
}

// clusterRoleTable is kubectl get's columns for ClusterRole objects.
func clusterRoleTable(_ widen) Table {
	return Table{[]string{"NAME", "CREATED AT"}, createdAt}
}

// roleBindingTable is kubectl get's columns for RoleBinding objects.
func roleBindingTable(w widen) Table {
	return Table{w([]string{"NAME", "ROLE", "AGE"}, []string{"USERS", "GROUPS", "SERVICEACCOUNTS"}), func(o meta.Object) []string {
		b := o.(*rbac.RoleBinding)
		return w([]string{b.Name, b.RoleRef.Kind + "/" + b.RoleRef.Name, age(o)}, subjectCols(b.Subjects))
	}}
}

// clusterRoleBindingTable is kubectl get's columns for ClusterRoleBinding objects.
func clusterRoleBindingTable(w widen) Table {
	return Table{w([]string{"NAME", "ROLE", "AGE"}, []string{"USERS", "GROUPS", "SERVICEACCOUNTS"}), func(o meta.Object) []string {
		b := o.(*rbac.ClusterRoleBinding)
		return w([]string{b.Name, b.RoleRef.Kind + "/" + b.RoleRef.Name, age(o)}, subjectCols(b.Subjects))
	}}
}

// createdAt is kubectl's column for roles: the creation time itself.
func createdAt(o meta.Object) []string {
	return []string{o.GetObjectMeta().Name, o.GetObjectMeta().CreationTimestamp.UTC().Format(time.RFC3339)}
}

// subjectCols are a binding's users, groups and ServiceAccounts
// (namespace:name), as kubectl's wide columns.
func subjectCols(subjects []rbac.Subject) []string {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbac.UserKind:
			users = append(users, s.Name)
		case rbac.GroupKind:
			groups = append(groups, s.Name)
		case rbac.ServiceAccountKind:
			sas = append(sas, s.Namespace+":"+s.Name)
		}
	}
	return []string{strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}

// accessModes is kubectl's short form: RWO,ROX,RWX,RWOP.
func accessModes(modes []core.PersistentVolumeAccessMode) string {
	short := map[core.PersistentVolumeAccessMode]string{core.ReadWriteOnce: "RWO", core.ReadOnlyMany: "ROX", core.ReadWriteMany: "RWX", core.ReadWriteOncePod: "RWOP"}
	var out []string
	for _, m := range modes {
		out = append(out, short[m])
	}
	return strings.Join(out, ",")
}

// PodStatus is kubectl's STATUS column: an init container's progress or
// reason while the pod initializes, then a waiting or terminated reason
// beats the phase; a deletion of a pod not yet finished shows as
// Terminating.
func PodStatus(p *core.Pod) string {
	return podSummary(p).status
}

// podRow is what kubectl's pod table says of a pod: how many containers
// are ready, its status, and its restarts.
type podRow struct {
	ready, total int // containers and sidecars
	status       string
	restarts     int32
	lastRestart  time.Time
}

// podSummary reads a pod as kubectl's printer does: while the init
// containers run, the status is Init:N/M or Init:<reason> and RESTARTS
// counts the init containers' restarts; after, the first container with a
// waiting or terminated reason gives the status and RESTARTS counts the
// containers' restarts, with how long ago the last one ended.
func podSummary(p *core.Pod) podRow {
	r := podRow{status: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		r.status = p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == core.PodScheduled && c.Reason == core.PodReasonSchedulingGated {
			r.status = core.PodReasonSchedulingGated
		}
	}
	later := func(t *core.ContainerStateTerminated) {
		if t != nil && t.FinishedAt.Time.After(r.lastRestart) {
			r.lastRestart = t.FinishedAt.Time
		}
	}
	// Sidecars count among the containers: in READY, and their restarts
	// once the pod is initialized.
	sidecars := p.Spec.Sidecars()
	r.total = len(p.Spec.Containers) + len(sidecars)
	var sidecarRestarts int32
	var sidecarLast time.Time
	initializing := false
	for i, c := range p.Status.InitContainerStatuses {
		r.restarts += c.RestartCount
		later(c.LastState.Terminated)
		if sidecars[c.Name] {
			sidecarRestarts += c.RestartCount
			if t := c.LastState.Terminated; t != nil && t.FinishedAt.Time.After(sidecarLast) {
				sidecarLast = t.FinishedAt.Time
			}
		}
		t, w := c.State.Terminated, c.State.Waiting
		switch {
		case t != nil && t.ExitCode == 0:
			continue
		case sidecars[c.Name] && c.Started != nil && *c.Started:
			if c.Ready {
				r.ready++
			}
			continue
		case t != nil && t.Reason != "":
			r.status = "Init:" + t.Reason
		case t != nil && t.Signal != 0:
			r.status = fmt.Sprintf("Init:Signal:%d", t.Signal)
		case t != nil:
			r.status = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			r.status = "Init:" + w.Reason
		default:
			r.status = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || podConditionTrue(p, core.PodInitialized) {
		r.restarts, r.lastRestart = sidecarRestarts, sidecarLast
		running := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- { // the first container's reason wins
			c := p.Status.ContainerStatuses[i]
			r.restarts += c.RestartCount
			later(c.LastState.Terminated)
			t, w := c.State.Terminated, c.State.Waiting
			switch {
			case w != nil && w.Reason != "":
				r.status = w.Reason
			case t != nil && t.Reason != "":
				r.status = t.Reason
			case t != nil && t.Signal != 0:
				r.status = fmt.Sprintf("Signal:%d", t.Signal)
			case t != nil:
				r.status = fmt.Sprintf("ExitCode:%d", t.ExitCode)
			case c.Ready && c.State.Running != nil:
				running = true
				r.ready++
			}
		}
		if r.status == "Completed" && running { // one container finished, another still runs
			r.status = "NotReady"
			if podConditionTrue(p, core.PodReady) {
				r.status = "Running"
			}
		}
	}
	if p.DeletionTimestamp != nil && p.Status.Phase != core.PodSucceeded && p.Status.Phase != core.PodFailed {
		r.status = "Terminating"
	}
	return r
}

func podConditionTrue(p *core.Pod, t core.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == meta.ConditionTrue
		}
	}
	return false
}

// restartsColumn is kubectl's RESTARTS: the count, and how long ago the
// last attempt ended ("3 (12s ago)").
func (r podRow) restartsColumn() string {
	if r.restarts != 0 && !r.lastRestart.IsZero() {
		return fmt.Sprintf("%d (%s ago)", r.restarts, shortDuration(time.Since(r.lastRestart)))
	}
	return fmt.Sprint(r.restarts)
}

func nodeStatus(n *core.Node) string {
	s := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == core.NodeReady {
			if c.Status == meta.ConditionTrue {
				s = "Ready"
			} else {
				s = "NotReady"
			}
		}
	}
	if n.Spec.Unschedulable {
		s += ",SchedulingDisabled"
	}
	return s
}

// NodeRoles are the node-role.kubernetes.io/ labels, as kubectl prints them.
func NodeRoles(n *core.Node) string {
	var roles []string
	for k := range n.Labels {
		if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok {
			roles = append(roles, r)
		}
	}
	sort.Strings(roles)
	return None(strings.Join(roles, ","))
}

func containerCols(t *core.PodTemplateSpec, sel *meta.LabelSelector) []string {
	var names, images []string
	for _, c := range t.Spec.Containers {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return []string{strings.Join(names, ","), strings.Join(images, ","), selectorString(sel)}
}

// selectorString prints a label selector as kubectl does; an empty or
// absent one is <none>.
func selectorString(sel *meta.LabelSelector) string {
	if sel == nil {
		return "<none>"
	}
	parsed, err := selector.FromLabelSelector(sel)
	if err != nil || parsed.String() == "" {
		return "<none>"
	}
	return parsed.String()
}

// FirstFew joins the first three items and counts the rest, as kubectl
// prints endpoints ("10.244.1.2:8080,10.244.2.3:8080 + 1 more...").
func FirstFew(items []string) string {
	if len(items) <= 3 {
		return strings.Join(items, ",")
	}
	return fmt.Sprintf("%s + %d more...", strings.Join(items[:3], ","), len(items)-3)
}

// LabelString prints labels as kubectl does: k=v,k2=v2 sorted, or <none>.
func LabelString(l map[string]string) string {
	if len(l) == 0 {
		return "<none>"
	}
	return selector.SelectorFromSet(l).String()
}

// None prints an empty value as kubectl does: <none>.
func None(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// Deref32 is *p, or 0 for nil.
func Deref32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func age(o meta.Object) string { return SinceOrUnknown(o.GetObjectMeta().CreationTimestamp.Time) }

// SinceOrUnknown is the age of t, kubectl-style, or <unknown>.
func SinceOrUnknown(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return shortDuration(time.Since(t))
}

// shortDuration prints kubectl's compact ages: 45s, 3m12s, 5h, 12d.
func shortDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d.Seconds())
	switch {
	case s < 120:
		return fmt.Sprintf("%ds", s)
	case s < 600:
		return fmt.Sprintf("%dm%ds", s/60, s%60)
	case s < 3*3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 8*3600:
		return fmt.Sprintf("%dh%dm", s/3600, (s%3600)/60)
	case s < 48*3600:
		return fmt.Sprintf("%dh", s/3600)
	}
	return fmt.Sprintf("%dd", s/86400)
}
