package volume

import (
	"bufio"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/api/storage"
)

// ErrNotFound is what Sources return for an object that does not exist.
var ErrNotFound = errors.New("not found")

// Sources are where configMap and secret volumes (and env) read from,
// and persistentVolumeClaim volumes find their volume.
type Sources interface {
	ConfigMap(ctx context.Context, namespace, name string) (*core.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*core.Secret, error)
	Claim(ctx context.Context, namespace, name string) (*core.PersistentVolumeClaim, error)
	Volume(ctx context.Context, name string) (*core.PersistentVolume, error)
	// Token is a token of the pod's ServiceAccount bound to the pod, for
	// audience ("": the API server's), valid about expirationSeconds; the
	// same one until it is due for refresh.
	Token(ctx context.Context, pod *core.Pod, audience string, expirationSeconds int64) (string, error)
	// ClusterTrustBundles are all the cluster's ClusterTrustBundles.
	ClusterTrustBundles(ctx context.Context) ([]*certificates.ClusterTrustBundle, error)
	// PodCertificate is the private key (PEM) and the issued chain of a
	// podCertificate projection (where names it within the pod), or
	// ErrPending while its signer has not answered.
	PodCertificate(ctx context.Context, pod *core.Pod, where string, p *core.PodCertificateProjection) (key, chain []byte, err error)
	// CSIDriver is a CSI driver's CSIDriver object, or ErrNotFound.
	CSIDriver(ctx context.Context, name string) (*storage.CSIDriver, error)
}

// ErrPending is a volume source that is not ready yet (a certificate not
// yet issued): the pod waits and its volumes are made again later.
var ErrPending = errors.New("pending")

// Plugin directory names, the kubelet's.
const (
	emptyDirPlugin  = "kubernetes.io~empty-dir"
	configMapPlugin = "kubernetes.io~configmap"
	secretPlugin    = "kubernetes.io~secret"
	downwardPlugin  = "kubernetes.io~downward-api"
	projectedPlugin = "kubernetes.io~projected"
)

// Manager makes and removes pods' volumes under Dir.
type Manager struct {
	// Dir is the pods directory: <Dir>/<uid>/volumes/<plugin>/<name>.
	Dir     string
	Sources Sources
	// Allocatable is the node's, for resourceFieldRef of a container
	// without a limit (as the kubelet: the limit defaults to it).
	Allocatable func() resource.List
	// Mounts reads the mount table (MountPoints by default; tests swap it).
	Mounts func() ([]string, error)
	// CSI are the node's CSI drivers (nil: CSI volumes fail to mount).
	CSI *Plugins

	mu sync.Mutex
}

// Setup makes (or brings up to date) every volume of pod and returns the
// host path of each by name. It is idempotent: called again for a running
// pod it rewrites only projected contents that changed and mounts nothing
// twice.
func (m *Manager) Setup(ctx context.Context, pod *core.Pod) (map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	paths := map[string]string{}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		p, err := m.setup(ctx, pod, vol)
		if err != nil {
			return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q: %w", vol.Name, err)
		}
		paths[vol.Name] = p
	}
	return paths, nil
}

func (m *Manager) dir(pod *core.Pod, plugin, name string) string {
	return filepath.Join(m.Dir, pod.UID, "volumes", plugin, name)
}

func (m *Manager) setup(ctx context.Context, pod *core.Pod, vol *core.Volume) (string, error) {
	src := &vol.VolumeSource
	switch {
	case src.EmptyDir != nil:
		dir := m.dir(pod, emptyDirPlugin, vol.Name)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", err
		}
		if src.EmptyDir.Medium == core.StorageMediumMemory {
			opts := "mode=0777"
			if l := src.EmptyDir.SizeLimit; l != nil && l.Sign() > 0 {
				opts += fmt.Sprintf(",size=%d", l.Value())
			}
			if err := m.tmpfs(dir, opts); err != nil {
				return "", err
			}
		}
		if err := os.Chmod(dir, 0o777); err != nil { // as the kubelet: writable by any user of the pod
			return "", err
		}
		if g := fsGroupOf(pod); g != nil {
			// New files in it belong to the pod's fsGroup.
			if err := os.Chown(dir, -1, int(*g)); err != nil {
				return "", err
			}
			return dir, os.Chmod(dir, 0o777|os.ModeSetgid)
		}
		return dir, nil
	case src.HostPath != nil:
		return src.HostPath.Path, hostPath(src.HostPath)
	case src.ConfigMap != nil:
		files, err := m.configMapFiles(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, mode(src.ConfigMap.DefaultMode))
		if err != nil {
			return "", err
		}
		return m.project(m.dir(pod, configMapPlugin, vol.Name), false, files, fsGroupOf(pod))
	case src.Secret != nil:
		files, err := m.secretFiles(ctx, pod.Namespace, src.Secret.SecretName, src.Secret.Items, src.Secret.Optional, mode(src.Secret.DefaultMode))
		if err != nil {
			return "", err
		}
		return m.project(m.dir(pod, secretPlugin, vol.Name), true, files, fsGroupOf(pod))
	case src.DownwardAPI != nil:
		files, err := m.downwardFiles(pod, src.DownwardAPI.Items, mode(src.DownwardAPI.DefaultMode))
		if err != nil {
			return "", err
		}
		return m.project(m.dir(pod, downwardPlugin, vol.Name), false, files, fsGroupOf(pod))
	case src.Projected != nil:
		files := map[string]File{}
		def := mode(src.Projected.DefaultMode)
		var bundles []*certificates.ClusterTrustBundle // listed once for the volume
		for _, ps := range src.Projected.Sources {
			var part map[string]File
			var err error
			switch {
			case ps.ConfigMap != nil:
				part, err = m.configMapFiles(ctx, pod.Namespace, ps.ConfigMap.Name, ps.ConfigMap.Items, ps.ConfigMap.Optional, def)
			case ps.Secret != nil:
				part, err = m.secretFiles(ctx, pod.Namespace, ps.Secret.Name, ps.Secret.Items, ps.Secret.Optional, def)
			case ps.DownwardAPI != nil:
				part, err = m.downwardFiles(pod, ps.DownwardAPI.Items, def)
			case ps.ServiceAccountToken != nil:
				part, err = m.tokenFile(ctx, pod, ps.ServiceAccountToken, def)
			case ps.ClusterTrustBundle != nil:
				if bundles == nil {
					if bundles, err = m.Sources.ClusterTrustBundles(ctx); err != nil {
						return "", fmt.Errorf("list ClusterTrustBundles: %w", err)
					}
				}
				part, err = trustBundleFile(bundles, ps.ClusterTrustBundle, def)
			case ps.PodCertificate != nil:
				part, err = m.podCertificateFiles(ctx, pod, vol.Name, ps.PodCertificate, def)
			default:
				err = errors.New("a projected volume source with nothing in it")
			}
			if err != nil {
				return "", err
			}
			for p, f := range part {
				files[p] = f
			}
		}
		return m.project(m.dir(pod, projectedPlugin, vol.Name), true, files, fsGroupOf(pod))
	case src.PersistentVolumeClaim != nil:
		return m.claimPath(ctx, pod, vol.Name, src.PersistentVolumeClaim.ClaimName, src.PersistentVolumeClaim.ReadOnly)
	case src.CSI != nil:
		return m.csiInlineSetup(ctx, pod, vol)
	}
	return "", errors.New("no volume source")
}

// podCertificateFiles are a podCertificate projection's files: the key
// and the chain in one credential bundle (the key first), and/or each in
// a file of its own.
func (m *Manager) podCertificateFiles(ctx context.Context, pod *core.Pod, volName string, p *core.PodCertificateProjection, def os.FileMode) (map[string]File, error) {
	where := volName + ":" + p.CredentialBundlePath + ":" + p.KeyPath + ":" + p.CertificateChainPath
	key, chain, err := m.Sources.PodCertificate(ctx, pod, where, p)
	if err != nil {
		return nil, err
	}
	files := map[string]File{}
	if p.CredentialBundlePath != "" {
		files[p.CredentialBundlePath] = File{Data: append(append([]byte{}, key...), chain...), Mode: def}
	}
	if p.KeyPath != "" {
		files[p.KeyPath] = File{Data: key, Mode: def}
	}
	if p.CertificateChainPath != "" {
		files[p.CertificateChainPath] = File{Data: chain, Mode: def}
	}
	return files, nil
}

// trustBundleFile is a clusterTrustBundle projection, as the kubelet
// writes it: the certificates of the bundle named, or of every bundle of
// the signer that the selector picks (a nil selector picks none), each
// once, in the order of the bundles' names, as bare PEM blocks. Nothing
// picked fails the volume unless the projection is optional (then the
// file is empty).
func trustBundleFile(bundles []*certificates.ClusterTrustBundle, p *core.ClusterTrustBundleProjection, def os.FileMode) (map[string]File, error) {
	var picked []*certificates.ClusterTrustBundle
	var what string
	switch {
	case p.Name != nil:
		what = fmt.Sprintf("ClusterTrustBundle %q", *p.Name)
		for _, b := range bundles {
			if b.Name == *p.Name {
				picked = append(picked, b)
			}
		}
	case p.SignerName != nil && p.LabelSelector != nil:
		what = fmt.Sprintf("ClusterTrustBundles of signer %q that the label selector picks", *p.SignerName)
		sel, err := selector.FromLabelSelector(p.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("clusterTrustBundle labelSelector: %w", err)
		}
		for _, b := range bundles {
			if b.Spec.SignerName == *p.SignerName && sel.Matches(b.Labels) {
				picked = append(picked, b)
			}
		}
	default:
		what = fmt.Sprintf("ClusterTrustBundles of signer %q (no label selector picks none)", derefOr(p.SignerName))
	}
	slices.SortFunc(picked, func(a, b *certificates.ClusterTrustBundle) int { return strings.Compare(a.Name, b.Name) })
	var out []byte
	seen := map[string]bool{}
	for _, b := range picked {
		blocks, err := certificates.TrustAnchors(b.Spec.TrustBundle)
		if err != nil {
			return nil, fmt.Errorf("ClusterTrustBundle %q: %w", b.Name, err)
		}
		for _, blk := range blocks {
			if k := string(blk.Bytes); !seen[k] {
				seen[k] = true
				out = append(out, pem.EncodeToMemory(&pem.Block{Type: blk.Type, Bytes: blk.Bytes})...)
			}
		}
	}
	if len(picked) == 0 && (p.Optional == nil || !*p.Optional) {
		return nil, fmt.Errorf("no %s (and the projection is not optional)", what)
	}
	return map[string]File{p.Path: {Data: out, Mode: def}}, nil
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// tokenFile is a projected ServiceAccount token, as the kubelet writes it
// (mode 0600 unless the volume says otherwise: a token is a credential).
func (m *Manager) tokenFile(ctx context.Context, pod *core.Pod, p *core.ServiceAccountTokenProjection, def os.FileMode) (map[string]File, error) {
	secs := int64(3600)
	if p.ExpirationSeconds != nil {
		secs = *p.ExpirationSeconds
	}
	tok, err := m.Sources.Token(ctx, pod, p.Audience, secs)
	if err != nil {
		return nil, fmt.Errorf("token of ServiceAccount %q: %w", core.PodServiceAccount(pod), err)
	}
	return map[string]File{p.Path: {Data: []byte(tok), Mode: def}}, nil
}

// claimPath is the node path of the volume bound to a claim: a hostPath
// or local volume's path, or where its CSI driver published it.
func (m *Manager) claimPath(ctx context.Context, pod *core.Pod, volName, name string, readOnly bool) (string, error) {
	claim, err := m.Sources.Claim(ctx, pod.Namespace, name)
	if errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("persistentvolumeclaim %q not found", name)
	}
	if err != nil {
		return "", err
	}
	if claim.DeletionTimestamp != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q is being deleted", name)
	}
	if claim.Spec.VolumeName == "" || claim.Status.Phase != core.ClaimBound {
		return "", fmt.Errorf("persistentvolumeclaim %q is not bound", name)
	}
	pv, err := m.Sources.Volume(ctx, claim.Spec.VolumeName)
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q of claim %q: %w", claim.Spec.VolumeName, name, err)
	}
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path, hostPath(pv.Spec.HostPath)
	case pv.Spec.Local != nil:
		dir := core.HostPathDirectory
		return pv.Spec.Local.Path, hostPath(&core.HostPathVolumeSource{Path: pv.Spec.Local.Path, Type: &dir})
	case pv.Spec.CSI != nil:
		return m.csiSetup(ctx, pod, volName, pv, readOnly)
	}
	return "", fmt.Errorf("persistentvolume %q has no source this agent mounts", pv.Name)
}

// project writes files into dir with the atomic writer, in a tmpfs when
// inMemory (secrets and projected volumes, as the kubelet: their contents
// never touch the node's disk).
func (m *Manager) project(dir string, inMemory bool, files map[string]File, fsGroup *int64) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if inMemory {
		if err := m.tmpfs(dir, "mode=0755"); err != nil {
			return "", err
		}
	}
	changed, err := WriteAtomic(dir, files)
	if err == nil && changed && fsGroup != nil {
		err = groupOwn(dir, int(*fsGroup), true)
	}
	return dir, err
}

// fsGroupOf is the pod's fsGroup, if it has one.
func fsGroupOf(pod *core.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}

// groupOwn gives dir and everything in it to the group gid, as the
// kubelet's SetVolumeOwnership does for a pod's fsGroup: group read (and
// write, unless readOnly) on files, setgid on directories so new files
// keep the group. Symlinks are changed themselves, never followed.
func groupOwn(dir string, gid int, readOnly bool) error {
	fileBits, dirBits := os.FileMode(0o660), os.FileMode(0o770)
	if readOnly {
		fileBits, dirBits = 0o440, 0o550
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, gid); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, info.Mode().Perm()|dirBits|os.ModeSetgid)
		}
		return os.Chmod(p, info.Mode().Perm()|fileBits)
	})
}

func mode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m)
}

func itemMode(it core.KeyToPath, def os.FileMode) os.FileMode {
	if it.Mode != nil {
		return os.FileMode(*it.Mode)
	}
	return def
}

// keyFiles projects data's keys (all, or items) as files.
func keyFiles(data map[string][]byte, items []core.KeyToPath, def os.FileMode, what string) (map[string]File, error) {
	files := map[string]File{}
	if len(items) == 0 {
		for k, b := range data {
			files[k] = File{Data: b, Mode: def}
		}
		return files, nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		files[it.Path] = File{Data: b, Mode: itemMode(it, def)}
	}
	return files, nil
}

func (m *Manager) configMapFiles(ctx context.Context, ns, name string, items []core.KeyToPath, optional *bool, def os.FileMode) (map[string]File, error) {
	return sourceFiles("configmap", name, items, optional, def, func() (map[string][]byte, error) {
		cm, err := m.Sources.ConfigMap(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		data := map[string][]byte{}
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			data[k] = v
		}
		return data, nil
	})
}

func (m *Manager) secretFiles(ctx context.Context, ns, name string, items []core.KeyToPath, optional *bool, def os.FileMode) (map[string]File, error) {
	return sourceFiles("secret", name, items, optional, def, func() (map[string][]byte, error) {
		s, err := m.Sources.Secret(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return SecretData(s), nil
	})
}

// sourceFiles projects the keys load reads; an optional source that is
// missing, or lacks a key items name, projects nothing.
func sourceFiles(kind, name string, items []core.KeyToPath, optional *bool, def os.FileMode, load func() (map[string][]byte, error)) (map[string]File, error) {
	opt := optional != nil && *optional
	data, err := load()
	if errors.Is(err, ErrNotFound) && opt {
		return map[string]File{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", kind, name, err)
	}
	files, err := keyFiles(data, items, def, fmt.Sprintf("%s %q", kind, name))
	if err != nil && opt {
		return map[string]File{}, nil
	}
	return files, err
}

// SecretData is a Secret's keys (stringData too, should a stored object
// still have any).
func SecretData(s *core.Secret) map[string][]byte {
	data := map[string][]byte{}
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return data
}

func (m *Manager) downwardFiles(pod *core.Pod, items []core.DownwardAPIVolumeFile, def os.FileMode) (map[string]File, error) {
	files := map[string]File{}
	for _, it := range items {
		md := def
		if it.Mode != nil {
			md = os.FileMode(*it.Mode)
		}
		var value string
		switch {
		case it.FieldRef != nil:
			v, err := FieldValue(pod, it.FieldRef.FieldPath, "", "")
			if err != nil {
				return nil, err
			}
			value = v
		case it.ResourceFieldRef != nil:
			v, err := ResourceValue(pod, it.ResourceFieldRef, "", m.allocatable())
			if err != nil {
				return nil, err
			}
			value = v
		}
		files[it.Path] = File{Data: []byte(value), Mode: md}
	}
	return files, nil
}

func (m *Manager) allocatable() resource.List {
	if m.Allocatable == nil {
		return nil
	}
	return m.Allocatable()
}

// FieldValue is the value of a pod field a fieldRef names (podIP, hostIP:
// the pod's and its node's addresses, known to the caller before the
// pod's status says them; the kubelet, too, takes the node's address for
// status.hostIP).
func FieldValue(pod *core.Pod, path, podIP, hostIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return pod.UID, nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		if podIP == "" {
			podIP = pod.Status.PodIP
		}
		return podIP, nil
	case "status.hostIP", "status.hostIPs": // one address: Kobune's nodes are IPv4 only
		if hostIP == "" {
			hostIP = pod.Status.HostIP
		}
		return hostIP, nil
	}
	if k, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return pod.Annotations[strings.TrimSuffix(k, "']")], nil
	}
	if k, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return pod.Labels[strings.TrimSuffix(k, "']")], nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// formatMap is labels or annotations as the downward API writes them:
// key="value" lines, sorted, values quoted as Go quotes them.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return b.String()
}

// ResourceValue is a container's request or limit a resourceFieldRef
// names, divided by its divisor and rounded up, as the kubelet writes it.
// A limit not set is the node's allocatable; container "" is self.
func ResourceValue(pod *core.Pod, r *core.ResourceFieldSelector, self string, allocatable resource.List) (string, error) {
	name := r.ContainerName
	if name == "" {
		name = self
	}
	var c *core.Container
	for _, list := range [][]core.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				c = &list[i]
			}
		}
	}
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef: no container %q", name)
	}
	kind, res, ok := strings.Cut(r.Resource, ".")
	if !ok {
		return "", fmt.Errorf("resourceFieldRef: unsupported resource %q", r.Resource)
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q, set := list[resource.Name(res)]
	if !set && kind == "limits" {
		q = allocatable[resource.Name(res)]
	}
	div := resource.MustParse("1")
	if r.Divisor != nil && r.Divisor.Sign() > 0 { // zero is unset (client-go sends "0")
		div = *r.Divisor
	}
	if res == "cpu" {
		// 500m with divisor 1 is 1 (rounded up), with divisor 1m 500.
		n := ceilDiv(q.MilliValue(), div.MilliValue())
		return fmt.Sprint(n), nil
	}
	return fmt.Sprint(ceilDiv(q.Value(), div.Value())), nil
}

func ceilDiv(a, b int64) int64 {
	if b <= 0 {
		return a
	}
	return (a + b - 1) / b
}

// hostPath checks, or makes, what a hostPath volume's type asks for.
func hostPath(h *core.HostPathVolumeSource) error {
	t := core.HostPathUnset
	if h.Type != nil {
		t = *h.Type
	}
	info, err := os.Stat(h.Path)
	exists := err == nil
	switch t {
	case core.HostPathUnset:
		return nil
	case core.HostPathDirectoryOrCreate:
		if !exists {
			return os.MkdirAll(h.Path, 0o755)
		}
		if !info.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", h.Path)
		}
		return nil
	case core.HostPathFileOrCreate:
		if !exists {
			if err := os.MkdirAll(filepath.Dir(h.Path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(h.Path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if info.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is a directory, not a file", h.Path)
		}
		return nil
	}
	if !exists {
		return fmt.Errorf("hostPath type check failed: %s does not exist (type %s)", h.Path, t)
	}
	ok := false
	switch t {
	case core.HostPathDirectory:
		ok = info.IsDir()
	case core.HostPathFile:
		ok = info.Mode().IsRegular()
	case core.HostPathSocket:
		ok = info.Mode()&fs.ModeSocket != 0
	case core.HostPathCharDev:
		ok = info.Mode()&fs.ModeCharDevice != 0
	case core.HostPathBlockDev:
		ok = info.Mode()&fs.ModeDevice != 0 && info.Mode()&fs.ModeCharDevice == 0
	}
	if !ok {
		return fmt.Errorf("hostPath type check failed: %s is not a %s", h.Path, t)
	}
	return nil
}

// tmpfs mounts a tmpfs on dir unless one is there already (an agent
// restart must not mount twice).
func (m *Manager) tmpfs(dir, opts string) error {
	mounted, err := m.mounted(dir)
	if err != nil || mounted {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

func (m *Manager) mounted(dir string) (bool, error) {
	points, err := m.mountPoints()
	if err != nil {
		return false, err
	}
	for _, p := range points {
		if p == dir {
			return true, nil
		}
	}
	return false, nil
}

func (m *Manager) mountPoints() ([]string, error) {
	if m.Mounts != nil {
		return m.Mounts()
	}
	return MountPoints()
}

// MountPoints are the mount points of the agent's mount namespace, from
// /proc/self/mountinfo.
func MountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			out = append(out, unescape(fields[4]))
		}
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space, ...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Teardown removes a pod's volumes: has each CSI volume unpublished by its
// driver (and unstaged once no pod on the node uses it), unmounts what the
// manager mounted under the pod's directory, then deletes the directory —
// only once no mount is left below it, so a delete never reaches into a
// mounted filesystem. A volume that could not be unstaged stays recorded
// for UnstageUnused.
func (m *Manager) Teardown(ctx context.Context, uid string) error {
	if uid == "" || strings.ContainsAny(uid, "/.") {
		return fmt.Errorf("bad pod uid %q", uid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir := filepath.Join(m.Dir, uid)
	if err := m.csiTeardown(ctx, dir); err != nil {
		return err
	}
	_ = m.unstageUnused(ctx) // retried by UnstageUnused
	points, err := m.mountPoints()
	if err != nil {
		return err
	}
	var below []string
	for _, p := range points {
		if strings.HasPrefix(p, dir+"/") {
			below = append(below, p)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(below))) // deepest first
	for _, p := range below {
		if err := unix.Unmount(p, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	if points, err = m.mountPoints(); err != nil {
		return err
	}
	for _, p := range points {
		if strings.HasPrefix(p, dir+"/") || p == dir {
			return fmt.Errorf("%s is still mounted: the pod's volumes are not removed", p)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "volumes")); err != nil {
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTEMPTY) {
		return err
	}
	return nil
}

// Pods are the uids that have a volumes directory, for the clean-up of
// pods that went while the agent was down.
func (m *Manager) Pods() []string {
	entries, _ := os.ReadDir(m.Dir)
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(m.Dir, e.Name(), "volumes")); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}
