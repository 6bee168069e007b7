// Reading the routes a gateway's xDS ConfigMap actually serves, for
// `pulumi refresh`: the inverse of the translation, as far as the documents
// carry it (a per-replica rate limit reads back as limit x replicas).
import type { GatewayName, StackConfig } from "./config/schema.js";
import { parseEnvoyYaml } from "./envoy/xds.js";
import { perReplicaLimit } from "./envoy/context.js";
import type { RouteEntry, RoutesInput } from "./routes-input.js";

type J = Record<string, any>;

export function readRoutesFromXds(config: StackConfig, gateway: GatewayName, data: Record<string, string>, previous: RoutesInput = {}): { routes: RoutesInput; problems: string[] } {
  const problems: string[] = [];
  const parse = (file: string): J | undefined => {
    try {
      return parseEnvoyYaml(data[file] ?? "") as J;
    } catch (e) {
      problems.push(`${file} cannot be read: ${(e as Error).message}`);
      return undefined;
    }
  };
  const cds = parse("cds.yaml");
  const rds = parse("rds.yaml");
  const upstreams = new Map<string, string>();
  for (const c of (cds?.resources ?? []) as J[]) {
    const sa = c?.load_assignment?.endpoints?.[0]?.lb_endpoints?.[0]?.endpoint?.address?.socket_address;
    if (c?.name && sa) upstreams.set(String(c.name), `${sa.address}:${sa.port_value}`);
  }
  const domain = gateway === "gateway" ? config.domain : config.internalDomain;
  const replicas = config.gateways[gateway].replicas;
  const routes: RoutesInput = {};
  for (const host of ((rds?.resources?.[0]?.virtual_hosts ?? []) as J[])) {
    for (const route of (host.routes ?? []) as J[]) {
      let namespace: string;
      let service: string;
      let match: string;
      if (host.name === "dev") {
        const m = /^\/([^/]+)\/([^/]+)$/.exec(String(route.match?.path_separated_prefix ?? ""));
        if (!m) {
          problems.push(`a dev route matches ${JSON.stringify(route.match)}, not /<namespace>/<service>`);
          continue;
        }
        [namespace, service] = [m[1]!, m[2]!];
        match = `https://${host.domains?.[0]}/${namespace}/${service}`;
      } else {
        [namespace, service] = [config.namespace, String(host.name)];
        match = `https://${service}.${domain}/`;
      }
      const id = `${namespace}/${service}`;
      const action = route.route ?? {};
      const weighted = (action.weighted_clusters?.clusters ?? (action.cluster ? [{ name: action.cluster, weight: 100 }] : [])) as J[];
      const entry: RouteEntry = { match, namespace, service, clusters: {}, websocket: action.idle_timeout !== undefined };
      for (const w of weighted) {
        const name = String(w.name);
        const parts = name.split("_");
        entry.clusters[name] = { upstream: upstreams.get(name) ?? "(missing from cds.yaml)", weight: Number(w.weight), version: parts.length > 2 ? parts[2]! : "" };
        if (!upstreams.has(name)) problems.push(`route ${id} uses cluster ${name}, which cds.yaml lacks`);
      }
      const bucket = route.typed_per_filter_config?.["envoy.filters.http.local_ratelimit"]?.token_bucket;
      if (bucket) {
        const before = previous[id]?.rateLimit;
        entry.rateLimit = before !== undefined && perReplicaLimit(before, replicas) === Number(bucket.tokens_per_fill) ? before : Number(bucket.tokens_per_fill) * replicas;
      }
      const aliases = ((host.domains ?? []) as string[]).filter((d) => d !== `${service}.${domain}`);
      if (host.name !== "dev" && aliases.length) entry.aliases = aliases;
      routes[id] = entry;
    }
  }
  return { routes, problems };
}
