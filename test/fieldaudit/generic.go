package fieldaudit

// actedOnGenerically lists fields that no code outside api/ names, and who
// acts on them.
var actedOnGenerically = map[string]string{
	"batch.JobSpec.completionMode":                                     "the Job controller, through Job.Indexed() (api/batch)",
	"core.ConfigMap.immutable":                                         "the API server refuses changes to an immutable ConfigMap (core.ValidateImmutableData)",
	"core.Secret.immutable":                                            "the API server refuses changes to an immutable Secret (core.ValidateImmutableData)",
	"core.Secret.stringData":                                           "the API server merges it into data on write (core.SetDefaultsSecret)",
	"core.Event.action":                                                "an event is a record: kobectl get events -o yaml shows every field",
	"core.Event.series":                                                "an event is a record: kobectl get events -o yaml shows every field",
	"core.Event.related":                                               "an event is a record: kobectl get events -o yaml shows every field",
	"core.EventSeries.count":                                           "an event is a record: kobectl get events -o yaml shows every field",
	"core.EventSeries.lastObservedTime":                                "an event is a record: kobectl get events -o yaml shows every field",
	"core.NodeSelectorTerm.matchExpressions":                           "core.PodMatchesNodeSelectorAndAffinity (api/core/nodefit.go), used by the scheduler and the DaemonSet controller",
	"meta.LabelSelector.matchExpressions":                              "selector.FromLabelSelector (api/selector), used by every controller",
	"core.PersistentVolumeSpec.volumeMode":                             "validation admits Filesystem only, the one mode every volume has (core.ValidatePersistentVolume)",
	"core.PersistentVolumeClaimSpec.volumeMode":                        "validation admits Filesystem only, the one mode every volume has (core.ValidatePersistentVolumeClaim)",
	"core.Event.eventTime":                                             "the LAST SEEN column of events when lastTimestamp is unset (api/printers, shared by kobectl and the API server's Tables)",
	"core.ServiceStatus.loadBalancer":                                  "status a controller writes and clients read (an ingress controller, a client-go controller: test/compat); the API stores it",
	"meta.ManagedFieldsEntry.fieldsType":                               "server-side apply writes FieldsV1, the one type (api/fieldmanager, through apiserver/registry/apply.go)",
	"networking.IPAddressSpec.parentRef":                               "a record of who holds the address, validated (networking.ValidateIPAddress) and shown by get ipaddresses (api/printers); the address itself is the claim (apiserver/servicealloc)",
	"core.LoadBalancerStatus.ingress":                                  "status a controller writes and clients read; the API stores it",
	"core.PersistentVolumeClaimStatus.conditions":                      "status a controller writes and clients read (Kubernetes' external-resizer: Resizing, FileSystemResizePending; kobectl get -o yaml shows them); the API stores it",
	"core.PersistentVolumeClaimCondition.lastProbeTime":                "a condition's record, stored and shown as written (core.PersistentVolumeClaimStatus.conditions)",
	"apiextensions.CustomResourceDefinitionSpec.conversion":            "strategy None is how KindFor serves each version (apiserver/apiextensions/kind.go); validation refuses Webhook (apiextensions.Validate)",
	"apiextensions.CustomResourceDefinitionSpec.preserveUnknownFields": "validation refuses true, as Kubernetes' v1 does (apiextensions.Validate): objects are always pruned",
	"apiextensions.JSONSchemaProps.additionalItems":                    "refused: structural schemas forbid it (apiextensions.ValidateStructural)",
	"apiextensions.JSONSchemaProps.definitions":                        "refused: structural schemas forbid it (apiextensions.ValidateStructural)",
	"apiextensions.JSONSchemaProps.dependencies":                       "refused: structural schemas forbid it (apiextensions.ValidateStructural)",
	"apiextensions.JSONSchemaProps.patternProperties":                  "refused: structural schemas forbid it (apiextensions.ValidateStructural)",
	"apiextensions.JSONSchemaProps.uniqueItems":                        "refused when true, as Kubernetes refuses it (apiextensions.ValidateStructural)",
	"apiextensions.JSONSchemaProps.title":                              "documentation, stored and returned as written; it checks nothing in Kubernetes either",
	"apiextensions.JSONSchemaProps.externalDocs":                       "documentation, stored and returned as written; it checks nothing in Kubernetes either",
	"core.ServiceSpec.allocateLoadBalancerNodePorts":                   "the API server's allocator gives node ports to a LoadBalancer Service unless it is false, through ServiceSpec.HasNodePorts (api/core), which the node proxy asks too",
	"core.ServiceSpec.loadBalancerClass":                               "names the load balancer controller that serves the Service (one outside Kobune, which runs none); validated as a qualified name on LoadBalancer Services only (core.ValidateService), kept for that controller",
	"storage.CSIDriverSpec.volumeLifecycleModes":                       "kobune-agent, through CSIDriverSpec.Mode (api/storage), when it publishes a CSI volume (agent/volume/csi.go)",
	"storage.CSIStorageCapacity.maximumVolumeSize":                     "the scheduler's VolumeBinding, through CSIStorageCapacity.Fits (api/storage)",
}

// servedForOthers lists API packages whose kinds Kobune serves for other
// programs to act on, by the prefix of their fields' keys, and what Kobune
// tells users who write them.
var servedForOthers = map[string]string{
	"storage.VolumeAttachmentSpec.":                       "served for CSI drivers' attachers and tools that create and act on their own (stored, validated, status subresource); Kobune has no attach/detach controller, and a driver whose CSIDriver says attachRequired is refused at mount with what to do (api/storage, docs/differences.md)",
	"storage.VolumeAttachmentSource.persistentVolumeName": "a VolumeAttachment's volume (storage.VolumeAttachmentSpec.)",
	"storage.VolumeAttachmentStatus.":                     "a VolumeAttachment's status, written by the attacher (storage.VolumeAttachmentSpec.)",
	"storage.VolumeError.":                                "part of a VolumeAttachment's status (storage.VolumeAttachment)",
	"storage.VolumeAttributesClass.":                      "served for CSI drivers and clients (stored, validated, immutable parameters); a claim's volumeAttributesClassName is not supported (api/storage, docs/differences.md)",
	"dra.":                                                "resource.k8s.io is served for DRA drivers and clients (stored, validated, listed, watched, patched); Kobune allocates no devices, pods cannot name claims (spec.resourceClaims is unsupported), and every REST request on ResourceClaims and their templates carries a warning that says so (api/dra, docs/differences.md)",
}

// usedAnyway lists unsupported-tagged fields whose Go name another type's
// field shares, so that the selector check finds the name in use.
var usedAnyway = map[string]bool{
	"core.Container.stdin":                           true, // the exec request's Stdin
	"core.Container.tty":                             true, // the exec request's TTY (client.ExecOptions)
	"core.VolumeResourceRequirements.limits":         true, // a container's resource Limits
	"networking.IngressBackend.resource":             true, // the authorizer's request Resource
	"networking.IngressClassSpec.parameters":         true, // a StorageClass's Parameters
	"apiextensions.CustomResourceConversion.webhook": true, // admissionregistration.Webhook, the admission webhooks' common form
	"core.ServiceAccount.secrets":                    true, // a CSI NodePublishVolumeRequest's Secrets (agent/volume/csi.go)
}
