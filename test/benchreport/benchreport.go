// Package benchreport is what the benchmarks `make bench` runs as Go tests
// share (in agent/proxy, agent/dns, test/e2e): they run only when
// KOBUNE_BENCH_REPORT names the markdown report (docs/benchmarks.md), and
// append their section to it.
package benchreport

import (
	"os"
	"testing"
)

// Env names the report.
const Env = "KOBUNE_BENCH_REPORT"

// Path is the report to append to; without one the benchmark is skipped.
func Path(t *testing.T) string {
	t.Helper()
	p := os.Getenv(Env)
	if p == "" {
		t.Skip("benchmark: run by `make bench` (set " + Env + " to a markdown file to append to)")
	}
	return p
}

// Append adds a section to the report (and to the test's log).
func Append(t *testing.T, path, section string) {
	t.Helper()
	t.Log(section)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatalf("benchmark report: %v", err)
	}
	defer f.Close()
	if _, err := f.WriteString(section); err != nil {
		t.Fatalf("benchmark report: %v", err)
	}
}

// Verdict is how a goal reads in the report.
func Verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}
