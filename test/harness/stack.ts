// The stack config the end-to-end tests run: the production stack
// (Pulumi.prod.yaml: hail.is, three gateway replicas, TLS, ext_authz, ACME,
// edge settings) with a smaller service list chosen to show each behaviour.
import { join } from "node:path";
import { parseStackConfig, readStackFile } from "../../routing/config/load.js";
import type { StackConfig } from "../../routing/config/schema.js";
import { repoRoot } from "../support/components.js";
import type { GatewayHarnessOptions } from "./gateway.js";

/** Production services of the e2e stack (Pulumi.prod.yaml's `services` replaced). */
export const E2E_SERVICES = [
  // Three pods, no rate limit: load balancing and the live-reload request loop.
  { name: "www", replicas: 3, aliases: ["hail.is"] },
  // batch and batch-driver: prefix matching must keep them apart.
  { name: "batch", replicas: 2, rateLimit: 600 },
  // 30 requests/s for the service over 3 gateway replicas: 10/s per Envoy.
  { name: "batch-driver", replicas: 1, rateLimit: 30 },
  { name: "notebook", replicas: 1, rateLimit: 600, websocket: true },
  // No rate limit either: the second production route of the live-reload loop.
  { name: "query", replicas: 2 },
  // Its pods present a certificate from another CA: Envoy must refuse them.
  { name: "blog", replicas: 1, rateLimit: 200 },
  // Its pods present a certificate of our CA for another Service's name.
  { name: "docs", replicas: 1, rateLimit: 300 },
];

export function e2eStackConfig(overrides: Record<string, unknown> = {}): StackConfig {
  const raw = readStackFile(join(repoRoot, "Pulumi.prod.yaml"));
  return parseStackConfig(
    { ...raw, services: E2E_SERVICES, ...overrides },
    "e2e stack config (Pulumi.prod.yaml with the e2e services)",
  );
}

/** The e2e stack config with dev/PR routes laid out as `clusters` says (the prod stack routes them on demand). */
export function e2eStackConfigWith(clusters: StackConfig["devNamespaces"]["clusters"]): StackConfig {
  const config = e2eStackConfig();
  return { ...config, devNamespaces: { ...config.devNamespaces, clusters } };
}

/** The dev/PR namespace routed from the start in the e2e tests. */
export const E2E_DEV_NAMESPACES = { "pr-1234": ["batch", "batch-driver"] };

/** Harness options of the e2e tests: the stack above, pr-1234 routed, blog and docs with bad certificates. */
export function e2eHarnessOptions(): GatewayHarnessOptions {
  return {
    config: e2eStackConfig(),
    gateway: "gateway",
    devNamespaces: E2E_DEV_NAMESPACES,
    podCertificate: (_namespace, service) =>
      service === "blog" ? "untrusted-ca" : service === "docs" ? "wrong-name" : undefined,
    concurrency: 2,
  };
}
