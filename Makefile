# Kobune — see README.md. Everything runs as root on Debian/Ubuntu; `make test`
# also runs without root (the end-to-end tests then skip and say why).

SHELL         := /bin/bash
GO            ?= go
BIN           := bin
BINARIES      := kobune-apiserver kobune-scheduler kobune-controller kobune-agent kobune-csi-local kobune-ingress kobectl kobeadm
TOOLS         := $(CURDIR)/.tools
DIST          ?= dist
ARCH          := $(shell $(GO) env GOARCH 2>/dev/null || echo amd64)
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
# Packages whose code runs goroutines against each other: run under -race.
RACE_PKGS     := ./apiserver/... ./client/... ./ctl/... ./agent/... ./scheduler/... ./controller/... ./csi/... ./ingress/...
FUZZTIME      ?= 3m

.PHONY: all build images dist test unit race compat lint vet fmt-check proto k8s-api-fields bench chaos fuzz conformance conformance-build conformance-images lab lab-down vm-lab vm-lab-down test-vm clean

all: build

# One go build for all six binaries (they share most packages), with a
# line every 50 packages compiled: a cold build compiles about 700 packages
# and takes minutes on 2 cores; a warm one prints nothing and takes seconds.
build:
	@mkdir -p $(BIN)
	@$(GO) mod download 2>/dev/null || { echo "go mod download failed: is the module proxy reachable?"; exit 1; }
	@echo "go build -o $(BIN)/ ./cmd/... ($(BINARIES))"
	@set -o pipefail; $(GO) build -v -o $(BIN)/ ./cmd/... 2>&1 | \
		awk '/^(#|[a-z_.\/]*\.go:)/ || / error/ {print; err=1; next} {n++; if (n % 50 == 0) {printf "    ... %d packages compiled\n", n; fflush()}} END {exit err}'
	@ls $(BIN) | grep -q kobectl || { echo "build failed"; exit 1; }
	@mkdir -p $(BIN)/addons && cp deploy/ingress/kobune-ingress.yaml deploy/csi/kobune-csi-local.yaml $(BIN)/addons/   # what kobeadm init applies

# Test images as OCI tarballs in bin/images (no Docker, no registry).
images:
	@test -x /bin/busybox || { echo "busybox-static is missing: apt-get install -y busybox-static"; exit 1; }
	$(GO) run ./deploy/images/build -out $(BIN)/images

# The offline installer bundle: one tarball with static binaries (no cgo:
# they run on any Linux of the architecture), the images the add-ons and
# examples need, the add-ons' manifests and the example (web, its Ingress). On a machine without
# internet: tar xzf kobune-linux-amd64.tar.gz && kobune/kobeadm init
# (docs/install.md).
dist: images
	@rm -rf $(DIST)/kobune && mkdir -p $(DIST)/kobune/addons $(DIST)/kobune/examples
	@echo "CGO_ENABLED=0 go build -trimpath -ldflags=\"-s -w\" -o $(DIST)/kobune/ ./cmd/... (static; minutes the first time)"
	@CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o $(DIST)/kobune/ ./cmd/...
	@cp -r $(BIN)/images $(DIST)/kobune/images
	@cp deploy/ingress/kobune-ingress.yaml deploy/csi/kobune-csi-local.yaml $(DIST)/kobune/addons/
	@cp deploy/examples/web.yaml deploy/examples/ingress.yaml $(DIST)/kobune/examples/
	@cp docs/install.md $(DIST)/kobune/INSTALL.md
	@tar -C $(DIST) -czf $(DIST)/kobune-linux-$(ARCH).tar.gz kobune
	@echo "$(DIST)/kobune-linux-$(ARCH).tar.gz: $$(du -h $(DIST)/kobune-linux-$(ARCH).tar.gz | cut -f1) ($$(ls $(DIST)/kobune | tr '\n' ' '))"

# The README's test command: formatting, vet, every test, the race
# detector, and the compatibility suite with the real kubectl and client-go.
test: lint unit race compat

lint: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go') | grep -v '\.pb\.go$$'); \
	if [ -n "$$out" ]; then echo "gofmt would change these files (run gofmt -w):"; echo "$$out"; exit 1; fi
	@echo "gofmt: ok"

vet:
	$(GO) vet ./...
	cd test/compat && $(GO) vet ./...
	cd tools/k8sapi && $(GO) vet ./...

# The end-to-end package runs real nodes one test after another (over
# ten minutes as root): past go test's default 10-minute limit.
unit:
	$(GO) test -count=1 -timeout 25m ./...

race:
	$(GO) test -count=1 -race $(RACE_PKGS)

# test/compat is its own Go module (Kubernetes' libraries stay out of
# Kobune's): it builds the real kubectl from k8s.io/kubectl and runs it,
# and client-go, against in-process clusters. The first run downloads the
# k8s.io modules and compiles kubectl (minutes on 2 cores).
compat:
	cd test/compat && $(GO) test -count=1 -timeout 20m ./...

# Regenerate api/k8sapi/types.json, Kubernetes' own field set, from the
# k8s.io/api version pinned in tools/k8sapi/go.mod (its own module: Kobune's
# module does not depend on Kubernetes' libraries).
k8s-api-fields:
	cd tools/k8sapi && $(GO) run . > ../../api/k8sapi/types.json.new && mv ../../api/k8sapi/types.json.new ../../api/k8sapi/types.json

# Regenerate proto/apipb from proto/api.proto with the pinned generators.
proto:
	@command -v protoc >/dev/null || { echo "protoc is missing: apt-get install -y protobuf-compiler"; exit 1; }
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO_GRPC)
	PATH=$(TOOLS):$$PATH protoc -I proto --go_out=proto/apipb --go_opt=paths=source_relative \
		--go-grpc_out=proto/apipb --go-grpc_opt=paths=source_relative proto/api.proto
	PATH=$(TOOLS):$$PATH protoc -I proto --go_out=proto/nodepb --go_opt=paths=source_relative \
		--go-grpc_out=proto/nodepb --go-grpc_opt=paths=source_relative proto/node.proto

# Benchmarks against the real apiserver and etcd, then (as root) pod start
# on a real node; writes docs/benchmarks.md.
bench:
	$(GO) run ./test/bench -out docs/benchmarks.md
	KOBUNE_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test ./agent/dns -run '^TestBenchClusterDNS$$' -count=1 -v | grep -E '^(---|ok|FAIL)'
	KOBUNE_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test ./ingress -run '^TestBenchIngress$$' -count=1 -v | grep -E '^(---|ok|FAIL)'
	KOBUNE_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test ./installer -run '^TestBenchSnapshot$$' -count=1 -v | grep -E '^(---|ok|FAIL)'
	@if [ "$$(id -u)" = 0 ]; then \
		KOBUNE_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test ./agent/proxy -run '^TestBenchServiceRules$$' -count=1 -v -timeout 30m | grep -E '^(---|ok|FAIL)'; \
		KOBUNE_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test ./agent/netpol -run '^TestBenchPolicyRules$$' -count=1 -v -timeout 10m | grep -E '^(---|ok|FAIL)'; \
		KOBUNE_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test ./test/e2e -run '^(TestBenchPodStartup|TestBenchEndpointPropagation|TestBenchPolicyPropagation|TestBenchConfigMapPropagation|TestBenchClaimPodStartup|TestBenchMetricFreshness|TestBenchAutoscalingDelay|TestBenchEvictionReaction|TestLabUpAndDown)$$' -count=1 -v -timeout 40m | grep -E '^(---|ok|FAIL)'; \
		KOBUNE_BENCH_REPORT=$(CURDIR)/docs/benchmarks.md $(GO) test ./test/vmlab -run '^TestBenchVMLab$$' -count=1 -v -timeout 20m | grep -E '^(---|ok|FAIL)'; \
	else echo "Service rules, pod start and lab benchmarks skipped: they need root (nftables, containerd, network namespaces)"; fi

# SIGKILL kobune-controller during 20 rollouts, 5 times over (make test
# runs it once).
chaos:
	$(GO) test ./controller/controllermanager -run '^TestChaosKillControllerDuringRollouts$$' -count=5 -v | grep -E '^(---|ok|FAIL)|chaos_test'

# Fuzz the manifest decoder, the selector parser and the API server's JSON codec
# (against encoding/json); new corpus entries are
# copied into testdata/fuzz so they are kept with the code.
fuzz:
	$(GO) test ./api/scheme -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME)
	$(GO) test ./api/selector -run '^$$' -fuzz FuzzParseLabels -fuzztime $(FUZZTIME)
	$(GO) test ./api/scheme -run '^$$' -fuzz FuzzCodecAgreesWithEncodingJSON -fuzztime $(FUZZTIME)
	$(GO) test ./api/internal/jsonstr -run '^$$' -fuzz FuzzUnquote -fuzztime $(FUZZTIME)

# Kubernetes' own conformance tests (deploy/conformance/conformance.sh):
# conformance-build builds e2e.test and kubectl once into a cache outside
# the repository (about 40 minutes); conformance runs the tests matching
# FOCUS, each in its own process, against make lab (ON=vmlab: the VM
# lab, make vm-lab), and writes
# docs/conformance.md. Not part of make test.
FOCUS ?= sig-api-machinery
conformance-build:
	deploy/conformance/conformance.sh build

conformance: conformance-build
	KOBUNE_CONFORMANCE_ON=$(or $(ON),lab) deploy/conformance/conformance.sh run '$(FOCUS)'

# The suite's test images, built here and loaded into the lab's nodes
# (make conformance does it too).
conformance-images: conformance-build
	deploy/conformance/conformance.sh images

# A 2-node cluster on this host (as root); deploy/lab/lab.sh has the rest.
lab:
	deploy/lab/lab.sh up

lab-down:
	deploy/lab/lab.sh down

# Machines that behave like VMs on this host (as root): Debian booted with
# systemd-nspawn, each with its own systemd, on a bridge with no route out,
# and Kobune installed on them with kobeadm as on VMs (init on cp1, join on
# w1, w2); deploy/vmlab/vmlab.sh has the verbs (kobectl, exec, reboot,
# poweroff, partition...).
vm-lab:
	deploy/vmlab/vmlab.sh up

vm-lab-down:
	deploy/vmlab/vmlab.sh down

# The VM lab's own tests (make test runs them too, as root).
test-vm:
	KOBUNE_TEST_VM=1 $(GO) test -count=1 -v -timeout 30m ./test/vmlab

clean:
	rm -rf $(BIN) $(TOOLS)
