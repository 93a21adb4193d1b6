// Package scheduler will hold kobune-scheduler, Kobune's counterpart of kube-scheduler: it will filter and score nodes and bind pending pods.
//
// Not implemented yet (issue #4): the kobune-scheduler binary only connects to
// the API server and says that it does nothing.
package scheduler
