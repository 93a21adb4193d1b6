package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	"github.com/kobune/kobune/api/core"
)

// NormalizeImage turns the image a pod names into the reference the
// runtime stores, looks up and pulls, as the kubelet and containerd's CRI
// do: a one-segment name is an official image on Docker Hub
// (nginx → docker.io/library/nginx), a name without a registry is on
// Docker Hub (bitnami/redis → docker.io/bitnami/redis), a name without a
// tag or digest gets :latest, and a digest is kept (a tag beside it is
// dropped: the digest decides). The grammar is distribution's (the
// github.com/distribution/reference module, the one containerd and the
// kubelet use); a name outside it is refused, which the kubelet reports
// as InvalidImageName.
func NormalizeImage(image string) (string, error) {
	named, err := reference.ParseDockerRef(image)
	if err != nil {
		return "", fmt.Errorf("couldn't parse image name %q: %w", image, err)
	}
	return named.String(), nil
}

// imageID is what the kubelet reports as a container's imageID: the
// image's repository and the digest of its manifest (or index), the one
// name that says exactly which bytes run, whatever tag was asked for.
func imageID(name, digest string) string {
	repo := name
	if named, err := reference.ParseNormalizedNamed(name); err == nil {
		repo = named.Name()
	}
	return repo + "@" + digest
}

// Image pull back-off, as the kubelet's: after a failed pull the same
// image is not pulled again for the pod for 10 s, then 20 s, 40 s ... up
// to 5 minutes; meanwhile the container waits with ImagePullBackOff. A
// successful pull forgets the back-off.
const (
	pullBackOffInitial = 10 * time.Second
	pullBackOffMax     = 300 * time.Second
)

// pullBackOff remembers failed pulls per pod and image.
type pullBackOff struct {
	mu      sync.Mutex
	entries map[string]pullBackOffEntry // pod UID + "_" + image
}

type pullBackOffEntry struct {
	delay time.Duration
	until time.Time
}

// waiting says how long the pull of key is still held back.
func (b *pullBackOff) waiting(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok && now.Before(e.until) {
		return e.until.Sub(now)
	}
	return 0
}

// failed doubles key's delay (10 s the first time) and holds pulls back
// for that long; entries idle for twice the longest delay are dropped,
// so the map holds only the pods that failed lately.
func (b *pullBackOff) failed(key string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.entries == nil {
		b.entries = map[string]pullBackOffEntry{}
	}
	for k, e := range b.entries {
		if now.Sub(e.until) > 2*pullBackOffMax {
			delete(b.entries, k)
		}
	}
	d := pullBackOffInitial
	if e, ok := b.entries[key]; ok && now.Sub(e.until) <= 2*pullBackOffMax {
		d = min(2*e.delay, pullBackOffMax)
	}
	b.entries[key] = pullBackOffEntry{delay: d, until: now.Add(d)}
}

func (b *pullBackOff) succeeded(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// ensureImage returns the image, following the pull policy, with the
// kubelet's reasons when it cannot: InvalidImageName, ErrImageNeverPull,
// ErrImagePull, then ImagePullBackOff until the back-off ends. Pulls go
// through containerd; Kobune's labs and tests never pull from a remote
// registry (images are loaded from tarballs), so a pull is only tried
// when a user's pod asks for an image the node does not have.
func (r *Containerd) ensureImage(ctx context.Context, pod *core.Pod, c *core.Container) (img client.Image, pulled bool, err error) {
	name, err := NormalizeImage(c.Image)
	if err != nil {
		return nil, false, &ImageError{Container: c.Name, Reason: "InvalidImageName", Event: "InspectFailed",
			Err: fmt.Errorf("Failed to apply default image tag %q: %w", c.Image, err)}
	}
	img, err = r.client.GetImage(ctx, name)
	switch {
	case err == nil && c.ImagePullPolicy != core.PullAlways:
	case err != nil && !errdefs.IsNotFound(err):
		return nil, false, fmt.Errorf("image %s: %w", name, err)
	case c.ImagePullPolicy == core.PullNever:
		return nil, false, &ImageError{Container: c.Name, Reason: "ErrImageNeverPull", Event: "ErrImageNeverPull",
			Err: fmt.Errorf("%w: container image %q is not present with pull policy of Never", ErrImageNeverPull, c.Image)}
	default:
		key := pod.UID + "_" + name
		if d := r.pulls.waiting(key, time.Now()); d > 0 {
			return nil, false, &ImageError{Container: c.Name, Reason: "ImagePullBackOff", Event: "BackOff", RetryIn: d,
				Err: fmt.Errorf("Back-off pulling image %q", c.Image)}
		}
		r.record(pod, core.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image))
		if img, err = r.client.Pull(ctx, name, client.WithPullUnpack); err != nil {
			r.pulls.failed(key, time.Now())
			// Looked at again in a second, the container shows
			// ImagePullBackOff until the back-off ends, as on a kubelet.
			return nil, false, &ImageError{Container: c.Name, Reason: "ErrImagePull", Event: "Failed", RetryIn: time.Second,
				Err: fmt.Errorf("Failed to pull image %q: %s", c.Image, pullCause(err))}
		}
		r.pulls.succeeded(key)
		pulled = true
	}
	if ok, err := img.IsUnpacked(ctx, r.snapshotter); err == nil && !ok {
		if err := img.Unpack(ctx, r.snapshotter); err != nil {
			return nil, false, fmt.Errorf("unpack %s: %w", name, err)
		}
	}
	return img, pulled, nil
}

// pullCause is a failed pull's error without the layers of wrapping the
// resolver adds twice over.
func pullCause(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "failed to resolve reference"); i > 0 {
		return msg[i:]
	}
	return msg
}
