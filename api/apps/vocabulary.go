package apps

import (
	"strconv"

	"github.com/kobune/kobune/api/meta"
)

// Annotations and labels the Deployment controller writes, with
// Kubernetes' names; kobectl rollout reads them too.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	ChangeCauseAnnotation     = "kubernetes.io/change-cause"
	PodTemplateHashLabel      = "pod-template-hash"
)

// Deployment condition types and reasons, with Kubernetes' names.
const (
	ConditionAvailable   = "Available"
	ConditionProgressing = "Progressing"

	ReasonNewRSAvailable      = "NewReplicaSetAvailable"
	ReasonRSUpdated           = "ReplicaSetUpdated"
	ReasonNewRSCreated        = "NewReplicaSetCreated"
	ReasonDeadlineExceeded    = "ProgressDeadlineExceeded"
	ReasonPaused              = "DeploymentPaused"
	ReasonResumed             = "DeploymentResumed"
	ReasonMinimumAvailable    = "MinimumReplicasAvailable"
	ReasonMinimumNotAvailable = "MinimumReplicasUnavailable"
)

// ReplicaFailure is the condition of a ReplicaSet that could not create or
// delete a pod (a quota refused it, say), and of its Deployment; it goes
// when the ReplicaSet's next pass succeeds.
const (
	ConditionReplicaFailure = "ReplicaFailure"
	ReasonFailedCreate      = "FailedCreate"
	ReasonFailedDelete      = "FailedDelete"
)

// Revision reads an object's revision annotation (0 if none).
func Revision(o meta.Object) int64 {
	v, _ := strconv.ParseInt(o.GetObjectMeta().Annotations[RevisionAnnotation], 10, 64)
	return v
}
