// The routes resource's view of the routing table: keyed by stable ids
// (<namespace>/<service>), with each route's match and clusters spelled out,
// so that `pulumi preview --diff` shows exactly which routes and clusters a
// change adds or removes. Converts both ways without loss.
import type { GatewayName, StackConfig } from "./config/schema.js";
import { routeId, serviceHost, UPSTREAM_PORT } from "./names.js";
import { stackClusterName, type RoutedService, type RoutingTable } from "./table.js";
import type { ShiftInfo } from "./shifts.js";

/** One route of one gateway. */
export interface RouteEntry {
  /** What it matches, for readers: https://<host>/ or https://<dev host>/<namespace>/<service>. */
  match: string;
  namespace: string;
  service: string;
  /** Cluster name -> the Service it reaches and its share of the traffic. */
  clusters: Record<string, { upstream: string; weight: number; version: string }>;
  /** Requests per second for the whole service across gateway replicas (absent: no limit). */
  rateLimit?: number;
  websocket: boolean;
  /** Extra hosts (production routes on the external gateway). */
  aliases?: string[];
  /** The traffic shift the weights come from. */
  shift?: ShiftInfo;
}

/** Route id -> route. */
export type RoutesInput = Record<string, RouteEntry>;

export function routesInput(config: StackConfig, table: RoutingTable, gateway: GatewayName): RoutesInput {
  const domain = gateway === "gateway" ? config.domain : config.internalDomain;
  const devHost = config.gateways[gateway].devHost ?? `internal.${domain}`;
  const out: RoutesInput = {};
  const entry = (s: RoutedService, match: string): RouteEntry => {
    const e: RouteEntry = { match, namespace: s.namespace, service: s.name, clusters: {}, websocket: s.websocket };
    for (const stack of s.stacks) {
      e.clusters[stackClusterName(s, stack)] = { upstream: `${serviceHost(stack.service, s.namespace, config.clusterDomain)}:${UPSTREAM_PORT}`, weight: stack.weight, version: stack.version };
    }
    if (s.rateLimit !== undefined) e.rateLimit = s.rateLimit;
    if (gateway === "gateway" && s.aliases.length) e.aliases = [...s.aliases];
    if (s.shift) e.shift = { ...s.shift };
    return e;
  };
  for (const s of table.production) out[s.id] = entry(s, `https://${s.name}.${domain}/`);
  for (const s of table.dev) out[s.id] = entry(s, `https://${devHost}/${s.namespace}/${s.name}`);
  return out;
}

/** The routing table a routes input stands for (production in stack config order, dev sorted). */
export function tableFromRoutes(config: StackConfig, routes: RoutesInput): RoutingTable {
  const services: RoutedService[] = Object.values(routes).map((r) => ({
    id: routeId(r.namespace, r.service),
    namespace: r.namespace,
    name: r.service,
    stacks: Object.values(r.clusters).map((c) => ({ version: c.version, service: c.upstream.slice(0, c.upstream.indexOf(".")), weight: c.weight })),
    rateLimit: r.rateLimit,
    websocket: r.websocket,
    aliases: r.aliases ?? [],
    ...(r.shift ? { shift: { ...r.shift } } : {}),
  }));
  const order = new Map(config.services.map((s, i) => [s.name, i]));
  const production = services
    .filter((s) => s.namespace === config.namespace)
    .sort((a, b) => (order.get(a.name) ?? Infinity) - (order.get(b.name) ?? Infinity) || (a.name < b.name ? -1 : 1));
  const dev = services
    .filter((s) => s.namespace !== config.namespace)
    .sort((a, b) => (a.namespace === b.namespace ? (a.name < b.name ? -1 : 1) : a.namespace < b.namespace ? -1 : 1));
  return { production, dev };
}

/** Only the production routes (what a gateway keeps when the routes resource is deleted). */
export function productionOnly(config: StackConfig, routes: RoutesInput): RoutesInput {
  return Object.fromEntries(Object.entries(routes).filter(([, r]) => r.namespace === config.namespace));
}
