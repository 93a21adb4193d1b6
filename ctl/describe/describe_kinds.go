package describe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/jsonpath"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/printers"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
)

// kubectl describe's sections for the kinds people describe most: pods,
// nodes, workloads. Other kinds print their spec and status as an
// indented tree, as kubectl prints kinds it has no describer for.

const describeTime = "Mon, 02 Jan 2006 15:04:05 -0700"

// describePod prints kubectl's pod sections after the common header.
func describePod(tw io.Writer, p *core.Pod) {
	fmt.Fprintf(tw, "Name:\t%s\n", p.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", p.Namespace)
	fmt.Fprintf(tw, "Priority:\t%d\n", printers.Deref32(p.Spec.Priority))
	if p.Spec.PriorityClassName != "" {
		fmt.Fprintf(tw, "Priority Class Name:\t%s\n", p.Spec.PriorityClassName)
	}
	if p.Spec.ServiceAccountName != "" {
		fmt.Fprintf(tw, "Service Account:\t%s\n", p.Spec.ServiceAccountName)
	}
	if p.Spec.NodeName == "" {
		fmt.Fprintln(tw, "Node:\t<none>")
	} else {
		fmt.Fprintf(tw, "Node:\t%s/%s\n", p.Spec.NodeName, p.Status.HostIP)
	}
	if p.Status.StartTime != nil {
		fmt.Fprintf(tw, "Start Time:\t%s\n", p.Status.StartTime.Format(describeTime))
	}
	describeLabelsAndAnnotations(tw, &p.ObjectMeta)
	if p.DeletionTimestamp != nil && p.Status.Phase != core.PodSucceeded && p.Status.Phase != core.PodFailed {
		fmt.Fprintf(tw, "Status:\tTerminating (lasts %s)\n", printers.SinceOrUnknown(p.DeletionTimestamp.Time))
		if g := p.DeletionGracePeriodSeconds; g != nil {
			fmt.Fprintf(tw, "Termination Grace Period:\t%ds\n", *g)
		}
	} else {
		fmt.Fprintf(tw, "Status:\t%s\n", p.Status.Phase) // the phase, as kubectl; get shows the reason
	}
	if p.Status.Reason != "" {
		fmt.Fprintf(tw, "Reason:\t%s\n", p.Status.Reason)
	}
	if p.Status.Message != "" {
		fmt.Fprintf(tw, "Message:\t%s\n", p.Status.Message)
	}
	if sc := p.Spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		fmt.Fprintf(tw, "SeccompProfile:\t%s\n", sc.SeccompProfile.Type)
	}
	fmt.Fprintf(tw, "IP:\t%s\n", p.Status.PodIP)
	if len(p.Status.PodIPs) == 0 {
		fmt.Fprintln(tw, "IPs:\t<none>")
	} else {
		fmt.Fprintln(tw, "IPs:")
		for _, ip := range p.Status.PodIPs {
			fmt.Fprintf(tw, "  IP:\t%s\n", ip.IP)
		}
	}
	if r := meta.ControllerOf(p); r != nil {
		fmt.Fprintf(tw, "Controlled By:\t%s/%s\n", r.Kind, r.Name)
	}
	if p.Status.NominatedNodeName != "" {
		fmt.Fprintf(tw, "NominatedNodeName:\t%s\n", p.Status.NominatedNodeName)
	}
	statuses := map[string]*core.ContainerStatus{}
	for _, s := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses) {
		statuses[s.Name] = &s
	}
	status := func(name string) *core.ContainerStatus {
		if s := statuses[name]; s != nil {
			return s
		}
		return &core.ContainerStatus{} // not reported yet: the pod's sections all the same
	}
	if len(p.Spec.InitContainers) > 0 {
		fmt.Fprintln(tw, "Init Containers:")
		for _, c := range p.Spec.InitContainers {
			describeContainer(tw, c, status(c.Name))
		}
	}
	fmt.Fprintln(tw, "Containers:")
	for _, c := range p.Spec.Containers {
		describeContainer(tw, c, status(c.Name))
	}
	if len(p.Spec.EphemeralContainers) > 0 {
		fmt.Fprintln(tw, "Ephemeral Containers:")
		for _, c := range p.Spec.EphemeralContainers {
			describeContainer(tw, c.Container, status(c.Name))
			if c.TargetContainerName != "" {
				fmt.Fprintf(tw, "    Target Container Name:\t%s\n", c.TargetContainerName)
			}
		}
	}
	if len(p.Status.Conditions) > 0 {
		fmt.Fprintln(tw, "Conditions:")
		fmt.Fprintln(tw, "  Type\tStatus")
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(tw, "  %s \t%s \n", c.Type, c.Status)
		}
	}
	if len(p.Spec.Volumes) == 0 {
		fmt.Fprintln(tw, "Volumes:\t<none>")
	} else {
		fmt.Fprintln(tw, "Volumes:")
		describeVolumes(tw, p.Spec.Volumes, "  ")
	}
	fmt.Fprintf(tw, "QoS Class:\t%s\n", p.Status.QOSClass)
	fmt.Fprintf(tw, "Node-Selectors:\t%s\n", mapLines(p.Spec.NodeSelector))
	fmt.Fprintf(tw, "Tolerations:\t%s\n", printers.None(strings.Join(tolerationLines(p.Spec.Tolerations), "\n\t")))
}

// describeVolumes prints each volume's name and source, indented.
func describeVolumes(tw io.Writer, vols []core.Volume, indent string) {
	for _, v := range vols {
		fmt.Fprintf(tw, "%s%s:\n", indent, v.Name)
		b, _ := json.Marshal(v)
		var src map[string]any
		_ = json.Unmarshal(b, &src)
		delete(src, "name")
		printTree(tw, src, indent+"  ")
	}
}

// tolerationLines are kubectl's one-line tolerations: key=value:Effect op=Exists for 300s.
func tolerationLines(tolerations []core.Toleration) []string {
	var tols []string
	for _, t := range tolerations {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		if t.Effect != "" {
			s += ":" + string(t.Effect)
		}
		if t.Operator == "Exists" && t.Value == "" {
			s += " op=Exists"
		}
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
		}
		tols = append(tols, s)
	}
	return tols
}

// describeContainer prints a container as kubectl does; st is nil for a
// pod template's (no ids, state or restarts then), whose name kubectl
// indents one space more.
func describeContainer(tw io.Writer, c core.Container, st *core.ContainerStatus) {
	if st == nil {
		fmt.Fprintf(tw, "   %s:\n", c.Name)
	} else {
		fmt.Fprintf(tw, "  %s:\n", c.Name)
	}
	if st != nil && st.ContainerID != "" {
		fmt.Fprintf(tw, "    Container ID:\t%s\n", st.ContainerID)
	}
	fmt.Fprintf(tw, "    Image:\t%s\n", c.Image)
	if st != nil {
		fmt.Fprintf(tw, "    Image ID:\t%s\n", st.ImageID)
	}
	var ports, hostPorts []string
	for _, p := range c.Ports {
		proto := orTCP(string(p.Protocol))
		ports = append(ports, fmt.Sprintf("%d/%s", p.ContainerPort, proto))
		hostPorts = append(hostPorts, fmt.Sprintf("%d/%s", p.HostPort, proto))
	}
	fmt.Fprintf(tw, "    Port%s:\t%s\n", plural(len(ports)), printers.None(strings.Join(ports, ", ")))
	fmt.Fprintf(tw, "    Host Port%s:\t%s\n", plural(len(ports)), printers.None(strings.Join(hostPorts, ", ")))
	if len(c.Command) > 0 {
		fmt.Fprintf(tw, "    Command:\n")
		for _, a := range c.Command {
			fmt.Fprintf(tw, "      %s\n", a)
		}
	}
	if len(c.Args) > 0 {
		fmt.Fprintf(tw, "    Args:\n")
		for _, a := range c.Args {
			fmt.Fprintf(tw, "      %s\n", a)
		}
	}
	if st != nil {
		describeState(tw, "State", st.State)
		if !st.LastState.IsZero() {
			describeState(tw, "Last State", st.LastState)
		}
		fmt.Fprintf(tw, "    Ready:\t%s\n", boolTitle(st.Ready))
		fmt.Fprintf(tw, "    Restart Count:\t%d\n", st.RestartCount)
	}
	for _, r := range []struct {
		name string
		list resource.List
	}{{"Limits", c.Resources.Limits}, {"Requests", c.Resources.Requests}} {
		if len(r.list) == 0 {
			continue
		}
		fmt.Fprintf(tw, "    %s:\n", r.name)
		for _, n := range r.list.Names() {
			q := r.list[n]
			fmt.Fprintf(tw, "      %s:\t%s\n", n, q.String())
		}
	}
	for _, pr := range []struct {
		name  string
		probe *core.Probe
	}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
		if pr.probe != nil {
			fmt.Fprintf(tw, "    %s:\t%s\n", pr.name, probeLine(pr.probe))
		}
	}
	fmt.Fprintln(tw, "    Environment:\t"+printers.None(envLines(c)))
	if len(c.VolumeMounts) == 0 {
		fmt.Fprintln(tw, "    Mounts:\t<none>")
	} else {
		fmt.Fprintln(tw, "    Mounts:")
	}
	for _, m := range c.VolumeMounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		sub := ""
		if m.SubPath != "" {
			sub = ", path = \"" + m.SubPath + "\""
		}
		fmt.Fprintf(tw, "      %s from %s (%s%s)\n", m.MountPath, m.Name, mode, sub)
	}
}

func describeState(tw io.Writer, label string, s core.ContainerState) {
	switch {
	case s.Running != nil:
		fmt.Fprintf(tw, "    %s:\tRunning\n", label)
		fmt.Fprintf(tw, "      Started:\t%s\n", s.Running.StartedAt.Format(describeTime))
	case s.Terminated != nil:
		t := s.Terminated
		fmt.Fprintf(tw, "    %s:\tTerminated\n", label)
		fmt.Fprintf(tw, "      Reason:\t%s\n", t.Reason)
		if t.Message != "" {
			fmt.Fprintf(tw, "      Message:\t%s\n", t.Message)
		}
		fmt.Fprintf(tw, "      Exit Code:\t%d\n", t.ExitCode)
		if t.Signal != 0 {
			fmt.Fprintf(tw, "      Signal:\t%d\n", t.Signal)
		}
		fmt.Fprintf(tw, "      Started:\t%s\n", t.StartedAt.Format(describeTime))
		fmt.Fprintf(tw, "      Finished:\t%s\n", t.FinishedAt.Format(describeTime))
	case s.Waiting != nil:
		fmt.Fprintf(tw, "    %s:\tWaiting\n", label)
		if s.Waiting.Reason != "" {
			fmt.Fprintf(tw, "      Reason:\t%s\n", s.Waiting.Reason)
		}
		if s.Waiting.Message != "" {
			fmt.Fprintf(tw, "      Message:\t%s\n", s.Waiting.Message)
		}
	default:
		fmt.Fprintf(tw, "    %s:\tWaiting\n", label)
	}
}

// probeLine is kubectl's one-line probe: http-get http://:8080/ delay=0s ...
func probeLine(p *core.Probe) string {
	var what string
	switch {
	case p.HTTPGet != nil:
		scheme := strings.ToLower(p.HTTPGet.Scheme)
		if scheme == "" {
			scheme = "http"
		}
		what = fmt.Sprintf("http-get %s://%s:%s%s", scheme, p.HTTPGet.Host, p.HTTPGet.Port.String(), p.HTTPGet.Path)
	case p.TCPSocket != nil:
		what = "tcp-socket :" + p.TCPSocket.Port.String()
	case p.Exec != nil:
		what = fmt.Sprintf("exec %v", p.Exec.Command)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		what = fmt.Sprintf("grpc <pod>:%d %s", p.GRPC.Port, service)
	}
	or := func(v, d int32) int32 {
		if v == 0 {
			return d
		}
		return v
	}
	return fmt.Sprintf("%s delay=%ds timeout=%ds period=%ds #success=%d #failure=%d", what, p.InitialDelaySeconds,
		or(p.TimeoutSeconds, 1), or(p.PeriodSeconds, 10), or(p.SuccessThreshold, 1), or(p.FailureThreshold, 3))
}

func envLines(c core.Container) string {
	var lines []string
	for _, e := range c.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil {
			switch {
			case f.FieldRef != nil:
				v = fmt.Sprintf(" (%s:%s)", f.FieldRef.APIVersion, f.FieldRef.FieldPath)
			case f.ResourceFieldRef != nil:
				v = fmt.Sprintf("%s (%s)", f.ResourceFieldRef.Resource, f.ResourceFieldRef.ContainerName)
			case f.ConfigMapKeyRef != nil:
				v = fmt.Sprintf("<set to the key '%s' of config map '%s'>", f.ConfigMapKeyRef.Key, f.ConfigMapKeyRef.Name)
			case f.SecretKeyRef != nil:
				v = fmt.Sprintf("<set to the key '%s' in secret '%s'>", f.SecretKeyRef.Key, f.SecretKeyRef.Name)
			}
		}
		lines = append(lines, e.Name+":\t"+v)
	}
	for _, f := range c.EnvFrom {
		switch {
		case f.ConfigMapRef != nil:
			lines = append(lines, fmt.Sprintf("%s ConfigMap\tOptional: %v", f.ConfigMapRef.Name, f.ConfigMapRef.Optional != nil && *f.ConfigMapRef.Optional))
		case f.SecretRef != nil:
			lines = append(lines, fmt.Sprintf("%s Secret\tOptional: %v", f.SecretRef.Name, f.SecretRef.Optional != nil && *f.SecretRef.Optional))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "\n      " + strings.Join(lines, "\n      ")
}

// describeNode prints kubectl's node sections, with the pods on the node
// and what they ask for against what it offers.
func describeNode(ctx context.Context, tw io.Writer, c *client.Client, n *core.Node) error {
	fmt.Fprintf(tw, "Roles:\t%s\n", printers.NodeRoles(n))
	var taints []string
	for _, t := range n.Spec.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		taints = append(taints, s+":"+string(t.Effect))
	}
	fmt.Fprintf(tw, "Taints:\t%s\n", printers.None(strings.Join(taints, "\n\t")))
	fmt.Fprintf(tw, "Unschedulable:\t%v\n", n.Spec.Unschedulable)
	fmt.Fprintln(tw, "Conditions:")
	fmt.Fprintln(tw, "  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage")
	fmt.Fprintln(tw, "  ----\t------\t-----------------\t------------------\t------\t-------")
	for _, cd := range n.Status.Conditions {
		fmt.Fprintf(tw, "  %s \t%s \t%s \t%s \t%s \t%s\n", cd.Type, cd.Status, cd.LastHeartbeatTime.Format(describeTime),
			cd.LastTransitionTime.Format(describeTime), cd.Reason, cd.Message)
	}
	fmt.Fprintln(tw, "Addresses:")
	for _, a := range n.Status.Addresses {
		fmt.Fprintf(tw, "  %s:\t%s\n", a.Type, a.Address)
	}
	for _, l := range []struct {
		name string
		list resource.List
	}{{"Capacity", n.Status.Capacity}, {"Allocatable", n.Status.Allocatable}} {
		fmt.Fprintf(tw, "%s:\n", l.name)
		for _, name := range l.list.Names() {
			q := l.list[name]
			fmt.Fprintf(tw, "  %s:\t%s\n", name, q.String())
		}
	}
	ni := n.Status.NodeInfo
	fmt.Fprintln(tw, "System Info:")
	for _, kv := range [][2]string{{"Kernel Version", ni.KernelVersion}, {"OS Image", ni.OSImage}, {"Operating System", ni.OperatingSystem},
		{"Architecture", ni.Architecture}, {"Container Runtime Version", ni.ContainerRuntimeVersion}, {"Kubelet Version", ni.KubeletVersion}} {
		fmt.Fprintf(tw, "  %s:\t%s\n", kv[0], kv[1])
	}
	fmt.Fprintf(tw, "PodCIDR:\t%s\n", n.Spec.PodCIDR)
	fmt.Fprintf(tw, "PodCIDRs:\t%s\n", strings.Join(n.Spec.PodCIDRs, ","))
	pods, _, err := client.For[*core.Pod](c).List(ctx, "", client.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
	if err != nil {
		return err
	}
	var running []*core.Pod
	for _, p := range pods {
		if p.Status.Phase != core.PodSucceeded && p.Status.Phase != core.PodFailed {
			running = append(running, p)
		}
	}
	sort.Slice(running, func(i, j int) bool {
		if running[i].Namespace != running[j].Namespace {
			return running[i].Namespace < running[j].Namespace
		}
		return running[i].Name < running[j].Name
	})
	alloc := n.Status.Allocatable
	pct := func(q resource.Quantity, name resource.Name) string {
		total := alloc[name]
		if total.IsZero() {
			return "0%"
		}
		if name == resource.CPU {
			return fmt.Sprintf("%d%%", q.MilliValue()*100/total.MilliValue())
		}
		return fmt.Sprintf("%d%%", q.Value()*100/total.Value())
	}
	fmt.Fprintf(tw, "Non-terminated Pods:\t(%d in total)\n", len(running))
	fmt.Fprintln(tw, "  Namespace\tName\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge")
	fmt.Fprintln(tw, "  ---------\t----\t------------\t----------\t---------------\t-------------\t---")
	var reqs, lims resource.List = resource.List{}, resource.List{}
	for _, p := range running {
		r, l := core.PodRequestsAndLimits(&p.Spec)
		addTo(reqs, r)
		addTo(lims, l)
		fmt.Fprintf(tw, "  %s\t%s\t%s (%s)\t%s (%s)\t%s (%s)\t%s (%s)\t%s\n", p.Namespace, p.Name,
			qty(r, resource.CPU), pct(r[resource.CPU], resource.CPU), qty(l, resource.CPU), pct(l[resource.CPU], resource.CPU),
			qty(r, resource.Memory), pct(r[resource.Memory], resource.Memory), qty(l, resource.Memory), pct(l[resource.Memory], resource.Memory),
			printers.SinceOrUnknown(p.CreationTimestamp.Time))
	}
	fmt.Fprintln(tw, "Allocated resources:")
	fmt.Fprintln(tw, "  (Total limits may be over 100 percent, i.e., overcommitted.)")
	fmt.Fprintln(tw, "  Resource\tRequests\tLimits")
	fmt.Fprintln(tw, "  --------\t--------\t------")
	for _, name := range []resource.Name{resource.CPU, resource.Memory} {
		fmt.Fprintf(tw, "  %s\t%s (%s)\t%s (%s)\n", name, qty(reqs, name), pct(reqs[name], name), qty(lims, name), pct(lims[name], name))
	}
	return nil
}

func addTo(dst, src resource.List) {
	for n, q := range src {
		if cur, ok := dst[n]; ok {
			dst[n] = cur.Add(q)
		} else {
			dst[n] = q.Copy()
		}
	}
}

func qty(l resource.List, n resource.Name) string {
	if q, ok := l[n]; ok {
		return q.String()
	}
	return "0"
}

// describeWorkload prints the sections kubectl shows for Deployments,
// ReplicaSets, ReplicationControllers, StatefulSets and DaemonSets: selector, replicas, strategy,
// the pod template.
func describeWorkload(tw io.Writer, obj meta.Object) bool {
	var sel *meta.LabelSelector
	var tmpl core.PodTemplateSpec
	switch w := obj.(type) {
	case *apps.Deployment:
		sel, tmpl = w.Spec.Selector, w.Spec.Template
		s := w.Status
		fmt.Fprintf(tw, "Selector:\t%s\n", selectorString(sel))
		fmt.Fprintf(tw, "Replicas:\t%d desired | %d updated | %d total | %d available | %d unavailable\n",
			printers.Deref32(w.Spec.Replicas), s.UpdatedReplicas, s.Replicas, s.AvailableReplicas, s.UnavailableReplicas)
		fmt.Fprintf(tw, "StrategyType:\t%s\n", w.Spec.Strategy.Type)
		fmt.Fprintf(tw, "MinReadySeconds:\t%d\n", w.Spec.MinReadySeconds)
		if ru := w.Spec.Strategy.RollingUpdate; ru != nil {
			fmt.Fprintf(tw, "RollingUpdateStrategy:\t%s max unavailable, %s max surge\n", intOrStringText(ru.MaxUnavailable), intOrStringText(ru.MaxSurge))
		}
	case *apps.ReplicaSet:
		sel, tmpl = w.Spec.Selector, w.Spec.Template
		fmt.Fprintf(tw, "Selector:\t%s\n", selectorString(sel))
		fmt.Fprintf(tw, "Replicas:\t%d current / %d desired\n", w.Status.Replicas, printers.Deref32(w.Spec.Replicas))
		fmt.Fprintf(tw, "Pods Status:\t%d Ready / %d Available\n", w.Status.ReadyReplicas, w.Status.AvailableReplicas)
	case *core.ReplicationController:
		sel = &meta.LabelSelector{MatchLabels: w.Spec.Selector}
		if w.Spec.Template != nil {
			tmpl = *w.Spec.Template
		}
		fmt.Fprintf(tw, "Selector:\t%s\n", selectorString(sel))
		fmt.Fprintf(tw, "Replicas:\t%d current / %d desired\n", w.Status.Replicas, printers.Deref32(w.Spec.Replicas))
		fmt.Fprintf(tw, "Pods Status:\t%d Ready / %d Available\n", w.Status.ReadyReplicas, w.Status.AvailableReplicas)
	case *apps.StatefulSet:
		sel, tmpl = w.Spec.Selector, w.Spec.Template
		fmt.Fprintf(tw, "Selector:\t%s\n", selectorString(sel))
		fmt.Fprintf(tw, "Replicas:\t%d desired | %d total\n", printers.Deref32(w.Spec.Replicas), w.Status.Replicas)
		fmt.Fprintf(tw, "Update Strategy:\t%s\n", w.Spec.UpdateStrategy.Type)
		fmt.Fprintf(tw, "Pods Status:\t%d Ready / %d Current / %d Updated\n", w.Status.ReadyReplicas, w.Status.CurrentReplicas, w.Status.UpdatedReplicas)
	case *apps.DaemonSet:
		sel, tmpl = w.Spec.Selector, w.Spec.Template
		s := w.Status
		fmt.Fprintf(tw, "Selector:\t%s\n", selectorString(sel))
		fmt.Fprintf(tw, "Node-Selector:\t%s\n", printers.LabelString(tmpl.Spec.NodeSelector))
		fmt.Fprintf(tw, "Desired Number of Nodes Scheduled:\t%d\n", s.DesiredNumberScheduled)
		fmt.Fprintf(tw, "Current Number of Nodes Scheduled:\t%d\n", s.CurrentNumberScheduled)
		fmt.Fprintf(tw, "Number of Nodes Scheduled with Up-to-date Pods:\t%d\n", s.UpdatedNumberScheduled)
		fmt.Fprintf(tw, "Number of Nodes Scheduled with Available Pods:\t%d\n", s.NumberAvailable)
		fmt.Fprintf(tw, "Number of Nodes Misscheduled:\t%d\n", s.NumberMisscheduled)
		fmt.Fprintf(tw, "Pods Status:\t%d Running\n", s.NumberReady)
	default:
		return false
	}
	PodTemplate(tw, &tmpl)
	// Deployments' and ReplicaSets' conditions, as kubectl prints them
	// (ReplicaFailure says why pods are missing: a quota, say).
	var conds []apps.Condition
	switch w := obj.(type) {
	case *apps.Deployment:
		conds = w.Status.Conditions
	case *apps.ReplicaSet:
		conds = w.Status.Conditions
	case *core.ReplicationController:
		for _, c := range w.Status.Conditions {
			conds = append(conds, apps.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason})
		}
	}
	if len(conds) > 0 {
		fmt.Fprintln(tw, "Conditions:\n  Type\tStatus\tReason\n  ----\t------\t------")
		for _, c := range conds {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Type, c.Status, c.Reason)
		}
	}
	return true
}

// PodTemplate is kubectl's "Pod Template:" section (describe of
// workloads, rollout history --revision).
func PodTemplate(tw io.Writer, t *core.PodTemplateSpec) {
	fmt.Fprintln(tw, "Pod Template:")
	fmt.Fprintf(tw, "  Labels:\t%s\n", strings.ReplaceAll(mapLines(t.Labels), "\n\t", "\n\t  "))
	if len(t.Annotations) > 0 {
		fmt.Fprintf(tw, "  Annotations:\t%s\n", strings.ReplaceAll(annotationLines(t.Annotations), "\n\t", "\n\t  "))
	}
	if t.Spec.ServiceAccountName != "" {
		fmt.Fprintf(tw, "  Service Account:\t%s\n", t.Spec.ServiceAccountName)
	}
	if len(t.Spec.InitContainers) > 0 {
		fmt.Fprintln(tw, "  Init Containers:")
		for _, c := range t.Spec.InitContainers {
			describeContainer(tw, c, nil)
		}
	}
	fmt.Fprintln(tw, "  Containers:")
	for _, c := range t.Spec.Containers {
		describeContainer(tw, c, nil)
	}
	if len(t.Spec.Volumes) == 0 {
		fmt.Fprintln(tw, "  Volumes:\t<none>")
	} else {
		fmt.Fprintln(tw, "  Volumes:")
		describeVolumes(tw, t.Spec.Volumes, "   ")
	}
	if t.Spec.PriorityClassName != "" {
		fmt.Fprintf(tw, "  Priority Class Name:\t%s\n", t.Spec.PriorityClassName)
	}
	fmt.Fprintf(tw, "  Node-Selectors:\t%s\n", strings.ReplaceAll(mapLines(t.Spec.NodeSelector), "\n\t", "\n\t  "))
	fmt.Fprintf(tw, "  Tolerations:\t%s\n", printers.None(strings.Join(tolerationLines(t.Spec.Tolerations), "\n\t  ")))
}

// printTree prints a value as kubectl prints kinds it has no describer
// for: keys capitalised, nested values indented.
func printTree(w io.Writer, v any, indent string) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			label := strings.ToUpper(k[:1]) + k[1:]
			switch c := x[k].(type) {
			case map[string]any, []any:
				fmt.Fprintf(w, "%s%s:\n", indent, label)
				printTree(w, c, indent+"  ")
			default:
				fmt.Fprintf(w, "%s%s:\t%s\n", indent, label, jsonpath.Text(c))
			}
		}
	case []any:
		for _, item := range x {
			switch c := item.(type) {
			case map[string]any, []any:
				printTree(w, c, indent)
			default:
				fmt.Fprintf(w, "%s%s\n", indent, jsonpath.Text(c))
			}
		}
	}
}

func plural(n int) string {
	if n > 1 {
		return "s"
	}
	return ""
}

func boolTitle(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func orTCP(p string) string {
	if p == "" {
		return "TCP"
	}
	return p
}

func intOrStringText(v *meta.IntOrString) string {
	if v == nil {
		return "<unset>"
	}
	return v.String()
}

func selectorString(ls *meta.LabelSelector) string {
	if ls == nil {
		return "<none>"
	}
	parsed, err := selector.FromLabelSelector(ls)
	if err != nil {
		return "<invalid>"
	}
	return printers.None(parsed.String()) // kubectl's form: a=b,c in (d,e),f,!g
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
