#!/usr/bin/env bash
# The main job on an embedded default: builds what is missing, starts the
# local cluster (etcd + kube-apiserver + kube-controller-manager on 127.0.0.1
# and a real node: containerd, CNI bridge, CoreDNS, kube-scheduler, kubelet),
# builds the route controller's image and imports it into the node, runs
# `pulumi up` of the dev stack's config against it (with the route controller
# on, and a local file backend; it waits until the gateway and service pods are
# ready), then sends requests through the gateway pod and prints the answers.
#
#   bash scripts/quickstart.sh          set up and deploy (again: updates)
#   bash scripts/quickstart.sh --down   pulumi destroy, then stop the cluster:
#                                       no pods, mounts, network namespaces,
#                                       bridge or processes are left
#
# The stack is "local": Pulumi.dev.yaml's config made local (the stand-in pod
# images, NodePort gateway Services: test/support/local-stack.ts) plus the
# local cluster's kubeconfig (a secret). Its file, Pulumi.local.yaml, is
# generated and not committed. The gateways' and pods' Secrets are made with
# openssl at each run; a dev/PR namespace pr-demo (label
# envoy-gateways.io/routes=dev, Service batch with one pod) shows a dev route.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"
STACK=local
CLUSTER_DIR="$EG_CACHE/local-cluster"

if [[ "${1:-}" == "--down" ]]; then
  progress_plan "pulumi destroy" "stop the local cluster"
else
  progress_plan "route controller image" "Secrets of the gateways and pods (openssl)" "dev/PR namespace pr-demo" "pulumi up" \
    "requests through the gateway pod"
  bash scripts/local-cluster.sh status --dir "$CLUSTER_DIR" >/dev/null 2>&1 || progress_plan "start the local cluster"
fi
setup_project quickstart
eval "$(bash scripts/env.sh)"

if [[ "${1:-}" == "--down" ]]; then
  # The cluster is stopped whatever the destroy does: say what failed, and still stop what was started.
  failed=()
  if bash scripts/local-cluster.sh status --dir "$CLUSTER_DIR" >/dev/null 2>&1 \
    && pulumi stack select "$STACK" --non-interactive 2>/dev/null; then
    step "pulumi destroy" pulumi destroy --yes --skip-preview --non-interactive --stack "$STACK" || failed+=("pulumi destroy (the stack's state still lists its resources: \`pulumi stack rm --force $STACK\` forgets them once the cluster is gone)")
  fi
  step "stop the local cluster" bash scripts/local-cluster.sh stop --dir "$CLUSTER_DIR" || failed+=("stopping the local cluster (see $CLUSTER_DIR/logs)")
  if ((${#failed[@]})); then
    log "--down finished with failures: ${failed[*]}"
    exit 1
  fi
  exit 0
fi

fresh_cluster=0
if ! bash scripts/local-cluster.sh status --dir "$CLUSTER_DIR" >/dev/null 2>&1; then
  step "start the local cluster" bash scripts/local-cluster.sh start --dir "$CLUSTER_DIR"
  fresh_cluster=1
fi

# The route controller's image, built from this checkout (cached by content) and imported
# into the node: the local stack runs it (routeSync.inCluster), so dev/PR namespaces are
# routed with no sync-routes run.
controller_image="$(step "route controller image" bash scripts/route-controller-image.sh --import "$CLUSTER_DIR/node/containerd.sock" | tail -n 1)"

if ! pulumi stack select "$STACK" --non-interactive 2>/dev/null; then
  pulumi stack init "$STACK" --non-interactive
fi
# The config, rewritten each run (the encryption salt kept): Pulumi.dev.yaml made local.
{
  grep '^encryptionsalt:' "Pulumi.$STACK.yaml" || true
  echo "config:"
  npx tsx scripts/local-stack.ts config --from dev --cluster "$CLUSTER_DIR" --route-controller-image "$controller_image"
} >"Pulumi.$STACK.yaml.new"
mv "Pulumi.$STACK.yaml.new" "Pulumi.$STACK.yaml"
# The cluster's certificates are new at every start: refresh the kubeconfig secret.
pulumi config set --stack "$STACK" --secret envoy-gateways:kubeconfig -- "$(cat "$CLUSTER_DIR/kubeconfig")"

step "Secrets of the gateways and pods (openssl)" npx tsx scripts/local-stack.ts secrets --cluster "$CLUSTER_DIR" --from dev
step "dev/PR namespace pr-demo" npx tsx scripts/local-stack.ts demo-namespace --cluster "$CLUSTER_DIR"
# A new cluster has none of the stack's resources: --refresh makes the state say so first.
refresh=(); ((fresh_cluster)) && refresh=(--refresh)
step "pulumi up" pulumi up --yes --skip-preview --non-interactive --stack "$STACK" "${refresh[@]}"
echo
echo "The gateways route (pulumi stack output routes):"
pulumi stack output routes --stack "$STACK" --json | node -e '
  const routes = JSON.parse(require("fs").readFileSync(0, "utf8"));
  for (const [gateway, lines] of Object.entries(routes)) {
    console.log(`  ${gateway}:`);
    for (const line of lines) console.log(`    ${line}`);
  }
'
echo
step "requests through the gateway pod" npx tsx scripts/local-stack.ts show --cluster "$CLUSTER_DIR" --from dev
echo
echo "Kubeconfig of the local cluster: $CLUSTER_DIR/kubeconfig (services CA: $CLUSTER_DIR/pki/services-ca.crt)"
echo "Label a namespace envoy-gateways.io/routes=dev and give it a Service with the routing labels (README):"
echo "the route controller (kubectl -n default get pods -l app.kubernetes.io/name=route-controller) routes it."
echo "Tear down: bash scripts/quickstart.sh --down"
