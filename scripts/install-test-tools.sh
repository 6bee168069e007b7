#!/usr/bin/env bash
# Installs the Debian packages the Envoy end-to-end harness and the gateway
# benchmark need: dnsmasq (cluster DNS stand-in), nginx (the old gateway and a
# tuned peer, for the benchmark), haproxy (the other tuned peer), wrk and h2load
# (load), openssl (test CA and TLS probes), curl, and shellcheck (actionlint runs it on
# the example workflows' `run:` scripts in the unit tests).
# Idempotent: packages already installed are left alone, and nothing is fetched
# when every command is already there. Run as root (or with sudo available).
set -euo pipefail

# command -> Debian package that provides it (dnsmasq-base: the binary without the
# system service, which would take port 53)
declare -A PACKAGE_OF=(
  [dnsmasq]=dnsmasq-base
  [nginx]=nginx-light
  [haproxy]=haproxy
  [wrk]=wrk
  [h2load]=nghttp2-client
  [openssl]=openssl
  [curl]=curl
  [shellcheck]=shellcheck
)

have() { command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" ]]; }

missing=()
for cmd in dnsmasq nginx haproxy wrk h2load openssl curl shellcheck; do
  if have "$cmd"; then
    echo "install-test-tools: $cmd already installed ($(command -v "$cmd" || echo "/usr/sbin/$cmd"))"
  else
    missing+=("${PACKAGE_OF[$cmd]}")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-test-tools: nothing to install"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "install-test-tools: apt-get update"
$SUDO apt-get update -qq
echo "install-test-tools: apt-get install ${missing[*]}"
# --no-install-recommends keeps it small; policy-rc.d-less containers may try to
# start the nginx and dnsmasq services on install: the harness never uses them.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

# nginx's and haproxy's own services are not wanted (the benchmark runs its own
# instances on loopback with private configs): stop them if installing started them.
for pkg_service in nginx-light:nginx haproxy:haproxy; do
  pkg=${pkg_service%%:*} service_name=${pkg_service##*:}
  if [[ " ${missing[*]} " == *" $pkg "* ]]; then
    if command -v service >/dev/null 2>&1 && service "$service_name" status >/dev/null 2>&1; then
      echo "install-test-tools: stopping the system $service_name service it started (not used)"
      $SUDO service "$service_name" stop >/dev/null 2>&1 || true
    fi
  fi
done

for cmd in dnsmasq nginx haproxy wrk h2load openssl curl shellcheck; do
  if ! have "$cmd"; then echo "install-test-tools: $cmd still missing after install" >&2; exit 1; fi
done
echo "install-test-tools: done"
