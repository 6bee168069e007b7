// The TLS listener's route configuration (RDS): one virtual host per
// production service, one for the dev/PR routes.
import type { RoutedService, RoutingTable } from "../table.js";
import { clusterName } from "../names.js";
import type { XdsContext } from "./context.js";
import { HTTPS_ROUTE_CONFIG, TYPE, type Json } from "./types.js";

export function routeConfiguration(ctx: XdsContext, table: RoutingTable): Json {
  const hosts = table.production.map((s) => productionVirtualHost(ctx, s));
  if (table.dev.length > 0) hosts.push(devVirtualHost(ctx, table.dev));
  return {
    "@type": TYPE.routeConfiguration,
    name: HTTPS_ROUTE_CONFIG,
    virtual_hosts: hosts,
    request_headers_to_add: [
      { header: { key: "x-real-ip", value: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%" }, append_action: "OVERWRITE_IF_EXISTS_OR_ADD" },
    ],
  };
}

/** s.<domain> (plus its aliases, on a gateway that serves them) -> s, with ext_authz off. */
export function productionVirtualHost(ctx: XdsContext, service: RoutedService): Json {
  const domains = [`${service.name}.${ctx.settings.domain}`, ...(ctx.settings.serveAliases ? service.aliases : [])];
  const host: Json = {
    name: service.name,
    domains,
    routes: [serviceRoute(ctx, service, { prefix: "/" }, clusterName(service.namespace, service.name))],
  };
  if (ctx.settings.authenticateDevRoutes) host.typed_per_filter_config = ctx.shared.extAuthzOff;
  return host;
}

/** internal.<domain>/<namespace>/<service>/... -> that namespace's service, through ext_authz. */
export function devVirtualHost(ctx: XdsContext, services: readonly RoutedService[]): Json {
  return {
    name: "dev",
    domains: [ctx.settings.devHost],
    routes: services.map((s) => serviceRoute(ctx, s, { path_separated_prefix: `/${s.namespace}/${s.name}` }, DEV_RATE_LIMIT_STATS)),
  };
}

/**
 * Stat prefix of the dev/PR routes' rate limits: one for all of them (a prefix
 * per route would add counters for every dev/PR service); the 429 names the route.
 */
export const DEV_RATE_LIMIT_STATS = "dev";

/**
 * One route, named `<namespace>/<service>`: to the service's cluster (or
 * weighted clusters for several versions), Host rewritten to the Service name
 * (so SNI and the certificate check use it) with the original in
 * x-forwarded-host, optional rate limit (counted under `rateLimitStats`).
 */
function serviceRoute(ctx: XdsContext, service: RoutedService, match: Json, rateLimitStats: string): Json {
  const action: Json =
    service.versions.length === 1
      ? { cluster: service.versions[0]!.cluster }
      : { weighted_clusters: { clusters: service.versions.map((v) => ({ name: v.cluster, weight: v.weight })) } };
  action.auto_host_rewrite = true;
  action.append_x_forwarded_host = true;
  action.timeout = ctx.shared.routeTimeout;
  if (service.websocket) action.idle_timeout = ctx.shared.websocketIdleTimeout;
  const route: Json = { name: service.id, match, route: action };
  if (service.rateLimit !== undefined) route.typed_per_filter_config = ctx.shared.rateLimited(service.rateLimit, rateLimitStats);
  return route;
}
