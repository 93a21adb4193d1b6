package core

// PodReference is an object a pod names and needs to run: a ConfigMap or
// Secret in its env or volumes, a PersistentVolumeClaim it mounts, its
// ServiceAccount. All are in the pod's namespace.
type PodReference struct {
	Kind string // "ConfigMap", "Secret", "PersistentVolumeClaim", "ServiceAccount"
	Name string
}

// PodReferences lists what pod names, each once, in the order it names
// them. The agent watches exactly these for the pods bound to its node,
// and the API server's node authorizer lets a node read exactly these (as
// Kubernetes' node authorizer follows its graph of pods to Secrets,
// ConfigMaps and claims).
func PodReferences(pod *Pod) []PodReference {
	seen := map[PodReference]bool{}
	var out []PodReference
	add := func(kind, name string) {
		r := PodReference{kind, name}
		if name != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, list := range [][]Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					add("ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name)
				}
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					add("Secret", e.ValueFrom.SecretKeyRef.Name)
				}
			}
			for _, f := range c.EnvFrom {
				if f.ConfigMapRef != nil {
					add("ConfigMap", f.ConfigMapRef.Name)
				}
				if f.SecretRef != nil {
					add("Secret", f.SecretRef.Name)
				}
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add("ConfigMap", v.ConfigMap.Name)
		case v.Secret != nil:
			add("Secret", v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			add("PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName)
		case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			add("Secret", v.CSI.NodePublishSecretRef.Name)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add("ConfigMap", s.ConfigMap.Name)
				}
				if s.Secret != nil {
					add("Secret", s.Secret.Name)
				}
			}
		}
	}
	add("ServiceAccount", PodServiceAccount(pod))
	return out
}
