package compat

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
)

// TestCustomResourceDefinitionOverProtobuf (issue #36): client-go's
// apiextensions clientset configured as Kubernetes' own components and
// the conformance suite's framework configure it (protobuf bodies) makes a
// definition whose schema arrives whole — nested properties, items,
// additionalProperties, a default, an enum, int-or-string, preserve-
// unknown-fields, CEL rules — and reads it back the same.
func TestCustomResourceDefinitionOverProtobuf(t *testing.T) {
	s := newSession(t, 0)
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs := apiextclient.NewForConfigOrDie(cfg)
	ctx := context.Background()
	min := 1.0
	yes := true
	schema := &apiextensionsv1.JSONSchemaProps{Type: "object", Description: "a gadget", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Required: []string{"size"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"size":  {Type: "integer", Minimum: &min, Default: &apiextensionsv1.JSON{Raw: []byte(`3`)}},
			"mode":  {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"fast"`)}, {Raw: []byte(`"slow"`)}}},
			"port":  {XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}},
			"parts": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
			"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true,
				Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
			"extra": {Type: "object", XPreserveUnknownFields: &yes},
		}, XValidations: apiextensionsv1.ValidationRules{{Rule: "self.size <= 10", Message: "too big"}}},
	}}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.proto.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "proto.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema}}}}}
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a definition over protobuf: %v", err)
	}
	var got *apiextensionsv1.CustomResourceDefinition
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err = cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the definition made over protobuf is not Established: %v %+v", err, got.Status)
	}
	spec := got.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if p := spec.Properties["size"]; p.Type != "integer" || p.Minimum == nil || *p.Minimum != 1 || p.Default == nil || string(p.Default.Raw) != "3" {
		t.Errorf("spec.size read back: %+v", p)
	}
	if p := spec.Properties["mode"]; len(p.Enum) != 2 || string(p.Enum[1].Raw) != `"slow"` {
		t.Errorf("spec.mode read back: %+v", p)
	}
	if p := spec.Properties["port"]; !p.XIntOrString || len(p.AnyOf) != 2 {
		t.Errorf("spec.port read back: %+v", p)
	}
	if p := spec.Properties["parts"]; p.Items == nil || p.Items.Schema == nil || p.Items.Schema.Type != "string" {
		t.Errorf("spec.parts read back: %+v", p)
	}
	if p := spec.Properties["labels"]; p.AdditionalProperties == nil || p.AdditionalProperties.Schema == nil || p.AdditionalProperties.Schema.Type != "string" {
		t.Errorf("spec.labels read back: %+v", p)
	}
	if p := spec.Properties["extra"]; p.XPreserveUnknownFields == nil || !*p.XPreserveUnknownFields {
		t.Errorf("spec.extra read back: %+v", p)
	}
	if len(spec.XValidations) != 1 || spec.XValidations[0].Rule != "self.size <= 10" {
		t.Errorf("spec's rules read back: %+v", spec.XValidations)
	}
	if len(spec.Required) != 1 || spec.Required[0] != "size" {
		t.Errorf("spec's required read back: %+v", spec.Required)
	}
}
