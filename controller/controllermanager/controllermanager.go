// Package controllermanager assembles kobune-controller: every controller over one set of
// shared informers, in one Manager. cmd/kobune-controller runs it under
// leader election; integration tests run it in-process.
package controllermanager

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/bootstraptoken"
	"github.com/kobune/kobune/controller/certificates"
	"github.com/kobune/kobune/controller/clusterroleaggregation"
	"github.com/kobune/kobune/controller/cronjob"
	"github.com/kobune/kobune/controller/daemonset"
	"github.com/kobune/kobune/controller/deployment"
	"github.com/kobune/kobune/controller/disruption"
	"github.com/kobune/kobune/controller/endpointslice"
	"github.com/kobune/kobune/controller/endpointslicemirroring"
	"github.com/kobune/kobune/controller/garbagecollector"
	"github.com/kobune/kobune/controller/job"
	"github.com/kobune/kobune/controller/nodeipam"
	"github.com/kobune/kobune/controller/nodelifecycle"
	"github.com/kobune/kobune/controller/persistentvolume"
	"github.com/kobune/kobune/controller/podautoscaler"
	"github.com/kobune/kobune/controller/replicaset"
	"github.com/kobune/kobune/controller/resourcequota"
	"github.com/kobune/kobune/controller/serviceaccount"
	"github.com/kobune/kobune/controller/servicecidr"
	"github.com/kobune/kobune/controller/statefulset"
	"github.com/kobune/kobune/controller/storageversionmigration"
)

// Config tunes the controllers.
type Config struct {
	NodeLifecycle nodelifecycle.Config
	Job           job.Config
	CronJob       cronjob.Config
	// HPA tunes the horizontal pod autoscaler.
	HPA podautoscaler.Config
	// ResourceQuotaSyncPeriod is how often every quota is recounted (0:
	// resourcequota.DefaultResync).
	ResourceQuotaSyncPeriod time.Duration
	// AllocateNodeCIDRs runs node IPAM over NodeIPAM's cluster CIDR.
	AllocateNodeCIDRs bool
	NodeIPAM          nodeipam.Config
	// RootCAFile is the cluster CA the root-ca-cert-publisher puts in
	// every namespace's kube-root-ca.crt ("": that controller does not run).
	RootCAFile string
	// ClusterSigningCertFile and ClusterSigningKeyFile are the CA the
	// certificate controller signs approved agent requests with ("": it
	// only approves).
	ClusterSigningCertFile, ClusterSigningKeyFile string
	// Only, when set, runs only the controllers of these names (a test
	// harness runs just the serviceaccount controller and the
	// root-ca-cert-publisher beside agents, so pods get their tokens).
	Only []string
}

// Names are the controllers, as their loops log themselves.
var Names = []string{replicaset.Name, deployment.Name, daemonset.Name, statefulset.Name, job.Name, cronjob.Name, endpointslice.Name, endpointslicemirroring.Name, garbagecollector.Name, nodelifecycle.Name, nodeipam.Name,
	persistentvolume.Name, persistentvolume.ProtectionName, clusterroleaggregation.Name, serviceaccount.Name, serviceaccount.PublisherName, certificates.Name, bootstraptoken.SignerName, bootstraptoken.CleanerName, resourcequota.Name, podautoscaler.Name, disruption.Name,
	storageversionmigration.Name, servicecidr.Name}

// New builds the manager with every controller; the error is a bad
// setting (a cluster CIDR that does not parse).
func New(c *client.Client, cfg Config) (*controller.Manager, error) {
	inf := controller.NewInformers(c)
	m := controller.NewManager(inf)
	recorder := client.NewAsyncRecorder(&client.Recorder{Client: c, Component: "kobune-controller"}, 10000)
	m.Go(func(ctx context.Context) { recorder.Run(ctx, 2) })
	// Each loop reports a panic as a Warning event on the object it keys.
	add := func(l *reconcile.Loop, objects func(string) (meta.Object, bool)) {
		if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, l.Name) {
			return
		}
		l.Object, l.Recorder = objects, recorder
		m.Add(l)
	}
	add(replicaset.New(c, inf, recorder).Loop, reconcile.ObjectsOf(inf.ReplicaSets))
	add(replicaset.NewReplication(c, inf, recorder).Loop, reconcile.ObjectsOf(inf.ReplicationControllers))
	add(deployment.New(c, inf, recorder).Loop, reconcile.ObjectsOf(inf.Deployments))
	add(daemonset.New(c, inf, recorder).Loop, reconcile.ObjectsOf(inf.DaemonSets))
	add(statefulset.New(c, inf, recorder).Loop, reconcile.ObjectsOf(inf.StatefulSets))
	add(job.New(c, inf, recorder, cfg.Job).Loop, reconcile.ObjectsOf(inf.Jobs))
	add(cronjob.New(c, inf, recorder, cfg.CronJob).Loop, reconcile.ObjectsOf(inf.CronJobs))
	add(endpointslice.New(c, inf, recorder).Loop, reconcile.ObjectsOf(inf.Services))
	add(endpointslicemirroring.New(c, inf).Loop, reconcile.ObjectsOf(inf.Endpoints))
	gc := garbagecollector.New(c, inf)
	add(gc.Loop, nil) // keys are resource/namespace/name
	if len(cfg.Only) == 0 || slices.Contains(cfg.Only, garbagecollector.Name) {
		m.Go(gc.FollowCustomKinds) // informers for the custom kinds, as they come and go
	}
	add(persistentvolume.New(c, inf, recorder).Loop, nil) // keys are claim/<ns>/<name> and volume/<name>
	add(persistentvolume.NewProtection(c, inf).Loop, nil)
	add(nodelifecycle.New(c, inf, recorder, cfg.NodeLifecycle).Loop, reconcile.ObjectsOf(inf.Nodes))
	add(clusterroleaggregation.New(c, inf).Loop, reconcile.ObjectsOf(inf.ClusterRoles))
	add(serviceaccount.New(c, inf).Loop, reconcile.ObjectsOf(inf.Namespaces))
	add(bootstraptoken.NewSigner(c, inf).Loop, nil)  // one key: cluster-info
	add(bootstraptoken.NewCleaner(c, inf).Loop, nil) // keys are token Secret names in kube-system
	add(resourcequota.New(c, inf, cfg.ResourceQuotaSyncPeriod).Loop, reconcile.ObjectsOf(inf.Quotas))
	add(podautoscaler.New(c, inf, recorder, cfg.HPA).Loop, reconcile.ObjectsOf(inf.HPAs))
	add(disruption.New(c, inf, recorder).Loop, reconcile.ObjectsOf(inf.PDBs))
	add(storageversionmigration.New(c, inf).Loop, reconcile.ObjectsOf(inf.StorageVersionMigrations))
	add(servicecidr.New(c, inf).Loop, reconcile.ObjectsOf(inf.ServiceCIDRs))
	var ca *x509.Certificate
	var caKey *ecdsa.PrivateKey
	if cfg.ClusterSigningCertFile != "" || cfg.ClusterSigningKeyFile != "" {
		var err error
		if ca, caKey, err = pki.LoadCAFiles(cfg.ClusterSigningCertFile, cfg.ClusterSigningKeyFile); err != nil {
			return nil, fmt.Errorf("--cluster-signing-cert-file/--cluster-signing-key-file: %w", err)
		}
	}
	add(certificates.New(c, inf, ca, caKey).Loop, reconcile.ObjectsOf(inf.CSRs))
	if cfg.RootCAFile != "" {
		ca, err := os.ReadFile(cfg.RootCAFile)
		if err != nil {
			return nil, fmt.Errorf("--root-ca-file: %w", err)
		}
		add(serviceaccount.NewPublisher(c, inf, string(ca)).Loop, reconcile.ObjectsOf(inf.Namespaces))
	}
	if cfg.AllocateNodeCIDRs {
		ipam, err := nodeipam.New(c, inf, recorder, cfg.NodeIPAM)
		if err != nil {
			return nil, err
		}
		add(ipam.Loop, reconcile.ObjectsOf(inf.Nodes))
	}
	return m, nil
}
