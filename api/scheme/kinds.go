package scheme

import (
	"github.com/kobune/kobune/api/apiregistration"
	"strconv"
	"strings"

	"github.com/kobune/kobune/api/admissionregistration"
	"github.com/kobune/kobune/api/apiextensions"
	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/dra"
	"github.com/kobune/kobune/api/flowcontrol"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/api/node"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/scheduling"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/api/storagemigration"
	v "github.com/kobune/kobune/api/validation"
)

// buildKinds is the whole API: one entry per kind, in the order
// `kobectl api-resources` documents them.
func buildKinds() []*Kind {
	ks := []*Kind{
		kind("Namespace", "v1", "namespaces", []string{"ns"}, clusterScoped, withStatus, core.SetDefaultsNamespace, core.ValidateNamespace, nil,
			func(n *core.Namespace) map[string]string { return map[string]string{"status.phase": n.Status.Phase} }),
		kind("Node", "v1", "nodes", []string{"no"}, clusterScoped, withStatus, nil, core.ValidateNode, core.ValidateNodeUpdate,
			func(n *core.Node) map[string]string {
				return map[string]string{"spec.unschedulable": boolString(n.Spec.Unschedulable)}
			}),
		kind("Pod", "v1", "pods", []string{"po"}, namespaced, withStatus, core.SetDefaultsPod, core.ValidatePod, core.ValidatePodUpdate, podFields),
		kind("Service", "v1", "services", []string{"svc"}, namespaced, withStatus, core.SetDefaultsService, core.ValidateService, core.ValidateServiceUpdate, nil),
		kind("Endpoints", "v1", "endpoints", []string{"ep"}, namespaced, noStatus, nil, core.ValidateEndpoints, nil, nil),
		kind("ConfigMap", "v1", "configmaps", []string{"cm"}, namespaced, noStatus, nil, core.ValidateConfigMap,
			func(n, o *core.ConfigMap) v.ErrorList {
				return core.ValidateImmutableData([2]any{n.Data, n.BinaryData}, [2]any{o.Data, o.BinaryData}, n.Immutable, o.Immutable)
			}, nil),
		kind("Secret", "v1", "secrets", nil, namespaced, noStatus, core.SetDefaultsSecret, core.ValidateSecret,
			func(n, o *core.Secret) v.ErrorList {
				return core.ValidateImmutableData(n.Data, o.Data, n.Immutable, o.Immutable)
			},
			func(s *core.Secret) map[string]string { return map[string]string{"type": s.Type} }),
		kind("PersistentVolume", "v1", "persistentvolumes", []string{"pv"}, clusterScoped, withStatus, core.SetDefaultsPersistentVolume, core.ValidatePersistentVolume,
			core.ValidatePersistentVolumeUpdate, func(pv *core.PersistentVolume) map[string]string {
				return map[string]string{"status.phase": pv.Status.Phase, "spec.storageClassName": pv.Spec.StorageClassName}
			}),
		kind("PersistentVolumeClaim", "v1", "persistentvolumeclaims", []string{"pvc"}, namespaced, withStatus, core.SetDefaultsPersistentVolumeClaim,
			core.ValidatePersistentVolumeClaim, core.ValidatePersistentVolumeClaimUpdate, func(c *core.PersistentVolumeClaim) map[string]string {
				return map[string]string{"status.phase": c.Status.Phase, "spec.volumeName": c.Spec.VolumeName}
			}),
		kind("PodTemplate", "v1", "podtemplates", nil, namespaced, noStatus, core.SetDefaultsPodTemplate, core.ValidatePodTemplate, nil, nil),
		kind("ReplicationController", "v1", "replicationcontrollers", []string{"rc"}, namespaced, withStatus, core.SetDefaultsReplicationController,
			apps.ValidateReplicationController, nil, func(rc *core.ReplicationController) map[string]string {
				return map[string]string{"status.replicas": strconv.Itoa(int(rc.Status.Replicas))} // as kube-apiserver's
			}),
		kind("ServiceAccount", "v1", "serviceaccounts", []string{"sa"}, namespaced, noStatus, nil, core.ValidateServiceAccount, nil, nil),
		kind("LimitRange", "v1", "limitranges", []string{"limits"}, namespaced, noStatus, core.SetDefaultsLimitRange, core.ValidateLimitRange, nil, nil),
		kind("ResourceQuota", "v1", "resourcequotas", []string{"quota"}, namespaced, withStatus, nil,
			func(q *core.ResourceQuota) v.ErrorList { return core.ValidateResourceQuota(q, countableFn) }, nil, nil),
		servedAlso(kind("Event", "v1", "events", []string{"ev"}, namespaced, noStatus, nil, core.ValidateEvent, nil, eventFields),
			Version{APIVersion: core.EventsV1, ToStored: core.EventsV1ToEvent, FromStored: core.EventToEventsV1}),
		kind("ReplicaSet", "apps/v1", "replicasets", []string{"rs"}, namespaced, withStatus, apps.SetDefaultsReplicaSet, apps.ValidateReplicaSet,
			func(n, o *apps.ReplicaSet) v.ErrorList {
				return apps.ValidateSelectorImmutable(n.Spec.Selector, o.Spec.Selector)
			}, nil),
		kind("Deployment", "apps/v1", "deployments", []string{"deploy"}, namespaced, withStatus, apps.SetDefaultsDeployment, apps.ValidateDeployment,
			func(n, o *apps.Deployment) v.ErrorList {
				return apps.ValidateSelectorImmutable(n.Spec.Selector, o.Spec.Selector)
			}, nil),
		kind("DaemonSet", "apps/v1", "daemonsets", []string{"ds"}, namespaced, withStatus, apps.SetDefaultsDaemonSet, apps.ValidateDaemonSet,
			func(n, o *apps.DaemonSet) v.ErrorList {
				return apps.ValidateSelectorImmutable(n.Spec.Selector, o.Spec.Selector)
			}, nil),
		kind("StatefulSet", "apps/v1", "statefulsets", []string{"sts"}, namespaced, withStatus, apps.SetDefaultsStatefulSet, apps.ValidateStatefulSet,
			func(n, o *apps.StatefulSet) v.ErrorList {
				return apps.ValidateSelectorImmutable(n.Spec.Selector, o.Spec.Selector)
			}, nil),
		kind("ControllerRevision", "apps/v1", "controllerrevisions", nil, namespaced, noStatus, nil, apps.ValidateControllerRevision,
			apps.ValidateControllerRevisionUpdate, nil),
		kind("Job", "batch/v1", "jobs", nil, namespaced, withStatus, batch.SetDefaultsJob, batch.ValidateJob,
			func(n, o *batch.Job) v.ErrorList {
				return apps.ValidateSelectorImmutable(n.Spec.Selector, o.Spec.Selector)
			}, nil),
		servedAlso(kind("HorizontalPodAutoscaler", "autoscaling/v2", "horizontalpodautoscalers", []string{"hpa"}, namespaced, withStatus, autoscaling.SetDefaultsHorizontalPodAutoscaler,
			autoscaling.ValidateHorizontalPodAutoscaler, nil, nil),
			Version{APIVersion: autoscaling.V1, ToStored: autoscaling.V1ToV2, FromStored: autoscaling.V2ToV1}),
		kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", []string{"pdb"}, namespaced, withStatus, nil, policy.ValidatePodDisruptionBudget, nil, nil),
		kind("CronJob", "batch/v1", "cronjobs", []string{"cj"}, namespaced, withStatus, batch.SetDefaultsCronJob, batch.ValidateCronJob, nil, nil),
		kind("EndpointSlice", "discovery.k8s.io/v1", "endpointslices", nil, namespaced, noStatus, nil, discovery.ValidateEndpointSlice, nil,
			func(e *discovery.EndpointSlice) map[string]string {
				return map[string]string{"addressType": e.AddressType}
			}),
		kind("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", []string{"netpol"}, namespaced, noStatus, networking.SetDefaultsNetworkPolicy,
			networking.ValidateNetworkPolicy, nil, nil),
		kind("Ingress", "networking.k8s.io/v1", "ingresses", []string{"ing"}, namespaced, withStatus, nil, networking.ValidateIngress, nil, nil),
		kind("IngressClass", "networking.k8s.io/v1", "ingressclasses", nil, clusterScoped, noStatus, nil, networking.ValidateIngressClass,
			networking.ValidateIngressClassUpdate, nil),
		kind("ServiceCIDR", "networking.k8s.io/v1", "servicecidrs", nil, clusterScoped, withStatus, nil, networking.ValidateServiceCIDR,
			networking.ValidateServiceCIDRUpdate, nil),
		kind("IPAddress", "networking.k8s.io/v1", "ipaddresses", []string{"ip"}, clusterScoped, noStatus, nil, networking.ValidateIPAddress,
			networking.ValidateIPAddressUpdate, nil),
		kind("StorageClass", "storage.k8s.io/v1", "storageclasses", []string{"sc"}, clusterScoped, noStatus, storage.SetDefaultsStorageClass, storage.ValidateStorageClass,
			storage.ValidateStorageClassUpdate, func(sc *storage.StorageClass) map[string]string {
				return map[string]string{"provisioner": sc.Provisioner}
			}),
		kind("CSINode", "storage.k8s.io/v1", "csinodes", nil, clusterScoped, noStatus, nil, storage.ValidateCSINode, nil, nil),
		kind("CSIDriver", "storage.k8s.io/v1", "csidrivers", nil, clusterScoped, noStatus, storage.SetDefaultsCSIDriver, storage.ValidateCSIDriver,
			storage.ValidateCSIDriverUpdate, nil),
		kind("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities", nil, namespaced, noStatus, nil, storage.ValidateCSIStorageCapacity,
			storage.ValidateCSIStorageCapacityUpdate, nil),
		kind("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments", nil, clusterScoped, withStatus, nil, storage.ValidateVolumeAttachment,
			storage.ValidateVolumeAttachmentUpdate, nil),
		kind("VolumeAttributesClass", "storage.k8s.io/v1", "volumeattributesclasses", []string{"vac"}, clusterScoped, noStatus, nil,
			storage.ValidateVolumeAttributesClass, storage.ValidateVolumeAttributesClassUpdate, nil),
		kind("Lease", "coordination.k8s.io/v1", "leases", nil, namespaced, noStatus, nil, coordination.ValidateLease, nil, nil),
		kind("Role", "rbac.authorization.k8s.io/v1", "roles", nil, namespaced, noStatus, nil, rbac.ValidateRole, nil, nil),
		kind("ClusterRole", "rbac.authorization.k8s.io/v1", "clusterroles", nil, clusterScoped, noStatus, nil, rbac.ValidateClusterRole, nil, nil),
		kind("RoleBinding", "rbac.authorization.k8s.io/v1", "rolebindings", nil, namespaced, noStatus, rbac.SetDefaultsRoleBinding, rbac.ValidateRoleBinding,
			func(n, o *rbac.RoleBinding) v.ErrorList { return rbac.ValidateRoleRefUpdate(n.RoleRef, o.RoleRef) }, nil),
		kind("ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "clusterrolebindings", nil, clusterScoped, noStatus, rbac.SetDefaultsClusterRoleBinding,
			rbac.ValidateClusterRoleBinding, func(n, o *rbac.ClusterRoleBinding) v.ErrorList {
				return rbac.ValidateRoleRefUpdate(n.RoleRef, o.RoleRef)
			}, nil),
		kind("CertificateSigningRequest", "certificates.k8s.io/v1", "certificatesigningrequests", []string{"csr"}, clusterScoped, withStatus, nil,
			certificates.ValidateCertificateSigningRequest, certificates.ValidateCertificateSigningRequestUpdate,
			func(r *certificates.CertificateSigningRequest) map[string]string {
				return map[string]string{"spec.signerName": r.Spec.SignerName}
			}),
		kind("ClusterTrustBundle", "certificates.k8s.io/v1", "clustertrustbundles", nil, clusterScoped, noStatus, nil,
			certificates.ValidateClusterTrustBundle, certificates.ValidateClusterTrustBundleUpdate, nil),
		kind("PodCertificateRequest", "certificates.k8s.io/v1", "podcertificaterequests", nil, namespaced, withStatus, nil,
			certificates.ValidatePodCertificateRequest, certificates.ValidatePodCertificateRequestUpdate,
			func(r *certificates.PodCertificateRequest) map[string]string {
				return map[string]string{"spec.signerName": r.Spec.SignerName, "spec.podName": r.Spec.PodName, "spec.nodeName": r.Spec.NodeName}
			}),
		// Dynamic resource allocation: an API for drivers and clients;
		// Kobune allocates no devices (api/dra).
		kind("DeviceClass", dra.APIVersion, "deviceclasses", nil, clusterScoped, noStatus, nil, dra.ValidateDeviceClass, nil, nil),
		withWarning(kind("ResourceClaim", dra.APIVersion, "resourceclaims", nil, namespaced, withStatus, dra.SetDefaultsResourceClaim,
			dra.ValidateResourceClaim, dra.ValidateResourceClaimUpdate, nil), draWarning),
		withWarning(kind("ResourceClaimTemplate", dra.APIVersion, "resourceclaimtemplates", nil, namespaced, noStatus, dra.SetDefaultsResourceClaimTemplate,
			dra.ValidateResourceClaimTemplate, dra.ValidateResourceClaimTemplateUpdate, nil), draWarning),
		kind("ResourceSlice", dra.APIVersion, "resourceslices", nil, clusterScoped, noStatus, nil, dra.ValidateResourceSlice, dra.ValidateResourceSliceUpdate, nil),
		kind("DeviceTaintRule", dra.APIVersion, "devicetaintrules", nil, clusterScoped, withStatus, nil, dra.ValidateDeviceTaintRule, nil, nil),
		kind("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", []string{"pc"}, clusterScoped, noStatus, scheduling.SetDefaultsPriorityClass, scheduling.ValidatePriorityClass,
			func(n, o *scheduling.PriorityClass) v.ErrorList {
				if n.Value != o.Value {
					return v.ErrorList{v.NewForbidden(v.NewPath("value"), "may not be changed in an update")}
				}
				return nil
			}, nil),
		kind("APIService", "apiregistration.k8s.io/v1", "apiservices", nil, clusterScoped, withStatus, nil, apiregistration.ValidateAPIService, nil, nil),
		kind("StorageVersionMigration", "storagemigration.k8s.io/v1", "storageversionmigrations", nil, clusterScoped, withStatus, nil,
			storagemigration.Validate, storagemigration.ValidateUpdate, nil),
		kind("RuntimeClass", "node.k8s.io/v1", "runtimeclasses", nil, clusterScoped, noStatus, nil, node.ValidateRuntimeClass, node.ValidateRuntimeClassUpdate, nil),
		kind("FlowSchema", "flowcontrol.apiserver.k8s.io/v1", "flowschemas", nil, clusterScoped, withStatus, flowcontrol.SetDefaultsFlowSchema,
			flowcontrol.ValidateFlowSchema, nil, nil),
		kind("PriorityLevelConfiguration", "flowcontrol.apiserver.k8s.io/v1", "prioritylevelconfigurations", nil, clusterScoped, withStatus,
			flowcontrol.SetDefaultsPriorityLevelConfiguration, flowcontrol.ValidatePriorityLevelConfiguration, nil, nil),
		kind("ValidatingWebhookConfiguration", "admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", nil, clusterScoped, noStatus,
			nil, admissionregistration.ValidateValidating, nil, nil),
		kind("MutatingWebhookConfiguration", "admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", nil, clusterScoped, noStatus,
			nil, admissionregistration.ValidateMutating, nil, nil),
		kind("ValidatingAdmissionPolicy", "admissionregistration.k8s.io/v1", "validatingadmissionpolicies", nil, clusterScoped, withStatus,
			nil, admissionregistration.ValidatePolicy, nil, nil),
		kind("ValidatingAdmissionPolicyBinding", "admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings", nil, clusterScoped, noStatus,
			nil, admissionregistration.ValidateBinding, nil, nil),
		kind("MutatingAdmissionPolicy", "admissionregistration.k8s.io/v1", "mutatingadmissionpolicies", nil, clusterScoped, noStatus,
			nil, admissionregistration.ValidateMutatingPolicy, nil, nil),
		kind("MutatingAdmissionPolicyBinding", "admissionregistration.k8s.io/v1", "mutatingadmissionpolicybindings", nil, clusterScoped, noStatus,
			nil, admissionregistration.ValidateMutatingBinding, nil, nil),
		kind("CustomResourceDefinition", "apiextensions.k8s.io/v1", "customresourcedefinitions", []string{"crd", "crds"}, clusterScoped, withStatus,
			apiextensions.SetDefaults, apiextensions.Validate, apiextensions.ValidateUpdate, nil),
	}
	for _, k := range ks {
		k.ValidateStatus = statusValidation[k.Kind]
		if k.Kind == "Pod" {
			k.ValidateCreate = func(o meta.Object) v.ErrorList { return core.ValidatePodCreate(o.(*core.Pod)) }
		}
	}
	return ks
}

// statusValidation is each kind's status validation, for writes of its
// status subresource (scheme.Kind.ValidateStatus).
var statusValidation = map[string]func(n, o meta.Object) v.ErrorList{
	"Deployment":              statusRules(apps.ValidateDeploymentStatus),
	"ReplicaSet":              statusRules(apps.ValidateReplicaSetStatus),
	"StatefulSet":             statusRules(apps.ValidateStatefulSetStatus),
	"DaemonSet":               statusRules(apps.ValidateDaemonSetStatus),
	"ReplicationController":   statusRules(core.ValidateReplicationControllerStatus),
	"Job":                     statusRules(batch.ValidateJobStatus),
	"PodDisruptionBudget":     statusRules(policy.ValidatePodDisruptionBudgetStatus),
	"HorizontalPodAutoscaler": statusRules(autoscaling.ValidateHorizontalPodAutoscalerStatus),
	"StorageVersionMigration": statusRules(storagemigration.ValidateStatus),
	"ServiceCIDR":             statusRules(networking.ValidateServiceCIDRStatus),
	"ResourceClaim":           statusRules(dra.ValidateResourceClaimStatus),
	"PodCertificateRequest":   statusRules(certificates.ValidatePodCertificateRequestStatus),
	"DeviceTaintRule":         statusRules(dra.ValidateDeviceTaintRuleStatus),
	"VolumeAttachment":        statusRules(storage.ValidateVolumeAttachmentStatus),
}

// draWarning is sent with every REST request on ResourceClaims and their
// templates: Kobune serves them, but allocates nothing.
const draWarning = "Kobune serves resource.k8s.io for DRA drivers and clients but allocates no devices: a ResourceClaim stays unallocated and pods cannot use it (docs/differences.md)"

func withWarning(k *Kind, warning string) *Kind {
	k.Warning = warning
	return k
}

func statusRules[T meta.Object](f func(n, o T) v.ErrorList) func(n, o meta.Object) v.ErrorList {
	return func(n, o meta.Object) v.ErrorList { return f(n.(T), o.(T)) }
}

// kind turns typed functions into a Kind entry; T is a pointer kind type.
// scope and statusSubresource name kind's two yes-or-no arguments, so
// that each line of the table reads as what it says.
type (
	scope             int
	statusSubresource int
)

const (
	clusterScoped scope = iota
	namespaced
)

const (
	noStatus   statusSubresource = iota // status is written with the object
	withStatus                          // status only through the status subresource
)

func kind[T interface {
	meta.Object
	*E
}, E any](
	name, apiVersion, resource string, short []string, sc scope, st statusSubresource,
	def func(T), validate func(T) v.ErrorList, validateUpdate func(T, T) v.ErrorList, fields func(T) map[string]string,
) *Kind {
	k := &Kind{
		Kind: name, APIVersion: apiVersion, Resource: resource, ShortNames: short,
		Namespaced: sc == namespaced, HasStatus: st == withStatus,
		New:      func() meta.Object { return T(new(E)) },
		Validate: func(o meta.Object) v.ErrorList { return validate(o.(T)) },
	}
	if def != nil {
		k.Default = func(o meta.Object) { def(o.(T)) }
	}
	if validateUpdate != nil {
		k.ValidateUpdate = func(n, o meta.Object) v.ErrorList { return validateUpdate(n.(T), o.(T)) }
	}
	if fields != nil {
		k.Fields = func(o meta.Object) map[string]string { return fields(o.(T)) }
	}
	return k
}

func servedAlso(k *Kind, versions ...Version) *Kind {
	k.Versions = versions
	return k
}

func podFields(p *core.Pod) map[string]string {
	return map[string]string{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

// eventFields are the fields an event list may select on, Kubernetes'
// set: source is the reporting component (source.component, else
// reportingComponent), what the e2e framework selects when it dumps a
// namespace's events.
func eventFields(e *core.Event) map[string]string {
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	return map[string]string{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             e.InvolvedObject.UID,
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
		// events.k8s.io/v1's names for the same fields.
		"reportingController":       e.ReportingController,
		"regarding.kind":            e.InvolvedObject.Kind,
		"regarding.namespace":       e.InvolvedObject.Namespace,
		"regarding.name":            e.InvolvedObject.Name,
		"regarding.uid":             e.InvolvedObject.UID,
		"regarding.apiVersion":      e.InvolvedObject.APIVersion,
		"regarding.resourceVersion": e.InvolvedObject.ResourceVersion,
		"regarding.fieldPath":       e.InvolvedObject.FieldPath,
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// countableFn is countable, set in init (the kinds' table cannot refer
// to the index built from it).
var countableFn func(resource.Name) bool

func init() { countableFn = countable }

// countable reports whether a quota's count/<resource>[.<group>] names a
// served kind.
func countable(n resource.Name) bool {
	return CountedKind(n) != nil
}

// CountedKind is the kind a quota's count/<resource>[.<group>] name
// counts (nil if none).
func CountedKind(n resource.Name) *Kind {
	rest, ok := strings.CutPrefix(string(n), "count/")
	if !ok {
		return nil
	}
	res, group, _ := strings.Cut(rest, ".")
	k, ok := ByResource(res)
	if !ok || k.Group() != group {
		return nil
	}
	return k
}
