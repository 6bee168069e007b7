// Capacity: which discovered dev/PR namespaces the gateways route when not
// all of them fit in a gateway's xDS ConfigMap (1 MiB, Kubernetes' limit).
// Production always; then the dev/PR namespaces oldest first (creation time,
// then name), each routed when its routes fit on every gateway next to what
// is already admitted, left out and reported otherwise. So one large or
// late namespace never freezes the others, a new namespace never pushes out
// one already routed, and deleting a namespace frees its room for the next
// in line. Pure: discovery's facts in, the admitted facts and a problem per
// namespace left out.
import type { Problem } from "./config/errors.js";
import { GATEWAYS, type GatewayName, type RoutingConfig, type StackConfig } from "./config/schema.js";
import { routingConfig } from "./config/routing-config.js";
import { discoverRoutes, type Discovered, type NamespaceObject, type ServiceObject } from "./discovery.js";
import { configMapBytes, CONFIGMAP_LIMIT_BYTES, translateXdsFiles } from "./render.js";
import { buildRoutingTable, type DevNamespaces } from "./table.js";

/**
 * Room kept free below Kubernetes' limit when namespaces are admitted: a
 * shift's weights are rendered again at later instants (a weight's digits
 * change), so a ConfigMap filled to the last byte at one instant could be
 * a few bytes over at the next.
 */
export const CAPACITY_HEADROOM_BYTES = 8 * 1024;

/**
 * Discovery as every caller does it (sync-routes, its watch, the program):
 * the stack's dev/PR routing facts from the listed namespaces and Services,
 * cut to what fits in the gateways' ConfigMaps at `now`.
 */
export function routedDevNamespaces(
  config: StackConfig,
  namespaces: readonly NamespaceObject[],
  services: readonly ServiceObject[],
  now: Date,
): Discovered {
  const found = discoverRoutes(namespaces, services, config.namespace, config.devNamespaces.protected);
  // Nothing discovered, nothing to render: production alone is the stack config's to fit.
  return Object.keys(found.devNamespaces).length ? admitDevNamespaces(routingConfig(config), found, now) : found;
}

/** What the gateways route of the discovered namespaces: the admitted ones, and discovery's problems plus one per namespace left out. */
export function admitDevNamespaces(
  config: RoutingConfig,
  found: Discovered,
  now: Date,
  limit: number = CONFIGMAP_LIMIT_BYTES - CAPACITY_HEADROOM_BYTES,
): Discovered {
  const order = admissionOrder(found);
  const size = (devNamespaces: DevNamespaces, gateway: GatewayName, of: RoutingConfig = config) =>
    configMapBytes(translateXdsFiles(of, buildRoutingTable(of, devNamespaces, "dev namespaces", now), gateway).xds);
  const over = (devNamespaces: DevNamespaces) => GATEWAYS.filter((g) => size(devNamespaces, g) > limit);
  if (over(found.devNamespaces).length === 0) return found;

  const estimates = GATEWAYS.map((g) => estimator(config, order, found.devNamespaces, g, size));
  const admitted: string[] = [];
  const leftOut = new Map<string, Problem>();
  const used = estimates.map((e) => e.production);
  for (const ns of order) {
    const needs = estimates.map((e, i) => used[i]! + e.cost(ns, admitted.length === 0));
    const full = needs.findIndex((n) => n > limit);
    if (full >= 0) {
      leftOut.set(ns, leftOutProblem(ns, GATEWAYS[full]!, used[full]!, admitted.length, limit));
      continue;
    }
    admitted.push(ns);
    needs.forEach((n, i) => (used[i] = n));
  }
  // The estimates add up each namespace's own bytes; the shared values the
  // YAML writes once can make the real files differ a little. Check the
  // real files, and leave out the youngest admitted until they fit.
  for (;;) {
    const full = over(pick(found.devNamespaces, admitted));
    if (full.length === 0 || admitted.length === 0) break;
    const gateway = full[0]!;
    const ns = admitted.pop()!;
    leftOut.set(
      ns,
      leftOutProblem(ns, gateway, size(pick(found.devNamespaces, admitted), gateway), admitted.length, limit),
    );
  }
  return {
    ...found,
    devNamespaces: pick(found.devNamespaces, admitted),
    problems: [...found.problems, ...order.filter((ns) => leftOut.has(ns)).map((ns) => leftOut.get(ns)!)],
  };
}

/** The discovered namespaces in admission order: oldest first (creation time), then by name. */
export function admissionOrder(found: Pick<Discovered, "devNamespaces" | "created">): string[] {
  const created = (ns: string) => found.created[ns] ?? "";
  return Object.keys(found.devNamespaces).sort((a, b) =>
    created(a) !== created(b) ? (created(a) < created(b) ? -1 : 1) : a < b ? -1 : a > b ? 1 : 0,
  );
}

interface Estimator {
  /** Bytes of the gateway's files with production routes only (exact). */
  production: number;
  /** Bytes one namespace adds; `first`: it is the first dev/PR namespace, which also brings what every dev route shares. */
  cost: (ns: string, first: boolean) => number;
}

/**
 * Each namespace's bytes on one gateway, measured on files with no
 * production services (so the production routes are rendered once, not
 * once per namespace): a namespace alone adds its own routes and clusters
 * plus what every dev route shares (written once); two namespaces tell the
 * shared part apart. Next to production some of that shared part is
 * written already: one namespace rendered with production says how much
 * the first one really adds.
 */
function estimator(
  config: RoutingConfig,
  order: readonly string[],
  devNamespaces: DevNamespaces,
  gateway: GatewayName,
  size: (devNamespaces: DevNamespaces, gateway: GatewayName, of?: RoutingConfig) => number,
): Estimator {
  const devOnly: RoutingConfig = { ...config, services: [], shifts: [] };
  const empty = size({}, gateway, devOnly);
  const alone = new Map(order.map((ns) => [ns, size(pick(devNamespaces, [ns]), gateway, devOnly) - empty]));
  const production = size({}, gateway);
  const [a, b] = order as [string, string | undefined];
  if (b === undefined) return { production, cost: (ns) => alone.get(ns)! };
  const shared = alone.get(a)! + alone.get(b)! - (size(pick(devNamespaces, [a, b]), gateway, devOnly) - empty);
  const sharedNextToProduction = size(pick(devNamespaces, [a]), gateway) - production - (alone.get(a)! - shared);
  return { production, cost: (ns, first) => alone.get(ns)! - shared + (first ? sharedNextToProduction : 0) };
}

function leftOutProblem(ns: string, gateway: GatewayName, used: number, older: number, limit: number): Problem {
  return {
    key: `Namespace ${ns}`,
    source: "namespaces",
    objects: [{ kind: "Namespace", name: ns }],
    message:
      `left out: its routes do not fit in the xDS ConfigMap of ${gateway}, which holds ${used.toLocaleString("en-US")} bytes ` +
      `with production and the ${older.toLocaleString("en-US")} older dev/PR namespaces routed (at most ${limit.toLocaleString("en-US")} are filled, ` +
      `of the ${CONFIGMAP_LIMIT_BYTES.toLocaleString("en-US")} Kubernetes allows); dev/PR namespaces are routed oldest first, ` +
      `so it is routed once older ones are deleted or it routes fewer Services`,
  };
}

function pick(devNamespaces: DevNamespaces, names: readonly string[]): DevNamespaces {
  return Object.fromEntries(names.map((ns) => [ns, devNamespaces[ns]!]));
}
