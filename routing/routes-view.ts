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

/**
 * Where a route goes: "batch.default.svc.cluster.local:443 (default_batch)",
 * or each version with its name and weight:
 * "web-blue.pr-1.svc.cluster.local:443 (pr-1_web_blue, version blue, 90%) + ...".
 */
export function routeTarget(r: RouteEntry): string {
  const several = Object.keys(r.clusters).length > 1;
  return Object.entries(r.clusters)
    .map(([cluster, c]) => {
      const about = [cluster, ...(c.version ? [`version ${c.version}`] : []), ...(several ? [`${c.weight}%`] : [])];
      return `${c.upstream} (${about.join(", ")})`;
    })
    .join(" + ");
}

/**
 * Route id -> the whole route on one line: what the routes resource's state
 * records and previews diff. Everything of a route is on its line, so a line
 * changes exactly when its route does; one string per route, rather than a
 * nested object, keeps thousands of them cheap to send between the engine and
 * the provider (each value costs on every crossing).
 */
export type RouteLines = Record<string, string>;

/**
 * "https://dev.example.org/pr-1/batch -> batch.pr-1.svc.cluster.local:443
 * (dev-on-demand)", then what else the route has: its aliases, websocket, its
 * rate limit and the traffic shift its weights come from.
 */
export function routeLine(r: RouteEntry): string {
  const shift = r.shift;
  return [
    `${r.match} -> ${routeTarget(r)}`,
    ...(r.aliases?.length ? [`aliases ${r.aliases.join(" ")}`] : []),
    ...(r.websocket ? ["websocket"] : []),
    ...(r.rateLimit !== undefined ? [`rate limit ${r.rateLimit}/s`] : []),
    ...(shift
      ? [
          `${shift.policy} shift ${shift.from} -> ${shift.to} from ${shift.start} over ${shift.duration}` +
            (shift.reversed ? `, reversed at ${shift.reversed}` : ""),
        ]
      : []),
  ].join("; ");
}

export function routeLines(view: RoutesView): RouteLines {
  return Object.fromEntries(Object.entries(view).map(([id, r]) => [id, routeLine(r)]));
}

/** One line per route and alias, for the stack outputs: "https://batch.example.org/ -> batch.default.svc.cluster.local:443 (default_batch)". */
export function describeRoutes(view: RoutesView): string[] {
  return Object.values(view).flatMap((r) =>
    [r.match, ...(r.aliases ?? []).map((a) => `https://${a}/`)].map((m) => `${m} -> ${routeTarget(r)}`),
  );
}
