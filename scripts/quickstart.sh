#!/usr/bin/env bash
# The main job on an embedded default: builds what is missing, starts the
# local cluster (etcd + kube-apiserver + kube-controller-manager on
# 127.0.0.1), and runs `pulumi up` of the dev stack's config against it with a
# local file backend, then prints what the gateways route.
#
#   bash scripts/quickstart.sh          set up and deploy (again: updates)
#   bash scripts/quickstart.sh --down   pulumi destroy, then stop the cluster
#
# The stack is "local": Pulumi.dev.yaml's config plus the local cluster's
# kubeconfig (a secret) and skipAwait (no kubelet runs pods here). Its file,
# Pulumi.local.yaml, is generated and not committed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"
STACK=local
CLUSTER_DIR="$EG_CACHE/local-cluster"

setup_project
eval "$(bash scripts/env.sh)"

if [[ "${1:-}" == "--down" ]]; then
  if pulumi stack select "$STACK" --non-interactive 2>/dev/null; then
    step "pulumi destroy" pulumi destroy --yes --skip-preview --non-interactive --stack "$STACK"
  fi
  step "stop the local cluster" bash scripts/local-cluster.sh stop --dir "$CLUSTER_DIR"
  exit 0
fi

if ! bash scripts/local-cluster.sh status --dir "$CLUSTER_DIR" >/dev/null 2>&1; then
  step "start the local cluster" bash scripts/local-cluster.sh start --dir "$CLUSTER_DIR"
fi

if ! pulumi stack select "$STACK" --non-interactive 2>/dev/null; then
  pulumi stack init "$STACK" --non-interactive
  # The dev stack's config, as is.
  node -e '
    const { parse } = require("yaml");
    const fs = require("fs");
    const config = parse(fs.readFileSync("Pulumi.dev.yaml", "utf8")).config;
    const lines = ["", "config:", ...Object.entries(config).map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)];
    fs.appendFileSync("Pulumi.local.yaml", lines.join("\n") + "\n");
  '
  pulumi config set --stack "$STACK" envoy-gateways:skipAwait true
fi
# The cluster's certificates are new at every start: refresh the kubeconfig secret.
pulumi config set --stack "$STACK" --secret envoy-gateways:kubeconfig -- "$(cat "$CLUSTER_DIR/kubeconfig")"

step "pulumi up" pulumi up --yes --skip-preview --non-interactive --stack "$STACK"
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
echo "Kubeconfig of the local cluster: $CLUSTER_DIR/kubeconfig"
echo "Label a namespace envoy-gateways.io/routes=dev, give it a Service with the routing labels (README), then:"
echo "  source scripts/env.sh && npm run sync-routes -- --stack $STACK"
echo "Tear down: bash scripts/quickstart.sh --down"
