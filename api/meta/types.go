package meta

import "encoding/json"

// Object is implemented by every API kind. Kinds get it for free by embedding
// TypeMeta and ObjectMeta.
type Object interface {
	GetTypeMeta() *TypeMeta
	GetObjectMeta() *ObjectMeta
}

// TypeMeta names the kind and API version of an object.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// GetTypeMeta returns the type metadata itself, so embedding types satisfy Object.
func (t *TypeMeta) GetTypeMeta() *TypeMeta { return t }

// ObjectMeta is the metadata every stored object carries.
type ObjectMeta struct {
	Name                       string            `json:"name,omitempty"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	UID                        string            `json:"uid,omitempty"`
	ResourceVersion            string            `json:"resourceVersion,omitempty"`
	Generation                 int64             `json:"generation,omitempty"`
	CreationTimestamp          Time              `json:"creationTimestamp,omitzero"`
	DeletionTimestamp          *Time             `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	OwnerReferences            []OwnerReference  `json:"ownerReferences,omitempty"`
	Finalizers                 []string          `json:"finalizers,omitempty"`
	// ManagedFields says which manager owns which fields (server-side
	// apply; api/fieldmanager). The API server keeps it: an update that
	// does not send it leaves it as stored.
	ManagedFields []ManagedFieldsEntry `json:"managedFields,omitempty"`
}

// ManagedFieldsEntry is one manager's fields, for one operation (Apply or
// Update) and subresource; FieldsV1 is the set of fields as a tree.
type ManagedFieldsEntry struct {
	Manager     string          `json:"manager,omitempty"`
	Operation   string          `json:"operation,omitempty"`
	APIVersion  string          `json:"apiVersion,omitempty"`
	Time        *Time           `json:"time,omitempty"`
	FieldsType  string          `json:"fieldsType,omitempty"`
	FieldsV1    json.RawMessage `json:"fieldsV1,omitempty"`
	Subresource string          `json:"subresource,omitempty"`
}

// GetObjectMeta returns the metadata itself, so embedding types satisfy Object.
func (m *ObjectMeta) GetObjectMeta() *ObjectMeta { return m }

// HasFinalizer reports whether name is among the object's finalizers.
func (m *ObjectMeta) HasFinalizer(name string) bool {
	for _, f := range m.Finalizers {
		if f == name {
			return true
		}
	}
	return false
}

// OwnerReference points from a dependent to the object that owns it; the
// garbage collector follows these.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// ListMeta is the metadata of a list: the store revision it was read at.
type ListMeta struct {
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// List is the generic list kubectl prints for `get -o json|yaml`.
type List struct {
	TypeMeta `json:",inline"`
	Metadata ListMeta `json:"metadata"`
	Items    []any    `json:"items"`
}

// ConditionStatus is the status of a condition: True, False or Unknown.
type ConditionStatus string

// Condition status values.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Condition is meta.k8s.io/v1 Condition, the condition shape of the newer
// kinds' status (PodDisruptionBudget, ServiceCIDR,
// StorageVersionMigration, ...).
type Condition struct {
	Type               string          `json:"type"`
	Status             ConditionStatus `json:"status"`
	ObservedGeneration int64           `json:"observedGeneration,omitempty"`
	LastTransitionTime Time            `json:"lastTransitionTime,omitzero"`
	Reason             string          `json:"reason"`
	Message            string          `json:"message"`
}

// Key returns the workqueue key of an object: "namespace/name", or "name" for
// cluster-scoped objects.
func Key(o Object) string {
	m := o.GetObjectMeta()
	if m.Namespace == "" {
		return m.Name
	}
	return m.Namespace + "/" + m.Name
}

// IsControlledBy reports whether o has a controller owner reference with uid.
func IsControlledBy(o Object, uid string) bool {
	ref := ControllerOf(o)
	return ref != nil && ref.UID == uid
}

// ControllerOf returns the owner reference marked controller=true, or nil.
func ControllerOf(o Object) *OwnerReference {
	for i, r := range o.GetObjectMeta().OwnerReferences {
		if r.Controller != nil && *r.Controller {
			return &o.GetObjectMeta().OwnerReferences[i]
		}
	}
	return nil
}
