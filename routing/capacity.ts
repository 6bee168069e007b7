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
import { MAX_XDS_BYTES } from "./config/services.js";
import { discoverRoutes, type Discovered, type NamespaceObject, type ServiceObject } from "./discovery.js";
import { configMapBytes, CONFIGMAP_LIMIT_BYTES, translateXdsFiles } from "./render.js";
import { buildRoutingTable, type DevNamespaces } from "./table.js";

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
  return Object.keys(found.devNamespaces).length
    ? admitDevNamespaces(routingConfig(config), found, now, config.devNamespaces.maxXdsBytes)
    : found;
}

/** What the gateways route of the discovered namespaces: the admitted ones, and discovery's problems plus one per namespace left out. */
export function admitDevNamespaces(
  config: RoutingConfig,
  found: Discovered,
  now: Date,
  limit: number = MAX_XDS_BYTES,
): Discovered {
  const order = admissionOrder(found);
  const measure: Size = (of, devNamespaces, gateway) =>
    configMapBytes(translateXdsFiles(of, buildRoutingTable(of, devNamespaces, "dev namespaces", now), gateway).xds);
  const bytes = (names: readonly string[]) =>
    GATEWAYS.map((gateway) => ({ gateway, bytes: measure(config, pick(found.devNamespaces, names), gateway) }));
  if (bytes(order).every((b) => b.bytes <= limit)) return found;
  const estimates = GATEWAYS.map((g) => ({ gateway: g, ...estimator(config, order, found.devNamespaces, g, measure) }));
  const { admitted, leftOut } = admit(order, limit, { bytes, estimates });
  return {
    ...found,
    devNamespaces: pick(found.devNamespaces, admitted),
    problems: [
      ...found.problems,
      ...order.flatMap((ns) => {
        const why = leftOut.get(ns);
        return why ? [leftOutProblem(ns, why, limit)] : [];
      }),
    ],
  };
}

/** How admission measures a gateway's files: exactly, for a set of namespaces; by estimate, per namespace. */
export interface Measures {
  /** Each gateway's bytes with production and these namespaces. */
  bytes: (names: readonly string[]) => { gateway: GatewayName; bytes: number }[];
  /** Each gateway's bytes with production alone, and what each namespace adds to them. */
  estimates: { gateway: GatewayName; production: number; cost: (ns: string) => number }[];
}

/** Why a namespace is left out: the gateway it did not fit, what that held, and how many older namespaces were routed. */
export interface LeftOut {
  gateway: GatewayName;
  used: number;
  older: number;
}

/**
 * The admission itself, on measures: the namespaces in `order` that fit
 * under `limit` on every gateway, each one that does not left out with why.
 * The estimates add up each namespace's own bytes; the values the files
 * write once (anchors) can make the real files differ a little, so the real
 * files are checked after: while over, the youngest admitted are left out,
 * as many as the excess takes by their estimates, then those of them that
 * still fit are put back, oldest first.
 */
export function admit(
  order: readonly string[],
  limit: number,
  measures: Measures,
): { admitted: string[]; leftOut: Map<string, LeftOut> } {
  const { estimates } = measures;
  const admitted: string[] = [];
  const leftOut = new Map<string, LeftOut>();
  const used = estimates.map((e) => e.production);
  for (const ns of order) {
    const needs = estimates.map((e, i) => used[i]! + e.cost(ns));
    const full = needs.findIndex((n) => n > limit);
    if (full >= 0) {
      leftOut.set(ns, { gateway: estimates[full]!.gateway, used: used[full]!, older: admitted.length });
      continue;
    }
    admitted.push(ns);
    needs.forEach((n, i) => (used[i] = n));
  }
  /** The gateway furthest over the limit with these namespaces, with its bytes (undefined: they fit). */
  const worst = (names: readonly string[]) => {
    const most = measures.bytes(names).reduce((a, b) => (b.bytes > a.bytes ? b : a));
    return most.bytes > limit ? most : undefined;
  };
  for (let over = worst(admitted); over !== undefined && admitted.length > 0; over = worst(admitted)) {
    const dropped: string[] = [];
    for (let saved = 0; saved < over.bytes - limit && admitted.length > 0;) {
      const ns = admitted.pop()!;
      dropped.unshift(ns);
      saved += Math.max(...estimates.map((e) => e.cost(ns)));
    }
    for (const ns of dropped) {
      const still = worst([...admitted, ns]);
      if (still === undefined) admitted.push(ns);
      else {
        const used = measures.bytes(admitted).find((b) => b.gateway === still.gateway)!.bytes;
        leftOut.set(ns, { gateway: still.gateway, used, older: admitted.length });
      }
    }
  }
  return { admitted, leftOut };
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
  /** Bytes one namespace adds. */
  cost: (ns: string) => number;
}

/**
 * Each namespace's bytes on one gateway. The files write a value used more
 * than once only once (an anchor; a short string only once it is used often
 * enough to save bytes), so what a namespace adds depends on what is already
 * there: the oldest few are measured one after the other next to production;
 * every other namespace next to those, where what dev routes share is
 * written once already and a namespace adds its own routes and clusters. Those are measured without production's routes (the same bytes
 * for the namespace, without rendering production once per namespace). The
 * real files are checked after (admitDevNamespaces).
 */
function estimator(
  config: RoutingConfig,
  order: readonly string[],
  devNamespaces: DevNamespaces,
  gateway: GatewayName,
  size: Size,
): Estimator {
  const production = size(config, {}, gateway);
  const reference = referenceNamespaces(order, devNamespaces);
  const costs = new Map<string, number>();
  let before = production;
  reference.forEach((ns, i) => {
    const after = size(config, pick(devNamespaces, reference.slice(0, i + 1)), gateway);
    costs.set(ns, after - before);
    before = after;
  });
  const devOnly: RoutingConfig = { ...config, services: [], shifts: [] };
  const base = size(devOnly, pick(devNamespaces, reference), gateway);
  for (const ns of order.slice(2))
    costs.set(ns, size(devOnly, pick(devNamespaces, [...reference, ns]), gateway) - base);
  return { production, cost: (ns) => costs.get(ns)! };
}

/** The oldest namespaces the others are measured next to: at least two, holding at least 8 services. */
function referenceNamespaces(order: readonly string[], devNamespaces: DevNamespaces): string[] {
  const out: string[] = [];
  let services = 0;
  for (const ns of order) {
    if (out.length >= 2 && services >= 8) break;
    out.push(ns);
    services += devNamespaces[ns]!.length;
  }
  return out;
}

/** Bytes of a gateway's xDS ConfigMap for a config's production services and these dev/PR namespaces. */
type Size = (config: RoutingConfig, devNamespaces: DevNamespaces, gateway: GatewayName) => number;

function leftOutProblem(ns: string, { gateway, used, older }: LeftOut, limit: number): Problem {
  return {
    key: `Namespace ${ns}`,
    source: "namespaces",
    objects: [{ kind: "Namespace", name: ns }],
    message:
      `left out: its routes do not fit in the xDS ConfigMap of ${gateway}, which holds ${used.toLocaleString("en-US")} bytes ` +
      `with production and the ${older.toLocaleString("en-US")} older dev/PR namespaces routed (devNamespaces.maxXdsBytes: ${limit.toLocaleString("en-US")}; ` +
      `Kubernetes allows ${CONFIGMAP_LIMIT_BYTES.toLocaleString("en-US")}); dev/PR namespaces are routed oldest first, ` +
      `so it is routed once older ones are deleted or it routes fewer Services`,
  };
}

function pick(devNamespaces: DevNamespaces, names: readonly string[]): DevNamespaces {
  return Object.fromEntries(names.map((ns) => [ns, devNamespaces[ns]!]));
}
