// Package storage holds the storage.k8s.io/v1 kinds (Kubernetes'
// k8s.io/api/storage/v1): StorageClass, a named kind of storage — which
// provisioner makes its volumes, with what parameters, when they are bound
// (at once, or once a pod is scheduled), and what happens to them when
// their claim goes; CSINode, the CSI drivers a node has; CSIDriver, what a
// driver declares about itself (lifecycle modes, pod information, fsGroup,
// attach, capacity tracking); CSIStorageCapacity, the capacity a driver
// has left per topology; VolumeAttachment, a request to attach a volume to
// a node; VolumeAttributesClass, a named set of a driver's volume
// attributes.
package storage
