#!/usr/bin/env bash
# Sets up everything a fresh clone needs, then runs every test suite:
#   unit   pure code and Pulumi mocks
#   envoy  the real Envoy with the loopback harness
#   e2e    the local control plane and the real Pulumi engine
# and the type check. Ends with one line: "N passed, N failed, N skipped".
#
#   bash scripts/test.sh [vitest filters...]
#
# Needs: Go, python3 with pip, root (or sudo) for apt and for the harness's
# pods on port 443 of loopback addresses.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

step "Node $NODE_VERSION" ensure_node
if [[ -n "${CI:-}" || ! -d node_modules ]]; then
  step "npm ci" npm ci --no-audit --no-fund
fi
step "test tools (apt)" bash scripts/install-test-tools.sh
step "real components" bash scripts/build-components.sh

report="$(mktemp -d)"
trap 'rm -rf "$report"' EXIT
failed_checks=0
if ! step "typecheck" npm run --silent typecheck; then failed_checks=1; fi
status=0
step "tests" npx vitest run --reporter=default --reporter=json --outputFile.json="$report/vitest.json" "$@" || status=$?

if [[ -s "$report/vitest.json" ]]; then
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const failedChecks = Number(process.argv[2]);
    const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    console.log(`${r.numPassedTests} passed, ${r.numFailedTests + failedChecks} failed, ${skipped} skipped`);
  ' "$report/vitest.json" "$failed_checks"
else
  echo "0 passed, $((1 + failed_checks)) failed, 0 skipped"
  status=1
fi
((failed_checks == 0)) || status=1
exit "$status"
