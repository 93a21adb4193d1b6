#!/usr/bin/env bash
# Kubernetes' own conformance tests against Kobune's lab (make conformance).
#
#   conformance.sh build            e2e.test and kubectl of Kubernetes $K8S_VERSION,
#                                   built once into the cache (about 40 minutes
#                                   on 2 cores; nothing goes into the repository)
#   conformance.sh images           the test images (agnhost, pause, busybox, an
#                                   nginx stand-in) built here, into the lab's
#                                   nodes (run does it too; make conformance-images)
#   conformance.sh list [FOCUS]     the [Conformance] tests whose names match FOCUS
#   conformance.sh run [FOCUS|FILE] each matching test in its own process against
#                                   the lab (make lab first), a table of results
#                                   in docs/conformance.md
#   conformance.sh report [SEL [TSV...]]  that table again from kept results
#
# FOCUS is a regular expression on the tests' full names (default
# "sig-api-machinery"; "." for all); FILE a file of test names, one a line.
# The cache is $KOBUNE_CONFORMANCE_CACHE (default /var/cache/kobune/conformance).
#
# KOBUNE_CONFORMANCE_ON=vmlab (make conformance ON=vmlab) runs against the
# VM lab (make vm-lab) instead: the images are imported into every
# machine's containerd through `vmlab.sh exec`, and e2e.test runs in the VM
# lab's network namespace (the only place its machines are reachable
# from) with cp1's admin kubeconfig.
#
# Why each test runs alone: a test that fails inside a goroutine ends the
# whole e2e.test process (Ginkgo's Fail panics there), and every later
# test would be lost. The suite's clients send protobuf bodies, as
# Kubernetes' own components do: Kobune decodes them and answers JSON,
# which client-go reads as well.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
CACHE=${KOBUNE_CONFORMANCE_CACHE:-/var/cache/kobune/conformance}/$K8S_VERSION
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GO=${GO:-go}

ON=${KOBUNE_CONFORMANCE_ON:-lab}
VMLAB=$ROOT/deploy/vmlab/vmlab.sh
VMLAB_NETNS=${KOBUNE_VMLAB_NETNS:-kobvm}

say() { printf '%s\n' "$*"; }
die() { printf 'conformance: %s\n' "$*" >&2; exit 1; }

# build makes $CACHE/e2e.test and $CACHE/kubectl from the module proxy's
# k8s.io/kubernetes: the module is copied out of Go's read-only module
# cache, its workspace and vendor directory set aside, and its go.mod made
# to require the published staging modules (k8s.io/api, client-go, ...)
# at the same version instead of replacing them with ./staging, which the
# module's zip does not hold.
build() {
  # A kubectl built before its version was stamped in says v0.0.0-master,
  # which kubectl version (a cli conformance test) cannot parse: made again.
  if [ -x "$CACHE/kubectl" ] && ! "$CACHE/kubectl" version --client 2>/dev/null | grep -q "Client Version: $K8S_VERSION"; then
    rm -f "$CACHE/kubectl"
  fi
  if [ -x "$CACHE/e2e.test" ] && [ -x "$CACHE/kubectl" ]; then
    say "e2e.test and kubectl $K8S_VERSION are built already ($CACHE); rm -rf $CACHE to build again"
    return
  fi
  command -v "$GO" >/dev/null || die "Go is missing: install Go (TOOLCHAIN: 1.26) and run again"
  mkdir -p "$CACHE"
  local src=$CACHE/src
  if [ ! -f "$src/go.mod" ]; then
    say "[1/4] download k8s.io/kubernetes@$K8S_VERSION from the module proxy"
    local dir
    dir=$(GOFLAGS=-mod=mod "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$dir" ] && [ -d "$dir" ] || die "go mod download k8s.io/kubernetes@$K8S_VERSION gave no directory (is the module proxy reachable?)"
    rm -rf "$src.tmp"
    cp -r "$dir" "$src.tmp"
    chmod -R u+w "$src.tmp"
    rm -rf "$src.tmp/go.work" "$src.tmp/go.work.sum" "$src.tmp/vendor"
    local minor=v0.${K8S_VERSION#v1.}
    sed -i -E -e '/^[[:space:]]*k8s\.io\/[A-Za-z0-9._-]+ => \.\/staging\/src\/k8s\.io\//d' \
      -e "s#^([[:space:]]*k8s\\.io/[A-Za-z0-9._-]+) v0\\.0\\.0\$#\\1 $minor#" "$src.tmp/go.mod"
    (cd "$src.tmp" && GOWORK=off "$GO" mod tidy) || die "go mod tidy in the copied module failed (see above)"
    mv "$src.tmp" "$src"
  fi
  say "[2/4] build kubectl"
  # Its version stamped in, as Kubernetes' release build does
  # (hack/lib/version.sh): kubectl version prints and parses it.
  local minor=${K8S_VERSION#v1.} ldflags=""
  minor=${minor%%.*}
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags="$ldflags -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  (cd "$src" && GOWORK=off CGO_ENABLED=0 "$GO" build -ldflags "$ldflags" -o "$CACHE/kubectl" ./cmd/kubectl)
  if [ ! -x "$CACHE/e2e.test" ]; then
    say "[3/4] build e2e.test (the longest step: about 30 minutes on 2 cores)"
    (cd "$src" && GOWORK=off "$GO" test -c -vet=off -o "$CACHE/e2e.test.tmp" ./test/e2e)
    mv "$CACHE/e2e.test.tmp" "$CACHE/e2e.test"
  fi
  say "[4/4] done: $("$CACHE/e2e.test" --list-conformance-tests 2>/dev/null | grep -c '^  codename:' || true) conformance tests in $CACHE/e2e.test"
}

# images builds the test images the tests run, under the names the suite
# uses (its own list, test/utils/image/manifest.go), and imports them into
# each lab node's containerd — the lab pulls nothing:
#   agnhost   Kubernetes' test server, built static from the same source,
#             beside busybox's applets (entrypoint /agnhost); the previous
#             agnhost version some apps tests name is the same image;
#   pause     agnhost's pause subcommand (entrypoint /agnhost pause);
#   busybox   the host's busybox-static with its applets;
#   nginx     a stand-in: agnhost netexec serving HTTP on port 80 (the
#             tests that run nginx only need a web server there);
#   glibc-dns-testing  busybox with glibc's getent and dig;
#   nonewprivs  the test's set-user-ID program, built from the same source;
#   nautilus, kitten  agnhost's test-webserver with the update demo's files.
images() {
  [ -f "$CACHE/src/go.mod" ] || die "no Kubernetes source in $CACHE/src: run make conformance-build (or $0 build) first"
  local src=$CACHE/src state=${KOBUNE_LAB_STATE:-/var/lib/kobune-lab} manifest
  manifest=$src/test/utils/image/manifest.go
  version() { sed -n "s/.*configs\[$1\] = Config{[^,]*, \"[^\"]*\", \"\([^\"]*\)\"}.*/\1/p" "$manifest"; }
  local e2e=registry.k8s.io/e2e-test-images
  # name of the tarball, image name, and what it is made of: "busybox",
  # or agnhost with the entrypoint's arguments after it.
  local images=(
    "agnhost $e2e/agnhost:$(version Agnhost) agnhost"
    "agnhost-prev $e2e/agnhost:$(version AgnhostPrev) agnhost"
    "pause registry.k8s.io/pause:$(version Pause) agnhost pause"
    "busybox $e2e/busybox:$(version BusyBox) busybox"
    "nginx $e2e/nginx:$(version Nginx) agnhost netexec,--http-port=80"
    "glibc-dns-testing $e2e/glibc-dns-testing:$(version GlibcDnsTesting) busybox"
    "nonewprivs $e2e/nonewprivs:$(version Nonewprivs) nonewprivs"
    "nautilus $e2e/nautilus:$(version Nautilus) webserver nautilus"
    "kitten $e2e/kitten:$(version Kitten) webserver kitten"
  )
  mkdir -p "$CACHE/images"
  # What Kubernetes' agnhost image carries beside the binary that tests
  # use: porter's certificate at / (test-webserver serves it, a
  # StatefulSet's readiness probe reads it), agnhost-2 (the entrypoint
  # tests), /uploads (netexec), and a user and group defined in the image.
  local etc=$CACHE/images/etc
  mkdir -p "$etc"
  printf 'root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n' >"$etc/passwd"
  printf 'root:x:0:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' >"$etc/group"
  printf 'hosts: files dns\n' >"$etc/nsswitch.conf"
  local extra="$src/test/images/agnhost/porter/localhost.crt:/localhost.crt,$src/test/images/agnhost/porter/localhost.key:/localhost.key"
  extra="$extra,/agnhost-2@agnhost,/uploads/,$etc/passwd:/etc/passwd,$etc/group:/etc/group,$etc/nsswitch.conf:/etc/nsswitch.conf"
  # The real image's network tools (Alpine's curl, netcat-openbsd, dig,
  # iproute2, socat), which the network tests call with options
  # busybox's applets lack: Debian's, with the libraries they load.
  # /bin/sh is Debian's dash: busybox's sh runs its own applets before
  # anything on PATH (nc would be busybox's), Alpine's does not.
  extra="$extra,$(host_tools nc.openbsd:/usr/bin/nc curl dig getent socat ip ss dash:/bin/sh)" || die "the network tools for the test images: see above"
  # busybox: /bin/sh is Debian's bash (sh mode). Debian 12's busybox 1.35
  # ash, like dash, drops environment variables whose names are not shell
  # identifiers ("data-1", which envFrom may set since Kubernetes 1.34);
  # the image's busybox 1.37 keeps them, and the ConfigMap and Secret
  # tests read them with sh -c env.
  local busyboxsh
  busyboxsh=$(host_tools bash:/bin/sh) || die "bash for the busybox image: see above"
  # glibc-dns-testing: busybox with glibc's getent and dig (the DNS tests
  # ask both a musl and a glibc resolver; here both are glibc's).
  local dnstools
  dnstools="$etc/nsswitch.conf:/etc/nsswitch.conf,$(host_tools dig getent)" || die "the DNS tools for the test images: see above"
  # stamp: a tarball made by an earlier version of this list is made again.
  local line file name what args stamp=7
  for line in "${images[@]}"; do
    read -r file name what args <<<"$line"
    [ -f "$CACHE/images/$file.$stamp.tar" ] && continue
    say "build $name"
    local tmp=$CACHE/images/tmp
    rm -rf "$tmp"
    if [ "$what" = nonewprivs ]; then
      # The real image's set-user-ID root program that prints its
      # effective uid (allowPrivilegeEscalation decides whether it gets 0).
      (cd "$src" && GOWORK=off CGO_ENABLED=0 "$GO" build -o "$CACHE/nnp" ./test/images/nonewprivs) && chmod 4755 "$CACHE/nnp"
      (cd "$ROOT" && "$GO" run ./deploy/images/build -out "$tmp" -binary "$CACHE/nnp" -name "$name" >/dev/null)
    elif [ "$what" = webserver ]; then
      # kubectl's update demo: agnhost's test-webserver serving the
      # image's picture and data.json (the real images are agnhost with
      # those two files).
      [ -x "$CACHE/agnhost" ] || (cd "$src" && GOWORK=off CGO_ENABLED=0 "$GO" build -o "$CACHE/agnhost" ./test/images/agnhost)
      local html=$src/test/images/$args/html
      (cd "$ROOT" && "$GO" run ./deploy/images/build -out "$tmp" -binary "$CACHE/agnhost" -name "$name" \
        -add "$extra,$html/$args.jpg:/$args.jpg,$html/data.json:/data.json" -cmd test-webserver >/dev/null)
    elif [ "$what" = busybox ]; then
      local add=""
      [ "$file" = glibc-dns-testing ] && add=$dnstools
      [ "$file" = busybox ] && add=$busyboxsh
      (cd "$ROOT" && "$GO" run ./deploy/images/build -out "$tmp" -name "$name" ${add:+-add "$add"} >/dev/null)
    else
      [ -x "$CACHE/agnhost" ] || (cd "$src" && GOWORK=off CGO_ENABLED=0 "$GO" build -o "$CACHE/agnhost" ./test/images/agnhost)
      # Without arguments agnhost runs pause, as the real image's CMD says.
      local run=(-cmd pause)
      [ -n "$args" ] && run=(-args "$args")
      (cd "$ROOT" && "$GO" run ./deploy/images/build -out "$tmp" -binary "$CACHE/agnhost" -name "$name" -add "$extra" "${run[@]}" >/dev/null)
    fi
    mv "$tmp"/*.tar "$CACHE/images/$file.$stamp.tar"
    rm -rf "$tmp"
  done
  local sock n=0
  if [ "$ON" = vmlab ]; then
    local m
    for m in $("$VMLAB" list); do
      for line in "${images[@]}"; do
        read -r file name what args <<<"$line"
        "$VMLAB" exec "$m" ctr -n kobune images import - <"$CACHE/images/$file.$stamp.tar" >/dev/null || die "import $file into $m failed"
      done
      n=$((n + 1))
    done
    [ "$n" -gt 0 ] || die "no VM-lab machine: make vm-lab first"
    say "${#images[@]} test images are in the containerd of $n VM-lab machines"
    return
  fi
  for sock in "$state"/nodes/*/containerd.sock; do
    [ -S "$sock" ] || continue
    for line in "${images[@]}"; do
      read -r file name what args <<<"$line"
      ctr -a "$sock" -n kobune images import "$CACHE/images/$file.$stamp.tar" >/dev/null || die "import $file into $sock failed"
    done
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || die "no lab node's containerd under $state/nodes: make lab first"
  say "${#images[@]} test images are in the containerd of $n lab nodes"
}

# host_tools NAME[:DEST]...: -add entries for commands of this host (at
# their path, or DEST) and the shared libraries they load (installed first
# with apt-get when missing).
host_tools() {
  local missing=()
  command -v nc.openbsd >/dev/null || missing+=(netcat-openbsd)
  command -v dig >/dev/null || missing+=(bind9-dnsutils)
  command -v socat >/dev/null || missing+=(socat)
  command -v curl >/dev/null || missing+=(curl)
  if [ ${#missing[@]} -gt 0 ]; then
    say "install ${missing[*]} (the network tools the test images carry)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
  fi
  local t bin dest lib
  {
    for t in "$@"; do
      bin=$(command -v "${t%%:*}") || die "${t%%:*} is not installed"
      dest=${t#*:}
      [ "$dest" = "$t" ] && dest=$bin
      printf '%s:%s\n' "$bin" "$dest"
      for lib in $(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
        printf '%s:%s\n' "$lib" "$lib"
      done
    done
  } | sort -u | paste -sd, -
}

need_built() {
  [ -x "$CACHE/e2e.test" ] || die "no e2e.test in $CACHE: run make conformance-build (or $0 build) first"
}

# names FOCUS prints the conformance tests whose names match FOCUS, one a
# line (e2e.test lists them in YAML, each name folded over lines).
names() {
  need_built
  "$CACHE/e2e.test" --list-conformance-tests 2>/dev/null | awk '
    function emit(x) { x = substr(x, 2, length(x) - 2); gsub(/\047\047/, "\047", x); print x }
    /^  codename: / { s = substr($0, 13); if (s ~ /\047$/) emit(s); else folded = 1; next }
    folded { t = $0; sub(/^ +/, "", t); s = s " " t; if (t ~ /\047$/) { emit(s); folded = 0 } }' |
    grep -E -- "${1:-sig-api-machinery}" || true
}

# run runs each selected test in its own e2e.test process against the lab
# and writes the table into docs/conformance.md (and each test's log into
# $CACHE/logs).
run() {
  need_built
  local sel=${1:-sig-api-machinery} kubeconfig=${KOBUNE_CONFORMANCE_KUBECONFIG:-${KOBUNE_LAB_STATE:-/var/lib/kobune-lab}/pki/admin.kubeconfig}
  local inside=()   # what runs e2e.test and kubectl: here, or in the VM lab's network
  if [ "$ON" = vmlab ]; then
    kubeconfig=$CACHE/vmlab-admin.conf
    "$VMLAB" exec cp1 cat /etc/kobune/admin.conf >"$kubeconfig" 2>/dev/null || die "no admin kubeconfig on the VM lab's cp1: make vm-lab first"
    inside=(ip netns exec "$VMLAB_NETNS")
  fi
  [ -f "$kubeconfig" ] || die "no lab kubeconfig at $kubeconfig: run make lab first (or set KOBUNE_CONFORMANCE_KUBECONFIG)"
  "${inside[@]}" "$CACHE/kubectl" --kubeconfig "$kubeconfig" get nodes >/dev/null 2>&1 || die "the $ON does not answer ($kubeconfig): make ${ON/vmlab/vm-lab}, then run again"
  images
  local tests=()
  if [ -f "$sel" ]; then
    mapfile -t tests < <(grep -v '^[[:space:]]*\(#\|$\)' "$sel")
  else
    mapfile -t tests < <(names "$sel")
  fi
  [ ${#tests[@]} -gt 0 ] || die "no conformance test matches $sel ($0 list $sel shows the names)"
  local logs=$CACHE/logs results=$CACHE/results.tsv i=0 passed=0 start=$SECONDS
  mkdir -p "$logs"
  : >"$results"
  for t in "${tests[@]}"; do
    i=$((i + 1))
    local focus log rc=0 t0=$SECONDS
    # The whole name, its regular-expression characters escaped, anchored
    # (Ginkgo's full text may start with a space): a name that is the
    # start of another's runs alone.
    focus="(^|\\s)$(printf '%s' "$t" | sed 's/[][\\.*^$()+?{}|]/\\&/g; s/ \{1,\}/\\s+/g')\$"
    log=$logs/$(printf '%03d' "$i").log
    printf '[%d/%d] %s ... ' "$i" "${#tests[@]}" "$t"
    "${inside[@]}" timeout "${KOBUNE_CONFORMANCE_TIMEOUT:-900}" "$CACHE/e2e.test" --kubeconfig="$kubeconfig" --provider=skeleton \
      --kubectl-path="$CACHE/kubectl" --minStartupPods=0 --allowed-not-ready-nodes=1 \
      --ginkgo.focus="$focus" --ginkgo.v --ginkgo.no-color >"$log" 2>&1 || rc=$?
    local result why=""
    if [ "$rc" = 0 ] && grep -q 'Ran 1 of' "$log"; then
      result=pass passed=$((passed + 1))
    elif grep -q 'Ran 0 of' "$log"; then
      result="not run" why="the focus matched no spec"
    else
      result=fail
      # The failure's message (Ginkgo's summary repeats it after the
      # "[FAILED] in [It] - file:line" line).
      why=$(grep -E '^[[:space:]]*\[FAILED\] ' "$log" | grep -v '\[FAILED\] in \[' | head -1 | sed 's/^[[:space:]]*\[FAILED\] //; s/|/\\|/g' | cut -c1-300 || true)
      [ -n "$why" ] || why=$( [ "$rc" = 124 ] && echo "timed out after ${KOBUNE_CONFORMANCE_TIMEOUT:-900} s" || tail -1 "$log" | cut -c1-300)
    fi
    printf '%s (%d s)\n' "$result" $((SECONDS - t0))
    printf '%s\t%s\t%s\t%s\n' "$t" "$result" $((SECONDS - t0)) "$why" >>"$results"
  done
  report "$sel" "$results"
  say "$passed of ${#tests[@]} passed; the table is in docs/conformance.md, each test's log in $logs"
}

# report writes docs/conformance.md from results files (test, result,
# seconds, first failure; tab-separated), and deploy/conformance/notes.md,
# the causes found so far, written by hand.
report() {
  local sel=$1 out=$ROOT/docs/conformance.md total passed took
  shift
  total=$(cat "$@" | grep -c . || true)
  passed=$(cat "$@" | awk -F'\t' '$2 == "pass"' | grep -c . || true)
  took=$(cat "$@" | awk -F'\t' '{s += $3} END {print int(s / 60)}')
  {
    say "# Kubernetes' conformance tests against Kobune"
    say ""
    say "Written by \`make conformance\` (deploy/conformance/conformance.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'): Kubernetes $K8S_VERSION's \`e2e.test\`, built from the module proxy, each \`[Conformance]\` test matching \`$sel\` run in its own process against \`make lab\` (two nodes on this host) as the lab's admin. $passed of $total passed, in $took minutes."
    say ""
    cat <<'TEXT'
## How it runs

- `make conformance-build` (once; about 30 minutes on 2 cores): `go mod download` of
  `k8s.io/kubernetes`, copied out of the module cache, its `go.mod` made to require the
  published `k8s.io/*` staging modules at the same version (the module's zip has no
  `staging/`), then `e2e.test` and a matching `kubectl` built into
  `/var/cache/kobune/conformance/<version>` (`KOBUNE_CONFORMANCE_CACHE`). Nothing of
  Kubernetes enters this repository.
- `make lab`, then `make conformance` (`FOCUS=<regular expression>` on the tests' names,
  default `sig-api-machinery`; `FOCUS=.` for all; or `FOCUS=<file>` of names, one a line):
  the test images the tests run (`make conformance-images`: agnhost built from the same
  source, with porter's certificate, a user and group defined in the image and Debian's
  curl, netcat-openbsd, dig, socat and iproute2 with their libraries, as the real image
  carries Alpine's; the previous agnhost version as the same image; pause as agnhost's
  `pause`; busybox; nginx as agnhost's `netexec` on port 80; nonewprivs, the test's
  set-user-ID program built from the same source) are loaded into the lab's
  nodes under the names the suite uses; then
  each test runs in its own `e2e.test` process (`--provider=skeleton`, the lab's admin
  kubeconfig), because a test that fails inside a goroutine ends the process and would take
  every later test with it; 15 minutes at most each (`KOBUNE_CONFORMANCE_TIMEOUT`). Each
  test's log is kept in the cache's `logs/`.
- `make conformance ON=vmlab` runs them against the VM lab (`make vm-lab`: three
  machines installed with kobeadm) instead: the images are imported into each machine's
  containerd through `vmlab.sh exec`, and `e2e.test` runs in the VM lab's network
  namespace with cp1's admin kubeconfig. The Serial and Disruptive tests (a node tainted,
  every node's pods counted) are run there too.
- Not part of `make test`: the build alone takes longer than CI allows. Every behaviour a
  test here finds missing gets its own test in Kobune's suite.
- `deploy/conformance/conformance.sh report [results.tsv ...]` writes this page again from
  kept results (with the notes below).

TEXT
    [ -f "$ROOT/deploy/conformance/notes.md" ] && cat "$ROOT/deploy/conformance/notes.md" && say ""
    say "## Per SIG"
    say ""
    say "Every \`[Conformance]\` test of $K8S_VERSION by SIG, how many of them the results below hold, and how many of those passed; the rest remains to be run or made to pass."
    say ""
    say "| SIG | conformance tests | run | passed | remaining |"
    say "|---|---|---|---|---|"
    { names . | sed 's/^\[\(sig-[a-z-]*\)\].*/all\t\1/'; cat "$@" | awk -F'\t' '{ match($1, /^\[sig-[a-z-]*\]/); sig = substr($1, 2, RLENGTH - 2); print ($2 == "pass" ? "pass" : "run") "\t" sig }'; } |
      awk -F'\t' '{ n[$2, $1]++; sigs[$2] = 1 } END { for (g in sigs) { run = n[g, "run"] + n[g, "pass"]; printf "| %s | %d | %d | %d | %d |\n", g, n[g, "all"], run, n[g, "pass"], n[g, "all"] - n[g, "pass"] } }' | sort
    say ""
    say "## Results"
    say ""
    say "| test | result | seconds | first failure |"
    say "|---|---|---|---|"
    cat "$@" | while IFS=$'\t' read -r t result secs why; do
      say "| $(printf '%s' "$t" | sed 's/|/\\|/g') | $result | $secs | $why |"
    done
  } >"$out"
}

case "${1:-}" in
  build) build ;;
  images) images ;;
  list) names "${2:-sig-api-machinery}" ;;
  run) run "${2:-sig-api-machinery}" ;;
  report) sel=${2:-sig-api-machinery}; shift 2 2>/dev/null || shift; report "$sel" "${@:-$CACHE/results.tsv}" ;;
  *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
