// Command build makes Kobune's test images as OCI tarballs, with no Docker
// and no registry (`make images`):
//
//	kobune.local/labapp:1.0, kobune.local/labapp:2.0   deploy/images/labapp, version baked in
//	kobune.local/busybox:1.35                          the host's busybox-static with its applet links
//	kobune.local/ingress:1.0                           cmd/kobune-ingress, the ingress controller
//
// Each lands in OUT/<name>-<tag>.tar, ready for `ctr images import` or an
// agent's image load. With -name it packs one given static binary
// (-binary) beside busybox, or busybox alone, under that name instead
// (make conformance: Kubernetes' agnhost, pause and busybox test images).
package main

import (
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kobune/kobune/deploy/images/oci"
)

func main() {
	out := flag.String("out", "bin/images", "directory for the image tarballs")
	busybox := flag.String("busybox", "/bin/busybox", "a statically linked busybox (Debian: apt-get install busybox-static)")
	binary := flag.String("binary", "", "instead of the test images, one image of this static binary (its entrypoint) with busybox's applets in /bin: make conformance packs Kubernetes' agnhost so")
	name := flag.String("name", "", "the name of the -binary image (registry.k8s.io/e2e-test-images/agnhost:2.66.1); without -binary, busybox's image under this name")
	args := flag.String("args", "", "with -binary: arguments after the binary in the entrypoint, comma-separated (agnhost's pause subcommand stands in for registry.k8s.io/pause)")
	cmd := flag.String("cmd", "", "with -binary: the image's default arguments (CMD), comma-separated (Kubernetes' agnhost image runs pause when given none)")
	add := flag.String("add", "", "with -binary: more files, comma-separated SRC:DEST (a file of this host, its path in the image), DEST@TARGET (a symbolic link) or DEST/ (a directory): what Kubernetes' agnhost image carries beside the binary")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	if *name != "" {
		img, err := binaryImage(*name, *binary, *busybox)
		if err != nil {
			log.Fatalf("%s: %v", *name, err)
		}
		if *args != "" {
			img.Config.Entrypoint = append(img.Config.Entrypoint, strings.Split(*args, ",")...)
		}
		if *cmd != "" {
			img.Config.Cmd = strings.Split(*cmd, ",")
		}
		for _, a := range strings.Split(*add, ",") {
			f, err := extraFile(a)
			if err != nil {
				log.Fatalf("%s: -add %s: %v", *name, a, err)
			}
			if f.Path != "" {
				img.Files = append(img.Files, f)
			}
		}
		write(*out, img)
		return
	}
	for _, v := range []string{"1.0", "2.0"} {
		img, err := labapp(v)
		if err != nil {
			log.Fatalf("labapp %s: %v", v, err)
		}
		write(*out, img)
	}
	ing, err := goImage("kobune.local/ingress:1.0", "./cmd/kobune-ingress", "", oci.Config{Entrypoint: []string{"/kobune-ingress"},
		ExposedPorts: []string{"80/tcp", "443/tcp", "10254/tcp"}, Env: []string{"PATH=/"}})
	if err != nil {
		log.Fatalf("ingress: %v", err)
	}
	write(*out, ing)
	img, err := busyboxImage(*busybox)
	if err != nil {
		log.Fatalf("busybox: %v", err)
	}
	write(*out, img)
}

func write(dir string, img oci.Image) {
	name := strings.NewReplacer("kobune.local/", "", ":", "-", "/", "_").Replace(img.Name) + ".tar"
	path := filepath.Join(dir, name)
	var buf bytes.Buffer
	if err := oci.Write(&buf, img); err != nil {
		log.Fatalf("%s: %v", img.Name, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s -> %s (%d KiB)\n", img.Name, path, buf.Len()/1024)
}

// labapp compiles the lab app statically with its version baked in.
func labapp(version string) (oci.Image, error) {
	return goImage("kobune.local/labapp:"+version, "./deploy/images/labapp", "-X main.version="+version, oci.Config{Entrypoint: []string{"/labapp"},
		ExposedPorts: []string{"8080/tcp"}, Env: []string{"PATH=/"}, Labels: map[string]string{"org.opencontainers.image.version": version}})
}

// goImage compiles a Go command statically into an image of one file,
// /<command> (and /tmp), run by config.
func goImage(name, pkg, ldflags string, config oci.Config) (oci.Image, error) {
	tmp, err := os.MkdirTemp("", "image")
	if err != nil {
		return oci.Image{}, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", strings.TrimSpace("-s -w "+ldflags), "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return oci.Image{}, fmt.Errorf("go build %s (run from the repository root): %w", pkg, err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return oci.Image{}, err
	}
	return oci.Image{
		Name:   name,
		Arch:   runtime.GOARCH,
		Files:  []oci.File{{Path: "/" + filepath.Base(pkg), Mode: 0o755, Data: data}, {Path: "/tmp", Dir: true, Mode: 0o1777}},
		Config: config,
	}, nil
}

// binaryImage packs a static binary, run as the entrypoint, beside
// busybox and its applets (tests run sh, cat and the like in such images).
// With no binary it is busybox's image under another name.
func binaryImage(name, path, busybox string) (oci.Image, error) {
	img, err := busyboxImage(busybox)
	if err != nil || path == "" {
		img.Name = name
		return img, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return oci.Image{}, err
	}
	entry := "/" + filepath.Base(path)
	img.Name = name
	img.Files = append(img.Files, oci.File{Path: entry, Mode: modeOf(path, 0o755), Data: data})
	img.Config = oci.Config{Entrypoint: []string{entry}, Env: []string{"PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/"}}
	return img, nil
}

// busyboxImage packs a static busybox and a link per applet.
func busyboxImage(path string) (oci.Image, error) {
	f, err := elf.Open(path)
	if err != nil {
		return oci.Image{}, fmt.Errorf("%s: %w (install it: apt-get install -y busybox-static)", path, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			f.Close()
			return oci.Image{}, fmt.Errorf("%s is dynamically linked; install the static one: apt-get install -y busybox-static", path)
		}
	}
	f.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		return oci.Image{}, err
	}
	list, err := exec.Command(path, "--list").Output()
	if err != nil {
		return oci.Image{}, fmt.Errorf("%s --list: %w", path, err)
	}
	files := []oci.File{{Path: "/bin/busybox", Mode: 0o755, Data: data}, {Path: "/tmp", Dir: true, Mode: 0o1777}}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			files = append(files, oci.File{Path: "/bin/" + applet, Linkname: "busybox"})
		}
	}
	return oci.Image{
		Name:   "kobune.local/busybox:1.35",
		Arch:   runtime.GOARCH,
		Files:  files,
		Config: oci.Config{Cmd: []string{"/bin/sh"}, Env: []string{"PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
	}, nil
}

// extraFile is one -add entry: SRC:DEST, DEST@TARGET or DEST/.
func extraFile(a string) (oci.File, error) {
	switch {
	case a == "":
		return oci.File{}, nil
	case strings.HasSuffix(a, "/"):
		return oci.File{Path: strings.TrimSuffix(a, "/"), Dir: true, Mode: 0o755}, nil
	case strings.Contains(a, "@"):
		dest, target, _ := strings.Cut(a, "@")
		return oci.File{Path: dest, Linkname: target}, nil
	}
	src, dest, ok := strings.Cut(a, ":")
	if !ok || !strings.HasPrefix(dest, "/") {
		return oci.File{}, fmt.Errorf("want SRC:DEST with an absolute DEST")
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return oci.File{}, err
	}
	info, err := os.Stat(src)
	if err != nil {
		return oci.File{}, err
	}
	return oci.File{Path: dest, Mode: modeOf(src, int64(info.Mode().Perm())), Data: data}, nil
}

// modeOf is a file's mode in an image: perm, with the set-user-ID bit when
// the file on this host has it (Kubernetes' nonewprivs test image is a
// set-user-ID root program; the image's files belong to root).
func modeOf(path string, perm int64) int64 {
	if info, err := os.Stat(path); err == nil && info.Mode()&os.ModeSetuid != 0 {
		return perm | 0o4000
	}
	return perm
}
