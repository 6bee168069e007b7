#!/usr/bin/env bash
# Regenerates tools/kubernetes-node/go.mod (and go.sum): the node's kubelet,
# kube-scheduler and kube-proxy from k8s.io/kubernetes at KUBERNETES_VERSION, with the same staging
# replaces as tools/kubernetes. A module of their own because the kubelet needs
# dependencies kube-apiserver does not (github.com/armon/circbuf, cadvisor's, ...):
# adding them to tools/kubernetes/go.sum would change that module's cache entry.
# Both modules share Go's build cache, so the common packages compile once.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../kubernetes/generate-go-mod.sh" kubernetes-node kubelet kube-scheduler kube-proxy
