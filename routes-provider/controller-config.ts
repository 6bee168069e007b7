// What the program tells the route controller, through one ConfigMap in the
// gateways' namespace (`route-controller`), and what the controller reads
// from it: the stack config as written (without the kubeconfig: in the
// cluster the controller's own ServiceAccount writes) and the routes targets
// (which gateway's ConfigMap to write). The digest of that data is what the
// routes resources wait for: a gateway ConfigMap annotated with it was
// written from this config.
import { InputError } from "../routing/config/errors.js";
import { KUBECONFIG_KEY, parseStackConfig } from "../routing/config/load.js";
import { GATEWAYS, type GatewayName, type StackConfig } from "../routing/config/schema.js";
import { dataDigest } from "../routing/units.js";

/** The route controller's ConfigMap, its Lease and its Deployment: all named so in the gateways' namespace. */
export const ROUTE_CONTROLLER = "route-controller";

/** The keys of the route controller's ConfigMap. */
export const CONTROLLER_CONFIG_FILES = { stackConfig: "stack-config.json", routes: "routes.json" } as const;

/** One gateway whose xDS ConfigMap the route controller writes: what its routes resource is wired to. */
export interface RoutesTarget {
  /** The routes resource's name in the program: <gateway>-routes. */
  name: string;
  gateway: GatewayName;
  namespace: string;
  configMap: string;
}

/** The route controller's ConfigMap data: the stack config as written (no kubeconfig) and the routes targets. */
export function controllerConfigData(
  rawStackConfig: Record<string, unknown>,
  targets: readonly RoutesTarget[],
): Record<string, string> {
  const { [KUBECONFIG_KEY]: _, ...config } = rawStackConfig;
  return {
    [CONTROLLER_CONFIG_FILES.stackConfig]: `${JSON.stringify(config, null, 2)}\n`,
    [CONTROLLER_CONFIG_FILES.routes]: `${JSON.stringify(targets, null, 2)}\n`,
  };
}

/** The digest of the route controller's ConfigMap data (what the routes resources wait for it to have written from). */
export function controllerConfigDigest(data: Readonly<Record<string, string>>): string {
  return dataDigest(data);
}

/** What the route controller renders with: the stack config, the gateways it writes, and the digest of both. */
export interface ControllerConfig {
  config: StackConfig;
  targets: RoutesTarget[];
  digest: string;
}

/**
 * The route controller's config from its ConfigMap's data, or an InputError
 * naming each bad file or value (`where`: the ConfigMap, namespace/name).
 */
export function readControllerConfig(data: Readonly<Record<string, string>>, where: string): ControllerConfig {
  const subject = `route controller config (ConfigMap ${where})`;
  const json = (file: string): unknown => {
    const text = data[file];
    if (text === undefined)
      throw new InputError(subject, [{ key: file, source: "config", message: "is missing: run `pulumi up`" }]);
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new InputError(subject, [{ key: file, source: "config", message: `is not JSON: ${(e as Error).message}` }]);
    }
  };
  const raw = json(CONTROLLER_CONFIG_FILES.stackConfig);
  if (!raw || typeof raw !== "object" || Array.isArray(raw))
    throw new InputError(subject, [
      { key: CONTROLLER_CONFIG_FILES.stackConfig, source: "config", message: "must be a JSON object of stack config" },
    ]);
  const config = parseStackConfig(raw as Record<string, unknown>, subject);
  const targets = routesTargets(json(CONTROLLER_CONFIG_FILES.routes), subject);
  return { config, targets, digest: controllerConfigDigest(data) };
}

/** routes.json: a list of routes targets, each gateway at most once. */
function routesTargets(value: unknown, subject: string): RoutesTarget[] {
  const key = CONTROLLER_CONFIG_FILES.routes;
  const problem = (at: string, message: string) => new InputError(subject, [{ key: at, source: "config", message }]);
  if (!Array.isArray(value)) throw problem(key, "must be a JSON list of routes targets");
  const seen = new Set<string>();
  return value.map((t: unknown, i) => {
    const at = `${key}[${i}]`;
    const o = (t ?? {}) as Record<string, unknown>;
    for (const field of ["name", "namespace", "configMap"] as const)
      if (typeof o[field] !== "string" || o[field] === "") throw problem(`${at}.${field}`, "must be a name");
    if (!GATEWAYS.includes(o.gateway as GatewayName))
      throw problem(`${at}.gateway`, `must be ${GATEWAYS.join(" or ")} (got ${JSON.stringify(o.gateway)})`);
    if (seen.has(o.gateway as string)) throw problem(`${at}.gateway`, `${String(o.gateway)} is listed twice`);
    seen.add(o.gateway as string);
    return {
      name: o.name as string,
      gateway: o.gateway as GatewayName,
      namespace: o.namespace as string,
      configMap: o.configMap as string,
    };
  });
}
