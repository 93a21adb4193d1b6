// Package controller will hold kobune-controller, Kobune's counterpart of kube-controller-manager: it will run the Deployment, ReplicaSet, ... reconcilers.
//
// Not implemented yet (issue #5): the kobune-controller binary only connects to
// the API server and says that it does nothing.
package controller
