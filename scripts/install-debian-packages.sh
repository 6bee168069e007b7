#!/usr/bin/env bash
# Installs the Debian packages a set of scripts runs, as scripts/commands.tsv names them
# (its "apt:PKG" rows):
#   quickstart   the local cluster's node: containerd (with ctr and its CRI plugin), runc,
#                the CNI plugins, iproute2, procps, nftables and conntrack (kube-proxy),
#                iptables and ipset (kube-router), curl
#   development  the quick start's, and the tests' and benchmarks' tools: dnsmasq, nginx,
#                haproxy, wrk, h2load, shellcheck, python3-venv, mmdebstrap
# Idempotent: nothing is fetched when every command is already there. Installing a
# service's package does not leave it running (nginx's and haproxy's own services are
# stopped: the tests run their own instances). Run as root (or with sudo available).
#
#   bash scripts/install-debian-packages.sh quickstart|development
set -euo pipefail
TABLE="$(dirname "${BASH_SOURCE[0]}")/commands.tsv"

case "${1:-}" in
  quickstart) sets=" quickstart " ;;
  development) sets=" quickstart development " ;;
  *) echo "install-debian-packages: the set is quickstart or development (got: '${1:-}')" >&2; exit 2 ;;
esac

# have COMMAND-OR-PATH: "/..." is a file, "python3 -m MODULE" an importable module,
# anything else a command on PATH or in /usr/sbin.
have() {
  case "$1" in
    /*) [[ -e "$1" ]] ;;
    # python3 -m venv makes a virtualenv with pip only when ensurepip is there (Debian's python3-venv).
    "python3 -m venv") python3 -c "import venv, ensurepip" >/dev/null 2>&1 ;;
    "python3 -m "*) python3 -c "import ${1#python3 -m }" >/dev/null 2>&1 ;;
    *) command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" ]] ;;
  esac
}

commands=() missing=()
while IFS=$'\t' read -r what provider set; do
  [[ "$what" == \#* || -z "$what" || "$provider" != apt:* || "$sets" != *" $set "* ]] && continue
  commands+=("$what")
  have "$what" || missing+=("${provider#apt:}")
done <"$TABLE"

if ((${#missing[@]} == 0)); then
  echo "install-debian-packages: nothing to install for the $1 set (${#commands[@]} commands there)"
  exit 0
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "install-debian-packages: apt-get update"
$SUDO apt-get update -qq
echo "install-debian-packages: apt-get install ${missing[*]}"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# A package may start its service on install: the tests never use the system's.
for service_name in nginx haproxy; do
  if [[ " ${missing[*]} " == *" $service_name"* ]] && command -v service >/dev/null 2>&1 \
    && service "$service_name" status >/dev/null 2>&1; then
    echo "install-debian-packages: stopping the system $service_name service it started (not used)"
    $SUDO service "$service_name" stop >/dev/null 2>&1 || true
  fi
done

for what in "${commands[@]}"; do
  have "$what" || { echo "install-debian-packages: $what still missing after installing ${missing[*]}" >&2; exit 1; }
done
echo "install-debian-packages: done (${missing[*]})"
