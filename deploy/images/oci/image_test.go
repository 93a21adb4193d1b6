package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func readTar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if h.Typeflag == tar.TypeSymlink {
			b = []byte("-> " + h.Linkname)
		}
		out[h.Name] = b
	}
}

func TestWriteIsAValidOCILayout(t *testing.T) {
	img := Image{
		Name: "kobune.local/test:1.0",
		Files: []File{
			{Path: "/bin/busybox", Mode: 0o755, Data: []byte("#!binary")},
			{Path: "/bin/sh", Linkname: "busybox"},
		},
		Config: Config{Entrypoint: []string{"/bin/sh"}, ExposedPorts: []string{"8080/tcp"}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, img); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, bytes.NewReader(buf.Bytes()))
	var idx Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].Annotations[AnnotationImageName] != "kobune.local/test:1.0" || idx.Manifests[0].Annotations[AnnotationRefName] != "1.0" {
		t.Fatalf("index: %+v", idx)
	}
	blob := func(d Descriptor) []byte {
		b, ok := files[blobPath(d.Digest)]
		if !ok || digest(b) != d.Digest || int64(len(b)) != d.Size {
			t.Fatalf("blob %s missing or its digest/size do not match", d.Digest)
		}
		return b
	}
	var man Manifest
	if err := json.Unmarshal(blob(idx.Manifests[0]), &man); err != nil {
		t.Fatal(err)
	}
	var cfg ImageConfig
	if err := json.Unmarshal(blob(man.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Config.Entrypoint[0] != "/bin/sh" {
		t.Errorf("config: %+v", cfg)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(man.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	layer, _ := io.ReadAll(zr)
	if cfg.RootFS.DiffIDs[0] != digest(layer) {
		t.Errorf("diff_id %s does not match the uncompressed layer %s", cfg.RootFS.DiffIDs[0], digest(layer))
	}
	lf := readTar(t, bytes.NewReader(layer))
	if string(lf["bin/busybox"]) != "#!binary" || string(lf["bin/sh"]) != "-> busybox" {
		t.Errorf("layer files: %v", keys(lf))
	}
	if _, ok := lf["bin/"]; !ok {
		t.Errorf("parent directory bin/ missing from the layer: %v", keys(lf))
	}

	var again bytes.Buffer
	if err := Write(&again, img); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two builds of the same image differ: output is not reproducible")
	}
}

func TestWriteRefusesUntaggedName(t *testing.T) {
	if err := Write(io.Discard, Image{Name: "kobune.local/x"}); err == nil || !strings.Contains(err.Error(), "tag") {
		t.Errorf("untagged name: %v", err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
