// The routes a gateway serves, one entry per route keyed by its stable id
// (<namespace>/<service>), with its match and clusters spelled out. Derived
// from the routing table, forward only: `pulumi preview --diff` shows which
// routes, clusters and weights change, and the stack outputs list them. It is
// never read back into facts.
import type { GatewayName, RoutingConfig } from "./config/schema.js";
import { serviceHost, UPSTREAM_PORT } from "./names.js";
import type { RoutedService, RoutingTable } from "./table.js";
import type { ShiftSpec } from "./shifts.js";

/** One route of one gateway. */
export interface RouteEntry {
  /** What it matches: https://<host>/ or https://<dev host>/<namespace>/<service>. */
  match: string;
  namespace: string;
  service: string;
  /** Cluster name -> the Service it reaches and its share of the traffic. */
  clusters: Record<string, { upstream: string; weight: number; version: string }>;
  /** Requests per second for the whole service across gateway replicas (absent: no limit). */
  rateLimit?: number;
  websocket: boolean;
  /** Extra hosts (production routes on a gateway that serves aliases). */
  aliases?: string[];
  /** The traffic shift the weights come from. */
  shift?: ShiftSpec;
}

/** Route id -> route. */
export type RoutesView = Record<string, RouteEntry>;

export function routesView(config: RoutingConfig, table: RoutingTable, gateway: GatewayName): RoutesView {
  const settings = config.gateways[gateway];
  const out: RoutesView = {};
  const entry = (s: RoutedService, match: string): RouteEntry => {
    const e: RouteEntry = { match, namespace: s.namespace, service: s.name, clusters: {}, websocket: s.websocket };
    for (const v of s.versions) {
      e.clusters[v.cluster] = {
        upstream: `${serviceHost(v.service, s.namespace, config.clusterDomain)}:${UPSTREAM_PORT}`,
        weight: v.weight,
        version: v.version,
      };
    }
    if (s.rateLimit !== undefined) e.rateLimit = s.rateLimit;
    if (settings.serveAliases && s.aliases.length) e.aliases = [...s.aliases];
    if (s.shift) e.shift = { ...s.shift };
    return e;
  };
  for (const s of table.production) out[s.id] = entry(s, `https://${s.name}.${settings.domain}/`);
  for (const s of table.dev) out[s.id] = entry(s, `https://${settings.devHost}/${s.namespace}/${s.name}`);
  return out;
}

/** Where a route goes: "batch.default.svc.cluster.local:443 (default_batch)", or each version with its weight. */
export function routeTarget(r: RouteEntry): string {
  const several = Object.keys(r.clusters).length > 1;
  return Object.entries(r.clusters)
    .map(([cluster, c]) => `${c.upstream} (${cluster}${several ? `, ${c.weight}%` : ""})`)
    .join(" + ");
}

/** One line per route and alias, for the stack outputs: "https://batch.example.org/ -> batch.default.svc.cluster.local:443 (default_batch)". */
export function describeRoutes(view: RoutesView): string[] {
  return Object.values(view).flatMap((r) =>
    [r.match, ...(r.aliases ?? []).map((a) => `https://${a}/`)].map((m) => `${m} -> ${routeTarget(r)}`),
  );
}
