// Checks Envoy makes when it loads a configuration that the API definitions
// do not express. Each rule is a small function over the JSON documents.
import { RE2JS } from "@bufbuild/re2";
import type { Json } from "../envoy/types.js";

/** Where a rule found a violation: the document, and the element of it, as far as the rule tells them. */
export interface ViolationPlace {
  /** envoy.yaml, cds.yaml or rds.yaml; absent where the rule does not tell (a cluster's endpoints: static or from CDS). */
  file?: string;
  /** A listener, cluster or route configuration, by kind and name; `part`: a part of it (a listener's inline route configuration). */
  element?: { kind: string; name: string; part?: string };
}

export interface EnvoyViolation extends ViolationPlace {
  path: string;
  message: string;
}

/** A violation's place as people read it: `cds.yaml cluster "x"`, `envoy.yaml listener "https"`, `envoy.yaml`. */
export function violationWhere(place: ViolationPlace): string {
  const e = place.element;
  const element = e ? `${e.kind} ${q(e.name)}${e.part !== undefined ? ` ${e.part}` : ""}` : undefined;
  return [place.file, element].filter((x) => x !== undefined).join(" ");
}

/** An element of a document, by kind and name. */
function element(file: string | undefined, kind: string, name: unknown): ViolationPlace {
  return { ...(file !== undefined ? { file } : {}), element: { kind, name: String(name) } };
}

const BOOTSTRAP: ViolationPlace = { file: "envoy.yaml" };

/** What the rules see of one gateway's documents (without a bootstrap: the xDS files alone). */
export interface GatewayView {
  bootstrap?: Json;
  clusters: Json[];
  routeConfigs: Json[];
  /** Without a bootstrap: the names of its static clusters that routes may still name. */
  bootstrapClusters?: readonly string[];
}

export function envoyRuleViolations(view: GatewayView): EnvoyViolation[] {
  const out: EnvoyViolation[] = [];
  const bootstrap = view.bootstrap;
  const staticClusters = arr((bootstrap?.static_resources as Json | undefined)?.clusters);
  const clusterNames = uniqueClusterNames(staticClusters, view.clusters, out);
  for (const name of view.bootstrapClusters ?? []) clusterNames.add(name);
  if (bootstrap) {
    nodeIdentity(bootstrap, out);
    const listeners = arr((bootstrap.static_resources as Json | undefined)?.listeners);
    for (const listener of listeners) checkListener(listener, clusterNames, out);
    uniqueListeners(listeners, out);
    watchedPaths(bootstrap, out);
    localCluster(bootstrap, staticClusters, out);
  }
  for (const rc of view.routeConfigs)
    checkRouteConfiguration(rc, element("rds.yaml", "route configuration", rc.name), clusterNames, out);
  for (const c of [...staticClusters, ...view.clusters]) clusterEndpoints(c, out);
  everyRegexCompiles(view, out);
  everyLocalRateLimit(view, out);
  return out;
}

/** Cluster names are unique across the bootstrap's static clusters and CDS. */
function uniqueClusterNames(staticClusters: Json[], cds: Json[], out: EnvoyViolation[]): Set<string> {
  const names = new Set<string>();
  const check = (c: Json, where: ViolationPlace) => {
    const name = String(c.name ?? "");
    if (names.has(name))
      out.push({
        ...where,
        path: "name",
        message: `duplicate cluster name ${q(name)}: cluster names must be unique across static clusters and CDS`,
      });
    names.add(name);
  };
  staticClusters.forEach((c) => check(c, element("envoy.yaml", "static cluster", c.name)));
  cds.forEach((c) => check(c, element("cds.yaml", "cluster", c.name)));
  return names;
}

/** A node with file-based xDS needs an id and a cluster. */
function nodeIdentity(bootstrap: Json, out: EnvoyViolation[]): void {
  const node = bootstrap.node as Json | undefined;
  if (!node?.id || !node?.cluster)
    out.push({ ...BOOTSTRAP, path: "node", message: "node.id and node.cluster must be set when xDS is used" });
}

function uniqueListeners(listeners: Json[], out: EnvoyViolation[]): void {
  const names = new Set<string>();
  const addresses = new Set<string>();
  for (const l of listeners) {
    const sa = (l.address as Json | undefined)?.socket_address as Json | undefined;
    const addr = `${sa?.address}:${sa?.port_value}`;
    if (names.has(String(l.name)))
      out.push({ ...element("envoy.yaml", "listener", l.name), path: "name", message: "duplicate listener name" });
    if (addresses.has(addr))
      out.push({
        ...element("envoy.yaml", "listener", l.name),
        path: "address",
        message: `another listener already binds ${addr}`,
      });
    names.add(String(l.name));
    addresses.add(addr);
  }
}

/** The local cluster (the gateway's own pods) must be a static cluster of the bootstrap. */
function localCluster(bootstrap: Json, staticClusters: Json[], out: EnvoyViolation[]): void {
  const name = (bootstrap.cluster_manager as Json | undefined)?.local_cluster_name;
  if (name === undefined || name === "") return;
  if (!staticClusters.some((c) => c.name === name)) {
    out.push({
      ...BOOTSTRAP,
      path: "cluster_manager.local_cluster_name",
      message: `local cluster ${q(name)} must be defined as one of the bootstrap's static clusters`,
    });
  }
}

/** path_config_source files must live in their watched directory (the kubelet swaps that directory). */
function watchedPaths(bootstrap: Json, out: EnvoyViolation[]): void {
  walk(bootstrap, "", (node, path) => {
    const pcs = node.path_config_source as Json | undefined;
    if (!pcs) return;
    const file = String(pcs.path ?? "");
    const dir = (pcs.watched_directory as Json | undefined)?.path;
    if (dir !== undefined && !file.startsWith(`${String(dir).replace(/\/$/, "")}/`)) {
      out.push({
        ...BOOTSTRAP,
        path: `${path}.path_config_source`,
        message: `path ${file} is not inside its watched_directory ${String(dir)}`,
      });
    }
  });
}

function checkListener(listener: Json, clusters: Set<string>, out: EnvoyViolation[]): void {
  const where = element("envoy.yaml", "listener", listener.name);
  arr(listener.filter_chains).forEach((chain, ci) => {
    arr(chain.filters).forEach((filter, fi) => {
      const hcm = filter.typed_config as Json | undefined;
      if (!hcm || !String(hcm["@type"] ?? "").endsWith("HttpConnectionManager")) return;
      const base = `filter_chains[${ci}].filters[${fi}].typed_config`;
      httpFilterOrder(arr(hcm.http_filters), where, `${base}.http_filters`, out);
      for (const f of arr(hcm.http_filters)) {
        const uri = ((f.typed_config as Json | undefined)?.http_service as Json | undefined)?.server_uri as
          Json | undefined;
        if (uri?.cluster !== undefined && !clusters.has(String(uri.cluster))) {
          out.push({
            ...where,
            path: `${base}.http_filters(${f.name}).http_service.server_uri.cluster`,
            message: `cluster ${q(uri.cluster)} does not exist`,
          });
        }
      }
      if (hcm.route_config)
        checkRouteConfiguration(
          hcm.route_config as Json,
          { ...where, element: { ...where.element!, part: "inline route configuration" } },
          clusters,
          out,
        );
    });
  });
}

const TERMINAL_HTTP_FILTERS = new Set(["type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"]);

/** The router (terminal) is last, and nothing after it; filter names are unique. */
function httpFilterOrder(filters: Json[], where: ViolationPlace, path: string, out: EnvoyViolation[]): void {
  if (filters.length === 0) {
    out.push({ ...where, path, message: "an HTTP connection manager needs at least the router filter" });
    return;
  }
  const names = new Set<string>();
  filters.forEach((f, i) => {
    const terminal = TERMINAL_HTTP_FILTERS.has(String((f.typed_config as Json | undefined)?.["@type"]));
    if (terminal && i !== filters.length - 1)
      out.push({
        ...where,
        path: `${path}[${i}]`,
        message: `terminal filter ${q(f.name)} must be the last HTTP filter`,
      });
    if (!terminal && i === filters.length - 1)
      out.push({
        ...where,
        path: `${path}[${i}]`,
        message: `the last HTTP filter must be the router (terminal), not ${q(f.name)}`,
      });
    if (names.has(String(f.name)))
      out.push({ ...where, path: `${path}[${i}]`, message: `duplicate HTTP filter name ${q(f.name)}` });
    names.add(String(f.name));
  });
}

/**
 * Virtual host names unique; domains lower-case, unique across the route
 * configuration, at most one "*", wildcards only as prefix or suffix; every
 * route's cluster exists; weighted clusters named, weighted, sum > 0.
 */
export function checkRouteConfiguration(
  rc: Json,
  where: ViolationPlace,
  clusters: Set<string>,
  out: EnvoyViolation[],
): void {
  const hostNames = new Set<string>();
  const domains = new Map<string, string>();
  arr(rc.virtual_hosts).forEach((vh, vi) => {
    const vpath = `virtual_hosts[${vi}](${vh.name})`;
    if (hostNames.has(String(vh.name)))
      out.push({ ...where, path: `${vpath}.name`, message: `duplicate virtual host name ${q(vh.name)}` });
    hostNames.add(String(vh.name));
    arr(vh.domains as unknown).forEach((d, di) => {
      const domain = String(d);
      const dpath = `${vpath}.domains[${di}]`;
      if (domain !== domain.toLowerCase())
        out.push({ ...where, path: dpath, message: `domain ${q(domain)} must be lower-case` });
      const key = domain.toLowerCase();
      const other = domains.get(key);
      if (other !== undefined)
        out.push({
          ...where,
          path: dpath,
          message: `domain ${q(domain)} is already served by virtual host ${q(other)}; domains must be unique in a route configuration`,
        });
      domains.set(key, String(vh.name));
      const stars = domain.split("*").length - 1;
      if (stars > 1 || (stars === 1 && domain !== "*" && !domain.startsWith("*") && !domain.endsWith("*"))) {
        out.push({
          ...where,
          path: dpath,
          message: `domain ${q(domain)}: a wildcard is allowed only as the whole domain, a prefix (*.example.org) or a suffix (example.*)`,
        });
      }
    });
    arr(vh.routes).forEach((route, ri) => checkRoute(route, where, `${vpath}.routes[${ri}]`, clusters, out));
  });
}

function checkRoute(
  route: Json,
  where: ViolationPlace,
  path: string,
  clusters: Set<string>,
  out: EnvoyViolation[],
): void {
  const action = route.route as Json | undefined;
  if (!action) return;
  if (action.cluster !== undefined && !clusters.has(String(action.cluster))) {
    out.push({
      ...where,
      path: `${path}.route.cluster`,
      message: `cluster ${q(action.cluster)} does not exist (Envoy would answer 503/404 at run time)`,
    });
  }
  const weighted = action.weighted_clusters as Json | undefined;
  if (weighted) {
    let total = 0;
    arr(weighted.clusters).forEach((wc, i) => {
      const wpath = `${path}.route.weighted_clusters.clusters[${i}]`;
      if (!wc.name && !wc.cluster_header)
        out.push({ ...where, path: wpath, message: "a weighted cluster needs a name" });
      else if (wc.name !== undefined && !clusters.has(String(wc.name)))
        out.push({ ...where, path: `${wpath}.name`, message: `cluster ${q(wc.name)} does not exist` });
      if (wc.weight === undefined)
        out.push({ ...where, path: `${wpath}.weight`, message: "a weighted cluster needs a weight" });
      total += Number(wc.weight ?? 0);
    });
    if (total <= 0)
      out.push({ ...where, path: `${path}.route.weighted_clusters`, message: "weights must sum to more than 0" });
  }
}

const DNS_CLUSTER_TYPE_URL = "type.googleapis.com/envoy.extensions.clusters.dns.v3.DnsCluster";

/**
 * Endpoints of STATIC and DNS clusters (the DiscoveryType enum or the DNS
 * cluster extension). Envoy refuses logical DNS (all addresses in a single
 * endpoint) with other than exactly one endpoint. It loads a strict DNS or
 * static cluster with none, which could never serve a request: refused here.
 */
function clusterEndpoints(c: Json, out: EnvoyViolation[]): void {
  const where = element(undefined, "cluster", c.name);
  const custom = c.cluster_type as Json | undefined;
  const typed = custom?.typed_config as Json | undefined;
  const dns = typed?.["@type"] === DNS_CLUSTER_TYPE_URL;
  const logical = c.type === "LOGICAL_DNS" || (dns && typed?.all_addresses_in_single_endpoint === true);
  const kind = logical
    ? "logical DNS"
    : dns || c.type === "STRICT_DNS"
      ? "strict DNS"
      : c.type === "STATIC"
        ? "static"
        : undefined;
  if (!kind) return;
  const localities = arr((c.load_assignment as Json | undefined)?.endpoints);
  const endpoints = localities.flatMap((e) => arr(e.lb_endpoints));
  if (logical && (localities.length !== 1 || endpoints.length !== 1)) {
    out.push({
      ...where,
      path: "load_assignment",
      message: `a logical DNS cluster needs exactly one locality with exactly one endpoint (got ${endpoints.length} endpoints in ${localities.length} localities)`,
    });
  } else if (endpoints.length === 0) {
    out.push({
      ...where,
      path: "load_assignment",
      message: `a ${kind} cluster needs at least one endpoint (without one it can never serve a request)`,
    });
  }
}

/** Every regular expression compiles as RE2 (Envoy's regex engine). */
function everyRegexCompiles(docs: GatewayView, out: EnvoyViolation[]): void {
  const compiled = new Map<string, string | undefined>();
  const problem = (regex: string) => {
    if (!compiled.has(regex)) {
      try {
        RE2JS.compile(regex);
        compiled.set(regex, undefined);
      } catch (e) {
        compiled.set(regex, (e as Error).message);
      }
    }
    return compiled.get(regex);
  };
  const walkRegexes = walker((node) => typeof node.regex === "string");
  const check = (root: unknown, where: ViolationPlace) =>
    walkRegexes(root, (node, path) => {
      const error = problem(node.regex as string);
      if (error !== undefined)
        out.push({
          ...where,
          path: `${path}.regex`,
          message: `${q(node.regex)} is not an RE2 regular expression: ${error}`,
        });
    });
  if (docs.bootstrap) check(docs.bootstrap, BOOTSTRAP);
  docs.clusters.forEach((c) => check(c, element("cds.yaml", "cluster", c.name)));
  docs.routeConfigs.forEach((rc) => check(rc, element("rds.yaml", "route configuration", rc.name)));
}

/**
 * Local rate limits as Envoy loads them: a token bucket refilled at most
 * every 50 ms; a limit shared across the gateway's pods
 * (local_cluster_rate_limit) needs the bootstrap's local cluster (checked when
 * the bootstrap is given) and cannot be per downstream connection. Envoy
 * refuses the whole route configuration otherwise.
 */
function everyLocalRateLimit(view: GatewayView, out: EnvoyViolation[]): void {
  const localCluster = (view.bootstrap?.cluster_manager as Json | undefined)?.local_cluster_name;
  const walkLimits = walker(
    (node) => typeof node["@type"] === "string" && node["@type"].endsWith("local_ratelimit.v3.LocalRateLimit"),
  );
  const check = (root: unknown, where: ViolationPlace) =>
    walkLimits(root, (node, path) => {
      const interval = (node.token_bucket as Json | undefined)?.fill_interval;
      if (interval !== undefined && durationMs(String(interval)) < 50) {
        out.push({
          ...where,
          path: `${path}.token_bucket.fill_interval`,
          message: `fill interval ${String(interval)} is shorter than the 50ms Envoy allows`,
        });
      }
      if (node.local_cluster_rate_limit === undefined || node.local_cluster_rate_limit === null) return;
      if (node.local_rate_limit_per_downstream_connection === true) {
        out.push({
          ...where,
          path: `${path}.local_rate_limit_per_downstream_connection`,
          message:
            "cannot be true together with local_cluster_rate_limit: a per-connection bucket is never shared across the gateway's pods",
        });
      }
      if (view.bootstrap && (localCluster === undefined || localCluster === "")) {
        out.push({
          ...where,
          path: `${path}.local_cluster_rate_limit`,
          message:
            "shares the limit across the gateway's pods, which needs the bootstrap's local cluster (cluster_manager.local_cluster_name); Envoy would refuse every route",
        });
      }
    });
  if (view.bootstrap) check(view.bootstrap, BOOTSTRAP);
  view.routeConfigs.forEach((rc) => check(rc, element("rds.yaml", "route configuration", rc.name)));
}

function durationMs(d: string): number {
  const m = /^(\d+(?:\.\d+)?)s$/.exec(d);
  return m ? Number(m[1]) * 1000 : Number.NaN;
}

/**
 * A walk that visits, with its path, every object of a JSON tree for which
 * `hit` holds, at each place it appears (objects shared by reference too),
 * and does not descend into what holds no hit: whether an object does is
 * worked out once per walker, so a part shared by thousands of clusters or
 * routes is looked into once. A walker is for documents that do not change
 * while it is used.
 */
function walker(hit: (node: Json) => boolean): (root: unknown, visit: (node: Json, path: string) => void) => void {
  const holds = new WeakMap<object, boolean>();
  const holdsHit = (v: object): boolean => {
    let h = holds.get(v);
    if (h === undefined) {
      h = !Array.isArray(v) && hit(v as Json);
      for (const c of Array.isArray(v) ? v : Object.values(v)) if (c && typeof c === "object" && holdsHit(c)) h = true;
      holds.set(v, h);
    }
    return h;
  };
  const go = (v: unknown, path: string, visit: (node: Json, path: string) => void): void => {
    if (!v || typeof v !== "object" || !holdsHit(v)) return;
    if (Array.isArray(v)) {
      v.forEach((x, i) => go(x, `${path}[${i}]`, visit));
      return;
    }
    if (hit(v as Json)) visit(v as Json, path);
    for (const [k, x] of Object.entries(v)) if (x && typeof x === "object") go(x, path ? `${path}.${k}` : k, visit);
  };
  return (root, visit) => go(root, "", visit);
}

/** Visits every object in a JSON tree with its path (objects shared by reference are visited at each place). */
function walk(root: unknown, path: string, visit: (node: Json, path: string) => void): void {
  if (Array.isArray(root)) root.forEach((v, i) => walk(v, `${path}[${i}]`, visit));
  else if (root && typeof root === "object") {
    visit(root as Json, path);
    for (const [k, v] of Object.entries(root))
      if (v && typeof v === "object") walk(v, path ? `${path}.${k}` : k, visit);
  }
}

function arr(v: unknown): Json[] {
  return Array.isArray(v) ? (v as Json[]) : [];
}

function q(v: unknown): string {
  return JSON.stringify(String(v));
}
