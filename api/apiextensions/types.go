package apiextensions

import (
	"bytes"
	"encoding/json"

	"github.com/kobune/kobune/api/meta"
)

// Group is the API group of CustomResourceDefinitions.
const Group = "apiextensions.k8s.io"

// CleanupFinalizer holds a deleted definition until every object of its
// kind is deleted.
const CleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// CustomResourceDefinition adds a kind to the API.
type CustomResourceDefinition struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            CustomResourceDefinitionSpec   `json:"spec"`
	Status          CustomResourceDefinitionStatus `json:"status,omitzero"`
}

// Scope is Namespaced or Cluster.
type Scope string

// The two scopes.
const (
	NamespaceScoped Scope = "Namespaced"
	ClusterScoped   Scope = "Cluster"
)

// CustomResourceDefinitionSpec is what the definition adds.
type CustomResourceDefinitionSpec struct {
	Group      string                            `json:"group"`
	Names      CustomResourceDefinitionNames     `json:"names"`
	Scope      Scope                             `json:"scope"`
	Versions   []CustomResourceDefinitionVersion `json:"versions"`
	Conversion *CustomResourceConversion         `json:"conversion,omitempty"`
	// PreserveUnknownFields must be false in v1 (pruning is always on).
	PreserveUnknownFields bool `json:"preserveUnknownFields,omitempty"`
}

// CustomResourceDefinitionNames are the names the kind is known by.
type CustomResourceDefinitionNames struct {
	Plural     string   `json:"plural"`
	Singular   string   `json:"singular,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	Kind       string   `json:"kind"`
	ListKind   string   `json:"listKind,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// CustomResourceDefinitionVersion is one version of the kind.
type CustomResourceDefinitionVersion struct {
	Name string `json:"name"`
	// Served: the version is in the API; Storage: objects are stored in
	// it (exactly one version is).
	Served                   bool                             `json:"served"`
	Storage                  bool                             `json:"storage"`
	Deprecated               bool                             `json:"deprecated,omitempty"`
	DeprecationWarning       *string                          `json:"deprecationWarning,omitempty"`
	Schema                   *CustomResourceValidation        `json:"schema,omitempty"`
	Subresources             *CustomResourceSubresources      `json:"subresources,omitempty"`
	AdditionalPrinterColumns []CustomResourceColumnDefinition `json:"additionalPrinterColumns,omitempty"`
	SelectableFields         []SelectableField                `json:"selectableFields,omitempty"`
}

// CustomResourceValidation holds a version's schema.
type CustomResourceValidation struct {
	OpenAPIV3Schema *JSONSchemaProps `json:"openAPIV3Schema,omitempty"`
}

// CustomResourceSubresources: status and scale.
type CustomResourceSubresources struct {
	Status *CustomResourceSubresourceStatus `json:"status,omitempty"`
	Scale  *CustomResourceSubresourceScale  `json:"scale,omitempty"`
}

// CustomResourceSubresourceStatus turns on the status subresource: status
// is written only through it, and the rest never through it.
type CustomResourceSubresourceStatus struct{}

// CustomResourceSubresourceScale maps the scale subresource onto the
// object's fields (JSON paths such as .spec.replicas).
type CustomResourceSubresourceScale struct {
	SpecReplicasPath   string  `json:"specReplicasPath"`
	StatusReplicasPath string  `json:"statusReplicasPath"`
	LabelSelectorPath  *string `json:"labelSelectorPath,omitempty"`
}

// CustomResourceColumnDefinition is a column of `get`'s table.
type CustomResourceColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format,omitempty"`
	Description string `json:"description,omitempty"`
	Priority    int32  `json:"priority,omitempty"`
	JSONPath    string `json:"jsonPath"`
}

// SelectableField is a field a field selector may use.
type SelectableField struct {
	JSONPath string `json:"jsonPath"`
}

// CustomResourceConversion says how objects change version.
type CustomResourceConversion struct {
	// Strategy is None (only apiVersion changes) or Webhook.
	Strategy string             `json:"strategy"`
	Webhook  *WebhookConversion `json:"webhook,omitempty"`
}

// The conversion strategies.
const (
	NoneConverter    = "None"
	WebhookConverter = "Webhook"
)

// WebhookConversion is where a Webhook conversion is sent.
type WebhookConversion struct {
	ClientConfig             *WebhookClientConfig `json:"clientConfig,omitempty"`
	ConversionReviewVersions []string             `json:"conversionReviewVersions"`
}

// WebhookClientConfig is a webhook's address: a URL or a Service.
type WebhookClientConfig struct {
	URL      *string           `json:"url,omitempty"`
	Service  *ServiceReference `json:"service,omitempty"`
	CABundle []byte            `json:"caBundle,omitempty"`
}

// ServiceReference names a Service that serves a webhook.
type ServiceReference struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Path      *string `json:"path,omitempty"`
	Port      *int32  `json:"port,omitempty"`
}

// CustomResourceDefinitionStatus is what the API server made of it.
type CustomResourceDefinitionStatus struct {
	Conditions     []CustomResourceDefinitionCondition `json:"conditions,omitempty"`
	AcceptedNames  CustomResourceDefinitionNames       `json:"acceptedNames,omitzero"`
	StoredVersions []string                            `json:"storedVersions,omitempty"`
}

// The definition's conditions.
const (
	Established    = "Established"
	NamesAccepted  = "NamesAccepted"
	Terminating    = "Terminating"
	ConditionTrue  = "True"
	ConditionFalse = "False"
)

// CustomResourceDefinitionCondition is one condition.
type CustomResourceDefinitionCondition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	LastTransitionTime meta.Time `json:"lastTransitionTime,omitzero"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
}

// Condition returns the condition of type t, or nil.
func (s *CustomResourceDefinitionStatus) Condition(t string) *CustomResourceDefinitionCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// StorageVersion returns the name of the version objects are stored in.
func (s *CustomResourceDefinitionSpec) StorageVersion() string {
	for _, v := range s.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// Version returns the named version.
func (s *CustomResourceDefinitionSpec) Version(name string) (*CustomResourceDefinitionVersion, bool) {
	for i := range s.Versions {
		if s.Versions[i].Name == name {
			return &s.Versions[i], true
		}
	}
	return nil, false
}

// JSONSchemaProps is an OpenAPI v3 schema, with Kubernetes' extensions
// (x-kubernetes-*). The fields JSON Schema has and structural schemas
// forbid ($ref, definitions, dependencies, patternProperties, ...) are
// kept so that a definition using them is refused by name.
type JSONSchemaProps struct {
	ID                   string                     `json:"id,omitempty"`
	Schema               string                     `json:"$schema,omitempty"`
	Ref                  *string                    `json:"$ref,omitempty"`
	Description          string                     `json:"description,omitempty"`
	Type                 string                     `json:"type,omitempty"`
	Format               string                     `json:"format,omitempty"`
	Title                string                     `json:"title,omitempty"`
	Default              *JSON                      `json:"default,omitempty"`
	Maximum              *float64                   `json:"maximum,omitempty"`
	ExclusiveMaximum     bool                       `json:"exclusiveMaximum,omitempty"`
	Minimum              *float64                   `json:"minimum,omitempty"`
	ExclusiveMinimum     bool                       `json:"exclusiveMinimum,omitempty"`
	MaxLength            *int64                     `json:"maxLength,omitempty"`
	MinLength            *int64                     `json:"minLength,omitempty"`
	Pattern              string                     `json:"pattern,omitempty"`
	MaxItems             *int64                     `json:"maxItems,omitempty"`
	MinItems             *int64                     `json:"minItems,omitempty"`
	UniqueItems          bool                       `json:"uniqueItems,omitempty"`
	MultipleOf           *float64                   `json:"multipleOf,omitempty"`
	Enum                 []JSON                     `json:"enum,omitempty"`
	MaxProperties        *int64                     `json:"maxProperties,omitempty"`
	MinProperties        *int64                     `json:"minProperties,omitempty"`
	Required             []string                   `json:"required,omitempty"`
	Items                *JSONSchemaProps           `json:"items,omitempty"`
	AllOf                []JSONSchemaProps          `json:"allOf,omitempty"`
	OneOf                []JSONSchemaProps          `json:"oneOf,omitempty"`
	AnyOf                []JSONSchemaProps          `json:"anyOf,omitempty"`
	Not                  *JSONSchemaProps           `json:"not,omitempty"`
	Properties           map[string]JSONSchemaProps `json:"properties,omitempty"`
	AdditionalProperties *SchemaOrBool              `json:"additionalProperties,omitempty"`
	PatternProperties    map[string]JSONSchemaProps `json:"patternProperties,omitempty"`
	Dependencies         map[string]JSON            `json:"dependencies,omitempty"`
	AdditionalItems      *SchemaOrBool              `json:"additionalItems,omitempty"`
	Definitions          map[string]JSONSchemaProps `json:"definitions,omitempty"`
	ExternalDocs         *ExternalDocumentation     `json:"externalDocs,omitempty"`
	Example              *JSON                      `json:"example,omitempty"`
	Nullable             bool                       `json:"nullable,omitempty"`

	XPreserveUnknownFields *bool            `json:"x-kubernetes-preserve-unknown-fields,omitempty"`
	XEmbeddedResource      bool             `json:"x-kubernetes-embedded-resource,omitempty"`
	XIntOrString           bool             `json:"x-kubernetes-int-or-string,omitempty"`
	XListMapKeys           []string         `json:"x-kubernetes-list-map-keys,omitempty"`
	XListType              *string          `json:"x-kubernetes-list-type,omitempty"`
	XMapType               *string          `json:"x-kubernetes-map-type,omitempty" kobune:"unsupported"`
	XValidations           []ValidationRule `json:"x-kubernetes-validations,omitempty"`
}

// ExternalDocumentation points to more documentation.
type ExternalDocumentation struct {
	Description string `json:"description,omitempty"`
	URL         string `json:"url,omitempty"`
}

// ValidationRule is a CEL rule (x-kubernetes-validations).
type ValidationRule struct {
	Rule              string  `json:"rule"`
	Message           string  `json:"message,omitempty"`
	MessageExpression string  `json:"messageExpression,omitempty"`
	Reason            *string `json:"reason,omitempty"`
	FieldPath         string  `json:"fieldPath,omitempty"`
	OptionalOldSelf   *bool   `json:"optionalOldSelf,omitempty" kobune:"unsupported"`
}

// JSON is any JSON value (a default, an enum member, an example).
type JSON = json.RawMessage

// SchemaOrBool is additionalProperties (or additionalItems): false, true,
// or a schema every further property must match.
type SchemaOrBool struct {
	Allows bool
	Schema *JSONSchemaProps
}

// MarshalJSON writes the schema, or the boolean when there is none.
func (s SchemaOrBool) MarshalJSON() ([]byte, error) {
	if s.Schema != nil {
		return json.Marshal(s.Schema)
	}
	return json.Marshal(s.Allows)
}

// UnmarshalJSON reads a boolean or a schema (which allows).
func (s *SchemaOrBool) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] != '{' {
		s.Schema = nil
		return json.Unmarshal(b, &s.Allows)
	}
	s.Allows = true
	s.Schema = &JSONSchemaProps{}
	return json.Unmarshal(b, s.Schema)
}
