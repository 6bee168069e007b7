# The local cluster's node: containerd + runc (Debian), the CNI bridge with
# host-local IPAM, CoreDNS as cluster DNS, kube-scheduler, the kubelet, kube-proxy
# (nftables mode: ClusterIP and NodePort Services work as on any real cluster) and
# kube-router's firewall controller, which enforces NetworkPolicies (the CNI bridge
# enforces none) with iptables and ipset.
# Sourced by scripts/local-cluster.sh (it uses that script's STATE_DIR, PKI, LOGS,
# RUN, SERVER, launch, stop_one, wait_for, sign, write_kubeconfig, curl_admin,
# free_ports and binary); not run on its own.
#
# Everything host-global is named after the state directory, so two clusters (or
# the leftovers of a killed one) never collide, and `stop` removes all of it:
#   bridge eg<id>, pod subnet 10.200.<n>.0/24 (a /24 no route on the machine covers)
#   cgroup /envoy-gateways-<id> in every cgroup v1 hierarchy (the kubelet's cgroupRoot)
#   containerd root, state, socket, runc root, network namespaces: <state>/node/...
#   kubelet root-dir, pod logs, CNI config and IPAM leases: <state>/node/...
#   /var/lib/cni/results/eg<id>-*   (libcni's cache; containerd 1.6 cannot move it)
#   /var/log/containers/*.log links into <state>/node/pod-logs (the kubelet makes them)
#   nftables tables "kube-proxy" (ip, ip6): kube-proxy's Service rules. Their name is fixed
#   and every local cluster has the same Service range, so one local node at a time runs
#   kube-proxy; /run/envoy-gateways/kube-proxy.owner names its state directory
#   iptables chains KUBE-ROUTER-*, KUBE-POD-FW-*, KUBE-NWPLCY-* and ipsets KUBE-*:
#   kube-router's NetworkPolicy rules, also machine-wide: the node that owns kube-proxy's
#   rules runs it, and its stop (or the next claim) removes them (kube-router --cleanup-config)
# The kubelet also sets the kernel flags it requires (vm.overcommit_memory=1,
# kernel.panic=10, kernel.panic_on_oops=1, ...): the values before the first local node
# started are kept in /run/envoy-gateways/ and put back when the last one stops.
# Nothing listens outside this machine: containerd and the kubelet's health endpoint on
# unix sockets or 127.0.0.1, the kubelet's API and CoreDNS on the bridge address.
# shellcheck shell=bash

NODE_DIR="$STATE_DIR/node"
NODE_NAME="local-node"
NODE_ID="$(printf '%s' "$STATE_DIR" | sha256sum | cut -c1-8)"
NODE_REGISTRY=/run/envoy-gateways/nodes
NODE_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
CNI_BIN_DIR=/usr/lib/cni # Debian's containernetworking-plugins
CLUSTER_DOMAIN=cluster.local

node_binaries() {
  KUBELET="$(binary "$(kubernetes_node_bin_dir)" kubelet)"
  KUBE_SCHEDULER="$(binary "$(kubernetes_node_bin_dir)" kube-scheduler)"
  KUBE_PROXY="$(binary "$(kubernetes_node_bin_dir)" kube-proxy)"
  KUBE_ROUTER="$(binary "$(kube_router_bin_dir)" kube-router)"
  COREDNS="$(binary "$(coredns_bin_dir)" coredns)"
  [[ -f "$(pod_images_dir)/images.txt" ]] || { log "$(pod_images_dir)/images.txt is missing: run scripts/build-components.sh"; exit 1; }
  local cmd
  for cmd in containerd containerd-shim-runc-v2 runc ctr ip nft conntrack iptables ipset; do
    command -v "$cmd" >/dev/null || { log "$cmd is missing: run bash scripts/install-debian-packages.sh quickstart"; exit 1; }
  done
  for cmd in bridge host-local loopback; do
    [[ -x "$CNI_BIN_DIR/$cmd" ]] || { log "$CNI_BIN_DIR/$cmd is missing: run bash scripts/install-debian-packages.sh quickstart"; exit 1; }
  done
  if [[ "$(id -u)" != 0 ]]; then log "the local node needs root (network namespaces, mounts, cgroups)"; exit 1; fi
}

# What start chose, written before anything is created so that stop can undo a partial start.
node_env_file() { echo "$NODE_DIR/node.env"; }
load_node_env() { [[ -f "$(node_env_file)" ]] && source "$(node_env_file)"; }

ctr_() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# A 10.200.<n>.0/24 that no address or route of this machine overlaps (other clusters'
# bridges included). Chosen and claimed (the bridge created) under a machine-wide lock.
pick_subnet() {
  python3 - <<'PY'
import ipaddress, json, random, subprocess
used = []
for args in (["ip", "-j", "-4", "route", "show", "table", "all"], ["ip", "-j", "-4", "addr"]):
    for entry in json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout or "[]"):
        if "dst" in entry and entry["dst"] not in ("default",):
            try: used.append(ipaddress.ip_network(entry["dst"], strict=False))
            except ValueError: pass
        for a in entry.get("addr_info", []):
            used.append(ipaddress.ip_network(f'{a["local"]}/{a["prefixlen"]}', strict=False))
candidates = list(range(256)); random.shuffle(candidates)
for n in candidates:
    net = ipaddress.ip_network(f"10.200.{n}.0/24")
    if not any(net.overlaps(u) for u in used if u.prefixlen > 0):
        print(n); break
else:
    raise SystemExit("no free /24 in 10.200.0.0/16")
PY
}

create_bridge() {
  mkdir -p /run/envoy-gateways
  exec 8>/run/envoy-gateways/subnets.lock
  flock 8
  local n; n="$(pick_subnet)"
  POD_SUBNET="10.200.$n.0/24"; NODE_IP="10.200.$n.1"
  cat >>"$(node_env_file)" <<EOF
POD_SUBNET=$POD_SUBNET
NODE_IP=$NODE_IP
EOF
  # A fixed MAC address (locally administered, from the subnet): a bridge without one takes
  # the lowest MAC of its ports, so it changed as pods came and went, and a pod's cached
  # ARP entry for its gateway went stale: its packets to the node (DNS, Services) were
  # flooded to the other ports and lost until it resolved the address again.
  ip link add name "$BRIDGE" address "$(printf '02:65:67:00:%02x:01' "$n")" type bridge
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  flock -u 8; exec 8>&-
}

cgroup_hierarchies() { # every cgroup v1 hierarchy (the kubelet runs on cgroup v1 here)
  awk '$3 == "cgroup" { print $2 }' /proc/mounts
}

create_cgroup_root() {
  local h
  for h in $(cgroup_hierarchies); do
    mkdir -p "$h$CGROUP_ROOT"
    if [[ -f "$h/cpuset.cpus" ]]; then # a new cpuset cgroup starts with no CPUs and memory nodes
      cat "$h/cpuset.cpus" >"$h$CGROUP_ROOT/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h$CGROUP_ROOT/cpuset.mems"
    fi
  done
}

# Kernel flags the kubelet sets: remember them before the first local node changes them.
register_node() {
  mkdir -p "$NODE_REGISTRY"
  if [[ ! -f /run/envoy-gateways/sysctl.saved ]]; then
    local s
    for s in "${NODE_SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >/run/envoy-gateways/sysctl.saved
    [[ -d /var/log/containers ]] || echo "created=/var/log/containers" >>/run/envoy-gateways/sysctl.saved
  fi
  echo "$STATE_DIR" >"$NODE_REGISTRY/$NODE_ID"
}

# Other local nodes whose kubelet still runs.
other_nodes_running() {
  local f dir pid
  for f in "$NODE_REGISTRY"/*; do
    [[ -f "$f" && "$(basename "$f")" != "$NODE_ID" ]] || continue
    dir="$(cat "$f")"
    pid="$(cat "$dir/run/kubelet.pid" 2>/dev/null || true)"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && return 0
  done
  return 1
}

unregister_node() {
  rm -f "$NODE_REGISTRY/$NODE_ID"
  other_nodes_running && return 0
  if [[ -f /run/envoy-gateways/sysctl.saved ]]; then
    local line
    while IFS= read -r line; do
      case "$line" in
        created=*) rmdir "${line#created=}" 2>/dev/null || true ;;
        *=*) sysctl -q -w "$line" >/dev/null 2>&1 || log "could not restore $line" ;;
      esac
    done </run/envoy-gateways/sysctl.saved
    rm -f /run/envoy-gateways/sysctl.saved
  fi
  rmdir /var/lib/cni/results /var/lib/cni "$NODE_REGISTRY" 2>/dev/null || true
  # The shims' socket directory (empty unless another containerd runs), and the lock,
  # removed while holding it.
  rmdir /run/containerd/s /run/containerd 2>/dev/null || true
  if [[ ! -d "$NODE_REGISTRY" && -f /run/envoy-gateways/subnets.lock ]]; then
    ( flock 8 && rm -f /run/envoy-gateways/subnets.lock ) 8>>/run/envoy-gateways/subnets.lock
    rmdir /run/envoy-gateways 2>/dev/null || true
  fi
}

# The CNI network: pods on the bridge, their default route through the node's address,
# as on a real cluster (Service IPs are outside the pod subnet: kube-proxy translates
# them on the node). hairpinMode lets a pod reach itself through its Service.
write_containerd_config() {
  local pause; pause="$(awk '$1 == "pause.tar" { print $2 }' "$(pod_images_dir)/images.txt")"
  cat >"$NODE_DIR/containerd.toml" <<EOF
# containerd of the local node $NODE_NAME ($STATE_DIR); written by scripts/local-node.sh
version = 2
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "$CONTAINERD_SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$NODE_DIR/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # runc cannot lower oom_score_adj here (no CAP_SYS_RESOURCE in this machine's root).
  restrict_oom_score_adj = true
  # Pods bind ports below 1024 without privileges (the stand-in pods serve 443 as a
  # non-root user with no capabilities), as containerd 2.x does by default.
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$NODE_DIR/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$NODE_DIR/cni/net.d"
    max_conf_num = 1
EOF
  mkdir -p "$NODE_DIR/cni/net.d" "$NODE_DIR/cni/ipam"
  cat >"$NODE_DIR/cni/net.d/10-$BRIDGE.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$BRIDGE",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$POD_SUBNET", "gateway": "$NODE_IP" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$NODE_DIR/cni/ipam"
      }
    }
  ]
}
EOF
}

# Every archive of every image list (scripts/build-components.sh: the pod images, and
# the old world's NGINX image when the development set built it).
import_images() {
  local list file ref images
  for list in $(pod_image_lists); do
    while read -r file ref; do
      ctr_ images import "$(dirname "$list")/$file" >/dev/null
    done <"$list"
  done
  images="$(ctr_ images ls -q)"
  for list in $(pod_image_lists); do
    while read -r file ref; do
      [[ $'\n'"$images"$'\n' == *$'\n'"$ref"$'\n'* || $'\n'"$images"$'\n' == *$'\n'"docker.io/$ref"$'\n'* ]] \
        || { log "image $ref missing after importing $file"; return 1; }
    done <"$list"
  done
}

# The node's identities: kubelet (group system:nodes, authorized by the Node authorizer),
# kube-scheduler (its default RBAC bindings), CoreDNS (the ClusterRole below), and the
# API server's client certificate for the kubelet API (logs, exec).
node_pki() {
  local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  sign kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "$client"
  sign kube-scheduler "/CN=system:kube-scheduler" "$client"
  sign coredns "/CN=system:coredns" "$client"
  # Bound to the ClusterRole system:node-proxier by Kubernetes' default RBAC.
  sign kube-proxy "/CN=system:kube-proxy" "$client"
  sign kube-router "/CN=system:kube-router" "$client"
  write_kubeconfig "$NODE_DIR/kubelet.kubeconfig" "system:node:$NODE_NAME" kubelet
  write_kubeconfig "$NODE_DIR/kube-scheduler.kubeconfig" system:kube-scheduler kube-scheduler
  write_kubeconfig "$NODE_DIR/coredns.kubeconfig" system:coredns coredns
  write_kubeconfig "$NODE_DIR/kube-proxy.kubeconfig" system:kube-proxy kube-proxy
  write_kubeconfig "$NODE_DIR/kube-router.kubeconfig" system:kube-router kube-router
}

# grant_cluster_role USER RULES: a ClusterRole named USER with the JSON list RULES, bound to
# the user USER (a node component's client certificate).
grant_cluster_role() {
  local user="$1" rules="$2" api="$SERVER/apis/rbac.authorization.k8s.io/v1"
  curl_admin -f -X POST -H 'Content-Type: application/json' "$api/clusterroles" \
    -d "{\"metadata\": {\"name\": \"$user\"}, \"rules\": $rules}" >/dev/null
  curl_admin -f -X POST -H 'Content-Type: application/json' "$api/clusterrolebindings" -d "{
    \"metadata\": {\"name\": \"$user\"},
    \"roleRef\": {\"apiGroup\": \"rbac.authorization.k8s.io\", \"kind\": \"ClusterRole\", \"name\": \"$user\"},
    \"subjects\": [{\"apiGroup\": \"rbac.authorization.k8s.io\", \"kind\": \"User\", \"name\": \"$user\"}]}" >/dev/null
}

# What CoreDNS's kubernetes plugin reads (as in CoreDNS's own deployment manifest).
coredns_rbac() {
  grant_cluster_role system:coredns '[
    {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"], "verbs": ["list", "watch"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]}]'
}

# Cluster DNS on the bridge address, port 53: the kubernetes plugin answers
# <svc>.<ns>.svc.cluster.local with every ready pod of a headless Service (TTL 5 s,
# the plugin's default; no cache plugin, so a change shows at once); every query is
# logged (logs/coredns.log), which is how the DNS benchmark counts a pod's queries.
# Names outside the cluster domain get NXDOMAIN: nothing is forwarded off the machine.
write_corefile() {
  cat >"$NODE_DIR/Corefile" <<EOF
$CLUSTER_DOMAIN:53 in-addr.arpa:53 {
    bind $NODE_IP
    errors
    log
    health 127.0.0.1:$COREDNS_HEALTH_PORT
    ready 127.0.0.1:$COREDNS_READY_PORT
    kubernetes $CLUSTER_DOMAIN in-addr.arpa {
        kubeconfig $NODE_DIR/coredns.kubeconfig
        pods insecure
    }
    loadbalance
}
.:53 {
    bind $NODE_IP
    errors
    log
    template ANY ANY {
        rcode NXDOMAIN
    }
}
EOF
}

# What kube-router's informers read (it starts them all, whichever controllers run).
kube_router_rbac() {
  grant_cluster_role system:kube-router '[
    {"apiGroups": [""], "resources": ["pods", "namespaces", "nodes", "services", "endpoints"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["list", "watch"]}]'
}

write_kubelet_config() {
  printf 'nameserver %s\noptions ndots:5\n' "$NODE_IP" >"$NODE_DIR/resolv.conf"
  cat >"$NODE_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: false }
  x509: { clientCAFile: $PKI/ca.crt }
authorization: { mode: AlwaysAllow }
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
# This machine kind runs cgroup v1, without systemd.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
failSwapOn: false
clusterDNS: [$NODE_IP]
clusterDomain: $CLUSTER_DOMAIN
resolvConf: $NODE_DIR/resolv.conf
podLogsDir: $NODE_DIR/pod-logs
volumePluginDir: $NODE_DIR/volume-plugins
# No iptables chains of the kubelet's on the host (kube-proxy runs in nftables mode).
makeIPTablesUtilChains: false
# The imported images are the only ones there are: never collect them, and never
# evict pods for a disk that other work on this machine fills.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: { memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1% }
serializeImagePulls: false
EOF
}

node_json() { # the node's part of cluster.json
  cat <<EOF
  "node": {
    "name": "$NODE_NAME",
    "ip": "$NODE_IP",
    "kubeletPort": $KUBELET_PORT,
    "podSubnet": "$POD_SUBNET",
    "bridge": "$BRIDGE",
    "dns": "$NODE_IP",
    "clusterDomain": "$CLUSTER_DOMAIN",
    "containerdSocket": "$CONTAINERD_SOCK",
    "corednsLog": "$LOGS/coredns.log",
    "podLogsDir": "$NODE_DIR/pod-logs",
    "cgroupRoot": "$CGROUP_ROOT",
    "kubeProxy": { "mode": "nftables", "healthzPort": $KUBE_PROXY_HEALTHZ_PORT, "log": "$LOGS/kube-proxy.log" },
    "networkPolicy": { "enforcer": "kube-router $KUBE_ROUTER_VERSION", "healthzPort": $KUBE_ROUTER_HEALTH_PORT, "log": "$LOGS/kube-router.log" }
  },
EOF
}

node_ready() {
  curl_admin -f "$SERVER/api/v1/nodes/$NODE_NAME" 2>/dev/null | python3 -c '
import json, sys
node = json.load(sys.stdin)
ready = [c for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
sys.exit(0 if ready and ready[0]["status"] == "True" else 1)'
}

coredns_ready() { curl -sf --max-time 2 "http://127.0.0.1:$COREDNS_READY_PORT/ready" >/dev/null; }
# kube-proxy wrote its rules at least once (its healthz is 200 before the first sync).
kube_proxy_synced() {
  curl -sf --max-time 2 "http://127.0.0.1:$KUBE_PROXY_METRICS_PORT/metrics" \
    | awk '/^kubeproxy_sync_proxy_rules_last_timestamp_seconds\{ip_family="IPv4"\}/ && $2 > 0 { found = 1 } END { exit !found }'
}
# kube-router's firewall controller synced its rules once (its healthz is 200 only then).
kube_router_healthy() { curl -sf --max-time 2 "http://127.0.0.1:$KUBE_ROUTER_HEALTH_PORT/healthz" >/dev/null; }
scheduler_healthy() { curl -sk -f --max-time 2 "https://127.0.0.1:$SCHEDULER_PORT/healthz" >/dev/null; }
containerd_up() { ctr --address "$CONTAINERD_SOCK" version >/dev/null 2>&1; }

# The `kubernetes` Service's endpoints (kube-apiserver runs with --endpoint-reconciler-type
# none): the node's bridge address and the API server's port, where in-cluster clients
# (the route controller) reach it through kube-proxy, as on any cluster.
kubernetes_endpoints() {
  curl_admin -f -X POST -H 'Content-Type: application/json' \
    "$SERVER/apis/discovery.k8s.io/v1/namespaces/default/endpointslices" -d "{
    \"metadata\": {\"name\": \"kubernetes\", \"labels\": {
      \"kubernetes.io/service-name\": \"kubernetes\", \"endpointslice.kubernetes.io/managed-by\": \"local-node.sh\"}},
    \"addressType\": \"IPv4\",
    \"endpoints\": [{\"addresses\": [\"$NODE_IP\"], \"conditions\": {\"ready\": true}}],
    \"ports\": [{\"name\": \"https\", \"port\": ${SERVER##*:}, \"protocol\": \"TCP\"}]}" >/dev/null
}

# node_start: after the control plane is ready.
node_start() {
  node_binaries
  BRIDGE="eg$NODE_ID"
  CGROUP_ROOT="/envoy-gateways-$NODE_ID"
  CONTAINERD_SOCK="$NODE_DIR/containerd.sock"
  rm -rf "$NODE_DIR"
  mkdir -p "$NODE_DIR"
  cat >"$(node_env_file)" <<EOF
BRIDGE=$BRIDGE
CGROUP_ROOT=$CGROUP_ROOT
CONTAINERD_SOCK=$CONTAINERD_SOCK
EOF
  read -r KUBELET_PORT KUBELET_HEALTHZ_PORT SCHEDULER_PORT COREDNS_HEALTH_PORT COREDNS_READY_PORT \
    KUBE_PROXY_HEALTHZ_PORT KUBE_PROXY_METRICS_PORT KUBE_ROUTER_HEALTH_PORT <<<"$(free_ports 8)"

  step "pod network (bridge $BRIDGE)" create_bridge
  create_cgroup_root
  register_node
  write_containerd_config
  launch containerd containerd --config "$NODE_DIR/containerd.toml" --log-level warn
  step "containerd ready" wait_for "containerd" 60 containerd_up
  step "images imported" import_images

  node_pki
  coredns_rbac
  write_corefile
  launch coredns "$COREDNS" -conf "$NODE_DIR/Corefile"
  step "CoreDNS ready" wait_for "CoreDNS" 60 coredns_ready

  launch kube-scheduler "$KUBE_SCHEDULER" \
    --kubeconfig "$NODE_DIR/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$NODE_DIR/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "$NODE_DIR/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --cert-dir "$NODE_DIR/scheduler-certs" \
    --leader-elect=false
  step "kube-scheduler ready" wait_for "kube-scheduler" 60 scheduler_healthy

  write_kubelet_config
  launch kubelet "$KUBELET" --config "$NODE_DIR/kubelet.yaml" --kubeconfig "$NODE_DIR/kubelet.kubeconfig" \
    --root-dir "$NODE_DIR/kubelet" --cert-dir "$NODE_DIR/kubelet/pki" \
    --hostname-override "$NODE_NAME" --node-ip "$NODE_IP"
  step "node $NODE_NAME Ready" wait_for "node $NODE_NAME to be Ready" 120 node_ready

  step "kubernetes Service endpoints" kubernetes_endpoints
  step "kube-proxy rules claimed" claim_kube_proxy
  write_kube_proxy_config
  launch kube-proxy "$KUBE_PROXY" --config "$NODE_DIR/kube-proxy.yaml"
  step "kube-proxy synced" wait_for "kube-proxy" 60 kube_proxy_synced

  # The firewall controller alone: no pod routing (the bridge does it), no service proxy
  # (kube-proxy does it), no BGP, no metrics server.
  kube_router_rbac
  launch kube-router "$KUBE_ROUTER" --kubeconfig "$NODE_DIR/kube-router.kubeconfig" \
    --hostname-override "$NODE_NAME" \
    --run-firewall=true --run-router=false --run-service-proxy=false --run-loadbalancer=false \
    --enable-ipv4=true --enable-ipv6=false \
    --service-cluster-ip-range 10.0.0.0/24 \
    --health-port "$KUBE_ROUTER_HEALTH_PORT" --metrics-port 0
  step "kube-router (NetworkPolicy) ready" wait_for "kube-router" 60 kube_router_healthy
}

# node_teardown: after the kubelet stopped. Kills every container, stops containerd
# and removes what the node created, including after a partial start or a crash.
node_teardown() {
  load_node_env || return 0
  local rc=0 id pid f
  if [[ -S "${CONTAINERD_SOCK:-}" ]] && containerd_up; then
    for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete --force "$id" >/dev/null 2>&1 || true; done
  fi
  # The shims' sockets (under /run/containerd/s), to remove if a shim was killed.
  local sockets=()
  for f in "$NODE_DIR"/containerd/state/io.containerd.runtime.v2.task/*/*/address; do
    # A shim may exit (and remove its directory) between the glob and the read.
    local socket
    socket="$(sed 's|^unix://||' "$f" 2>/dev/null)" && [[ -n "$socket" ]] && sockets+=("$socket")
  done
  kube_proxy_teardown || rc=1
  stop_one containerd || rc=1
  # Shims of this containerd (their command line names its socket) and anything left in
  # the node's cgroups (container processes whose shim died).
  for pid in $(node_leftover_pids); do kill -KILL "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do [[ -z "$(node_leftover_pids)" ]] && break; sleep 0.1; done
  [[ -z "$(node_leftover_pids)" ]] || { log "processes of the node survived SIGKILL: $(node_leftover_pids)"; rc=1; }
  for f in "${sockets[@]}"; do [[ -S "$f" ]] && rm -f "$f"; done
  unmount_under "$NODE_DIR" || rc=1
  if [[ -n "${BRIDGE:-}" ]] && ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE" || rc=1; fi
  remove_cgroup_root || rc=1
  # libcni's cached results of this node's sandboxes: <network>-<sandbox id>-<interface>.
  for f in /var/lib/cni/results/"${BRIDGE:-none}"-*; do
    [[ -e "$f" ]] || continue
    id="${f#/var/lib/cni/results/"$BRIDGE"-}"; id="${id%-*}"
    rm -f "$f" "/var/lib/cni/results/cni-loopback-$id-lo"
  done
  for f in /var/log/containers/*.log; do
    [[ -L "$f" && "$(readlink "$f")" == "$NODE_DIR/"* ]] && rm -f "$f"
  done
  unregister_node
  return $rc
}

# --- kube-proxy --------------------------------------------------------------------------
KUBE_PROXY_OWNER=/run/envoy-gateways/kube-proxy.owner
KUBE_PROXY_LOCK=/run/envoy-gateways/kube-proxy.lock

# cluster_alive DIR: a process of the local cluster in DIR still runs.
cluster_alive() {
  local f pid
  for f in "$1"/run/*.pid; do
    pid="$(cat "$f" 2>/dev/null)" && [[ -n "$pid" ]] && pgrep -g "$pid" >/dev/null 2>&1 && return 0
  done
  return 1
}

remove_kube_proxy_rules() {
  local family
  for family in ip ip6; do
    if nft list table "$family" kube-proxy >/dev/null 2>&1; then nft delete table "$family" kube-proxy || return 1; fi
  done
  remove_kube_router_rules
}

# kube-router's rules: the jumps into its chains, its chains (flushed, then deleted) and
# its ipsets. Its own --cleanup-config does not do it for the firewall alone (v2.1.0 cleans
# nothing without its running state, and crashes in the service proxy's cleanup).
KUBE_ROUTER_CHAINS='KUBE-ROUTER-|KUBE-POD-FW-|KUBE-NWPLCY-'
remove_kube_router_rules() {
  local rules rule chain chains
  rules="$(iptables-save -t filter 2>/dev/null)" || return 0
  while IFS= read -r rule; do
    [[ -n "$rule" ]] && { eval "iptables -t filter ${rule/#-A /-D }" || return 1; }
  done < <(grep -E "^-A (INPUT|FORWARD|OUTPUT) .*-j ($KUBE_ROUTER_CHAINS)" <<<"$rules")
  chains="$(grep -oE "^:($KUBE_ROUTER_CHAINS)[^ ]+" <<<"$rules" | tr -d :)"
  for chain in $chains; do iptables -t filter -F "$chain" || return 1; done
  for chain in $chains; do iptables -t filter -X "$chain" || return 1; done
  for rule in $(ipset list -n 2>/dev/null | grep -E '^(KUBE-|inet6:KUBE-)'); do ipset destroy "$rule" || return 1; done
}

# Makes this node the one whose kube-proxy owns the machine's Service rules. Refused
# while another local cluster runs; a stopped owner's rules are removed first.
claim_kube_proxy() {
  mkdir -p /run/envoy-gateways
  (
    flock 7
    owner="$(cat "$KUBE_PROXY_OWNER" 2>/dev/null || true)"
    if [[ -n "$owner" && "$owner" != "$STATE_DIR" ]] && cluster_alive "$owner"; then
      log "the local cluster in $owner runs kube-proxy, and its Service rules (nftables table kube-proxy)"
      log "are machine-wide: stop it first (scripts/local-cluster.sh stop --dir $owner)"
      exit 1
    fi
    [[ -n "$owner" && "$owner" != "$STATE_DIR" ]] && log "removing the Service rules left by the stopped cluster in $owner"
    remove_kube_proxy_rules || exit 1
    echo "$STATE_DIR" >"$KUBE_PROXY_OWNER"
  ) 7>>"$KUBE_PROXY_LOCK"
}

# kube-proxy leaves the machine's sysctls alone (conntrack sizes and timeouts at 0) and
# serves NodePorts on the node's address only.
write_kube_proxy_config() {
  cat >"$NODE_DIR/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $NODE_DIR/kube-proxy.kubeconfig
hostnameOverride: $NODE_NAME
mode: nftables
clusterCIDR: $POD_SUBNET
nodePortAddresses: ["$NODE_IP/32"]
healthzBindAddress: 127.0.0.1:$KUBE_PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$KUBE_PROXY_METRICS_PORT
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
}

# Stops this node's kube-router and kube-proxy and, if it owns them, removes their rules and the claim.
kube_proxy_teardown() {
  stop_one kube-router || return 1
  stop_one kube-proxy || return 1
  [[ -f "$KUBE_PROXY_OWNER" && "$(cat "$KUBE_PROXY_OWNER")" == "$STATE_DIR" ]] || return 0
  (
    flock 7
    remove_kube_proxy_rules || exit 1
    rm -f "$KUBE_PROXY_OWNER" "$KUBE_PROXY_LOCK"
  ) 7>>"$KUBE_PROXY_LOCK"
}

node_leftover_pids() {
  local f pid h cmd
  for f in /proc/[0-9]*/cmdline; do
    pid="${f#/proc/}"; pid="${pid%/cmdline}"
    cmd="$(tr '\0' ' ' 2>/dev/null <"$f" || true)"
    [[ "$cmd" == *"-address $CONTAINERD_SOCK "* ]] && echo "$pid"
  done
  [[ -n "${CGROUP_ROOT:-}" ]] || return 0
  for h in $(cgroup_hierarchies); do
    [[ -d "$h$CGROUP_ROOT" ]] && find "$h$CGROUP_ROOT" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -u
}

# Unmounts every mount point under DIR, deepest first (rootfs overlays, shm, network
# namespaces, the kubelet's Secret and emptyDir tmpfs mounts).
unmount_under() {
  local dir="$1" m rc=0
  for _ in 1 2 3; do
    local mounts
    mounts="$(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r -u)"
    [[ -z "$mounts" ]] && return 0
    while IFS= read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done <<<"$mounts"
  done
  if awk -v d="$dir/" 'index($5, d) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    log "mounts left under $dir:"; awk -v d="$dir/" 'index($5, d) == 1 { print "  " $5 }' /proc/self/mountinfo >&2
    rc=1
  fi
  return $rc
}

remove_cgroup_root() {
  [[ -n "${CGROUP_ROOT:-}" ]] || return 0
  local h rc=0
  for h in $(cgroup_hierarchies); do
    [[ -d "$h$CGROUP_ROOT" ]] || continue
    find "$h$CGROUP_ROOT" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [[ -d "$h$CGROUP_ROOT" ]] && { log "could not remove cgroup $h$CGROUP_ROOT"; rc=1; }
  done
  return $rc
}
