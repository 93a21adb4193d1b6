package apiextensions

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	v "github.com/kobune/kobune/api/validation"
)

// SetDefaults fills what a definition may leave out, as Kubernetes does:
// the singular name (the kind in lower case), the list kind (kind +
// "List") and the conversion strategy (None).
func SetDefaults(c *CustomResourceDefinition) {
	n := &c.Spec.Names
	if n.Singular == "" {
		n.Singular = strings.ToLower(n.Kind)
	}
	if n.ListKind == "" && n.Kind != "" {
		n.ListKind = n.Kind + "List"
	}
	if c.Spec.Conversion == nil {
		c.Spec.Conversion = &CustomResourceConversion{Strategy: NoneConverter}
	}
}

var dns1035 = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

func isDNS1035(s string) string {
	switch {
	case len(s) > 63:
		return "must be no more than 63 characters"
	case !dns1035.MatchString(s):
		return "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character"
	}
	return ""
}

// Validate checks a definition: its name is <plural>.<group>, the names
// are DNS labels and the kind one in any case, one version is stored,
// every version has a structural schema.
func Validate(c *CustomResourceDefinition) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	spec := v.NewPath("spec")
	s := &c.Spec
	if want := s.Names.Plural + "." + s.Group; c.Name != want {
		errs = append(errs, v.NewInvalid(v.NewPath("metadata", "name"), c.Name, fmt.Sprintf("must be spec.names.plural+\".\"+spec.group (%q)", want)))
	}
	switch {
	case s.Group == "":
		errs = append(errs, v.NewRequired(spec.Child("group"), ""))
	case v.IsDNS1123Subdomain(s.Group) != "":
		errs = append(errs, v.NewInvalid(spec.Child("group"), s.Group, v.IsDNS1123Subdomain(s.Group)))
	case !strings.Contains(s.Group, "."):
		errs = append(errs, v.NewInvalid(spec.Child("group"), s.Group, "should be a domain with at least one dot"))
	}
	errs = append(errs, validateNames(&s.Names, spec.Child("names"))...)
	if s.Scope != NamespaceScoped && s.Scope != ClusterScoped {
		errs = append(errs, v.NewNotSupported(spec.Child("scope"), s.Scope, []string{string(ClusterScoped), string(NamespaceScoped)}))
	}
	if s.PreserveUnknownFields {
		errs = append(errs, v.NewInvalid(spec.Child("preserveUnknownFields"), true, "must be false in order to use defaults in the schema"))
	}
	errs = append(errs, validateVersions(s, spec.Child("versions"))...)
	if cv := s.Conversion; cv != nil {
		p := spec.Child("conversion")
		switch cv.Strategy {
		case NoneConverter:
			if cv.Webhook != nil {
				errs = append(errs, v.NewForbidden(p.Child("webhook"), "should not be set when strategy is not set to Webhook"))
			}
		case WebhookConverter:
			errs = append(errs, validateWebhookConversion(cv.Webhook, p.Child("webhook"))...)
		default:
			errs = append(errs, v.NewNotSupported(p.Child("strategy"), cv.Strategy, []string{NoneConverter, WebhookConverter}))
		}
	}
	return errs
}

// ValidateUpdate adds what may not change: the group and the scope.
func ValidateUpdate(n, o *CustomResourceDefinition) v.ErrorList {
	var errs v.ErrorList
	if n.Spec.Group != o.Spec.Group {
		errs = append(errs, v.NewInvalid(v.NewPath("spec", "group"), n.Spec.Group, "field is immutable"))
	}
	if n.Spec.Scope != o.Spec.Scope {
		errs = append(errs, v.NewInvalid(v.NewPath("spec", "scope"), n.Spec.Scope, "field is immutable"))
	}
	for _, stored := range o.Status.StoredVersions {
		if _, ok := n.Spec.Version(stored); !ok {
			errs = append(errs, v.NewInvalid(v.NewPath("status", "storedVersions"), stored,
				"must appear in spec.versions: objects may still be stored in it (migrate them, then remove it from status.storedVersions)"))
		}
	}
	return errs
}

func validateNames(n *CustomResourceDefinitionNames, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	label := func(f *v.Path, s string, required bool) {
		switch {
		case s == "" && required:
			errs = append(errs, v.NewRequired(f, ""))
		case s != "" && isDNS1035(s) != "":
			errs = append(errs, v.NewInvalid(f, s, isDNS1035(s)))
		}
	}
	label(p.Child("plural"), n.Plural, true)
	label(p.Child("singular"), n.Singular, false)
	for i, s := range n.ShortNames {
		label(p.Child("shortNames").Index(i), s, true)
	}
	for i, s := range n.Categories {
		label(p.Child("categories").Index(i), s, true)
	}
	kind := func(f *v.Path, s string) {
		switch {
		case s == "":
			errs = append(errs, v.NewRequired(f, ""))
		case isDNS1035(strings.ToLower(s)) != "":
			// Kubernetes' rule: any case, otherwise a DNS label
			// ("e2e-test-crd" is a kind the conformance suite makes).
			errs = append(errs, v.NewInvalid(f, s, "may have mixed case, but should otherwise match: "+isDNS1035(strings.ToLower(s))))
		}
	}
	kind(p.Child("kind"), n.Kind)
	if n.ListKind != "" {
		kind(p.Child("listKind"), n.ListKind)
		if n.ListKind == n.Kind {
			errs = append(errs, v.NewInvalid(p.Child("listKind"), n.ListKind, "kind and listKind may not be the same"))
		}
	}
	return errs
}

func validateVersions(s *CustomResourceDefinitionSpec, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	if len(s.Versions) == 0 {
		return v.ErrorList{v.NewRequired(p, "must have exactly one version marked as storage version")}
	}
	seen, storage := map[string]bool{}, 0
	for i := range s.Versions {
		ver := &s.Versions[i]
		vp := p.Index(i)
		switch {
		case ver.Name == "":
			errs = append(errs, v.NewRequired(vp.Child("name"), ""))
		case isDNS1035(ver.Name) != "":
			errs = append(errs, v.NewInvalid(vp.Child("name"), ver.Name, isDNS1035(ver.Name)))
		case seen[ver.Name]:
			errs = append(errs, v.NewDuplicate(vp.Child("name"), ver.Name))
		}
		seen[ver.Name] = true
		if ver.Storage {
			storage++
		}
		if ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
			errs = append(errs, v.NewRequired(vp.Child("schema", "openAPIV3Schema"), "schemas are required"))
		} else {
			errs = append(errs, ValidateStructural(ver.Schema.OpenAPIV3Schema, vp.Child("schema", "openAPIV3Schema"))...)
		}
		if sc := ver.Subresources; sc != nil && sc.Scale != nil {
			sp := vp.Child("subresources", "scale")
			for _, f := range []struct{ name, path string }{{"specReplicasPath", sc.Scale.SpecReplicasPath}, {"statusReplicasPath", sc.Scale.StatusReplicasPath}} {
				switch {
				case f.path == "":
					errs = append(errs, v.NewRequired(sp.Child(f.name), ""))
				case !strings.HasPrefix(f.path, ".spec.") && f.name == "specReplicasPath", !strings.HasPrefix(f.path, ".status.") && f.name == "statusReplicasPath":
					errs = append(errs, v.NewInvalid(sp.Child(f.name), f.path, "should be a json path under ."+strings.TrimSuffix(f.name, "ReplicasPath")))
				}
			}
		}
		for j, col := range ver.AdditionalPrinterColumns {
			cp := vp.Child("additionalPrinterColumns").Index(j)
			if col.Name == "" {
				errs = append(errs, v.NewRequired(cp.Child("name"), ""))
			}
			switch col.Type {
			case "integer", "number", "string", "boolean", "date":
			default:
				errs = append(errs, v.NewNotSupported(cp.Child("type"), col.Type, []string{"boolean", "date", "integer", "number", "string"}))
			}
			if !strings.HasPrefix(col.JSONPath, ".") {
				errs = append(errs, v.NewInvalid(cp.Child("jsonPath"), col.JSONPath, "must be a simple json path starting with ."))
			}
			if col.Priority < 0 {
				errs = append(errs, v.NewInvalid(cp.Child("priority"), col.Priority, "must be greater than or equal to 0"))
			}
		}
	}
	if storage != 1 {
		errs = append(errs, v.NewInvalid(p, storage, "must have exactly one version marked as storage version"))
	}
	return errs
}

func validateWebhookConversion(w *WebhookConversion, p *v.Path) v.ErrorList {
	if w == nil {
		return v.ErrorList{v.NewRequired(p, "required when strategy is set to Webhook")}
	}
	var errs v.ErrorList
	cc := w.ClientConfig
	switch {
	case cc == nil:
		errs = append(errs, v.NewRequired(p.Child("clientConfig"), "required when strategy is set to Webhook"))
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, v.NewRequired(p.Child("clientConfig"), "exactly one of url or service is required"))
	case cc.URL != nil && !strings.HasPrefix(*cc.URL, "https://"):
		errs = append(errs, v.NewInvalid(p.Child("clientConfig", "url"), *cc.URL, "'https' is the only allowed URL scheme"))
	case cc.Service != nil:
		sp := p.Child("clientConfig", "service")
		if cc.Service.Name == "" {
			errs = append(errs, v.NewRequired(sp.Child("name"), "service name is required"))
		}
		if cc.Service.Namespace == "" {
			errs = append(errs, v.NewRequired(sp.Child("namespace"), "service namespace is required"))
		}
		if pa := cc.Service.Path; pa != nil && !strings.HasPrefix(*pa, "/") {
			errs = append(errs, v.NewInvalid(sp.Child("path"), *pa, "must start with a '/'"))
		}
		if po := cc.Service.Port; po != nil && (*po < 1 || *po > 65535) {
			errs = append(errs, v.NewInvalid(sp.Child("port"), *po, "port is not valid: must be between 1 and 65535, inclusive"))
		}
	}
	if !slices.Contains(w.ConversionReviewVersions, "v1") && !slices.Contains(w.ConversionReviewVersions, "v1beta1") {
		errs = append(errs, v.NewInvalid(p.Child("conversionReviewVersions"), w.ConversionReviewVersions, "must include at least one of v1, v1beta1"))
	}
	return errs
}
