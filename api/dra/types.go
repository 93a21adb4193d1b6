// Package dra holds the kinds of dynamic resource allocation
// ("resource.k8s.io/v1", Kubernetes' DRA): DeviceClasses, ResourceClaims
// and their templates, ResourceSlices a driver publishes, and
// DeviceTaintRules. Kobune serves them as an API — stored, validated,
// listed, watched, patched — for drivers and clients, but has no DRA
// scheduler plugin and no kubelet DRA manager: no claim is allocated and
// a pod cannot name one (spec.resourceClaims is not supported), which the
// API server says when a claim is written (docs/differences.md).
package dra

import (
	"encoding/json"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

// APIVersion is the group version of every kind here.
const APIVersion = "resource.k8s.io/v1"

// DeviceClass is a kind of device a claim may ask for, chosen by CEL
// selectors over the devices drivers publish (cluster-scoped).
type DeviceClass struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            DeviceClassSpec `json:"spec"`
}

// DeviceClassSpec is what the class selects and configures.
type DeviceClassSpec struct {
	Selectors            []DeviceSelector           `json:"selectors,omitempty"`
	Config               []DeviceClassConfiguration `json:"config,omitempty"`
	ExtendedResourceName *string                    `json:"extendedResourceName,omitempty"`
}

// DeviceSelector is a CEL expression over a device.
type DeviceSelector struct {
	CEL *CELDeviceSelector `json:"cel,omitempty"`
}

// CELDeviceSelector's expression sees `device` (driver, attributes, capacity).
type CELDeviceSelector struct {
	Expression string `json:"expression"`
}

// DeviceClassConfiguration is configuration for the class's devices.
type DeviceClassConfiguration struct {
	DeviceConfiguration `json:",inline"`
}

// DeviceConfiguration is a driver's opaque configuration.
type DeviceConfiguration struct {
	Opaque *OpaqueDeviceConfiguration `json:"opaque,omitempty"`
}

// OpaqueDeviceConfiguration is parameters only its driver reads.
type OpaqueDeviceConfiguration struct {
	Driver     string          `json:"driver"`
	Parameters json.RawMessage `json:"parameters"`
}

// ResourceClaim asks for devices (namespaced).
type ResourceClaim struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ResourceClaimSpec   `json:"spec"`
	Status          ResourceClaimStatus `json:"status"` // always written, as Kubernetes does: a JSON patch adds to it
}

// ResourceClaimSpec is what is asked; it cannot change.
type ResourceClaimSpec struct {
	Devices DeviceClaim `json:"devices,omitzero"`
}

// DeviceClaim is the requests, their constraints and configuration.
type DeviceClaim struct {
	Requests    []DeviceRequest            `json:"requests,omitempty"`
	Constraints []DeviceConstraint         `json:"constraints,omitempty"`
	Config      []DeviceClaimConfiguration `json:"config,omitempty"`
}

// DeviceRequest is one request: exactly these devices, or the first
// available of some alternatives.
type DeviceRequest struct {
	Name           string              `json:"name"`
	Exactly        *ExactDeviceRequest `json:"exactly,omitempty"`
	FirstAvailable []DeviceSubRequest  `json:"firstAvailable,omitempty"`
}

// Allocation modes.
const (
	ExactCount = "ExactCount"
	All        = "All"
)

// ExactDeviceRequest asks for devices of one class.
type ExactDeviceRequest struct {
	DeviceClassName string                `json:"deviceClassName"`
	Selectors       []DeviceSelector      `json:"selectors,omitempty"`
	AllocationMode  string                `json:"allocationMode,omitempty"`
	Count           int64                 `json:"count,omitempty"`
	AdminAccess     *bool                 `json:"adminAccess,omitempty"`
	Tolerations     []DeviceToleration    `json:"tolerations,omitempty"`
	Capacity        *CapacityRequirements `json:"capacity,omitempty"`
}

// DeviceSubRequest is one alternative of a firstAvailable request.
type DeviceSubRequest struct {
	Name            string                `json:"name"`
	DeviceClassName string                `json:"deviceClassName"`
	Selectors       []DeviceSelector      `json:"selectors,omitempty"`
	AllocationMode  string                `json:"allocationMode,omitempty"`
	Count           int64                 `json:"count,omitempty"`
	Tolerations     []DeviceToleration    `json:"tolerations,omitempty"`
	Capacity        *CapacityRequirements `json:"capacity,omitempty"`
}

// CapacityRequirements asks for part of a device's capacity.
type CapacityRequirements struct {
	Requests map[string]resource.Quantity `json:"requests,omitempty"`
}

// DeviceToleration tolerates a device taint.
type DeviceToleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// DeviceConstraint ties requests' devices together by an attribute.
type DeviceConstraint struct {
	Requests          []string `json:"requests,omitempty"`
	MatchAttribute    *string  `json:"matchAttribute,omitempty"`
	DistinctAttribute *string  `json:"distinctAttribute,omitempty"`
}

// DeviceClaimConfiguration configures some requests' devices.
type DeviceClaimConfiguration struct {
	Requests            []string `json:"requests,omitempty"`
	DeviceConfiguration `json:",inline"`
}

// ResourceClaimStatus is the allocation and who uses it, written by the
// scheduler and drivers (none in Kobune).
type ResourceClaimStatus struct {
	Allocation  *AllocationResult                `json:"allocation,omitempty"`
	ReservedFor []ResourceClaimConsumerReference `json:"reservedFor,omitempty"`
	Devices     []AllocatedDeviceStatus          `json:"devices,omitempty"`
}

// AllocationResult is the devices allocated and where they can be used.
type AllocationResult struct {
	Devices             DeviceAllocationResult `json:"devices,omitzero"`
	NodeSelector        *core.NodeSelector     `json:"nodeSelector,omitempty"`
	AllocationTimestamp *meta.Time             `json:"allocationTimestamp,omitempty"`
}

// DeviceAllocationResult is each request's device and the configuration.
type DeviceAllocationResult struct {
	Results []DeviceRequestAllocationResult `json:"results,omitempty"`
	Config  []DeviceAllocationConfiguration `json:"config,omitempty"`
}

// IsZero lets an empty result be left out.
func (r DeviceAllocationResult) IsZero() bool { return len(r.Results) == 0 && len(r.Config) == 0 }

// DeviceRequestAllocationResult is one device allocated for a request.
type DeviceRequestAllocationResult struct {
	Request                  string                       `json:"request"`
	Driver                   string                       `json:"driver"`
	Pool                     string                       `json:"pool"`
	Device                   string                       `json:"device"`
	AdminAccess              *bool                        `json:"adminAccess,omitempty"`
	Tolerations              []DeviceToleration           `json:"tolerations,omitempty"`
	BindingConditions        []string                     `json:"bindingConditions,omitempty"`
	BindingFailureConditions []string                     `json:"bindingFailureConditions,omitempty"`
	ShareID                  *string                      `json:"shareID,omitempty"`
	ConsumedCapacity         map[string]resource.Quantity `json:"consumedCapacity,omitempty"`
}

// DeviceAllocationConfiguration is configuration from the class or the claim.
type DeviceAllocationConfiguration struct {
	Source              string   `json:"source"`
	Requests            []string `json:"requests,omitempty"`
	DeviceConfiguration `json:",inline"`
}

// ResourceClaimConsumerReference names a pod (or other) that uses the claim.
type ResourceClaimConsumerReference struct {
	APIGroup string `json:"apiGroup,omitempty"`
	Resource string `json:"resource"`
	Name     string `json:"name"`
	UID      string `json:"uid"`
}

// AllocatedDeviceStatus is what a driver reports of an allocated device.
type AllocatedDeviceStatus struct {
	Driver      string             `json:"driver"`
	Pool        string             `json:"pool"`
	Device      string             `json:"device"`
	ShareID     *string            `json:"shareID,omitempty"`
	Conditions  []meta.Condition   `json:"conditions,omitempty"`
	Data        json.RawMessage    `json:"data,omitempty"`
	NetworkData *NetworkDeviceData `json:"networkData,omitempty"`
}

// NetworkDeviceData is a network device's interface and addresses.
type NetworkDeviceData struct {
	InterfaceName   string   `json:"interfaceName,omitempty"`
	IPs             []string `json:"ips,omitempty"`
	HardwareAddress string   `json:"hardwareAddress,omitempty"`
}

// ResourceClaimTemplate is the claim each pod that names it would get.
type ResourceClaimTemplate struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ResourceClaimTemplateSpec `json:"spec"`
}

// ResourceClaimTemplateSpec is the claims' metadata and spec.
type ResourceClaimTemplateSpec struct {
	meta.ObjectMeta `json:"metadata,omitzero"`
	Spec            ResourceClaimSpec `json:"spec"`
}

// ResourceSlice is devices of one pool that a driver publishes
// (cluster-scoped).
type ResourceSlice struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ResourceSliceSpec `json:"spec"`
}

// ResourceSliceSpec is the pool, where its devices are, and the devices.
type ResourceSliceSpec struct {
	Driver                 string             `json:"driver"`
	Pool                   ResourcePool       `json:"pool"`
	NodeName               *string            `json:"nodeName,omitempty"`
	NodeSelector           *core.NodeSelector `json:"nodeSelector,omitempty"`
	AllNodes               *bool              `json:"allNodes,omitempty"`
	PerDeviceNodeSelection *bool              `json:"perDeviceNodeSelection,omitempty"`
	Devices                []Device           `json:"devices,omitempty"`
	SharedCounters         []CounterSet       `json:"sharedCounters,omitempty"`
}

// ResourcePool names the pool and its generation.
type ResourcePool struct {
	Name               string `json:"name"`
	Generation         int64  `json:"generation"`
	ResourceSliceCount int64  `json:"resourceSliceCount"`
}

// Device is one device with its attributes and capacity.
type Device struct {
	Name                     string                     `json:"name"`
	Attributes               map[string]DeviceAttribute `json:"attributes,omitempty"`
	Capacity                 map[string]DeviceCapacity  `json:"capacity,omitempty"`
	ConsumesCounters         []DeviceCounterConsumption `json:"consumesCounters,omitempty"`
	NodeName                 *string                    `json:"nodeName,omitempty"`
	NodeSelector             *core.NodeSelector         `json:"nodeSelector,omitempty"`
	AllNodes                 *bool                      `json:"allNodes,omitempty"`
	Taints                   []DeviceTaint              `json:"taints,omitempty"`
	BindsToNode              *bool                      `json:"bindsToNode,omitempty"`
	BindingConditions        []string                   `json:"bindingConditions,omitempty"`
	BindingFailureConditions []string                   `json:"bindingFailureConditions,omitempty"`
	AllowMultipleAllocations *bool                      `json:"allowMultipleAllocations,omitempty"`
}

// DeviceAttribute is exactly one typed value.
type DeviceAttribute struct {
	Int      *int64   `json:"int,omitempty"`
	Bool     *bool    `json:"bool,omitempty"`
	String   *string  `json:"string,omitempty"`
	Version  *string  `json:"version,omitempty"`
	Ints     []int64  `json:"ints,omitempty"`
	Bools    []bool   `json:"bools,omitempty"`
	Strings  []string `json:"strings,omitempty"`
	Versions []string `json:"versions,omitempty"`
}

// DeviceCapacity is an amount and how requests may take part of it.
type DeviceCapacity struct {
	Value         resource.Quantity      `json:"value"`
	RequestPolicy *CapacityRequestPolicy `json:"requestPolicy,omitempty"`
}

// CapacityRequestPolicy is the amounts a request may take.
type CapacityRequestPolicy struct {
	Default     *resource.Quantity          `json:"default,omitempty"`
	ValidValues []resource.Quantity         `json:"validValues,omitempty"`
	ValidRange  *CapacityRequestPolicyRange `json:"validRange,omitempty"`
}

// CapacityRequestPolicyRange is a minimum, maximum and step.
type CapacityRequestPolicyRange struct {
	Min  *resource.Quantity `json:"min,omitempty"`
	Max  *resource.Quantity `json:"max,omitempty"`
	Step *resource.Quantity `json:"step,omitempty"`
}

// DeviceCounterConsumption is what a device takes from a counter set.
type DeviceCounterConsumption struct {
	CounterSet string             `json:"counterSet"`
	Counters   map[string]Counter `json:"counters,omitempty"`
}

// CounterSet is counters devices share.
type CounterSet struct {
	Name     string             `json:"name"`
	Counters map[string]Counter `json:"counters,omitempty"`
}

// Counter is an amount.
type Counter struct {
	Value resource.Quantity `json:"value"`
}

// Device taint effects.
const (
	TaintNone       = "None"
	TaintNoSchedule = "NoSchedule"
	TaintNoExecute  = "NoExecute"
)

// DeviceTaint marks a device.
type DeviceTaint struct {
	Key       string     `json:"key"`
	Value     string     `json:"value,omitempty"`
	Effect    string     `json:"effect"`
	TimeAdded *meta.Time `json:"timeAdded,omitempty"`
}

// DeviceTaintRule taints the devices its selector picks (cluster-scoped).
type DeviceTaintRule struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            DeviceTaintRuleSpec   `json:"spec"`
	Status          DeviceTaintRuleStatus `json:"status"` // always written, as Kubernetes does: a JSON patch adds to it
}

// DeviceTaintRuleSpec is the devices and the taint.
type DeviceTaintRuleSpec struct {
	DeviceSelector *DeviceTaintSelector `json:"deviceSelector,omitempty"`
	Taint          DeviceTaint          `json:"taint"`
}

// DeviceTaintSelector picks devices by driver, pool and name (empty: all).
type DeviceTaintSelector struct {
	Driver *string `json:"driver,omitempty"`
	Pool   *string `json:"pool,omitempty"`
	Device *string `json:"device,omitempty"`
}

// DeviceTaintRuleStatus is conditions a controller reports (none in Kobune).
type DeviceTaintRuleStatus struct {
	Conditions []meta.Condition `json:"conditions,omitempty"`
}
