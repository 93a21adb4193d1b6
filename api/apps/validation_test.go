package apps

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

func validDeployment() *Deployment {
	d := &Deployment{
		ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: DeploymentSpec{
			Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: core.PodTemplateSpec{
				ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       core.PodSpec{Containers: []core.Container{{Name: "app", Image: "i"}}},
			},
		},
	}
	SetDefaultsDeployment(d)
	return d
}

func TestDeploymentDefaults(t *testing.T) {
	d := validDeployment()
	ru := d.Spec.Strategy.RollingUpdate
	if *d.Spec.Replicas != 1 || ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%" || *d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Errorf("defaults: replicas %d surge %s unavailable %s", *d.Spec.Replicas, ru.MaxSurge, ru.MaxUnavailable)
	}
}

func TestValidateDeployment(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Deployment)
		want   string
	}{
		{"valid", func(*Deployment) {}, ""},
		{"negative replicas", func(d *Deployment) { r := int32(-1); d.Spec.Replicas = &r }, "spec.replicas: Invalid value: -1"},
		{"selector does not match", func(d *Deployment) { d.Spec.Template.Labels = map[string]string{"app": "api"} }, "does not match template `labels`"},
		{"missing selector", func(d *Deployment) { d.Spec.Selector = nil }, "spec.selector: Required value"},
		{"surge and unavailable both zero", func(d *Deployment) {
			z := meta.FromInt(0)
			d.Spec.Strategy.RollingUpdate = &RollingUpdateDeployment{MaxSurge: &z, MaxUnavailable: &z}
		}, "maxUnavailable: Invalid value: \"0\": may not be 0 when `maxSurge` is 0"},
		{"bad percentage", func(d *Deployment) {
			p := meta.FromString("150%")
			d.Spec.Strategy.RollingUpdate.MaxSurge = &p
		}, "maxSurge: Invalid value: \"150%\""},
		{"restart policy never", func(d *Deployment) { d.Spec.Template.Spec.RestartPolicy = core.RestartPolicyNever }, `spec.template.spec.restartPolicy: Unsupported value: "Never"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := validDeployment()
			tt.mutate(d)
			err := ValidateDeployment(d).ToError()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestScaledValue(t *testing.T) {
	pct := meta.FromString("25%")
	if up, _ := pct.ScaledValue(10, true); up != 3 {
		t.Errorf("25%% of 10 rounded up = %d, want 3", up)
	}
	if down, _ := pct.ScaledValue(10, false); down != 2 {
		t.Errorf("25%% of 10 rounded down = %d, want 2", down)
	}
}
