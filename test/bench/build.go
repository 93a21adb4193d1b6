package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// buildBench times `go build` of the six binaries (what make build runs)
// from an empty build cache — the module cache kept, as on a machine that
// ran make once — and again with nothing changed; and the test images.
// Issue #10's goals: a cold make lab under 3 minutes, a warm one under 30 s.
func buildBench(dir string) string {
	cache := filepath.Join(dir, "gocache")
	bin := filepath.Join(dir, "bin") + "/"
	run := func(env []string, args ...string) time.Duration {
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), env...)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go %s: %v\n%s", strings.Join(args, " "), err, out)
			os.Exit(1)
		}
		return time.Since(start)
	}
	env := []string{"GOCACHE=" + cache}
	fmt.Fprintln(os.Stderr, "bench: cold build of the six binaries (empty build cache; takes minutes)")
	cold := run(env, "build", "-o", bin, "./cmd/...")
	imagesCold := run(env, "run", "./deploy/images/build", "-out", filepath.Join(dir, "images"))
	warm := run(env, "build", "-o", bin, "./cmd/...")
	imagesWarm := run(env, "run", "./deploy/images/build", "-out", filepath.Join(dir, "images"))
	verdict := func(d, goal time.Duration) string {
		if d < goal {
			return "met"
		}
		return "**missed**"
	}
	return "## Build (make build images, what make lab builds)\n\n" +
		"`go build -o bin/ ./cmd/...` (the six binaries in one build, as `make build` runs it) and the test images (`go run ./deploy/images/build`, which compiles labapp statically) from an empty build cache with the module cache already filled, then both again with nothing changed.\n\n" +
		"| build | binaries | images | together | goal |\n|---|---|---|---|---|\n" +
		fmt.Sprintf("| cold | %s | %s | %s | under 3 min for the whole cold `make lab` (%s for its build) |\n", cold.Round(time.Second), imagesCold.Round(time.Second), (cold+imagesCold).Round(time.Second), verdict(cold+imagesCold, 3*time.Minute)) +
		fmt.Sprintf("| warm, nothing changed | %s | %s | %s | under 30 s warm (%s) |\n\n", warm.Round(10*time.Millisecond), imagesWarm.Round(10*time.Millisecond), (warm+imagesWarm).Round(10*time.Millisecond), verdict(warm+imagesWarm, 30*time.Second)) +
		"Before issue #10 `make build` ran five builds one after another, silent for up to 3 minutes; a cold `make lab` took 4 min 41 s, 4 min 13 s of it building.\n"
}
