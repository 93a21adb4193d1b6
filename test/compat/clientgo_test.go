package compat

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
)

func clientset(t *testing.T, s *session, protobuf bool) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if protobuf {
		// What Kubernetes' own components use: protobuf bodies, any answer.
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return kubernetes.NewForConfigOrDie(cfg)
}

func mustCreateNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestClientGoInformerAndStatusController is a tiny controller written as
// Kubernetes controllers are: a shared informer, a work queue, and status
// updates retried on conflict while another writer keeps changing the
// same objects. Every Service must end with its status set, as seen
// through the informer's cache.
func TestClientGoInformerAndStatusController(t *testing.T) {
	s := newSession(t, 1)
	cs := clientset(t, s, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustCreateNamespace(t, cs, "ctl")

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("ctl"))
	services := factory.Core().V1().Services()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	_, _ = services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), services.Informer().HasSynced) {
		t.Fatal("informer did not sync")
	}
	var conflicts atomic.Int32
	reconcile := func(key string) error {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		svc, err := services.Lister().Services(ns).Get(name)
		if apierrors.IsNotFound(err) || err == nil && len(svc.Status.LoadBalancer.Ingress) > 0 {
			return nil
		}
		if err != nil {
			return err
		}
		first := true
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if !first {
				conflicts.Add(1)
				if svc, err = cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
					return err
				}
			}
			first = false
			svc = svc.DeepCopy()
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.10"}}
			_, err := cs.CoreV1().Services(ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{})
			return err
		})
	}
	go func() {
		for {
			key, quit := queue.Get()
			if quit {
				return
			}
			if err := reconcile(key); err != nil {
				queue.AddRateLimited(key)
			} else {
				queue.Forget(key)
			}
			queue.Done(key)
		}
	}()

	const n = 6
	var wg sync.WaitGroup
	for i := range n {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("lb-%d", i)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "x"}, Ports: []corev1.ServicePort{{Port: 80}}}}
		if _, err := cs.CoreV1().Services("ctl").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Another writer changes the same object meanwhile.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
					cur, err := cs.CoreV1().Services("ctl").Get(ctx, svc.Name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					cur.Labels = map[string]string{"touched": fmt.Sprint(j)}
					_, err = cs.CoreV1().Services("ctl").Update(ctx, cur, metav1.UpdateOptions{})
					return err
				})
			}
		}()
	}
	wg.Wait()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		list, err := services.Lister().Services("ctl").List(labels.Everything())
		if err != nil || len(list) != n {
			return false, err
		}
		for _, svc := range list {
			if len(svc.Status.LoadBalancer.Ingress) == 0 || svc.Labels["touched"] != "9" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		list, _ := cs.CoreV1().Services("ctl").List(ctx, metav1.ListOptions{})
		for _, svc := range list.Items {
			t.Logf("%s: labels %v status %+v", svc.Name, svc.Labels, svc.Status)
		}
		cached, _ := services.Lister().Services("ctl").List(labels.Everything())
		t.Fatalf("the controller did not set every status (or the informer did not see it; it holds %d): %v", len(cached), err)
	}
	t.Logf("status updates retried after a conflict: %d", conflicts.Load())
}

// TestClientGoExpiredWatchRelists: a watch from a compacted revision gets
// Kubernetes' 410 (an ERROR event with an Expired Status), and client-go's
// reflector, meeting it, lists again and holds every object.
func TestClientGoExpiredWatchRelists(t *testing.T) {
	s := newSession(t, 0)
	cs := clientset(t, s, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustCreateNamespace(t, cs, "w")
	cms := cs.CoreV1().ConfigMaps("w")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := first.ResourceVersion
	for i := range 5 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := s.c.Store().Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.c.Store().Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}

	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: old})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) && !apierrors.IsGone(apierrors.FromObject(ev.Object)) {
			t.Fatalf("watch from a compacted revision: %s %#v, want an Expired error", ev.Type, ev.Object)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no event from a watch at a compacted revision")
	}
	w.Stop()

	// A reflector whose first watch resumes at the compacted revision.
	var stale atomic.Bool
	stale.Store(true)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if stale.Swap(false) {
				o.ResourceVersion = old
			}
			return cms.Watch(ctx, o)
		},
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflector(lw, &corev1.ConfigMap{}, store, 0)
	go r.RunWithContext(ctx)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, ok, _ := store.GetByKey("w/late")
		return ok, nil
	})
	all, lerr := cms.List(ctx, metav1.ListOptions{})
	if err != nil || lerr != nil || len(store.List()) != len(all.Items) {
		t.Fatalf("after the expired watch the reflector's store holds %d objects, the API %d (want them equal, with w/late): %v %v", len(store.List()), len(all.Items), err, lerr)
	}
}

// TestClientGoPagerReturnsEveryObjectOnce: client-go's pager reads a list
// in pages while objects are being created; it must see every object of
// the list's revision exactly once, and none made after it.
func TestClientGoPagerReturnsEveryObjectOnce(t *testing.T) {
	s := newSession(t, 0)
	cs := clientset(t, s, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustCreateNamespace(t, cs, "p")
	cms := cs.CoreV1().ConfigMaps("p")
	const n = 240
	for i := range n {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pages := 0
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		pages++
		// Created while the list is being read: not part of it.
		_, _ = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("during-%d", pages)}}, metav1.CreateOptions{})
		return cms.List(ctx, o)
	})
	p.PageSize = 25
	seen := map[string]int{}
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		seen[o.(*corev1.ConfigMap).Name]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages < n/25 {
		t.Fatalf("%d pages for %d objects in pages of 25", pages, n)
	}
	for i := range n {
		if name := fmt.Sprintf("cm-%03d", i); seen[name] != 1 {
			t.Errorf("%s seen %d times", name, seen[name])
		}
	}
	for name, c := range seen {
		if len(name) > 6 && name[:6] == "during" && name != "during-1" {
			t.Errorf("%s (made after the first page) is in the list %d times", name, c)
		}
	}
}

// TestClientGoSchedulerBindsAndDeletesCollections: a scheduler written
// with client-go binds a pod that names it (pods/binding), the pod then
// runs on that node, and DeleteCollection removes exactly the pods a
// selector matches.
func TestClientGoSchedulerBindsAndDeletesCollections(t *testing.T) {
	s := newSession(t, 1)
	cs := clientset(t, s, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustCreateNamespace(t, cs, "b")
	pods := cs.CoreV1().Pods("b")
	for i, sched := range []string{"compat-scheduler", "default-scheduler", "default-scheduler"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Labels: map[string]string{"by": sched}},
			Spec: corev1.PodSpec{SchedulerName: sched, Containers: []corev1.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p-0"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bind: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		p, err := pods.Get(ctx, "p-0", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "node-1" && p.Status.Phase == corev1.PodRunning, err
	})
	if err != nil {
		t.Fatalf("the bound pod does not run on node-1: %v", err)
	}
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p-0"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{}); !apierrors.IsConflict(err) && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
		t.Errorf("binding a bound pod again: %v, want a refusal", err)
	}
	zero := int64(0)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: "by=default-scheduler"}); err != nil {
		t.Fatalf("delete collection: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		l, err := pods.List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 1 && l.Items[0].Name == "p-0", err
	})
	if err != nil {
		t.Fatalf("after deleting the default-scheduler pods: %v", err)
	}
}

// TestClientGoDeletesWithOptionsOverProtobuf (issue #32): client-go sends
// DeleteOptions as protobuf when it speaks protobuf (Kubernetes' own
// components and test framework do), and Kobune refused them ("invalid
// character 'k'"): no namespace of the conformance suite could be cleaned
// up, no operator could delete with a propagation policy. Each option
// now acts as on Kubernetes.
func TestClientGoDeletesWithOptionsOverProtobuf(t *testing.T) {
	s := newSession(t, 1)
	cs := clientset(t, s, true)
	ctx := context.Background()
	mustCreateNamespace(t, cs, "gone")
	cms := cs.CoreV1().ConfigMaps("gone")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A precondition that does not hold refuses the delete (409), one that holds deletes.
	wrong := types.UID("not-" + string(cm.UID))
	if err := cms.Delete(ctx, "c", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with a wrong uid precondition: %v, want a Conflict", err)
	}
	zero := int64(0)
	if err := cms.Delete(ctx, "c", metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &cm.UID}}); err != nil {
		t.Errorf("delete with protobuf DeleteOptions: %v", err)
	}
	// An orphaning delete of a Deployment leaves its ReplicaSet.
	replicas := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &replicas,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}}}}
	if _, err := cs.AppsV1().Deployments("gone").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var rs []appsv1.ReplicaSet
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := cs.AppsV1().ReplicaSets("gone").List(ctx, metav1.ListOptions{})
		rs = l.Items
		return err == nil && len(rs) == 1, nil
	}); err != nil {
		t.Fatalf("the Deployment made no ReplicaSet: %v", err)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := cs.AppsV1().Deployments("gone").Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatalf("delete with propagationPolicy Orphan: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AppsV1().ReplicaSets("gone").Get(ctx, rs[0].Name, metav1.GetOptions{})
		return err == nil && len(r.OwnerReferences) == 0, nil
	}); err != nil {
		t.Errorf("the orphaned ReplicaSet still has its owner, or is gone: %v", err)
	}
	// The framework's clean-up: the namespace, with a propagation policy.
	bg := metav1.DeletePropagationBackground
	if err := cs.CoreV1().Namespaces().Delete(ctx, "gone", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Errorf("delete namespace with protobuf DeleteOptions: %v", err)
	}
}
