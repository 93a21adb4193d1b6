package apps

import (
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

func int32Ptr(i int32) *int32 { return &i }

func intOrStrPtr(v meta.IntOrString) *meta.IntOrString { return &v }

// SetDefaultsReplicaSet defaults replicas to 1 and the pod template.
func SetDefaultsReplicaSet(rs *ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = int32Ptr(1)
	}
	core.SetDefaultsPodSpec(&rs.Spec.Template.Spec)
}

// SetDefaultsDeployment applies Kubernetes' defaults: 1 replica,
// RollingUpdate with 25% surge and 25% unavailable, 10 revisions of
// history, a 600 s progress deadline.
func SetDefaultsDeployment(d *Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = int32Ptr(1)
	}
	s := &d.Spec.Strategy
	if s.Type == "" {
		s.Type = RollingUpdateDeploymentStrategyType
	}
	if s.Type == RollingUpdateDeploymentStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &RollingUpdateDeployment{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = intOrStrPtr(meta.FromString("25%"))
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = intOrStrPtr(meta.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = int32Ptr(600)
	}
	core.SetDefaultsPodSpec(&d.Spec.Template.Spec)
}

// SetDefaultsDaemonSet defaults to RollingUpdate with maxUnavailable 1.
func SetDefaultsDaemonSet(ds *DaemonSet) {
	u := &ds.Spec.UpdateStrategy
	if u.Type == "" {
		u.Type = "RollingUpdate"
	}
	if u.Type == "RollingUpdate" {
		if u.RollingUpdate == nil {
			u.RollingUpdate = &RollingUpdateDaemonSet{}
		}
		if u.RollingUpdate.MaxUnavailable == nil {
			u.RollingUpdate.MaxUnavailable = intOrStrPtr(meta.FromInt(1))
		}
		if u.RollingUpdate.MaxSurge == nil {
			u.RollingUpdate.MaxSurge = intOrStrPtr(meta.FromInt(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	core.SetDefaultsPodSpec(&ds.Spec.Template.Spec)
}

// SetDefaultsStatefulSet defaults to OrderedReady and RollingUpdate with partition 0.
func SetDefaultsStatefulSet(ss *StatefulSet) {
	if ss.Spec.Replicas == nil {
		ss.Spec.Replicas = int32Ptr(1)
	}
	if ss.Spec.PodManagementPolicy == "" {
		ss.Spec.PodManagementPolicy = "OrderedReady"
	}
	u := &ss.Spec.UpdateStrategy
	if u.Type == "" {
		u.Type = "RollingUpdate"
	}
	if u.Type == "RollingUpdate" {
		if u.RollingUpdate == nil {
			u.RollingUpdate = &RollingUpdateStatefulSetStrategy{}
		}
		if u.RollingUpdate.Partition == nil {
			u.RollingUpdate.Partition = int32Ptr(0)
		}
	}
	if ss.Spec.RevisionHistoryLimit == nil {
		ss.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	core.SetDefaultsPodSpec(&ss.Spec.Template.Spec)
}
