// Drift: what an xDS ConfigMap holds against what the routes resource wrote
// there, by route. The expected documents come from the facts (rendered
// again at the same instant); the found ones are only compared with them,
// resource by resource, never turned back into routes.
import { isDeepStrictEqual } from "node:util";
import type { RoutingTable } from "../table.js";
import type { XdsDocuments } from "./gateway.js";
import { DEV_VIRTUAL_HOST, type Json } from "./types.js";

/**
 * Route id -> what differs for it ("cluster pr-1_batch changed", "route
 * missing"), plus entries for what the ConfigMap holds that was never
 * written ("(not written) cluster x"). Empty when every resource matches.
 * A file that could not be read (undefined) is not compared.
 */
export function xdsDrift(
  table: RoutingTable,
  expected: XdsDocuments,
  found: { cds: unknown; rds: unknown },
): Record<string, string> {
  const drift: Record<string, string[]> = {};
  const note = (id: string, what: string) => (drift[id] ??= []).push(what);
  if (found.cds !== undefined) clusterDrift(table, expected, found.cds, note);
  if (found.rds !== undefined) routeDrift(table, expected, found.rds, note);
  return Object.fromEntries(Object.entries(drift).map(([id, what]) => [id, what.join("; ")]));
}

type Note = (id: string, what: string) => void;

function clusterDrift(table: RoutingTable, expected: XdsDocuments, found: unknown, note: Note): void {
  const foundClusters = byName(resources(found));
  const expectedClusters = byName(expected.cds.resources);
  for (const s of [...table.production, ...table.dev]) {
    for (const v of s.versions) {
      // A cluster the files do not hold is the bootstrap's (the on-demand one): no drift of the ConfigMap.
      if (!expectedClusters.has(v.cluster)) continue;
      const f = foundClusters.get(v.cluster);
      if (!f) note(s.id, `cluster ${v.cluster} missing`);
      else if (!same(f, expectedClusters.get(v.cluster))) note(s.id, `cluster ${v.cluster} changed`);
    }
  }
  for (const name of foundClusters.keys()) if (!expectedClusters.has(name)) note("(not written)", `cluster ${name}`);
}

function routeDrift(table: RoutingTable, expected: XdsDocuments, found: unknown, note: Note): void {
  const foundHosts = byName((resources(found)[0]?.virtual_hosts ?? []) as Json[]);
  const expectedHosts = byName((expected.rds.resources[0]?.virtual_hosts ?? []) as Json[]);
  // A production service has a virtual host of its own (named after it).
  for (const s of table.production) {
    const f = foundHosts.get(s.name);
    if (!f) note(s.id, `virtual host ${s.name} missing`);
    else if (!same(f, expectedHosts.get(s.name))) note(s.id, `virtual host ${s.name} changed`);
  }
  devRouteDrift(table, expectedHosts.get(DEV_VIRTUAL_HOST), foundHosts.get(DEV_VIRTUAL_HOST), note);
  for (const name of foundHosts.keys()) if (!expectedHosts.has(name)) note("(not written)", `virtual host ${name}`);
}

/**
 * Dev/PR services are the routes of the dev virtual host, in table order. A
 * route is looked up by its name (written once per route), so thousands of
 * routes compare in linear time. What the host gives all of its routes
 * (domains, per-filter configs such as the upstream host or ext_authz,
 * retries, headers) changed is a change to each of them.
 */
function devRouteDrift(table: RoutingTable, expected: Json | undefined, found: Json | undefined, note: Note): void {
  const expectedRoutes = routesOf(expected);
  const foundRoutes = routesOf(found);
  const hostChanged = expected !== undefined && found !== undefined && !same(hostOnly(found), hostOnly(expected));
  const foundByName = byRouteName(foundRoutes);
  table.dev.forEach((s, i) => {
    const e = expectedRoutes[i];
    if (!foundByName.get(routeName(e))?.some((f) => same(f, e))) note(s.id, "route missing or changed");
    if (hostChanged) note(s.id, `virtual host ${DEV_VIRTUAL_HOST} changed`);
  });
  const expectedByName = byRouteName(expectedRoutes);
  for (const r of foundRoutes)
    if (!expectedByName.get(routeName(r))?.some((e) => same(e, r)))
      note("(not written)", `route ${JSON.stringify(r.match)}`);
}

function routesOf(host: Json | undefined): Json[] {
  return objectsIn(host?.routes);
}

function hostOnly(host: Json): Json {
  const { routes: _, ...rest } = host;
  return rest;
}

function routeName(route: Json | undefined): string {
  return String(route?.name);
}

function byRouteName(routes: readonly Json[]): Map<string, Json[]> {
  const named = new Map<string, Json[]>();
  for (const r of routes) {
    const key = routeName(r);
    const group = named.get(key);
    if (group) group.push(r);
    else named.set(key, [r]);
  }
  return named;
}

function resources(doc: unknown): Json[] {
  return objectsIn((doc as { resources?: unknown } | null | undefined)?.resources);
}

/** The objects of a list as found (anything else, or no list, is left out). */
function objectsIn(list: unknown): Json[] {
  return Array.isArray(list) ? (list.filter((r) => r && typeof r === "object") as Json[]) : [];
}

function byName(list: readonly Json[]): Map<string, Json> {
  return new Map(list.filter((r) => typeof r.name === "string").map((r) => [r.name as string, r]));
}

function same(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(a, b);
}
