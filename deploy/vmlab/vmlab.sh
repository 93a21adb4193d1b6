#!/usr/bin/env bash
# vmlab.sh — machines that behave like VMs, on one Linux host.
#
# Each machine is a Debian root filesystem booted with systemd-nspawn:
# its own systemd as PID 1, its own hostname, /run, cgroups, containerd and
# network stack, and an address on a private bridge. The bridge lives in a
# network namespace of the lab's own (kobvm) with no default route and no
# NAT: nothing a machine sends leaves this host. A machine reboots with its
# own `systemctl reboot` (its /run, processes and network namespaces are
# gone, its disk kept), powers off, is cut off the bridge (partition) — what
# a course needs to show a node failing. docs/install.md says what such a
# machine can and cannot show (one kernel: no modules, no kernel sysctls).
#
# Verbs:
#   up [N]        N machines (default 3): cp1 first, then w1, w2, ... and
#                 Kobune installed on them as on VMs: make dist's bundle
#                 unpacked into each, kobeadm init on cp1, kobeadm join on
#                 the others (machines installed already are left as they
#                 are), then the example served through its Service
#   up --bare [N] the machines only, nothing installed (the installer's tests)
#   kobectl ARGS...    kobectl on cp1 as the cluster's admin
#   down          stop every machine, remove them, the bridge and namespace
#   list          machine names, one a line, control planes first
#   exec NAME CMD...   run CMD as root inside NAME (stdin passed through,
#                      CMD's exit status returned)
#   reboot NAME | poweroff NAME | start NAME
#   partition NAME | heal NAME   cut NAME off the bridge / join it again
#   status        each machine: state, address, its systemd's view
#   base          build (or show) the cached base root filesystem
#
# State: /var/lib/kobune/vmlab (the machines' disks), the base image in
# /var/cache/kobune/vmlab (built once from Debian's packages with
# mmdebstrap; `base --rebuild` builds it again).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${KOBUNE_VMLAB_STATE:-/var/lib/kobune/vmlab}
CACHE=${KOBUNE_VMLAB_CACHE:-/var/cache/kobune/vmlab}
NETNS=${KOBUNE_VMLAB_NETNS:-kobvm}   # (tests use their own, beside a user's lab)
BRIDGE=kobvm0
SUBNET=172.30.0
SUITE=bookworm
MIRROR=${KOBUNE_VMLAB_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${KOBUNE_VMLAB_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
PACKAGES=systemd,systemd-sysv,dbus,iproute2,iputils-ping,procps,kmod,util-linux,containerd,runc,containernetworking-plugins,nftables,iptables,conntrack,ca-certificates,busybox-static,curl,less

say() { printf '%s\n' "$*"; }
step() { printf '\n== %s\n' "$*"; }
die() { printf 'vmlab: %s\n' "$*" >&2; exit 1; }

need_root() {
  [ "$(id -u)" = 0 ] || die "run as root (network namespaces, cgroups, systemd-nspawn)"
}

# prerequisites installs what the host needs from Debian's packages.
prerequisites() {
  local missing=()
  command -v systemd-nspawn >/dev/null || missing+=(systemd-container)
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  command -v ip >/dev/null || missing+=(iproute2)
  command -v nsenter >/dev/null || missing+=(util-linux)
  # (make dist, for the bundle up installs: the test images need busybox)
  command -v make >/dev/null || missing+=(make)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} (Debian packages; --no-install-recommends keeps libnss-mymachines out of /etc/nsswitch.conf)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
      || die "apt-get install ${missing[*]} failed: install them by hand and run again"
  fi
}

# ---------------------------------------------------------------- base image

base_dir() { echo "$CACHE/base-$SUITE"; }

base() {
  local dir; dir=$(base_dir)
  if [ "${1:-}" = --rebuild ]; then rm -rf "$dir"; fi
  if [ -f "$dir/.kobune-vmlab-base" ]; then
    say "base root filesystem: $dir (cached; '$0 base --rebuild' builds it again)"
    return
  fi
  step "Base root filesystem: Debian $SUITE from Debian's packages (once; about a minute)"
  mkdir -p "$CACHE"
  rm -rf "$dir.tmp"
  local t0=$SECONDS
  mmdebstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$dir.tmp" \
    "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY_MIRROR $SUITE-security main" \
    >"$CACHE/mmdebstrap.log" 2>&1 || die "mmdebstrap failed (log: $CACHE/mmdebstrap.log): is $MIRROR reachable?"
  configure_base "$dir.tmp"
  touch "$dir.tmp/.kobune-vmlab-base"
  mv "$dir.tmp" "$dir"
  say "built $dir in $((SECONDS - t0)) s ($(du -sh "$dir" | cut -f1))"
}

# configure_base makes what every machine shares: a static network on
# host0, cgroup controllers writable early in boot, short stop timeouts.
configure_base() {
  local root=$1
  # The v1 cgroup controllers are mounted read-only inside: remount them
  # read-write before anything starts (the cgroup namespace keeps each
  # machine to its own subtree), or runc cannot make the pods' cgroups.
  cat >"$root/etc/systemd/system/kobvm-cgroups-rw.service" <<'EOF'
[Unit]
Description=Make the cgroup controllers writable (VM lab: systemd-nspawn mounts them read-only)
DefaultDependencies=no
Before=sysinit.target containerd.service
ConditionVirtualization=container

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for d in /sys/fs/cgroup/*/; do mount -o remount,bind,rw "$d" || true; done'

[Install]
WantedBy=sysinit.target
EOF
  mkdir -p "$root/etc/systemd/system/sysinit.target.wants"
  ln -sf ../kobvm-cgroups-rw.service "$root/etc/systemd/system/sysinit.target.wants/kobvm-cgroups-rw.service"
  # A container ignoring SIGTERM must not hold a poweroff for 90 s.
  mkdir -p "$root/etc/systemd/system.conf.d"
  printf '[Manager]\nDefaultTimeoutStopSec=10s\n' >"$root/etc/systemd/system.conf.d/kobvm.conf"
  # systemd-networkd configures host0 (the address is per machine).
  mkdir -p "$root/etc/systemd/system/multi-user.target.wants" "$root/etc/systemd/system/sockets.target.wants"
  ln -sf /lib/systemd/system/systemd-networkd.service "$root/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
  ln -sf /lib/systemd/system/systemd-networkd.socket "$root/etc/systemd/system/sockets.target.wants/systemd-networkd.socket"
  # No DNS off the machine: resolv.conf names nothing.
  rm -f "$root/etc/resolv.conf"; : >"$root/etc/resolv.conf"
  # No getty on a console nobody reads; root has no password (nsenter only).
  rm -f "$root/etc/systemd/system/getty.target.wants/"* 2>/dev/null || true
  # Debian's containerd starts at boot; Kobune's installer configures it.
  echo 'kobvm' >"$root/etc/kobvm-base"
}

# ---------------------------------------------------------------- machines

machines() { # the machines that exist, control planes first
  [ -d "$STATE/machines" ] || return 0
  local m
  for m in $(ls "$STATE/machines" | sort); do
    case $m in cp*) echo "$m" ;; esac
  done
  for m in $(ls "$STATE/machines" | sort -V); do
    case $m in cp*) ;; *) echo "$m" ;; esac
  done
}

machine_index() { # cp1 -> 11, w1 -> 21, w2 -> 22
  case $1 in
    cp*) echo $((10 + ${1#cp})) ;;
    w*) echo $((20 + ${1#w})) ;;
    *) die "no machine $1 (names: cp1, w1, w2, ...)" ;;
  esac
}
machine_ip() { echo "$SUBNET.$(machine_index "$1")"; }
machine_root() { echo "$STATE/machines/$1"; }

exists() { [ -d "$(machine_root "$1")" ] || die "no machine $1 ($0 list)"; }

# wrapper_pid: the loop that boots the machine (again after a reboot).
wrapper_pid() {
  local f="$STATE/run/$1.pid"
  [ -f "$f" ] || return 1
  local pid; pid=$(cat "$f")
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

# pid1: the machine's systemd (the child of its systemd-nspawn).
pid1() {
  local w n
  w=$(wrapper_pid "$1") || return 1
  n=$(pgrep -P "$w" -x systemd-nspawn | head -1) || return 1
  pgrep -P "$n" | head -1
}

running() { pid1 "$1" >/dev/null 2>&1; }

network_up() {
  if ! ip netns list | grep -qw "$NETNS"; then
    ip netns add "$NETNS"
  fi
  ip -n "$NETNS" link set lo up
  if ! ip -n "$NETNS" link show "$BRIDGE" >/dev/null 2>&1; then
    ip -n "$NETNS" link add "$BRIDGE" type bridge
    ip -n "$NETNS" addr add "$SUBNET.1/24" dev "$BRIDGE"
    ip -n "$NETNS" link set "$BRIDGE" up
  fi
  # No default route, no forwarding out: the namespace has no other link.
}

make_machine() {
  local name=$1 root ip
  root=$(machine_root "$name")
  ip=$(machine_ip "$name")
  [ -d "$root" ] && return 0
  mkdir -p "$STATE/machines"
  rm -rf "$root.tmp"
  cp -a "$(base_dir)" "$root.tmp"
  echo "$name" >"$root.tmp/etc/hostname"
  printf '127.0.0.1 localhost\n%s %s\n' "$ip" "$name" >"$root.tmp/etc/hosts"
  local m
  for m in $(ls "$STATE/machines" | grep -v '\.tmp$' || true); do
    printf '%s %s\n' "$(machine_ip "$m")" "$m" >>"$root.tmp/etc/hosts"
  done
  rm -f "$root.tmp/etc/machine-id"
  tr -d - </proc/sys/kernel/random/uuid >"$root.tmp/etc/machine-id"
  mkdir -p "$root.tmp/etc/systemd/network"
  cat >"$root.tmp/etc/systemd/network/10-host0.network" <<EOF
[Match]
Name=host0

[Network]
Address=$ip/24
LinkLocalAddressing=no
IPv6AcceptRA=no
EOF
  mv "$root.tmp" "$root"
  # Every machine knows every other by name.
  for m in $(machines); do
    grep -qw "$name" "$(machine_root "$m")/etc/hosts" || printf '%s %s\n' "$ip" "$name" >>"$(machine_root "$m")/etc/hosts"
  done
}

# cgroup_dirs: the machine's own cgroup in every v1 hierarchy (so that
# machines do not share nspawn's payload cgroup and their pods' cgroups
# never collide).
cgroup_dirs() {
  local name=$1 d
  for d in /sys/fs/cgroup/*/; do
    d=${d%/}
    [ "$(stat -f -c %T "$d")" = cgroupfs ] || [ "$(stat -f -c %T "$d")" = cgroup2fs ] || continue
    echo "$d/kobune-vmlab-$NETNS/$name"
  done
}

boot() {
  local name=$1 root
  root=$(machine_root "$name")
  running "$name" && { say "$name is running"; return 0; }
  mkdir -p "$STATE/run"
  # The loop boots the machine again when its systemd reboots (nspawn exits
  # 133), and ends when it powers off. It runs in the machine's cgroups.
  setsid bash -c '
    name=$1 root=$2 netns=$3 bridge=$4 log=$5; shift 5
    for d in "$@"; do
      mkdir -p "$d"
      case $d in */cpuset/*)
        p=${d%/*}
        cat "${p%/*}/cpuset.cpus" >"$p/cpuset.cpus" 2>/dev/null || true
        cat "${p%/*}/cpuset.mems" >"$p/cpuset.mems" 2>/dev/null || true
        cat "$p/cpuset.cpus" >"$d/cpuset.cpus"; cat "$p/cpuset.mems" >"$d/cpuset.mems" ;;
      esac
      echo $$ >"$d/cgroup.procs" 2>/dev/null || true
    done
    while :; do
      echo "== boot $(date -u +%FT%TZ)" >>"$log"
      rc=0
      nsenter --net=/run/netns/$netns systemd-nspawn --quiet --boot --directory="$root" --machine="$name" \
        --register=no --keep-unit --network-bridge="$bridge" --system-call-filter=@keyring \
        --capability=all --resolv-conf=off --timezone=off --link-journal=no </dev/null >>"$log" 2>&1 || rc=$?
      echo "== exit $rc $(date -u +%FT%TZ)" >>"$log"
      [ "$rc" = 133 ] || break   # 133: the machine rebooted
    done
  ' vmlab-boot "$name" "$root" "$NETNS" "$BRIDGE" "$STATE/run/$name.log" $(cgroup_dirs "$name") </dev/null >/dev/null 2>&1 &
  echo $! >"$STATE/run/$name.pid"
}

# wait_booted waits until the machine's systemd has finished starting.
wait_booted() {
  local name=$1 deadline=$((SECONDS + ${2:-60})) state=""
  while [ $SECONDS -lt $deadline ]; do
    if running "$name"; then
      state=$(in_machine "$name" systemctl is-system-running 2>/dev/null || true)
      case $state in running|degraded) return 0 ;; esac
    fi
    sleep 0.5
  done
  die "$name did not finish booting within ${2:-60} s (state: ${state:-not running}); its console: $STATE/run/$name.log"
}

in_machine() {
  local name=$1; shift
  local pid; pid=$(pid1 "$name") || die "$name is not running ($0 start $name)"
  # nsenter forks CMD into the machine's PID namespace and stops itself
  # whenever CMD is stopped ("suspend us as well", for a shell to resume).
  # A machine that shuts down stops every process in it (systemd-shutdown
  # sends SIGSTOP to all, then SIGTERM and SIGCONT): nsenter then stayed
  # stopped for good, its dead child was never reaped, and the machine's
  # shutdown waited for it — a reboot hung for 20 minutes. A watchdog
  # resumes a stopped nsenter; it reaps CMD and returns its status.
  nsenter -t "$pid" -m -u -i -n -p -C -r -w -- /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 "$@" <&0 &
  local ns=$! rc=0
  ( while kill -0 "$ns" 2>/dev/null; do
      [ "$(cut -d' ' -f3 "/proc/$ns/stat" 2>/dev/null)" = T ] && kill -CONT "$ns" 2>/dev/null
      sleep 0.5
    done ) </dev/null >/dev/null 2>&1 &
  wait "$ns" || rc=$?
  return "$rc"
}

stop_machine() {
  local name=$1 w n p
  w=$(wrapper_pid "$name") || return 0
  n=$(pgrep -P "$w" -x systemd-nspawn | head -1 || true)
  # A clean poweroff: SIGTERM to nspawn makes the machine's systemd shut down.
  [ -n "$n" ] && kill -TERM "$n" 2>/dev/null || true
  for _ in $(seq 1 60); do kill -0 "$w" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$w" 2>/dev/null; then
    p=$(pid1 "$name" || true)
    say "$name did not power off within 30 s: killing its PID 1"
    [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$w" 2>/dev/null || break; sleep 0.5; done
  fi
  rm -f "$STATE/run/$name.pid"
}

# ---------------------------------------------------------------- verbs

up() {
  need_root
  local bare=0
  [ "${1:-}" = --bare ] && { bare=1; shift; }
  local n=${1:-3}
  [[ $n =~ ^[1-9]$ ]] || die "up [--bare] N: N from 1 to 9 machines"
  prerequisites
  base
  step "Network: namespace $NETNS, bridge $BRIDGE $SUBNET.1/24, no route out"
  network_up
  local names=(cp1) i
  for ((i = 1; i < n; i++)); do names+=("w$i"); done
  step "Machines: ${names[*]}"
  for m in "${names[@]}"; do
    local t0=$SECONDS
    make_machine "$m"
    boot "$m"
  done
  for m in "${names[@]}"; do
    wait_booted "$m"
    say "$m  $(machine_ip "$m")  booted (systemd $(in_machine "$m" systemctl is-system-running 2>/dev/null || true))"
  done
  if [ $bare = 1 ]; then
    say
    say "next: $0 exec cp1 bash   (a shell on the first machine; nothing is installed: --bare)"
    return
  fi
  install "${names[@]}"
  example
  say
  say "next: $0 kobectl get pods -A -o wide      (kobectl on cp1 as the admin)"
  say "      $0 exec w1 bash                     (a shell on a worker)"
  say "      $0 reboot w1; $0 kobectl get pods -n demo -w   (a node's reboot)"
  say "      make vm-lab-down                    (everything removed)"
}

# installed NAME: Kobune is on the machine (init or join ran there).
installed() { [ -e "$(machine_root "$1")/etc/kobune/agent.conf" ]; }

# kobectl_cp runs kobectl on cp1 as the cluster's admin.
kobectl_cp() { in_machine cp1 kobectl --kubeconfig /etc/kobune/admin.conf "$@"; }

# install puts Kobune on the machines as a user does on VMs
# (docs/install.md): the offline bundle of make dist unpacked into each
# machine's /root/kobune, ip_forward on (what preflight asks for), then
# kobeadm init on cp1 and, on each other machine, the join line that
# kobeadm token create --print-join-command prints there. A machine that
# has Kobune already is left alone, so up on an installed lab changes
# nothing and up with more machines joins only the new ones.
install() {
  local todo=() m
  for m in "$@"; do installed "$m" || todo+=("$m"); done
  if [ ${#todo[@]} -eq 0 ]; then
    step "Kobune: installed on ${*} already (kobeadm reset on a machine, or make vm-lab-down, to start again)"
    kobectl_cp get nodes | sed 's/^/    /'
    return
  fi
  local bundle=${KOBUNE_VMLAB_BUNDLE:-}
  if [ -z "$bundle" ]; then
    command -v go >/dev/null || die "Go is missing (make dist builds the bundle): install Go 1.26, or give KOBUNE_VMLAB_BUNDLE=<a make dist tarball>"
    step "The offline bundle: make dist (static binaries, images, add-ons, examples)"
    make -s -C "$REPO" dist DIST="$STATE/dist" | sed 's/^/    /' \
      || die "make dist failed (above): fix it and run $0 up again"
    bundle=$(ls "$STATE"/dist/kobune-linux-*.tar.gz)
  fi
  [ -f "$bundle" ] || die "no bundle at $bundle (KOBUNE_VMLAB_BUNDLE names a make dist tarball)"
  local t0
  for m in "${todo[@]}"; do
    tar -C "$(machine_root "$m")/root" -xzf "$bundle"
    # One kernel, but each machine its own network stack: net.* is its own.
    echo "net.ipv4.ip_forward = 1" >"$(machine_root "$m")/etc/sysctl.d/99-kobune.conf"
    in_machine "$m" sysctl -qw net.ipv4.ip_forward=1
  done
  if ! installed cp1; then
    local untaint=()
    [ $# -eq 1 ] && untaint=(--untaint) # one machine: the control plane runs the pods too
    step "cp1: kobeadm init ${untaint[*]}   (the control plane: certificates, units, the agent, add-ons)"
    t0=$SECONDS
    in_machine cp1 sh -c "cd /root/kobune && ./kobeadm init ${untaint[*]}" 2>&1 | sed 's/^/    /' \
      || die "kobeadm init on cp1 failed (above): $0 exec cp1 journalctl -u kobune-apiserver says more"
    say "    (init took $((SECONDS - t0)) s)"
  fi
  for m in "${todo[@]}"; do
    [ "$m" = cp1 ] && continue
    local line
    line=$(in_machine cp1 kobeadm token create --print-join-command) || die "kobeadm token create on cp1 failed: $line"
    step "$m: $line   (the line token create --print-join-command printed on cp1)"
    t0=$SECONDS
    in_machine "$m" sh -c "cd /root/kobune && ./${line}" 2>&1 | sed 's/^/    /' \
      || die "kobeadm join on $m failed (above): $0 exec $m journalctl -u kobune-agent says more"
    say "    (join took $((SECONDS - t0)) s)"
  done
  local want=$# ready=0
  for _ in $(seq 240); do
    ready=$(kobectl_cp get nodes --no-headers 2>/dev/null | grep -c ' Ready ' || true)
    [ "$ready" -ge "$want" ] && break
    sleep 0.5
  done
  kobectl_cp get nodes -o wide | sed 's/^/    /'
  [ "$ready" -ge "$want" ] || die "$ready of $want nodes Ready after 2 minutes: $0 kobectl describe nodes says why"
}

# example deploys the bundle's examples/web.yaml (a Deployment and its
# Service) and examples/ingress.yaml, and asks for it from every machine,
# through the Service and through kobune-ingress on the workers' port 80.
example() {
  step "The example: examples/web.yaml (a Deployment of 2 and its Service) and examples/ingress.yaml"
  in_machine cp1 kobectl --kubeconfig /etc/kobune/admin.conf apply -f /root/kobune/examples/web.yaml -f /root/kobune/examples/ingress.yaml | sed 's/^/    /'
  kobectl_cp rollout status deployment/web -n demo --timeout 120s | sed 's/^/    /'
  kobectl_cp get pods -n demo -o wide | sed 's/^/    /'
  local svc m answer node
  svc=$(kobectl_cp get service web -n demo -o 'jsonpath={.spec.clusterIP}')
  for m in $(machines); do
    answer=""
    for _ in $(seq 40); do
      answer=$(in_machine "$m" curl -s --max-time 3 "http://$svc/") && break
      sleep 0.5
    done
    say "$m: GET http://$svc/ (the Service) -> ${answer:-no answer}"
  done
  node=$(machines | grep -v '^cp' | head -1)
  node=$(machine_ip "${node:-cp1}")
  for _ in $(seq 120); do
    [ "$(kobectl_cp get daemonset kobune-ingress -n kobune-ingress -o 'jsonpath={.status.numberReady}' 2>/dev/null)" -ge 1 ] 2>/dev/null && break
    sleep 0.5
  done
  answer=""
  for _ in $(seq 40); do
    answer=$(in_machine cp1 curl -s --max-time 3 -H "Host: web.lab.test" "http://$node/") && break
    sleep 0.5
  done
  say "cp1: GET http://$node/ Host: web.lab.test (kobune-ingress) -> ${answer:-no answer}"
}

down() {
  need_root
  local m
  for m in $(machines); do
    stop_machine "$m"
    say "stopped $m"
  done
  for m in $(machines); do
    # (the machine's systemd and containerd made cgroups below its own)
    for d in $(cgroup_dirs "$m"); do [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; done
    rm -rf "$(machine_root "$m")"
  done
  for d in /sys/fs/cgroup/*/kobune-vmlab-"$NETNS"; do rmdir "$d" 2>/dev/null || true; done
  if ip netns list | grep -qw "$NETNS"; then ip netns delete "$NETNS"; say "removed network namespace $NETNS"; fi
  rm -rf "$STATE/machines" "$STATE/run"
  say "VM lab removed (the base image stays in $CACHE)"
}

status() {
  local m
  for m in $(machines); do
    if running "$m"; then
      printf '%-5s %-14s running  %s\n' "$m" "$(machine_ip "$m")" "$(in_machine "$m" systemctl is-system-running 2>/dev/null || true)"
    else
      printf '%-5s %-14s stopped\n' "$m" "$(machine_ip "$m")"
    fi
  done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
  up) up "$@" ;;
  down) down ;;
  list) machines ;;
  status) status ;;
  base) need_root; prerequisites; base "$@" ;;
  kobectl) need_root; exists cp1; kobectl_cp "$@" ;;
  exec)
    need_root
    [ $# -ge 2 ] || die "usage: $0 exec NAME CMD..."
    name=$1; shift; exists "$name"
    in_machine "$name" "$@" ;;
  reboot)
    need_root; exists "${1:?usage: $0 reboot NAME}"
    in_machine "$1" systemctl reboot
    say "$1 rebooting (its own systemd)" ;;
  poweroff)
    need_root; exists "${1:?usage: $0 poweroff NAME}"
    stop_machine "$1"; say "$1 powered off" ;;
  start)
    need_root; exists "${1:?usage: $0 start NAME}"
    network_up; boot "$1"; wait_booted "$1"; say "$1 booted" ;;
  partition)
    need_root; exists "${1:?usage: $0 partition NAME}"
    ip -n "$NETNS" link set "vb-$1" down; say "$1 cut off the bridge ($0 heal $1)" ;;
  heal)
    need_root; exists "${1:?usage: $0 heal NAME}"
    ip -n "$NETNS" link set "vb-$1" up; say "$1 back on the bridge" ;;
  ""|-h|--help|help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) die "unknown verb $cmd ($0 help)" ;;
esac
