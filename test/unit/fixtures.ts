// Shared inputs for unit tests: the stacks' own config, and a minimal valid
// raw config that bad-input cases start from.
import { join } from "node:path";
import { loadStackFile, readStackFile } from "../../routing/config/load.js";
import type { StackConfig } from "../../routing/config/schema.js";

export const ROOT = join(__dirname, "..", "..");

export function stackConfig(stack: "dev" | "prod"): StackConfig {
  return loadStackFile(join(ROOT, `Pulumi.${stack}.yaml`));
}

export function rawStack(stack: "dev" | "prod"): Record<string, unknown> {
  return readStackFile(join(ROOT, `Pulumi.${stack}.yaml`));
}

const gateway = (secret: string) => ({
  replicas: 2,
  resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { cpu: "1", memory: "512Mi" } },
  tls: { serverSecret: `${secret}-tls`, upstreamSecret: `${secret}-upstream-tls` },
});

/** A small valid config; each test copies it and breaks one thing. */
export function minimalRaw(): Record<string, unknown> {
  return {
    domain: "example.org",
    internalDomain: "example.internal",
    envoyImage: "envoyproxy/envoy:v1.40.0",
    gateways: { gateway: gateway("gateway"), "internal-gateway": gateway("internal-gateway") },
    services: [
      { name: "www", replicas: 3, rateLimit: 300, aliases: ["example.org"] },
      { name: "batch", replicas: 3, rateLimit: 100 },
      { name: "notebook", replicas: 2, websocket: true },
    ],
  };
}

/** Sets `value` at a dotted path (numbers index arrays) in a deep copy of `raw`. */
export function withValue(raw: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(raw);
  const parts = path.split(".");
  let node: Record<string, unknown> = copy;
  for (const part of parts.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
  const last = parts[parts.length - 1]!;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return copy;
}
