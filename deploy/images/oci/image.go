package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"
)

// Media types of the OCI image spec.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"

	// AnnotationImageName is where containerd's importer reads the full
	// image name; AnnotationRefName is the OCI standard's (tag) name.
	AnnotationImageName = "io.containerd.image.name"
	AnnotationRefName   = "org.opencontainers.image.ref.name"
)

// File is one entry of the image's filesystem.
type File struct {
	Path     string // absolute, e.g. /bin/busybox
	Mode     int64  // permission bits, e.g. 0o755
	Data     []byte // regular files
	Dir      bool
	Linkname string // symlinks: the target
}

// Config is the part of the image config a container runtime uses.
type Config struct {
	Entrypoint   []string
	Cmd          []string
	Env          []string
	WorkingDir   string
	ExposedPorts []string // "8080/tcp"
	Labels       map[string]string
}

// Image is a single-layer image with a name such as kobune.local/labapp:1.0.
type Image struct {
	Name   string
	Arch   string // "amd64"
	Files  []File
	Config Config
}

// Descriptor points at a blob.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Manifest is an OCI image manifest.
type Manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        Descriptor   `json:"config"`
	Layers        []Descriptor `json:"layers"`
}

// Index is an OCI image index (index.json).
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// ImageConfig is the OCI image config blob.
type ImageConfig struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Created      string          `json:"created"`
	Config       RuntimeConfig   `json:"config"`
	RootFS       RootFS          `json:"rootfs"`
	History      []HistoryRecord `json:"history"`
}

// RuntimeConfig is the "config" section of an image config.
type RuntimeConfig struct {
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`
	Env          []string            `json:"Env,omitempty"`
	WorkingDir   string              `json:"WorkingDir,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	Labels       map[string]string   `json:"Labels,omitempty"`
}

// RootFS lists the uncompressed layer digests.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// HistoryRecord says how a layer was made.
type HistoryRecord struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// epoch is the timestamp of every file and of the image: reproducible builds.
var epoch = time.Unix(0, 0).UTC()

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Write writes img as an OCI image-layout tarball to w.
func Write(w io.Writer, img Image) error {
	if !strings.Contains(img.Name, ":") {
		return fmt.Errorf("image name %q needs a tag (name:tag)", img.Name)
	}
	layerTar, err := layerTarball(img.Files)
	if err != nil {
		return err
	}
	layerGz, err := gzipBytes(layerTar)
	if err != nil {
		return err
	}
	arch := img.Arch
	if arch == "" {
		arch = "amd64"
	}
	cfg := ImageConfig{
		Architecture: arch, OS: "linux", Created: epoch.Format(time.RFC3339),
		Config: RuntimeConfig{Entrypoint: img.Config.Entrypoint, Cmd: img.Config.Cmd, Env: img.Config.Env,
			WorkingDir: img.Config.WorkingDir, Labels: img.Config.Labels},
		RootFS:  RootFS{Type: "layers", DiffIDs: []string{digest(layerTar)}},
		History: []HistoryRecord{{Created: epoch.Format(time.RFC3339), CreatedBy: "kobune deploy/images/oci"}},
	}
	if len(img.Config.ExposedPorts) > 0 {
		cfg.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range img.Config.ExposedPorts {
			cfg.Config.ExposedPorts[p] = struct{}{}
		}
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	man := Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest,
		Config: Descriptor{MediaType: MediaTypeConfig, Digest: digest(cfgJSON), Size: int64(len(cfgJSON))},
		Layers: []Descriptor{{MediaType: MediaTypeLayer, Digest: digest(layerGz), Size: int64(len(layerGz))}}}
	manJSON, err := json.Marshal(man)
	if err != nil {
		return err
	}
	tag := img.Name[strings.LastIndex(img.Name, ":")+1:]
	idx := Index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{{
		MediaType: MediaTypeManifest, Digest: digest(manJSON), Size: int64(len(manJSON)),
		Annotations: map[string]string{AnnotationImageName: img.Name, AnnotationRefName: tag},
	}}}
	idxJSON, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	entries := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", idxJSON},
		{blobPath(digest(manJSON)), manJSON},
		{blobPath(digest(cfgJSON)), cfgJSON},
		{blobPath(digest(layerGz)), layerGz},
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

func blobPath(d string) string { return "blobs/sha256/" + strings.TrimPrefix(d, "sha256:") }

// layerTarball writes the files, with every parent directory, sorted by path.
func layerTarball(files []File) ([]byte, error) {
	all := map[string]File{}
	for _, f := range files {
		p := path.Clean("/" + f.Path)
		if p == "/" {
			return nil, fmt.Errorf("file path %q: must name something below /", f.Path)
		}
		f.Path = p
		all[p] = f
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if _, ok := all[dir]; !ok {
				all[dir] = File{Path: dir, Dir: true, Mode: 0o755}
			}
		}
	}
	paths := make([]string, 0, len(all))
	for p := range all {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := all[p]
		h := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case f.Linkname != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Linkname
			h.Mode = 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	zw.ModTime = epoch // no name, fixed time: reproducible
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
