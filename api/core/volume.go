package core

import (
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

// Volume is a directory a pod's containers can mount, and where its
// contents come from (exactly one source).
type Volume struct {
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource is where a volume's contents come from.
type VolumeSource struct {
	// EmptyDir starts empty and lives as long as the pod, on the node's
	// disk or, with medium Memory, in a tmpfs.
	EmptyDir *EmptyDirVolumeSource `json:"emptyDir,omitempty"`
	// HostPath is a file or directory of the node.
	HostPath *HostPathVolumeSource `json:"hostPath,omitempty"`
	// ConfigMap, Secret and DownwardAPI project keys (or pod fields) as
	// files, updated in place when the source changes; Projected combines
	// them in one directory.
	ConfigMap   *ConfigMapVolumeSource   `json:"configMap,omitempty"`
	Secret      *SecretVolumeSource      `json:"secret,omitempty"`
	DownwardAPI *DownwardAPIVolumeSource `json:"downwardAPI,omitempty"`
	Projected   *ProjectedVolumeSource   `json:"projected,omitempty"`
	// PersistentVolumeClaim mounts the volume bound to a claim of the
	// pod's namespace.
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
	// CSI is an inline (ephemeral) volume of a CSI driver: published for
	// the pod by the driver, gone with the pod. The driver's CSIDriver
	// object must list the Ephemeral lifecycle mode.
	CSI *CSIVolumeSource `json:"csi,omitempty"`
}

// CSIVolumeSource is a pod's inline CSI volume: NodePublishVolume is
// called with the volume attributes as its volume context (the driver
// makes the volume from them) and the Secret's data as its secrets.
type CSIVolumeSource struct {
	Driver               string                `json:"driver"`
	ReadOnly             *bool                 `json:"readOnly,omitempty"`
	FSType               *string               `json:"fsType,omitempty"`
	VolumeAttributes     map[string]string     `json:"volumeAttributes,omitempty"`
	NodePublishSecretRef *LocalObjectReference `json:"nodePublishSecretRef,omitempty"`
}

// StorageMedium is where an emptyDir lives: "" (the node's disk) or Memory.
type StorageMedium string

// Storage media.
const (
	StorageMediumDefault StorageMedium = ""
	StorageMediumMemory  StorageMedium = "Memory"
)

// EmptyDirVolumeSource is a scratch directory of the pod.
type EmptyDirVolumeSource struct {
	Medium StorageMedium `json:"medium,omitempty"`
	// SizeLimit bounds the emptyDir: a Memory one is a tmpfs of this size;
	// on disk, the agent evicts a pod whose emptyDir grows past it.
	SizeLimit *resource.Quantity `json:"sizeLimit,omitempty"`
}

// HostPathType says what a hostPath must be (or be made).
type HostPathType string

// Host path types.
const (
	HostPathUnset             HostPathType = ""
	HostPathDirectoryOrCreate HostPathType = "DirectoryOrCreate"
	HostPathDirectory         HostPathType = "Directory"
	HostPathFileOrCreate      HostPathType = "FileOrCreate"
	HostPathFile              HostPathType = "File"
	HostPathSocket            HostPathType = "Socket"
	HostPathCharDev           HostPathType = "CharDevice"
	HostPathBlockDev          HostPathType = "BlockDevice"
)

// HostPathVolumeSource is a path of the node.
type HostPathVolumeSource struct {
	Path string        `json:"path"`
	Type *HostPathType `json:"type,omitempty"`
}

// KeyToPath projects one key to a file (relative path) with a mode.
type KeyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode *int32 `json:"mode,omitempty"`
}

// ConfigMapVolumeSource projects a ConfigMap's keys as files (all of them,
// or Items).
type ConfigMapVolumeSource struct {
	LocalObjectReference `json:",inline"`
	Items                []KeyToPath `json:"items,omitempty"`
	DefaultMode          *int32      `json:"defaultMode,omitempty"`
	Optional             *bool       `json:"optional,omitempty"`
}

// SecretVolumeSource projects a Secret's keys as files, in memory.
type SecretVolumeSource struct {
	SecretName  string      `json:"secretName,omitempty"`
	Items       []KeyToPath `json:"items,omitempty"`
	DefaultMode *int32      `json:"defaultMode,omitempty"`
	Optional    *bool       `json:"optional,omitempty"`
}

// DownwardAPIVolumeFile is one file of pod fields or container resources.
type DownwardAPIVolumeFile struct {
	Path             string                 `json:"path"`
	FieldRef         *ObjectFieldSelector   `json:"fieldRef,omitempty"`
	ResourceFieldRef *ResourceFieldSelector `json:"resourceFieldRef,omitempty"`
	Mode             *int32                 `json:"mode,omitempty"`
}

// DownwardAPIVolumeSource projects the pod's own fields as files.
type DownwardAPIVolumeSource struct {
	Items       []DownwardAPIVolumeFile `json:"items,omitempty"`
	DefaultMode *int32                  `json:"defaultMode,omitempty"`
}

// ProjectedVolumeSource is several sources in one directory.
type ProjectedVolumeSource struct {
	Sources     []VolumeProjection `json:"sources"`
	DefaultMode *int32             `json:"defaultMode,omitempty"`
}

// VolumeProjection is one source of a projected volume.
type VolumeProjection struct {
	ConfigMap   *ConfigMapProjection   `json:"configMap,omitempty"`
	Secret      *SecretProjection      `json:"secret,omitempty"`
	DownwardAPI *DownwardAPIProjection `json:"downwardAPI,omitempty"`
	// ServiceAccountToken is a token of the pod's ServiceAccount, bound
	// to the pod, that the agent requests and refreshes.
	ServiceAccountToken *ServiceAccountTokenProjection `json:"serviceAccountToken,omitempty"`
	// ClusterTrustBundle is the certificates of ClusterTrustBundles, in
	// one file.
	ClusterTrustBundle *ClusterTrustBundleProjection `json:"clusterTrustBundle,omitempty"`
	// PodCertificate is a private key the agent makes and the certificate
	// a signer issues for it (a PodCertificateRequest).
	PodCertificate *PodCertificateProjection `json:"podCertificate,omitempty"`
}

// PodCertificateProjection asks signerName for a certificate for the pod,
// for a key of keyType the agent makes on the node; the key and the chain
// are written to credentialBundlePath (key first, then the chain), or to
// keyPath and certificateChainPath. The pod starts once the certificate
// is issued; the agent asks again before it expires.
type PodCertificateProjection struct {
	SignerName string `json:"signerName"`
	// KeyType is RSA3072, RSA4096, ECDSAP256, ECDSAP384, ECDSAP521 or ED25519.
	KeyType string `json:"keyType"`
	// MaxExpirationSeconds is the longest life asked for (default 86400).
	MaxExpirationSeconds *int32            `json:"maxExpirationSeconds,omitempty"`
	CredentialBundlePath string            `json:"credentialBundlePath,omitempty"`
	KeyPath              string            `json:"keyPath,omitempty"`
	CertificateChainPath string            `json:"certificateChainPath,omitempty"`
	UserAnnotations      map[string]string `json:"userAnnotations,omitempty"`
}

// PodCertificateKeyTypes are the key types a podCertificate may ask for.
var PodCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

// ClusterTrustBundleProjection picks ClusterTrustBundles by name, or by
// signer and a label selector (nil selects none, {} every bundle of the
// signer); their certificates, without duplicates, are written to path.
// Nothing picked fails the volume (the pod waits) unless optional, which
// writes an empty file.
type ClusterTrustBundleProjection struct {
	Name          *string             `json:"name,omitempty"`
	SignerName    *string             `json:"signerName,omitempty"`
	LabelSelector *meta.LabelSelector `json:"labelSelector,omitempty"`
	Optional      *bool               `json:"optional,omitempty"`
	Path          string              `json:"path"`
}

// ConfigMapProjection is a ConfigMap in a projected volume.
type ConfigMapProjection struct {
	LocalObjectReference `json:",inline"`
	Items                []KeyToPath `json:"items,omitempty"`
	Optional             *bool       `json:"optional,omitempty"`
}

// SecretProjection is a Secret in a projected volume.
type SecretProjection struct {
	LocalObjectReference `json:",inline"`
	Items                []KeyToPath `json:"items,omitempty"`
	Optional             *bool       `json:"optional,omitempty"`
}

// DownwardAPIProjection is pod fields in a projected volume.
type DownwardAPIProjection struct {
	Items []DownwardAPIVolumeFile `json:"items,omitempty"`
}

// ServiceAccountTokenProjection is a token for the pod's ServiceAccount:
// for the audience ("": the API server's), valid expirationSeconds (3600
// by default, at least 600), written at path.
type ServiceAccountTokenProjection struct {
	Audience          string `json:"audience,omitempty"`
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
	Path              string `json:"path"`
}

// PersistentVolumeClaimVolumeSource mounts the volume bound to a claim of
// the pod's namespace.
type PersistentVolumeClaimVolumeSource struct {
	ClaimName string `json:"claimName"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// LocalObjectReference names an object of the same namespace.
type LocalObjectReference struct {
	Name string `json:"name,omitempty"`
}

// VolumeMount mounts a volume (or a path in it) into a container.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	// SubPath mounts this path of the volume instead of its root.
	SubPath string `json:"subPath,omitempty"`
	// SubPathExpr is a SubPath with $(VAR) references to the container's
	// environment, expanded by the agent when the container starts.
	SubPathExpr string `json:"subPathExpr,omitempty"`
	// MountPropagation: only None (the default) is supported.
	MountPropagation *string `json:"mountPropagation,omitempty"`
}

// ConfigMapKeySelector picks a key of a ConfigMap.
type ConfigMapKeySelector struct {
	LocalObjectReference `json:",inline"`
	Key                  string `json:"key"`
	Optional             *bool  `json:"optional,omitempty"`
}

// SecretKeySelector picks a key of a Secret.
type SecretKeySelector struct {
	LocalObjectReference `json:",inline"`
	Key                  string `json:"key"`
	Optional             *bool  `json:"optional,omitempty"`
}

// ResourceFieldSelector picks a container's request or limit
// (limits.cpu, requests.memory, ...), in units of Divisor (1 by default).
type ResourceFieldSelector struct {
	ContainerName string             `json:"containerName,omitempty"`
	Resource      string             `json:"resource"`
	Divisor       *resource.Quantity `json:"divisor,omitempty"`
}

// EnvFromSource puts every key of a ConfigMap or Secret in the
// environment, each name prefixed with Prefix.
type EnvFromSource struct {
	Prefix       string              `json:"prefix,omitempty"`
	ConfigMapRef *ConfigMapEnvSource `json:"configMapRef,omitempty"`
	SecretRef    *SecretEnvSource    `json:"secretRef,omitempty"`
}

// ConfigMapEnvSource names a ConfigMap for envFrom.
type ConfigMapEnvSource struct {
	LocalObjectReference `json:",inline"`
	Optional             *bool `json:"optional,omitempty"`
}

// SecretEnvSource names a Secret for envFrom.
type SecretEnvSource struct {
	LocalObjectReference `json:",inline"`
	Optional             *bool `json:"optional,omitempty"`
}
