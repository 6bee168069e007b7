import { defineConfig } from "vitest/config";

// Four projects:
// - unit:  pure code and Pulumi mocks; no processes, no network.
// - envoy: the real Envoy binary with the harness in test/harness (dnsmasq,
//          HTTPS pods, auth), all on loopback; no Kubernetes.
// - e2e:   the local control plane (etcd + kube-apiserver +
//          kube-controller-manager) started once per run and handed to the
//          tests as inject("cluster"), with the real Pulumi engine.
// - bare:  the README's quick start in a minimal Debian root file system
//          (scripts/bare-machine.sh): one run, its facts checked.
//
// VITEST_JSON_REPORT=<file> also writes vitest's JSON report there (.ci/run sums
// the reports of its runs into one line).
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  test: {
    reporters: jsonReport ? ["default", "json"] : ["default"],
    ...(jsonReport ? { outputFile: { json: jsonReport } } : {}),
    projects: [
      {
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node" },
      },
      {
        test: {
          name: "envoy",
          include: ["test/envoy/**/*.test.ts"],
          environment: "node",
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/support/global-setup.ts"],
          testTimeout: 900_000,
          hookTimeout: 900_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: "bare",
          include: ["test/bare/**/*.test.ts"],
          environment: "node",
          hookTimeout: 3_600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
