package admission

import (
	"context"
	"crypto/rand"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
)

// ServiceAccountGetter finds a ServiceAccount.
type ServiceAccountGetter interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*core.ServiceAccount, bool, error)
}

// ServiceAccount is Kubernetes' ServiceAccount admission: a new pod runs
// as "default" unless it names a ServiceAccount (which must exist), and —
// unless the pod or its ServiceAccount says automountServiceAccountToken:
// false — gets a projected volume kube-api-access-<random> mounted
// read-only in every container at
// /var/run/secrets/kubernetes.io/serviceaccount: a token bound to the pod
// (refreshed by the agent before it expires), the cluster CA (ca.crt,
// from the kube-root-ca.crt ConfigMap) and the namespace. Kobune lets a
// pod of the "default" ServiceAccount in before kobune-controller has
// made it: the agent waits for it when it asks for the token.
type ServiceAccount struct {
	Accounts ServiceAccountGetter
	// Tokens is false when the API server issues none: then nothing is
	// mounted (it could never be filled).
	Tokens bool
}

// Name implements Mutator.
func (ServiceAccount) Name() string { return "ServiceAccount" }

// tokenSeconds is the projected token's lifetime: Kubernetes' 3607.
const tokenSeconds = 3607

// Admit implements Mutator.
func (sa ServiceAccount) Admit(ctx context.Context, a *Attributes) error {
	pod, ok := a.Object.(*core.Pod)
	if !ok || a.Operation != Create {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = core.DefaultServiceAccountName
	}
	acct, found, err := sa.Accounts.ServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return status.Errorf(codes.Unavailable, "error looking up service account %s/%s: %v", pod.Namespace, pod.Spec.ServiceAccountName, err)
	}
	if !found && pod.Spec.ServiceAccountName != core.DefaultServiceAccountName {
		return status.Errorf(codes.PermissionDenied, "pods %q is forbidden: error looking up service account %s/%s: serviceaccount %q not found (create it first: kobectl create serviceaccount %s -n %s)",
			pod.Name, pod.Namespace, pod.Spec.ServiceAccountName, pod.Spec.ServiceAccountName, pod.Spec.ServiceAccountName, pod.Namespace)
	}
	mount := true
	switch {
	case pod.Spec.AutomountServiceAccountToken != nil:
		mount = *pod.Spec.AutomountServiceAccountToken
	case found && acct.AutomountServiceAccountToken != nil:
		mount = *acct.AutomountServiceAccountToken
	}
	if !mount || !sa.Tokens || mountsAt(pod, core.ServiceAccountTokenMountPath) {
		return nil
	}
	name := "kube-api-access-" + randomName(5)
	exp, mode := int64(tokenSeconds), int32(0o644)
	pod.Spec.Volumes = append(pod.Spec.Volumes, core.Volume{Name: name, VolumeSource: core.VolumeSource{Projected: &core.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []core.VolumeProjection{
			{ServiceAccountToken: &core.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"}},
			{ConfigMap: &core.ConfigMapProjection{LocalObjectReference: core.LocalObjectReference{Name: core.RootCAConfigMapName},
				Items: []core.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &core.DownwardAPIProjection{Items: []core.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &core.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}})
	m := core.VolumeMount{Name: name, MountPath: core.ServiceAccountTokenMountPath, ReadOnly: true}
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].VolumeMounts = append(pod.Spec.InitContainers[i].VolumeMounts, m)
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts, m)
	}
	return nil
}

// mountsAt: some container already mounts something at path.
func mountsAt(pod *core.Pod, path string) bool {
	for _, list := range [][]core.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, m := range c.VolumeMounts {
				if m.MountPath == path {
					return true
				}
			}
		}
	}
	return false
}

func randomName(n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
