#!/usr/bin/env bash
# Installs the Debian packages the local cluster's node runs on: containerd (with its
# CRI plugin and ctr), runc, the CNI plugins (bridge, host-local, loopback in
# /usr/lib/cni), iproute2 (ip), procps (sysctl), and for kube-proxy's nftables mode nftables
# (nft, which it runs) and conntrack (to clear stale UDP entries), and for kube-router's
# NetworkPolicy firewall iptables and ipset. Idempotent: nothing is fetched
# when every command is already there. Installing containerd does not start it (no
# init system runs services here); scripts/local-cluster.sh starts its own instance.
# Run as root (or with sudo available).
set -euo pipefail

# command (or file) -> Debian package that provides it
declare -A PACKAGE_OF=(
  [containerd]=containerd
  [ctr]=containerd
  [containerd-shim-runc-v2]=containerd
  [runc]=runc
  [/usr/lib/cni/bridge]=containernetworking-plugins
  [/usr/lib/cni/host-local]=containernetworking-plugins
  [/usr/lib/cni/loopback]=containernetworking-plugins
  [ip]=iproute2
  [sysctl]=procps
  [nft]=nftables
  [conntrack]=conntrack
  [iptables]=iptables
  [ipset]=ipset
)

have() { if [[ "$1" == /* ]]; then [[ -x "$1" ]]; else command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" ]]; fi; }

missing=()
for cmd in "${!PACKAGE_OF[@]}"; do
  have "$cmd" || missing+=("${PACKAGE_OF[$cmd]}")
done
if ((${#missing[@]} == 0)); then
  echo "install-node-packages: nothing to install (containerd $(containerd --version | awk '{print $3}'), runc, CNI plugins)"
  exit 0
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "install-node-packages: apt-get update"
$SUDO apt-get update -qq
echo "install-node-packages: apt-get install ${missing[*]}"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

for cmd in "${!PACKAGE_OF[@]}"; do
  if ! have "$cmd"; then echo "install-node-packages: $cmd still missing after install" >&2; exit 1; fi
done
echo "install-node-packages: done"
