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
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
