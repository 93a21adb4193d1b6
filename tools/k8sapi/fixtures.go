package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// writeFixtures writes objects in Kubernetes' protobuf encoding (NAME.pb)
// beside their JSON (NAME.json), made by k8s.io/apimachinery's own
// serializers, for api/k8sapi's protobuf decoder tests.
func writeFixtures(s *runtime.Scheme, dir string) error {
	replicas, zero := int32(3), int32(0)
	grace := int64(30)
	created := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	objs := map[string]runtime.Object{
		"deployment": &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}, CreationTimestamp: created},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}},
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: &intstr.IntOrString{Type: intstr.String, StrVal: "25%"}, MaxUnavailable: &intstr.IntOrString{IntVal: 0}}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "a"}},
					Spec: corev1.PodSpec{
						TerminationGracePeriodSeconds: &grace,
						Containers: []corev1.Container{{
							Name: "app", Image: "kobune.local/labapp:1.0", Args: []string{"-listen", ":8080"},
							Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
							Env:   []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
								Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
							ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 2},
						}},
					},
				},
			},
		},
		"scaled-to-zero": &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "idle"},
			Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "idle"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "idle"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "i"}}}}},
		},
		"secret": &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Data:       map[string][]byte{"password": []byte("hunter2\x00\xff")}, StringData: map[string]string{"user": "admin"}, Type: corev1.SecretTypeOpaque,
		},
		"selfsubjectaccessreview": &authorizationv1.SelfSubjectAccessReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SelfSubjectAccessReview"},
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: "default", Verb: "create", Resource: "pods"}},
		},
		"service": &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), NodePort: 30080, Protocol: corev1.ProtocolTCP}}},
		},
	}
	pb := protobuf.NewSerializer(s, s)
	for name, o := range objs {
		f, err := os.Create(filepath.Join(dir, name+".pb"))
		if err != nil {
			return err
		}
		if err := pb.Encode(o, f); err != nil {
			return err
		}
		f.Close()
		j, err := json.MarshalIndent(o, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), append(j, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
