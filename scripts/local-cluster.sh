#!/usr/bin/env bash
# A local Kubernetes cluster on this machine: etcd + kube-apiserver +
# kube-controller-manager on 127.0.0.1, and one real node (scripts/local-node.sh):
# containerd + runc, the CNI bridge, CoreDNS as cluster DNS, kube-scheduler, the
# kubelet, kube-proxy and kube-router's NetworkPolicy firewall, with the images of scripts/build-components.sh imported
# (nothing is pulled). Pods run as on any cluster; the host reaches pod IPs directly,
# and ClusterIP and NodePort Services through kube-proxy (one local cluster at a time
# runs it: its rules are machine-wide).
# Needs root.
#
#   scripts/local-cluster.sh start  [--dir DIR] [--audit]   start (fresh state), wait until ready
#   scripts/local-cluster.sh status [--dir DIR]   exit 0 if running and ready, 3 if stopped
#   scripts/local-cluster.sh stop   [--dir DIR]   stop everything it started
#
# DIR (default $EG_CACHE/local-cluster) receives:
#   kubeconfig             admin (group system:masters)
#   kubeconfig-restricted  user "restricted-user": authenticated, no RBAC bindings
#   cluster.json           server URL, ports, kubeconfig paths (read by test/support)
#   logs/*.log             one log per process;  pki/  certificates and keys (openssl)
#   logs/audit.log         with --audit: one JSON line per completed API request
#                          (user, verb, resource, namespace, name), for counting requests
#   logs/coredns.log       every DNS query the pods make;  node/  the node's state
#   pki/services-ca.*      the CA of the workloads' certificates (scripts/local-stack.ts)
# etcd and kube-controller-manager listen on loopback only, on free ports chosen at start;
# kube-apiserver on every address (TLS, authenticated), so that pods reach it as on any
# cluster: the `kubernetes` Service (10.0.0.1:443) leads to the node's bridge address
# (local-node.sh writes its endpoints). The node's kubelet API and CoreDNS listen on its
# bridge address, pods on the bridge's /24.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

cmd="${1:-}"; shift || true
STATE_DIR="$EG_CACHE/local-cluster"
AUDIT=0
while (($#)); do
  case "$1" in
    --dir) STATE_DIR="$2"; shift 2 ;;
    --dir=*) STATE_DIR="${1#--dir=}"; shift ;;
    --audit) AUDIT=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) log "unknown argument: $1"; usage >&2; exit 2 ;;
  esac
done
mkdir -p "$STATE_DIR"
STATE_DIR="$(cd "$STATE_DIR" && pwd)"
PKI="$STATE_DIR/pki"
LOGS="$STATE_DIR/logs"
RUN="$STATE_DIR/run"
# Started in this order, stopped in reverse.
COMPONENTS=(etcd kube-apiserver kube-controller-manager containerd coredns kube-scheduler kubelet kube-proxy kube-router)

pid_of() { [[ -f "$RUN/$1.pid" ]] && cat "$RUN/$1.pid"; }
alive() { local pid; pid="$(pid_of "$1")" && [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; }
# Any process left in the process group that $1 led.
group_alive() { local pid; pid="$(pid_of "$1")" && [[ -n "$pid" ]] && pgrep -g "$pid" >/dev/null 2>&1; }

free_ports() { # free_ports N: N distinct free TCP ports on 127.0.0.1
  python3 - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# --- certificates -------------------------------------------------------------------
# sign NAME SUBJECT EXTENSIONS: key + certificate signed by the local CA.
sign() {
  local name="$1" subject="$2" ext="$3"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$PKI/$name.key" -out "$PKI/$name.csr" -subj "$subject" 2>/dev/null
  printf '%s\n' "$ext" >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 30 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

make_pki() {
  rm -rf "$PKI"; mkdir -p "$PKI"; chmod 700 "$PKI"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -sha256 \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -subj "/CN=envoy-gateways-local-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  sign apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  sign admin "/O=system:masters/CN=admin" "$client"
  sign restricted "/CN=restricted-user" "$client"
  sign controller-manager "/CN=system:kube-controller-manager" "$client"
  # The API server's client certificate for the kubelet API (pod logs).
  sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
  # The CA of the workloads' TLS (gateway and pod certificates, scripts/local-stack.ts).
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -sha256 \
    -keyout "$PKI/services-ca.key" -out "$PKI/services-ca.crt" -subj "/O=envoy-gateways local/CN=envoy-gateways local services CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  # Service-account token signing key pair.
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
  openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
}

b64() { base64 -w0 <"$1"; }

write_kubeconfig() { # write_kubeconfig FILE USER CERT
  local file="$1" user="$2" cert="$3"
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: envoy-gateways-local
  cluster:
    server: $SERVER
    certificate-authority-data: $(b64 "$PKI/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(b64 "$PKI/$cert.crt")
    client-key-data: $(b64 "$PKI/$cert.key")
contexts:
- name: $user@envoy-gateways-local
  context:
    cluster: envoy-gateways-local
    user: $user
current-context: $user@envoy-gateways-local
EOF
  chmod 600 "$file"
}

# --- processes ----------------------------------------------------------------------
# launch NAME CMD...: run CMD as the leader of a new session and process group; the
# process writes its own pid, which is also the group id that stop signals.
launch() {
  local name="$1"; shift
  rm -f "$RUN/$name.pid"
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$RUN/$name.pid" "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  local i
  for i in $(seq 50); do [[ -s "$RUN/$name.pid" ]] && return 0; sleep 0.1; done
  log "$name did not start"; return 1
}

stop_one() {
  local name="$1" pid i
  pid="$(pid_of "$name")" || return 0
  [[ -n "$pid" ]] || { rm -f "$RUN/$name.pid"; return 0; }
  if group_alive "$name"; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    for i in $(seq 150); do group_alive "$name" || break; sleep 0.1; done
    if group_alive "$name"; then
      log "$name (pgid $pid) did not stop within 15s: killing it"
      kill -KILL -- "-$pid" 2>/dev/null || true
      for i in $(seq 50); do group_alive "$name" || break; sleep 0.1; done
    fi
  fi
  if group_alive "$name"; then log "could not stop $name (pgid $pid)"; return 1; fi
  rm -f "$RUN/$name.pid"
}

stop_all() {
  local rc=0 i
  # The kubelet first (so it restarts nothing), then kube-proxy with its rules, every
  # container and containerd with what the node created; then the rest in reverse start
  # order.
  stop_one kubelet || rc=1
  node_teardown || rc=1
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do stop_one "${COMPONENTS[i]}" || rc=1; done
  return $rc
}

curl_admin() { curl -sS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$@"; }

# wait_for WHAT SECONDS CHECK...: poll CHECK until it succeeds; fail early if a process died.
wait_for() {
  local what="$1" deadline=$((SECONDS + $2)) name; shift 2
  until "$@" >/dev/null 2>&1; do
    for name in "${COMPONENTS[@]}"; do
      if [[ -f "$RUN/$name.pid" ]] && ! alive "$name"; then
        log "$name exited while waiting for $what; last lines of $LOGS/$name.log:"
        tail -n 30 "$LOGS/$name.log" >&2
        return 1
      fi
    done
    if ((SECONDS >= deadline)); then log "timed out waiting for $what"; return 1; fi
    sleep 0.5
  done
}

readyz_ok() { [[ "$(curl_admin "$SERVER/readyz")" == ok ]]; }
default_sa_exists() { curl_admin -f "$SERVER/api/v1/namespaces/default/serviceaccounts/default" >/dev/null; }

binary() { # binary DIR NAME: path of a cached binary, or a clear error
  local path="$1/$2"
  [[ -x "$path" ]] || { log "$path is missing: run scripts/build-components.sh"; exit 1; }
  echo "$path"
}

start() {
  local etcd apiserver kcm
  etcd="$(binary "$(etcd_bin_dir)" etcd)"
  apiserver="$(binary "$(kubernetes_bin_dir)" kube-apiserver)"
  kcm="$(binary "$(kubernetes_bin_dir)" kube-controller-manager)"

  local name
  for name in "${COMPONENTS[@]}"; do
    if group_alive "$name"; then
      log "already running in $STATE_DIR (stop it first: $0 stop --dir $STATE_DIR)"
      exit 1
    fi
  done
  # Leftovers of a node that was killed outright (its bridge, mounts, cgroups).
  node_teardown || { log "could not clean up the node left in $STATE_DIR"; exit 1; }
  rm -rf "$RUN" "$STATE_DIR/etcd-data" "$LOGS"
  mkdir -p "$RUN" "$LOGS"

  node_binaries
  read -r ETCD_PORT ETCD_PEER_PORT API_PORT KCM_PORT <<<"$(free_ports 4)"
  SERVER="https://127.0.0.1:$API_PORT"
  step "certificates" make_pki
  write_kubeconfig "$STATE_DIR/kubeconfig" admin admin
  write_kubeconfig "$STATE_DIR/kubeconfig-restricted" restricted-user restricted
  write_kubeconfig "$STATE_DIR/controller-manager.kubeconfig" system:kube-controller-manager controller-manager

  trap 'log "start failed: stopping what was started"; stop_all' EXIT

  launch etcd "$etcd" --name local --data-dir "$STATE_DIR/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "local=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --log-level warn
  step "etcd ready" wait_for "etcd" 60 curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"

  local audit_flags=()
  if ((AUDIT)); then
    # Metadata level, one event per request (at completion).
    cat >"$STATE_DIR/audit-policy.yaml" <<'YAML'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: Metadata
YAML
    audit_flags=(--audit-policy-file "$STATE_DIR/audit-policy.yaml" --audit-log-path "$LOGS/audit.log"
      --audit-log-format json --audit-log-mode blocking --audit-log-maxsize 0)
  fi
  launch kube-apiserver "$apiserver" "${audit_flags[@]}" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 0.0.0.0 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
    --cert-dir "$STATE_DIR/apiserver-certs" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --authorization-mode Node,RBAC \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-cluster-ip-range 10.0.0.0/24 \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --endpoint-reconciler-type none \
    --profiling=false
  step "kube-apiserver ready" wait_for "kube-apiserver /readyz" 120 readyz_ok

  launch kube-controller-manager "$kcm" \
    --kubeconfig "$STATE_DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$STATE_DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$STATE_DIR/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --cert-dir "$STATE_DIR/controller-manager-certs" \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --use-service-account-credentials --leader-elect=false --controllers '*' \
    --profiling=false
  # The service-account controller creating "default" in namespace default shows the
  # controllers are running.
  step "kube-controller-manager ready" wait_for "kube-controller-manager" 120 default_sa_exists

  node_start

  trap - EXIT
  cat >"$STATE_DIR/cluster.json" <<EOF
{
  "server": "$SERVER",
  "kubeconfig": "$STATE_DIR/kubeconfig",
  "restrictedKubeconfig": "$STATE_DIR/kubeconfig-restricted",
  "stateDir": "$STATE_DIR",
$(node_json)
  "ports": { "etcd": $ETCD_PORT, "etcdPeer": $ETCD_PEER_PORT, "apiserver": $API_PORT, "controllerManager": $KCM_PORT }
}
EOF
  log "local cluster ready: $SERVER"
  echo "KUBECONFIG=$STATE_DIR/kubeconfig"
  echo "KUBECONFIG_RESTRICTED=$STATE_DIR/kubeconfig-restricted"
  echo "SERVER=$SERVER"
}

status() {
  local name running=0
  for name in "${COMPONENTS[@]}"; do
    if alive "$name"; then
      echo "$name: running (pid $(pid_of "$name"))"; running=$((running + 1))
    else
      echo "$name: stopped"
    fi
  done
  ((running == 0)) && exit 3
  SERVER="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["server"])' "$STATE_DIR/cluster.json" 2>/dev/null || true)"
  if ((running == ${#COMPONENTS[@]})) && [[ -n "$SERVER" ]] && readyz_ok; then
    echo "ready: $SERVER"
    echo "KUBECONFIG=$STATE_DIR/kubeconfig"
    exit 0
  fi
  echo "not ready"
  exit 1
}

# shellcheck source=local-node.sh
source "$REPO_ROOT/scripts/local-node.sh"

case "$cmd" in
  -h|--help|help) usage ;;
  start) start ;;
  stop) stop_all && rm -f "$STATE_DIR/cluster.json" && log "stopped ($STATE_DIR)" ;;
  status) status ;;
  *) usage >&2; exit 2 ;;
esac
