#!/usr/bin/env bash
# Kobune lab: a multi-node cluster on one Linux host, as root.
#
#   lab.sh up [--nodes N]        install what is missing, build, start N nodes (default 2), deploy an example
#   lab.sh down                  remove everything the lab made
#   lab.sh status                what runs
#   lab.sh stop-control-plane    stop the API server, scheduler and controllers (pods keep running)
#   lab.sh start-control-plane
#   lab.sh kill-agent NODE       kill -9 a node's agent
#   lab.sh start-agent NODE
#   lab.sh partition NODE        cut a node off the lab network
#   lab.sh heal NODE
#
# Layout: a bridge kobune-lab0 (172.31.0.1/24) on the host; node-i is the
# network namespace kobune-lab-node-i at 172.31.0.(10+i), joined to the
# bridge by a veth pair, with its own containerd and kobune-agent, pod CIDR
# 10.244.i.0/24. No namespace has a default route, and the host has
# blackhole routes for the pod (10.244.0.0/16) and service (10.96.0.0/16)
# ranges, under a route to each node's pod CIDR through the node (the API
# server calls webhooks at their pods): no lab packet leaves this machine. The API server listens on
# 127.0.0.1:6443 and 172.31.0.1:6443.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${KOBUNE_LAB_STATE:-/var/lib/kobune-lab}
BRIDGE=kobune-lab0
HOST_IP=172.31.0.1
CHAIN=KOBUNE-LAB
BIN=$REPO/bin
export PATH="/usr/local/go/bin:$PATH"

PKI=$STATE/pki
# kobectl as the lab's admin (the admin kubeconfig kobectl pki init wrote).
kobectl() { "$BIN/kobectl" --kubeconfig "$PKI/admin.kubeconfig" "$@"; }

step() { printf '\n==> %s\n' "$*"; }
say() { printf '    %s\n' "$*"; }
die() { printf 'lab: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (the lab makes network namespaces, bridges and routes)"

node_ns() { echo "kobune-lab-$1"; }
node_index() { echo "${1#node-}"; }
node_ip() { echo "172.31.0.$((10 + $(node_index "$1")))"; }
pidfile() { echo "$STATE/pids/$1.pid"; }
running() { local f; f=$(pidfile "$1"); [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }
nodes() { ls "$STATE/nodes" 2>/dev/null || true; }

# start NAME CMD...: run CMD in the background, logging, remembering its PID.
start() {
  local name=$1; shift
  if running "$name"; then say "$name already running (pid $(cat "$(pidfile "$name")"))"; return; fi
  "$@" >>"$STATE/logs/$name.log" 2>&1 &
  echo $! >"$(pidfile "$name")"
  say "$name started (pid $!, log $STATE/logs/$name.log)"
}

# stop NAME [SIGNAL]: stop a process the lab started, by its PID only.
stop() {
  local name=$1 sig=${2:-TERM} f pid
  f=$(pidfile "$name")
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "-$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    say "$name stopped (pid $pid)"
  fi
  rm -f "$f"
}

install_packages() {
  step "Checking prerequisites"
  local need=()
  local pair cmd pkg
  for pair in containerd:containerd ctr:containerd runc:runc ip:iproute2 iptables:iptables nsenter:util-linux \
              /usr/lib/cni/bridge:containernetworking-plugins /bin/busybox:busybox-static make:make git:git nft:nftables conntrack:conntrack; do
    cmd=${pair%%:*} pkg=${pair#*:}
    command -v "$cmd" >/dev/null 2>&1 || [ -x "$cmd" ] || need+=("$pkg")
  done
  command -v go >/dev/null 2>&1 || die "Go is missing: install Go 1.26 (expected at /usr/local/go)"
  if [ ${#need[@]} -gt 0 ]; then
    say "installing: $(printf '%s\n' "${need[@]}" | sort -u | tr '\n' ' ')"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
  else
    say "all present"
  fi
}

build() {
  step "Building binaries and test images"
  make -C "$REPO" --no-print-directory build images | sed 's/^/    /'
}

network_up() {
  step "Lab network: bridge $BRIDGE ($HOST_IP/24), blackhole routes for 10.244.0.0/16 and 10.96.0.0/16"
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "$HOST_IP/24" dev "$BRIDGE"
  fi
  ip link set "$BRIDGE" up
  ip route replace blackhole 10.244.0.0/16
  ip route replace blackhole 10.96.0.0/16
  # Hosts with FORWARD policy DROP would drop node-to-node traffic on the bridge.
  iptables -N "$CHAIN" 2>/dev/null || true
  iptables -F "$CHAIN"
  iptables -A "$CHAIN" -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT
  iptables -C FORWARD -j "$CHAIN" 2>/dev/null || iptables -I FORWARD -j "$CHAIN"
}

node_up() {
  local node=$1 ns ip veth dir
  ns=$(node_ns "$node"); ip=$(node_ip "$node"); veth="kl-$node"; dir="$STATE/nodes/$node"
  mkdir -p "$dir"
  if ! ip netns list | grep -qw "$ns"; then
    ip netns add "$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$BRIDGE" up
    ip -n "$ns" addr add "$ip/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
  fi
  # The host — the API server, which calls admission webhooks at their
  # pods — reaches the node's pods through the node, as a control plane on
  # a flat pod network does; the blackhole route keeps every other pod
  # address on this machine.
  ip route replace "10.244.$(node_index "$node").0/24" via "$ip"
  start "containerd-$node" containerd --root "$dir/containerd/root" --state "$dir/containerd/state" \
    --address "$dir/containerd.sock" --log-level warn
  for _ in $(seq 100); do [ -S "$dir/containerd.sock" ] && break; sleep 0.1; done
  [ -S "$dir/containerd.sock" ] || die "containerd of $node did not start; see $STATE/logs/containerd-$node.log"
}

# The lab's nodes share this host's disk: as kind does, their agents evict
# for memory only (the kubelet's default memory.available<100Mi), so that a
# host disk more than 85 % full does not evict the lab's pods and collect
# its images. KOBUNE_LAB_EVICTION_HARD sets other thresholds (the agent's
# --eviction-hard; docs/agent.md).
EVICTION_HARD=${KOBUNE_LAB_EVICTION_HARD:-memory.available<100Mi}

agent_up() {
  local node=$1 dir
  dir="$STATE/nodes/$node"
  start "agent-$node" nsenter --net=/run/netns/"$(node_ns "$node")" "$BIN/kobune-agent" \
    --kubeconfig "$PKI/agent-$node.kubeconfig" --node-name "$node" --node-ip "$(node_ip "$node")" \
    --tls-cert-file "$PKI/agent-$node-serving.crt" --tls-private-key-file "$PKI/agent-$node-serving.key" --client-ca-file "$PKI/ca.crt" \
    --runtime containerd --containerd "$dir/containerd.sock" --containerd-namespace kobune \
    --state-dir "$dir/agent" --pod-cidr "10.244.$(node_index "$node").0/24" \
    --load-images "$BIN/images" --lease-interval 2s --crashloop-backoff-base 2s --crashloop-backoff-max 30s \
    --eviction-hard "$EVICTION_HARD"
}

# csi_up NODE: kobune-csi-local, the lab's CSI driver and its provisioner,
# in the node's namespace; its socket is where the node's agent looks, its
# volumes are directories under the node's state.
csi_up() {
  local node=$1 dir
  dir="$STATE/nodes/$node"
  start "csi-$node" nsenter --net=/run/netns/"$(node_ns "$node")" "$BIN/kobune-csi-local" \
    --node-id "$node" --kubeconfig "$PKI/csi-$node.kubeconfig" --data-dir "$dir/csi-local" \
    --endpoint "$dir/agent/plugins/localpath.csi.kobune.io/csi.sock"
}

# encryption_config: Secrets are encrypted in etcd with a key made once for
# this lab (mode 0600, readable by root only); see docs/security.md.
encryption_config() {
  local f="$STATE/encryption.yaml"
  if [ ! -f "$f" ]; then
    (umask 077; cat >"$f" <<YAML
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aesgcm:
          keys:
            - name: key1
              secret: $(head -c 32 /dev/urandom | base64)
      - identity: {}
YAML
    )
  fi
  echo "$f"
}

# audit_policy: the lab's audit log records every request at Metadata
# (who, what, when, the answer), except Lease renewals and Events.
audit_policy() {
  local f="$STATE/audit-policy.yaml"
  cat >"$f" <<YAML
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    resources: [{group: coordination.k8s.io, resources: [leases]}, {group: "", resources: [events]}]
  - level: Metadata
YAML
  echo "$f"
}

# pki_up NODES...: the cluster CA, the API server's certificate (for
# 127.0.0.1 and the bridge address) and a kubeconfig per component and
# node (kobectl pki init; the CA is kept if it exists).
pki_up() {
  local args=() node
  for node in "$@"; do args+=(--node "$node"); done
  "$BIN/kobectl" pki init --dir "$PKI" --apiserver-url "https://$HOST_IP:6443" --apiserver-name "$HOST_IP" "${args[@]}" \
    --user dev:developers >/dev/null || die "kobectl pki init failed"
  say "certificates and kubeconfigs in $PKI (TLS 1.3, a client certificate per component; user-dev.kubeconfig for a restricted user)"
}

control_plane_up() {
  # Lab timings: a node whose agent stops is Unknown after 8 s and its pods
  # are evicted 5 s later (Kubernetes: 40 s and 300 s).
  start apiserver "$BIN/kobune-apiserver" --data-dir "$STATE/etcd" --listen "127.0.0.1:6443,$HOST_IP:6443" \
    --metrics-listen 127.0.0.1:6444 --default-toleration-seconds 5 --encryption-provider-config "$(encryption_config)" \
    --audit-policy-file "$(audit_policy)" --audit-log-path "$STATE/logs/audit.log" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" --client-ca-file "$PKI/ca.crt" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" \
    --service-account-signing-key-file "$PKI/sa.key" --service-account-key-file "$PKI/sa.pub"
  for _ in $(seq 100); do kobectl version >/dev/null 2>&1 && break; sleep 0.2; done
  kobectl version >/dev/null 2>&1 || die "the API server did not answer; see $STATE/logs/apiserver.log"
  start scheduler "$BIN/kobune-scheduler" --kubeconfig "$PKI/scheduler.kubeconfig"
  start controller "$BIN/kobune-controller" --kubeconfig "$PKI/controller.kubeconfig" --node-monitor-grace-period 8s --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key"
}

wait_nodes_ready() {
  local want=$1
  for _ in $(seq 150); do
    [ "$(kobectl get nodes 2>/dev/null | grep -c ' Ready ')" -ge "$want" ] && return
    sleep 0.2
  done
  die "nodes did not become Ready; see $STATE/logs/agent-*.log"
}

# The home of the user who ran the lab (through sudo: theirs, not root's).
lab_home() {
  local home=${SUDO_USER:+$(getent passwd "$SUDO_USER" | cut -d: -f6)}
  echo "${home:-$HOME}"
}

write_config() {
  local home
  home=$(lab_home)
  mkdir -p "$home/.kobune"
  (umask 077; cp "$PKI/admin.kubeconfig" "$home/.kobune/config")
  [ -n "${SUDO_USER:-}" ] && chown -R "$SUDO_USER" "$home/.kobune" 2>/dev/null || true
  say "wrote $home/.kobune/config, the admin's kubeconfig (bin/kobectl now needs no flags)"
}

up() {
  local n=2
  while [ $# -gt 0 ]; do
    case $1 in
      --nodes) n=$2; shift 2 ;;
      *) die "unknown option $1 (use --nodes N)" ;;
    esac
  done
  [ "$n" -ge 1 ] && [ "$n" -le 50 ] || die "--nodes must be between 1 and 50"
  install_packages
  build
  mkdir -p "$STATE/pids" "$STATE/logs" "$STATE/nodes"
  network_up
  step "Certificates"
  local nodes_list=() i
  for i in $(seq "$n"); do nodes_list+=("node-$i"); done
  pki_up "${nodes_list[@]}"
  step "Control plane (TLS 1.3, client certificates, Node,RBAC authorization, Secrets encrypted, audit log)"
  control_plane_up
  write_config
  for i in $(seq "$n"); do
    step "Node node-$i ($(node_ip node-$i), pod CIDR 10.244.$i.0/24)"
    node_up "node-$i"
    agent_up "node-$i"
    csi_up "node-$i"
  done
  step "Waiting for $n nodes to be Ready"
  wait_nodes_ready "$n"
  kobectl get nodes -o wide | sed 's/^/    /'
  step "Deploying the example (deploy/examples/lab-pods.yaml)"
  kobectl apply -f "$REPO/deploy/examples/lab-pods.yaml" | sed 's/^/    /'
  for _ in $(seq 150); do
    [ "$(kobectl get pods -n lab -l app=hello 2>/dev/null | grep -c Running)" -ge 2 ] && break
    sleep 0.2
  done
  kobectl get pods -n lab -o wide | sed 's/^/    /'
  step "Asking each pod from inside node-1's namespace"
  local ip
  for ip in $(kobectl get pods -n lab -l app=hello -o json | sed -n 's/.*"podIP": "\([0-9.]*\)".*/\1/p'); do
    say "GET http://$ip:8080/ -> $(ip netns exec "$(node_ns node-1)" timeout 3 busybox wget -q -O - "http://$ip:8080/" 2>&1 || echo unreachable)"
  done
  step "Deploying a Deployment (deploy/examples/web.yaml) and waiting for its rollout"
  kobectl apply -f "$REPO/deploy/examples/web.yaml" | sed 's/^/    /'
  kobectl rollout status deployment/web -n demo --timeout 90s | sed 's/^/    /'
  kobectl get pods -n demo -o wide | sed 's/^/    /'
  kobectl get svc -n demo | sed 's/^/    /'
  kobectl get endpointslices -n demo | sed 's/^/    /'
  step "Reaching the web Service by its DNS name from a pod on node-2 (cluster DNS, then the node's nftables rules)"
  local answer=""
  for _ in $(seq 100); do
    answer=$(kobectl exec -n lab client -- timeout 3 wget -q -O - http://web.demo.svc.cluster.local/ 2>&1) && break
    sleep 0.3
  done
  say "GET http://web.demo.svc.cluster.local/ -> ${answer:-no answer}"
  step "An ingress controller of Kobune's own, as a DaemonSet on the nodes' host network (deploy/ingress/kobune-ingress.yaml), and web behind an Ingress (deploy/examples/ingress.yaml)"
  kobectl apply -f "$REPO/deploy/ingress/kobune-ingress.yaml" | sed 's/^/    /'
  kobectl apply -f "$REPO/deploy/examples/ingress.yaml" | sed 's/^/    /'
  kobectl rollout status daemonset/kobune-ingress -n kobune-ingress --timeout 90s | sed 's/^/    /'
  answer=""
  for _ in $(seq 100); do
    answer=$(ip netns exec "$(node_ns node-1)" timeout 3 busybox wget -q -O - --header "Host: web.lab.test" "http://$(node_ip node-2)/" 2>&1) && break
    sleep 0.3
  done
  say "GET http://$(node_ip node-2)/ Host: web.lab.test (from node-1) -> ${answer:-no answer}"
  kobectl get ingress -n demo | sed 's/^/    /'
  step "A StatefulSet with a volume per pod from the CSI driver (deploy/examples/db.yaml)"
  # The driver's own manifest first: its StorageClass and its CSIDriver
  # (what kobeadm init applies as an add-on).
  kobectl apply -f "$REPO/deploy/csi/kobune-csi-local.yaml" | sed 's/^/    /'
  kobectl apply -f "$REPO/deploy/examples/db.yaml" | sed 's/^/    /'
  for _ in $(seq 300); do
    [ "$(kobectl get pods -l app=db 2>/dev/null | grep -c Running)" -ge 2 ] && break
    sleep 0.2
  done
  kobectl get pods -l app=db -o wide | sed 's/^/    /'
  kobectl get pvc,pv | sed 's/^/    /'
  say "db-0 /data/boots -> $(kobectl exec db-0 -- cat /data/boots 2>&1 || echo 'not readable yet')"
  step "A restricted user: dev administers namespace team and nothing else (deploy/examples/team.yaml)"
  kobectl apply -f "$REPO/deploy/examples/team.yaml" | sed 's/^/    /'
  local dev=("$BIN/kobectl" --kubeconfig "$PKI/user-dev.kubeconfig")
  for _ in $(seq 50); do "${dev[@]}" auth can-i create deployments -n team -q && break; sleep 0.1; done
  say "dev: can-i create deployments -n team -> $("${dev[@]}" auth can-i create deployments -n team 2>/dev/null)"
  say "dev: can-i get secrets -n demo -> $("${dev[@]}" auth can-i get secrets -n demo 2>/dev/null)"
  say "dev: get pods -n demo -> $("${dev[@]}" get pods -n demo 2>&1 | head -1)"
  cat <<TXT

The lab is up. Try:
    bin/kobectl get nodes
    bin/kobectl get pods -A -o wide
    bin/kobectl describe pod hello-1 -n lab
    sudo ip netns exec $(node_ns node-1) timeout 5 busybox wget -q -O - http://POD_IP:8080/
    bin/kobectl exec -n lab client -- timeout 5 wget -q -O - http://web.demo.svc.cluster.local/
    sudo ip netns exec $(node_ns node-1) nft list table ip kobune-proxy   # the Service rules
    sudo ip netns exec $(node_ns node-1) timeout 5 busybox wget -q -O - --header "Host: web.lab.test" http://$(node_ip node-1)/
                         # through kobune-ingress; its access log: bin/kobectl logs -n kobune-ingress ds/kobune-ingress
    deploy/lab/lab.sh status | kill-agent node-2 | partition node-2 | heal node-2 | stop-control-plane
    make lab-down        # removes everything the lab made
    bin/kobectl apply -f deploy/examples/pod-scheduled.yaml   # a pod the scheduler places
    bin/kobectl set image deployment/web -n demo web=kobune.local/labapp:2.0
    bin/kobectl rollout status deployment/web -n demo          # a rolling update, step by step
    bin/kobectl rollout undo deployment/web -n demo
    deploy/lab/lab.sh kill-agent node-2; bin/kobectl get pods -n demo -o wide -w
                         # node-2 goes Unknown after 8 s, its pods move 5 s later
    bin/kobectl delete pod db-0; bin/kobectl exec db-0 -- cat /data/boots
                         # back on its volume's node, with its data
    bin/kobectl scale statefulset/db --replicas 1; bin/kobectl get pv
                         # data-db-1 and its directory are deleted (whenScaled: Delete)
    bin/kobectl label namespace demo pod-security.kubernetes.io/enforce=restricted
                         # warns about the pods the restricted level would refuse
    sudo tail -f $STATE/logs/audit.log    # every request, as audit.k8s.io/v1 events
    bin/kobectl --kubeconfig $PKI/user-dev.kubeconfig auth whoami   # the restricted user
    bin/kobectl auth can-i create pods --subresource exec -n team --as dev
TXT
}

down() {
  step "Stopping lab processes"
  local node
  for node in $(nodes); do stop "agent-$node"; stop "csi-$node"; done
  stop controller
  stop scheduler
  stop apiserver
  for node in $(nodes); do
    # Containers outlive containerd (their shims stay): remove them first.
    local sock="$STATE/nodes/$node/containerd.sock"
    if [ -S "$sock" ] && running "containerd-$node"; then
      for id in $(ctr -a "$sock" -n kobune containers ls -q 2>/dev/null); do
        ctr -a "$sock" -n kobune tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
        ctr -a "$sock" -n kobune tasks rm -f "$id" >/dev/null 2>&1 || true
        ctr -a "$sock" -n kobune containers rm "$id" >/dev/null 2>&1 || true
      done
    fi
    stop "containerd-$node"
    # A shim whose task was killed but not yet deleted outlives containerd;
    # it names this node's socket, so it is ours to stop.
    local pid
    for pid in $(pgrep -f -- "-address $STATE/nodes/$node/containerd.sock" || true); do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  step "Removing namespaces, links, routes, iptables chain, mounts and state"
  local ns
  for ns in $(ip netns list | awk '{print $1}'); do
    case $ns in
      kobune-lab-*) ip netns delete "$ns" ;;
      kobune-*)
        # Pod sandboxes made by lab agents (their state lives under $STATE).
        if grep -rqs "${ns#kobune-}" "$STATE/nodes" 2>/dev/null; then ip netns delete "$ns"; fi ;;
    esac
  done
  for node in $(nodes); do
    ip route delete "10.244.$(node_index "$node").0/24" 2>/dev/null || true
    ip link delete "kl-$node" 2>/dev/null || true
  done
  ip link delete "$BRIDGE" 2>/dev/null || true
  ip route delete blackhole 10.244.0.0/16 2>/dev/null || true
  ip route delete blackhole 10.96.0.0/16 2>/dev/null || true
  iptables -D FORWARD -j "$CHAIN" 2>/dev/null || true
  iptables -F "$CHAIN" 2>/dev/null || true
  iptables -X "$CHAIN" 2>/dev/null || true
  # Empty pod and QoS cgroups the agents made (the kernel refuses non-empty ones).
  find /sys/fs/cgroup -depth -type d -path '*/kobune*' -exec rmdir {} \; 2>/dev/null || true
  # The kubeconfig write_config left: removed when it is this lab's (it
  # names a server that is gone), kept when someone put another there.
  local config
  config="$(lab_home)/.kobune/config"
  if [ -f "$config" ] && [ -f "$PKI/admin.kubeconfig" ] && cmp -s "$config" "$PKI/admin.kubeconfig"; then
    rm -f "$config"
    say "removed $config (the lab's admin kubeconfig)"
  elif [ -f "$config" ]; then
    say "kept $config: it is not this lab's kubeconfig"
  fi
  if [ -d "$STATE" ]; then
    awk -v s="$STATE" '$2 ~ "^"s {print $2}' /proc/self/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
    rm -rf "$STATE"
  fi
  say "done"
}

status() {
  step "Processes"
  local name
  for f in "$STATE"/pids/*.pid; do
    [ -e "$f" ] || { say "none (the lab is down)"; return; }
    name=$(basename "$f" .pid)
    if running "$name"; then say "$name: running (pid $(cat "$f"))"; else say "$name: stopped"; fi
  done
  step "Nodes and pods"
  kobectl get nodes -o wide 2>&1 | sed 's/^/    /' || true
  kobectl get pods -A -o wide 2>&1 | sed 's/^/    /' || true
}

need_node() { [ -n "${1:-}" ] && [ -d "$STATE/nodes/$1" ] || die "name a lab node: $(nodes | tr '\n' ' ')"; }

cmd=${1:-}
shift || true
case $cmd in
  up) up "$@" ;;
  down) down ;;
  status) status ;;
  stop-control-plane) stop controller; stop scheduler; stop apiserver ;;
  start-control-plane) mkdir -p "$STATE/pids" "$STATE/logs"; control_plane_up ;;
  kill-agent) need_node "${1:-}"; stop "agent-$1" KILL ;;
  start-agent) need_node "${1:-}"; agent_up "$1" ;;
  partition) need_node "${1:-}"; ip link set "kl-$1" down; say "$1 is cut off the lab network" ;;
  heal) need_node "${1:-}"; ip link set "kl-$1" up; say "$1 is back on the lab network" ;;
  *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
