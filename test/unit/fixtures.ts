// Shared inputs for unit tests: the stacks' own config, and a minimal valid
// raw config that bad-input cases start from.
import { join } from "node:path";
import { loadStackFile, readStackFile } from "../../routing/config/load.js";
import type { StackConfig } from "../../routing/config/schema.js";
import type { DevServiceFacts } from "../../routing/table.js";

export const ROOT = join(__dirname, "..", "..");

/** A stack's own config; `clusters`: with dev/PR routes laid out so instead (the prod stack routes them on demand). */
export function stackConfig(stack: "dev" | "prod", clusters?: StackConfig["devNamespaces"]["clusters"]): StackConfig {
  const config = loadStackFile(join(ROOT, `Pulumi.${stack}.yaml`));
  return clusters ? { ...config, devNamespaces: { ...config.devNamespaces, clusters } } : config;
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

/** The start of the shift of `shiftedService`. */
export const SHIFT_START = new Date("2026-11-30T10:00:00Z");

/**
 * A dev/PR service with versions blue and green (Services <name>-blue and
 * <name>-green) and a linear shift of 100 minutes from SHIFT_START: `m`
 * minutes in (`minutesIntoShift(m)`), blue has 100 - m percent.
 */
export function shiftedService(name = "web"): DevServiceFacts {
  return {
    name,
    versions: [
      { version: "blue", service: `${name}-blue` },
      { version: "green", service: `${name}-green` },
    ],
    shifts: [{ from: "blue", to: "green", policy: "linear", start: SHIFT_START.toISOString(), duration: "100m" }],
  };
}

export function minutesIntoShift(m: number): Date {
  return new Date(SHIFT_START.getTime() + m * 60_000);
}
