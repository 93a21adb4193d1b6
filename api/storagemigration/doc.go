// Package storagemigration holds StorageVersionMigration
// ("storagemigration.k8s.io/v1"): a request to rewrite every stored
// object of one resource, so that each is stored at the resource's
// current storage version (after a CustomResourceDefinition's storage
// version moved, before the old version is dropped from
// status.storedVersions). kobune-controller's storage-version-migrator
// does the rewriting and reports it in the status conditions. It mirrors
// k8s.io/api/storagemigration/v1 and its validation.
package storagemigration
