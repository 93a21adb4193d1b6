package controller

import (
	"context"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/api/storagemigration"
	"github.com/kobune/kobune/client"
)

// IndexByOwner indexes objects by the uid of each of their owners, so a
// controller finds the pods of a ReplicaSet (and the garbage collector
// the dependents of anything) without scanning the namespace.
const IndexByOwner = "metadata.ownerReferences.uid"

// OwnerUIDs is the index function for IndexByOwner.
func OwnerUIDs[T meta.Object](o T) []string {
	refs := o.GetObjectMeta().OwnerReferences
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.UID
	}
	return out
}

// Informers are the shared informers, one per kind: every controller
// reads its caches and adds its handlers before Run.
type Informers struct {
	Pods        *client.Informer[*core.Pod]
	Nodes       *client.Informer[*core.Node]
	Leases      *client.Informer[*coordination.Lease]
	ReplicaSets *client.Informer[*apps.ReplicaSet]
	// ReplicationControllers are core/v1's ReplicaSets of old.
	ReplicationControllers *client.Informer[*core.ReplicationController]
	Deployments            *client.Informer[*apps.Deployment]
	DaemonSets             *client.Informer[*apps.DaemonSet]
	StatefulSets           *client.Informer[*apps.StatefulSet]
	// Revisions are the ControllerRevisions of DaemonSets and StatefulSets.
	Revisions       *client.Informer[*apps.ControllerRevision]
	Jobs            *client.Informer[*batch.Job]
	CronJobs        *client.Informer[*batch.CronJob]
	Services        *client.Informer[*core.Service]
	Endpoints       *client.Informer[*core.Endpoints]
	EndpointSlices  *client.Informer[*discovery.EndpointSlice]
	Volumes         *client.Informer[*core.PersistentVolume]
	Claims          *client.Informer[*core.PersistentVolumeClaim]
	StorageClasses  *client.Informer[*storage.StorageClass]
	ClusterRoles    *client.Informer[*rbac.ClusterRole]
	Namespaces      *client.Informer[*core.Namespace]
	ServiceAccounts *client.Informer[*core.ServiceAccount]
	// RootCAConfigMaps are only the kube-root-ca.crt ConfigMaps (a field
	// selector): the controller reads no other ConfigMap.
	RootCAConfigMaps *client.Informer[*core.ConfigMap]
	CSRs             *client.Informer[*certificates.CertificateSigningRequest]
	// BootstrapTokens are kube-system's bootstrap-token Secrets only and
	// ClusterInfo kube-public's cluster-info only (the bootstrap signer's
	// and the token cleaner's; their roles let them read nothing else).
	BootstrapTokens *client.Informer[*core.Secret]
	ClusterInfo     *client.Informer[*core.ConfigMap]
	Quotas          *client.Informer[*core.ResourceQuota]
	HPAs            *client.Informer[*autoscaling.HorizontalPodAutoscaler]
	PDBs            *client.Informer[*policy.PodDisruptionBudget]
	// StorageVersionMigrations are the storage-version-migrator's.
	StorageVersionMigrations *client.Informer[*storagemigration.StorageVersionMigration]
	// ServiceCIDRs and IPAddresses are the service-cidrs controller's.
	ServiceCIDRs *client.Informer[*networking.ServiceCIDR]
	IPAddresses  *client.Informer[*networking.IPAddress]
}

// NewInformers creates the informers (not yet running).
func NewInformers(c *client.Client) *Informers {
	inf := &Informers{
		Pods:                   client.NewInformer(client.For[*core.Pod](c), "", client.ListOptions{}),
		Nodes:                  client.NewInformer(client.For[*core.Node](c), "", client.ListOptions{}),
		Leases:                 client.NewInformer(client.For[*coordination.Lease](c), "kube-node-lease", client.ListOptions{}),
		ReplicaSets:            client.NewInformer(client.For[*apps.ReplicaSet](c), "", client.ListOptions{}),
		ReplicationControllers: client.NewInformer(client.For[*core.ReplicationController](c), "", client.ListOptions{}),
		Deployments:            client.NewInformer(client.For[*apps.Deployment](c), "", client.ListOptions{}),
		DaemonSets:             client.NewInformer(client.For[*apps.DaemonSet](c), "", client.ListOptions{}),
		StatefulSets:           client.NewInformer(client.For[*apps.StatefulSet](c), "", client.ListOptions{}),
		Revisions:              client.NewInformer(client.For[*apps.ControllerRevision](c), "", client.ListOptions{}),
		Jobs:                   client.NewInformer(client.For[*batch.Job](c), "", client.ListOptions{}),
		CronJobs:               client.NewInformer(client.For[*batch.CronJob](c), "", client.ListOptions{}),
		Services:               client.NewInformer(client.For[*core.Service](c), "", client.ListOptions{}),
		Endpoints:              client.NewInformer(client.For[*core.Endpoints](c), "", client.ListOptions{}),
		EndpointSlices:         client.NewInformer(client.For[*discovery.EndpointSlice](c), "", client.ListOptions{}),
		Volumes:                client.NewInformer(client.For[*core.PersistentVolume](c), "", client.ListOptions{}),
		Claims:                 client.NewInformer(client.For[*core.PersistentVolumeClaim](c), "", client.ListOptions{}),
		StorageClasses:         client.NewInformer(client.For[*storage.StorageClass](c), "", client.ListOptions{}),
		ClusterRoles:           client.NewInformer(client.For[*rbac.ClusterRole](c), "", client.ListOptions{}),
		Namespaces:             client.NewInformer(client.For[*core.Namespace](c), "", client.ListOptions{}),
		ServiceAccounts:        client.NewInformer(client.For[*core.ServiceAccount](c), "", client.ListOptions{}),
		RootCAConfigMaps:       client.NewInformer(client.For[*core.ConfigMap](c), "", client.ListOptions{FieldSelector: "metadata.name=" + core.RootCAConfigMapName}),
		CSRs:                   client.NewInformer(client.For[*certificates.CertificateSigningRequest](c), "", client.ListOptions{}),
		BootstrapTokens: client.NewInformer(client.For[*core.Secret](c), client.BootstrapTokenNamespace,
			client.ListOptions{FieldSelector: "type=" + client.BootstrapTokenSecretType}),
		ClusterInfo:              client.NewInformer(client.For[*core.ConfigMap](c), client.ClusterInfoNamespace, client.ListOptions{FieldSelector: "metadata.name=" + client.ClusterInfoName}),
		Quotas:                   client.NewInformer(client.For[*core.ResourceQuota](c), "", client.ListOptions{}),
		HPAs:                     client.NewInformer(client.For[*autoscaling.HorizontalPodAutoscaler](c), "", client.ListOptions{}),
		PDBs:                     client.NewInformer(client.For[*policy.PodDisruptionBudget](c), "", client.ListOptions{}),
		StorageVersionMigrations: client.NewInformer(client.For[*storagemigration.StorageVersionMigration](c), "", client.ListOptions{}),
		ServiceCIDRs:             client.NewInformer(client.For[*networking.ServiceCIDR](c), "", client.ListOptions{}),
		IPAddresses:              client.NewInformer(client.For[*networking.IPAddress](c), "", client.ListOptions{}),
	}
	inf.Pods.AddIndex(IndexByOwner, OwnerUIDs[*core.Pod])
	inf.Pods.AddIndex(client.IndexByNodeName, client.IndexNodeName)
	inf.ReplicaSets.AddIndex(IndexByOwner, OwnerUIDs[*apps.ReplicaSet])
	inf.ReplicationControllers.AddIndex(IndexByOwner, OwnerUIDs[*core.ReplicationController])
	inf.Deployments.AddIndex(IndexByOwner, OwnerUIDs[*apps.Deployment])
	inf.DaemonSets.AddIndex(IndexByOwner, OwnerUIDs[*apps.DaemonSet])
	inf.StatefulSets.AddIndex(IndexByOwner, OwnerUIDs[*apps.StatefulSet])
	inf.Revisions.AddIndex(IndexByOwner, OwnerUIDs[*apps.ControllerRevision])
	inf.Jobs.AddIndex(IndexByOwner, OwnerUIDs[*batch.Job])
	inf.CronJobs.AddIndex(IndexByOwner, OwnerUIDs[*batch.CronJob])
	inf.Services.AddIndex(IndexByOwner, OwnerUIDs[*core.Service])
	inf.Endpoints.AddIndex(IndexByOwner, OwnerUIDs[*core.Endpoints])
	inf.EndpointSlices.AddIndex(IndexByOwner, OwnerUIDs[*discovery.EndpointSlice])
	return inf
}

// Run runs every informer until ctx ends.
func (i *Informers) Run(ctx context.Context) {
	go i.Pods.Run(ctx)
	go i.Nodes.Run(ctx)
	go i.Leases.Run(ctx)
	go i.ReplicaSets.Run(ctx)
	go i.ReplicationControllers.Run(ctx)
	go i.Deployments.Run(ctx)
	go i.DaemonSets.Run(ctx)
	go i.StatefulSets.Run(ctx)
	go i.Revisions.Run(ctx)
	go i.Jobs.Run(ctx)
	go i.CronJobs.Run(ctx)
	go i.Services.Run(ctx)
	go i.Endpoints.Run(ctx)
	go i.EndpointSlices.Run(ctx)
	go i.Volumes.Run(ctx)
	go i.Claims.Run(ctx)
	go i.StorageClasses.Run(ctx)
	go i.ClusterRoles.Run(ctx)
	go i.Namespaces.Run(ctx)
	go i.ServiceAccounts.Run(ctx)
	go i.RootCAConfigMaps.Run(ctx)
	go i.CSRs.Run(ctx)
	go i.BootstrapTokens.Run(ctx)
	go i.ClusterInfo.Run(ctx)
	go i.Quotas.Run(ctx)
	go i.HPAs.Run(ctx)
	go i.PDBs.Run(ctx)
	go i.StorageVersionMigrations.Run(ctx)
	go i.ServiceCIDRs.Run(ctx)
	go i.IPAddresses.Run(ctx)
}

// Synced reports whether every informer has listed once.
func (i *Informers) Synced() bool {
	for _, s := range i.synced() {
		if !s() {
			return false
		}
	}
	return true
}

// WaitForSync blocks until every informer has listed once, or ctx ends.
func (i *Informers) WaitForSync(ctx context.Context) bool {
	return client.WaitForSync(ctx, i.synced()...)
}

func (i *Informers) synced() []func() bool {
	return []func() bool{i.Pods.HasSynced, i.Nodes.HasSynced, i.Leases.HasSynced, i.ReplicaSets.HasSynced, i.ReplicationControllers.HasSynced, i.Deployments.HasSynced,
		i.DaemonSets.HasSynced, i.StatefulSets.HasSynced, i.Revisions.HasSynced, i.Jobs.HasSynced, i.CronJobs.HasSynced,
		i.Services.HasSynced, i.Endpoints.HasSynced, i.EndpointSlices.HasSynced, i.Volumes.HasSynced, i.Claims.HasSynced, i.StorageClasses.HasSynced,
		i.ClusterRoles.HasSynced, i.Namespaces.HasSynced, i.ServiceAccounts.HasSynced, i.RootCAConfigMaps.HasSynced, i.CSRs.HasSynced, i.BootstrapTokens.HasSynced, i.ClusterInfo.HasSynced, i.Quotas.HasSynced, i.HPAs.HasSynced, i.PDBs.HasSynced,
		i.StorageVersionMigrations.HasSynced, i.ServiceCIDRs.HasSynced, i.IPAddresses.HasSynced}
}
