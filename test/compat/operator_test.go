package compat

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The Website kind of a kubebuilder-layout operator: Go types with their
// deep copies (what controller-gen writes), a reconciler that keeps a
// Deployment for each Website, owned by it, reports readiness in status,
// and cleans up behind a finalizer; and a validating webhook.

var websiteGV = schema.GroupVersion{Group: "web.example.com", Version: "v1"}

type WebsiteSpec struct {
	Domain   string `json:"domain"`
	Replicas int32  `json:"replicas,omitempty"`
}

type WebsiteStatus struct {
	ReadyReplicas int32              `json:"readyReplicas,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
}

type Website struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WebsiteSpec   `json:"spec,omitempty"`
	Status            WebsiteStatus `json:"status,omitempty"`
}

type WebsiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Website `json:"items"`
}

func (w *Website) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Status.Conditions = append([]metav1.Condition(nil), w.Status.Conditions...)
	return &c
}

func (l *WebsiteList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = make([]Website, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*Website)
	}
	return &c
}

const websiteFinalizer = "web.example.com/cleanup"

type websiteReconciler struct {
	client.Client
	cleaned chan string
}

func (r *websiteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var site Website
	if err := r.Get(ctx, req.NamespacedName, &site); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !site.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(&site, websiteFinalizer) {
			r.cleaned <- site.Name
			controllerutil.RemoveFinalizer(&site, websiteFinalizer)
			return ctrl.Result{}, r.Update(ctx, &site)
		}
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(&site, websiteFinalizer) {
		if err := r.Update(ctx, &site); err != nil {
			return ctrl.Result{}, err
		}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: site.Name, Namespace: site.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, d, func() error {
		replicas := max(site.Spec.Replicas, 1)
		labels := map[string]string{"website": site.Name}
		d.Spec.Replicas = &replicas
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		d.Spec.Template.Labels = labels
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: "kobune.local/labapp:1.0"}}
		return controllerutil.SetControllerReference(&site, d, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	site.Status.ReadyReplicas = d.Status.ReadyReplicas
	cond := metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "Waiting", Message: "waiting for the Deployment", ObservedGeneration: site.Generation}
	if d.Status.ReadyReplicas >= *d.Spec.Replicas {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Ready", "every replica is ready"
	}
	setCondition(&site.Status.Conditions, cond)
	return ctrl.Result{}, r.Status().Update(ctx, &site)
}

func setCondition(conds *[]metav1.Condition, c metav1.Condition) {
	for i := range *conds {
		if (*conds)[i].Type == c.Type {
			if (*conds)[i].Status != c.Status {
				c.LastTransitionTime = metav1.Now()
			} else {
				c.LastTransitionTime = (*conds)[i].LastTransitionTime
			}
			(*conds)[i] = c
			return
		}
	}
	c.LastTransitionTime = metav1.Now()
	*conds = append(*conds, c)
}

// websiteValidator refuses a domain outside example.com.
type websiteValidator struct{}

func (websiteValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	var site Website
	if err := (admission.NewDecoder(runtime.NewScheme())).DecodeRaw(req.Object, &site); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !strings.HasSuffix(site.Spec.Domain, ".example.com") {
		return admission.Denied(fmt.Sprintf("domain %q is not under example.com", site.Spec.Domain))
	}
	return admission.Allowed("")
}

// TestControllerRuntimeOperator (issue #36): a controller-runtime operator
// with a CRD, a status subresource, a finalizer, owner references and a
// validating webhook runs against Kobune unchanged: it reconciles a
// Website into a Deployment it owns, reports readiness in status, its
// webhook refuses a bad Website, and deleting a Website runs its
// finalizer and then takes the Deployment with it.
func TestControllerRuntimeOperator(t *testing.T) {
	s := newSession(t, 1)
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	log.SetLogger(zap.New(zap.WriteTo(testWriter{t}), zap.UseDevMode(false)))
	sch := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(sch))
	must(t, apiextensionsv1.AddToScheme(sch))
	sch.AddKnownTypes(websiteGV, &Website{}, &WebsiteList{})
	metav1.AddToGroupVersion(sch, websiteGV)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	c, err := client.New(cfg, client.Options{Scheme: sch})
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "websites.web.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: websiteGV.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "websites", Singular: "website", Kind: "Website", ListKind: "WebsiteList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Required: []string{"domain"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"domain": {Type: "string"}, "replicas": {Type: "integer", Minimum: ptrTo(0.0)}}},
						"status": {Type: "object", XPreserveUnknownFields: ptrTo(true)}}}}}}}}
	if err := c.Create(ctx, crd); err != nil {
		t.Fatalf("create the CRD: %v", err)
	}
	waitUntil(t, "the CRD Established", func() bool {
		var got apiextensionsv1.CustomResourceDefinition
		if c.Get(ctx, types.NamespacedName{Name: crd.Name}, &got) != nil {
			return false
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})

	certDir, caPEM := webhookCert(t)
	port := freePort(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: sch, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})})
	if err != nil {
		t.Fatal(err)
	}
	cleaned := make(chan string, 4)
	r := &websiteReconciler{Client: mgr.GetClient(), cleaned: cleaned}
	if err := ctrl.NewControllerManagedBy(mgr).For(&Website{}).Owns(&appsv1.Deployment{}).Complete(r); err != nil {
		t.Fatal(err)
	}
	mgr.GetWebhookServer().Register("/validate-website", &webhook.Admission{Handler: websiteValidator{}})
	go func() {
		if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("manager: %v", err)
		}
	}()
	waitUntil(t, "the webhook server listening", func() bool { return mgr.GetWebhookServer().StartedChecker()(nil) == nil })
	url := fmt.Sprintf("https://127.0.0.1:%d/validate-website", port)
	none, fail := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "websites"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "vwebsite.web.example.com", SideEffects: &none, FailurePolicy: &fail,
			AdmissionReviewVersions: []string{"v1"}, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{websiteGV.Group}, APIVersions: []string{"v1"}, Resources: []string{"websites"}}}}}}}
	if err := c.Create(ctx, vwc); err != nil {
		t.Fatalf("create the webhook configuration: %v", err)
	}

	bad := &Website{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default"}, Spec: WebsiteSpec{Domain: "evil.test"}}
	waitUntil(t, "the webhook refusing a Website outside example.com", func() bool {
		err := c.Create(ctx, bad)
		if err == nil {
			_ = c.Delete(ctx, bad)
			return false
		}
		return strings.Contains(err.Error(), `domain "evil.test" is not under example.com`)
	})
	site := &Website{ObjectMeta: metav1.ObjectMeta{Name: "blog", Namespace: "default"}, Spec: WebsiteSpec{Domain: "blog.example.com", Replicas: 2}}
	if err := c.Create(ctx, site); err != nil {
		t.Fatalf("create a Website: %v", err)
	}
	var d appsv1.Deployment
	waitUntil(t, "the Website's Deployment, owned by it", func() bool {
		if c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "blog"}, &d) != nil {
			return false
		}
		ref := metav1.GetControllerOf(&d)
		return ref != nil && ref.Kind == "Website" && ref.UID == site.UID
	})
	waitUntil(t, "the Website Available with 2 ready replicas", func() bool {
		var got Website
		if c.Get(ctx, client.ObjectKeyFromObject(site), &got) != nil {
			return false
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == "Available" && cond.Status == metav1.ConditionTrue && got.Status.ReadyReplicas == 2 {
				return controllerutil.ContainsFinalizer(&got, websiteFinalizer)
			}
		}
		return false
	})
	if err := c.Delete(ctx, site); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-cleaned:
		if name != "blog" {
			t.Errorf("cleaned %s", name)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the finalizer never ran")
	}
	waitUntil(t, "the Website gone, and its Deployment after it", func() bool {
		err1 := c.Get(ctx, client.ObjectKeyFromObject(site), &Website{})
		err2 := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "blog"}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2)
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptrTo[T any](v T) *T { return &v }

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(45 * time.Second); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 45 s", what)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// webhookCert writes a self-signed serving certificate for 127.0.0.1
// where controller-runtime's webhook server reads it, and returns its PEM
// (the caBundle).
func webhookCert(t *testing.T) (string, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	must(t, os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	return dir, certPEM
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
