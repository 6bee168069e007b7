#!/usr/bin/env bash
# The environment for using the real components from the cache (see
# scripts/build-components.sh): Node 22, pulumi, its Node language host and the
# Kubernetes provider, envoy, etcd, kube-apiserver and kube-controller-manager, and
# the local node's kubelet, kube-scheduler and coredns.
#
#   source scripts/env.sh      export it into the current shell
#   scripts/env.sh             print it as export lines (eval "$(scripts/env.sh)")
#
# Sets PATH, PULUMI_HOME (where the provider is registered),
# PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true, PULUMI_SKIP_UPDATE_CHECK=1, and,
# only when you have not set your own: PULUMI_BACKEND_URL (a local file backend under
# the cache) and PULUMI_CONFIG_PASSPHRASE (a fixed passphrase for local stacks only).

if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  # Sourced: compute in a child shell (lib.sh sets -euo pipefail, which must not leak
  # into an interactive shell), then take over its export lines.
  __eg_env="$(bash "${BASH_SOURCE[0]}")" && eval "$__eg_env"
  unset __eg_env
  return 0 2>/dev/null
fi

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_node

missing=()
for dir in "$(pulumi_bin_dir)" "$(pulumi_kubernetes_bin_dir)" \
  "$(envoy_bin_dir)" "$(etcd_bin_dir)" "$(kubernetes_bin_dir)" \
  "$(kubernetes_node_bin_dir)" "$(coredns_bin_dir)"; do
  [[ -d "$dir" ]] || missing+=("$dir")
  PATH="$dir:$PATH"
done
if ((${#missing[@]})); then
  log "not built yet: ${missing[*]}"
  log "run scripts/build-components.sh"
fi

emit() { printf 'export %s=%q\n' "$1" "$2"; }
emit EG_CACHE "$EG_CACHE"
emit PATH "$PATH"
emit PULUMI_HOME "$(pulumi_home_dir)"
emit PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION true
emit PULUMI_SKIP_UPDATE_CHECK 1
emit PULUMI_BACKEND_URL "${PULUMI_BACKEND_URL:-file://$EG_CACHE/pulumi-backend}"
if [[ -z "${PULUMI_CONFIG_PASSPHRASE:-}" && -z "${PULUMI_CONFIG_PASSPHRASE_FILE:-}" ]]; then
  emit PULUMI_CONFIG_PASSPHRASE "envoy-gateways-local"
fi
mkdir -p "$EG_CACHE/pulumi-backend"
