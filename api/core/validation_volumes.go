package core

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/kobune/kobune/api/certificates"
	v "github.com/kobune/kobune/api/validation"
)

var (
	hostPathTypes = []string{"", string(HostPathDirectoryOrCreate), string(HostPathDirectory), string(HostPathFileOrCreate),
		string(HostPathFile), string(HostPathSocket), string(HostPathCharDev), string(HostPathBlockDev)}
	// resourceFields are what resourceFieldRef may name.
	resourceFields = []string{"limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage"}
	// volumeFieldRefs are the pod fields a downward API volume may
	// project: those known when the pod starts and that can change
	// (labels, annotations) — not status.podIP, as in Kubernetes.
	volumeFieldRefs = []string{"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations",
		"metadata.labels['<KEY>']", "metadata.annotations['<KEY>']"}
)

// validateVolumes checks the pod's volumes and returns them by name, for
// the mounts.
func validateVolumes(s *PodSpec, p *Path) (map[string]*Volume, v.ErrorList) {
	var errs v.ErrorList
	byName := map[string]*Volume{}
	for i := range s.Volumes {
		vol := &s.Volumes[i]
		vp := p.Child("volumes").Index(i)
		switch {
		case vol.Name == "":
			errs = append(errs, v.NewRequired(vp.Child("name"), ""))
		case v.IsDNS1123Label(vol.Name) != "":
			errs = append(errs, v.NewInvalid(vp.Child("name"), vol.Name, v.IsDNS1123Label(vol.Name)))
		case byName[vol.Name] != nil:
			errs = append(errs, v.NewDuplicate(vp.Child("name"), vol.Name))
		default:
			byName[vol.Name] = vol
		}
		errs = append(errs, validateVolumeSource(&vol.VolumeSource, s, vp)...)
	}
	return byName, errs
}

func validateVolumeSource(src *VolumeSource, s *PodSpec, p *Path) v.ErrorList {
	var errs v.ErrorList
	n := 0
	for _, set := range []bool{src.EmptyDir != nil, src.HostPath != nil, src.ConfigMap != nil, src.Secret != nil,
		src.DownwardAPI != nil, src.Projected != nil, src.PersistentVolumeClaim != nil, src.CSI != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return v.ErrorList{v.NewRequired(p, "must specify a volume type: one of emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim, csi")}
	case n > 1:
		return v.ErrorList{v.NewForbidden(p, "may not specify more than 1 volume type")}
	}
	switch {
	case src.EmptyDir != nil:
		if m := src.EmptyDir.Medium; m != StorageMediumDefault && m != StorageMediumMemory {
			errs = append(errs, v.NewNotSupported(p.Child("emptyDir", "medium"), string(m), []string{"", string(StorageMediumMemory)}))
		}
		if l := src.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
			errs = append(errs, v.NewInvalid(p.Child("emptyDir", "sizeLimit"), l.String(), "must be greater than or equal to 0"))
		}
	case src.HostPath != nil:
		hp := p.Child("hostPath")
		if src.HostPath.Path == "" {
			errs = append(errs, v.NewRequired(hp.Child("path"), ""))
		} else if !strings.HasPrefix(src.HostPath.Path, "/") || hasDotDot(src.HostPath.Path) {
			errs = append(errs, v.NewInvalid(hp.Child("path"), src.HostPath.Path, "must be an absolute path without '..'"))
		}
		if t := src.HostPath.Type; t != nil && !in(string(*t), hostPathTypes) {
			errs = append(errs, v.NewNotSupported(hp.Child("type"), string(*t), hostPathTypes[1:]))
		}
	case src.ConfigMap != nil:
		cp := p.Child("configMap")
		errs = append(errs, validateRefName(src.ConfigMap.Name, cp.Child("name"))...)
		errs = append(errs, validateItems(src.ConfigMap.Items, cp.Child("items"))...)
		errs = append(errs, validateMode(src.ConfigMap.DefaultMode, cp.Child("defaultMode"))...)
	case src.Secret != nil:
		sp := p.Child("secret")
		errs = append(errs, validateRefName(src.Secret.SecretName, sp.Child("secretName"))...)
		errs = append(errs, validateItems(src.Secret.Items, sp.Child("items"))...)
		errs = append(errs, validateMode(src.Secret.DefaultMode, sp.Child("defaultMode"))...)
	case src.DownwardAPI != nil:
		dp := p.Child("downwardAPI")
		errs = append(errs, validateDownwardItems(src.DownwardAPI.Items, s, dp.Child("items"))...)
		errs = append(errs, validateMode(src.DownwardAPI.DefaultMode, dp.Child("defaultMode"))...)
	case src.Projected != nil:
		pp := p.Child("projected")
		errs = append(errs, validateMode(src.Projected.DefaultMode, pp.Child("defaultMode"))...)
		paths := map[string]bool{}
		for i, ps := range src.Projected.Sources {
			sp := pp.Child("sources").Index(i)
			n := 0
			for _, set := range []bool{ps.ConfigMap != nil, ps.Secret != nil, ps.DownwardAPI != nil, ps.ServiceAccountToken != nil, ps.ClusterTrustBundle != nil, ps.PodCertificate != nil} {
				if set {
					n++
				}
			}
			if n != 1 {
				errs = append(errs, v.NewForbidden(sp, "must specify exactly one of configMap, secret, downwardAPI, serviceAccountToken, clusterTrustBundle, podCertificate"))
				continue
			}
			var items []KeyToPath
			switch {
			case ps.ConfigMap != nil:
				errs = append(errs, validateRefName(ps.ConfigMap.Name, sp.Child("configMap", "name"))...)
				errs = append(errs, validateItems(ps.ConfigMap.Items, sp.Child("configMap", "items"))...)
				items = ps.ConfigMap.Items
			case ps.Secret != nil:
				errs = append(errs, validateRefName(ps.Secret.Name, sp.Child("secret", "name"))...)
				errs = append(errs, validateItems(ps.Secret.Items, sp.Child("secret", "items"))...)
				items = ps.Secret.Items
			case ps.DownwardAPI != nil:
				errs = append(errs, validateDownwardItems(ps.DownwardAPI.Items, s, sp.Child("downwardAPI", "items"))...)
				for _, it := range ps.DownwardAPI.Items {
					items = append(items, KeyToPath{Path: it.Path})
				}
			case ps.ServiceAccountToken != nil:
				tp := sp.Child("serviceAccountToken")
				if e := ps.ServiceAccountToken.ExpirationSeconds; e != nil && (*e < 600 || *e > 1<<32) {
					errs = append(errs, v.NewInvalid(tp.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes or greater than 2^32 seconds"))
				}
				errs = append(errs, validateFilePath(ps.ServiceAccountToken.Path, tp.Child("path"))...)
				items = append(items, KeyToPath{Path: ps.ServiceAccountToken.Path})
			case ps.ClusterTrustBundle != nil:
				errs = append(errs, validateTrustBundleProjection(ps.ClusterTrustBundle, sp.Child("clusterTrustBundle"))...)
				items = append(items, KeyToPath{Path: ps.ClusterTrustBundle.Path})
			case ps.PodCertificate != nil:
				pc := ps.PodCertificate
				errs = append(errs, validatePodCertificateProjection(pc, sp.Child("podCertificate"))...)
				for _, path := range []string{pc.CredentialBundlePath, pc.KeyPath, pc.CertificateChainPath} {
					if path != "" {
						items = append(items, KeyToPath{Path: path})
					}
				}
			}
			for j, it := range items {
				if paths[it.Path] {
					errs = append(errs, v.NewDuplicate(sp.Index(j).Child("path"), it.Path))
				}
				paths[it.Path] = true
			}
		}
	case src.PersistentVolumeClaim != nil:
		errs = append(errs, validateRefName(src.PersistentVolumeClaim.ClaimName, p.Child("persistentVolumeClaim", "claimName"))...)
	case src.CSI != nil:
		errs = append(errs, ValidateCSIDriverName(src.CSI.Driver, p.Child("csi", "driver"))...)
		if r := src.CSI.NodePublishSecretRef; r != nil {
			errs = append(errs, validateRefName(r.Name, p.Child("csi", "nodePublishSecretRef", "name"))...)
		}
	}
	return errs
}

// ValidateCSIDriverName is Kubernetes' rule for a field that names a CSI
// driver (an inline csi volume's driver, a CSIDriver's name, a
// VolumeAttachment's attacher): a DNS subdomain of at most 63 characters.
func ValidateCSIDriverName(name string, p *Path) v.ErrorList {
	if name == "" {
		return v.ErrorList{v.NewRequired(p, "")}
	}
	if msg := CSIDriverNameError(name); msg != "" {
		return v.ErrorList{v.NewInvalid(p, name, msg)}
	}
	return nil
}

// CSIDriverNameError is what is wrong with a CSI driver's name, or "".
func CSIDriverNameError(name string) string {
	if len(name) > 63 {
		return "must be no more than 63 characters"
	}
	return v.IsDNS1123Subdomain(name)
}

func validateRefName(name string, p *Path) v.ErrorList {
	if name == "" {
		return v.ErrorList{v.NewRequired(p, "")}
	}
	if msg := v.IsDNS1123Subdomain(name); msg != "" {
		return v.ErrorList{v.NewInvalid(p, name, msg)}
	}
	return nil
}

func validateMode(m *int32, p *Path) v.ErrorList {
	if m != nil && (*m < 0 || *m > 0o777) {
		return v.ErrorList{v.NewInvalid(p, *m, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

// validateFilePath: a file of a projected directory, relative and inside it.
func validateFilePath(f string, p *Path) v.ErrorList {
	switch {
	case f == "":
		return v.ErrorList{v.NewRequired(p, "")}
	case strings.HasPrefix(f, "/"):
		return v.ErrorList{v.NewInvalid(p, f, "must be a relative path")}
	case hasDotDot(f) || strings.HasPrefix(f, ".."):
		return v.ErrorList{v.NewInvalid(p, f, "must not contain '..' or start with '..'")}
	}
	return nil
}

func validateItems(items []KeyToPath, p *Path) v.ErrorList {
	var errs v.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		if it.Key == "" {
			errs = append(errs, v.NewRequired(ip.Child("key"), ""))
		} else {
			errs = append(errs, validateConfigKey(it.Key, ip.Child("key"))...)
		}
		errs = append(errs, validateFilePath(it.Path, ip.Child("path"))...)
		errs = append(errs, validateMode(it.Mode, ip.Child("mode"))...)
	}
	return errs
}

func validateDownwardItems(items []DownwardAPIVolumeFile, s *PodSpec, p *Path) v.ErrorList {
	var errs v.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		errs = append(errs, validateFilePath(it.Path, ip.Child("path"))...)
		errs = append(errs, validateMode(it.Mode, ip.Child("mode"))...)
		switch {
		case (it.FieldRef == nil) == (it.ResourceFieldRef == nil):
			errs = append(errs, v.NewInvalid(ip, "", "must specify exactly one of fieldRef and resourceFieldRef"))
		case it.FieldRef != nil:
			fp := it.FieldRef.FieldPath
			if fp != "metadata.name" && fp != "metadata.namespace" && fp != "metadata.uid" && fp != "metadata.labels" &&
				fp != "metadata.annotations" && !isLabelOrAnnotationRef(fp) {
				errs = append(errs, v.NewNotSupported(ip.Child("fieldRef", "fieldPath"), fp, volumeFieldRefs))
			}
		default:
			rp := ip.Child("resourceFieldRef")
			if it.ResourceFieldRef.ContainerName == "" {
				errs = append(errs, v.NewRequired(rp.Child("containerName"), "required in a volume"))
			}
			errs = append(errs, validateResourceFieldRef(it.ResourceFieldRef, s, rp)...)
		}
	}
	return errs
}

func validateResourceFieldRef(r *ResourceFieldSelector, s *PodSpec, p *Path) v.ErrorList {
	var errs v.ErrorList
	if !in(r.Resource, resourceFields) {
		errs = append(errs, v.NewNotSupported(p.Child("resource"), r.Resource, resourceFields))
	}
	if r.ContainerName != "" && containerNamed(s, r.ContainerName) == nil {
		errs = append(errs, v.NewInvalid(p.Child("containerName"), r.ContainerName, "must name a container of the pod"))
	}
	// A zero divisor is an unset one (client-go sends "0" for it), as in
	// Kubernetes; otherwise only the units Kubernetes allows.
	if r.Divisor == nil || r.Divisor.Sign() == 0 {
		return errs
	}
	if strings.HasSuffix(r.Resource, ".cpu") {
		if d := r.Divisor.String(); d != "1m" && d != "1" {
			errs = append(errs, v.NewInvalid(p.Child("divisor"), r.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	} else if !in(r.Divisor.String(), memoryDivisors) {
		errs = append(errs, v.NewInvalid(p.Child("divisor"), r.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the "+strings.TrimPrefix(strings.TrimPrefix(r.Resource, "limits."), "requests.")+" resource"))
	}
	return errs
}

// memoryDivisors are the divisors Kubernetes allows for memory and
// ephemeral storage.
var memoryDivisors = []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}

// containerNamed is the pod's container (or init container) of that name.
func containerNamed(s *PodSpec, name string) *Container {
	for _, list := range [][]Container{s.Containers, s.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func validateMounts(mounts []VolumeMount, vols map[string]*Volume, p *Path) v.ErrorList {
	var errs v.ErrorList
	paths := map[string]bool{}
	for i, m := range mounts {
		mp := p.Index(i)
		if m.Name == "" {
			errs = append(errs, v.NewRequired(mp.Child("name"), ""))
		} else if vols[m.Name] == nil {
			errs = append(errs, v.NewInvalid(mp.Child("name"), m.Name, "must name a volume of the pod (spec.volumes)"))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, v.NewRequired(mp.Child("mountPath"), ""))
		case !strings.HasPrefix(m.MountPath, "/"):
			errs = append(errs, v.NewInvalid(mp.Child("mountPath"), m.MountPath, "must be an absolute path"))
		case paths[path.Clean(m.MountPath)]:
			errs = append(errs, v.NewInvalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths[path.Clean(m.MountPath)] = true
		if m.SubPath != "" {
			if strings.HasPrefix(m.SubPath, "/") || hasDotDot(m.SubPath) {
				errs = append(errs, v.NewInvalid(mp.Child("subPath"), m.SubPath, "must be a relative path without '..'"))
			}
		}
		switch e := m.SubPathExpr; {
		case e == "":
		case m.SubPath != "":
			errs = append(errs, v.NewInvalid(mp.Child("subPathExpr"), e, "subPathExpr and subPath are mutually exclusive"))
		case strings.HasPrefix(e, "/") || hasDotDot(e):
			// What it expands to is checked again when the container starts.
			errs = append(errs, v.NewInvalid(mp.Child("subPathExpr"), e, "must be a relative path without '..'"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != "None" {
			errs = append(errs, v.NewNotSupported(mp.Child("mountPropagation"), *m.MountPropagation, []string{"None"}))
		}
	}
	return errs
}

func validateEnvFrom(from []EnvFromSource, p *Path) v.ErrorList {
	var errs v.ErrorList
	for i, f := range from {
		fp := p.Index(i)
		if f.Prefix != "" && v.IsEnvVarName(f.Prefix) != "" {
			errs = append(errs, v.NewInvalid(fp.Child("prefix"), f.Prefix, v.IsEnvVarName(f.Prefix)))
		}
		switch {
		case (f.ConfigMapRef == nil) == (f.SecretRef == nil):
			errs = append(errs, v.NewInvalid(fp, "", "must specify exactly one of configMapRef and secretRef"))
		case f.ConfigMapRef != nil:
			errs = append(errs, validateRefName(f.ConfigMapRef.Name, fp.Child("configMapRef", "name"))...)
		default:
			errs = append(errs, validateRefName(f.SecretRef.Name, fp.Child("secretRef", "name"))...)
		}
	}
	return errs
}

// validateEnvSource checks a valueFrom other than fieldRef.
func validateEnvSource(src *EnvVarSource, s *PodSpec, p *Path) v.ErrorList {
	var errs v.ErrorList
	switch {
	case src.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldRef(src.ResourceFieldRef, s, p.Child("resourceFieldRef"))...)
	case src.ConfigMapKeyRef != nil:
		errs = append(errs, validateRefName(src.ConfigMapKeyRef.Name, p.Child("configMapKeyRef", "name"))...)
		errs = append(errs, validateKey(src.ConfigMapKeyRef.Key, p.Child("configMapKeyRef", "key"))...)
	case src.SecretKeyRef != nil:
		errs = append(errs, validateRefName(src.SecretKeyRef.Name, p.Child("secretKeyRef", "name"))...)
		errs = append(errs, validateKey(src.SecretKeyRef.Key, p.Child("secretKeyRef", "key"))...)
	}
	return errs
}

func validateKey(k string, p *Path) v.ErrorList {
	if k == "" {
		return v.ErrorList{v.NewRequired(p, "")}
	}
	return validateConfigKey(k, p)
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// validateTrustBundleProjection: a bundle by name, or by signer with an
// optional label selector (Kubernetes' rules), and a relative path.
func validateTrustBundleProjection(c *ClusterTrustBundleProjection, p *Path) v.ErrorList {
	var errs v.ErrorList
	switch {
	case c.Name != nil && c.SignerName != nil:
		errs = append(errs, v.NewInvalid(p.Child("name"), *c.Name, "only one of name and signerName may be used"))
	case c.Name != nil && c.LabelSelector != nil:
		errs = append(errs, v.NewInvalid(p.Child("labelSelector"), "", "labelSelector may only be used with signerName"))
	case c.Name == nil && c.SignerName == nil:
		errs = append(errs, v.NewRequired(p, "either name or signerName must be set"))
	case c.Name != nil && *c.Name == "":
		errs = append(errs, v.NewRequired(p.Child("name"), ""))
	case c.SignerName != nil && *c.SignerName == "":
		errs = append(errs, v.NewRequired(p.Child("signerName"), ""))
	}
	if c.LabelSelector != nil {
		errs = append(errs, v.ValidateLabelSelector(c.LabelSelector, p.Child("labelSelector"))...)
	}
	return append(errs, validateFilePath(c.Path, p.Child("path"))...)
}

// validatePodCertificateProjection: Kubernetes' rules and words (the
// conformance suite reads "if provided, maxExpirationSeconds must be ...").
func validatePodCertificateProjection(pc *PodCertificateProjection, p *Path) v.ErrorList {
	var errs v.ErrorList
	if pc.SignerName == "" {
		errs = append(errs, v.NewRequired(p.Child("signerName"), ""))
	} else if msg := v.IsSignerName(pc.SignerName); msg != "" {
		errs = append(errs, v.NewInvalid(p.Child("signerName"), pc.SignerName, msg))
	}
	errs = append(errs, certificates.ValidateUserAnnotations(pc.UserAnnotations, p.Child("userAnnotations"))...)
	if !slices.Contains(PodCertificateKeyTypes, pc.KeyType) {
		errs = append(errs, v.NewNotSupported(p.Child("keyType"), pc.KeyType, PodCertificateKeyTypes))
	}
	if e := pc.MaxExpirationSeconds; e != nil {
		if *e < certificates.MinMaxExpirationSeconds {
			errs = append(errs, v.NewInvalid(p.Child("maxExpirationSeconds"), *e, fmt.Sprintf("if provided, maxExpirationSeconds must be >= %d", certificates.MinMaxExpirationSeconds)))
		}
		if max := certificates.MaxExpirationFor(pc.SignerName); *e > max {
			errs = append(errs, v.NewInvalid(p.Child("maxExpirationSeconds"), *e, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", max)))
		}
	}
	n := 0
	for _, f := range []struct{ name, path string }{{"credentialBundlePath", pc.CredentialBundlePath}, {"keyPath", pc.KeyPath}, {"certificateChainPath", pc.CertificateChainPath}} {
		if f.path != "" {
			n++
			errs = append(errs, validateFilePath(f.path, p.Child(f.name))...)
		}
	}
	if n == 0 {
		errs = append(errs, v.NewRequired(p, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
	}
	return errs
}
