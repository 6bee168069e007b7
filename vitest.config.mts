import { defineConfig } from "vitest/config";

// Two projects: `unit` (pure code and Pulumi mocks, no processes) and `e2e`
// (real Envoy, etcd + kube-apiserver, Pulumi engine; see test/e2e/README).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          // One local cluster (etcd + kube-apiserver + kube-controller-manager) per run,
          // provided to the tests as inject("cluster"); stopped when the run ends.
          globalSetup: ["test/support/global-setup.ts"],
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
