// The TLS listener's route configuration (RDS): one virtual host per
// production service, one for the dev/PR routes. What a virtual host shares
// by all its routes (retries, security headers, ext_authz off) is set on the
// virtual host, from objects shared between hosts, so a dev route costs no
// more bytes for it.
import { mergeSecurityHeaders, type SecurityHeaders } from "../config/schema.js";
import type { RoutedService, RoutingTable } from "../table.js";
import { clusterName } from "../names.js";
import { metricsAuthenticated, type XdsContext } from "./context.js";
import { DEV_VIRTUAL_HOST, HTTPS_ROUTE_CONFIG, TYPE, type Json } from "./types.js";
import { envoyDuration } from "./units.js";
import { routedOnDemand } from "./clusters.js";
import { UPSTREAM_HOST_HEADER } from "./filters.js";

/** The path (and everything below it) of a production service's own metrics, which can require developer auth. */
export const METRICS_PATH = "/metrics";

export function routeConfiguration(ctx: XdsContext, table: RoutingTable): Json {
  const hosts = table.production.map((s) => productionVirtualHost(ctx, s));
  if (table.dev.length > 0) hosts.push(devVirtualHost(ctx, table.dev, table.devRoutes));
  return {
    "@type": TYPE.routeConfiguration,
    name: HTTPS_ROUTE_CONFIG,
    virtual_hosts: hosts,
    request_headers_to_add: [
      {
        header: { key: "x-real-ip", value: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%" },
        append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
      },
    ],
  };
}

/**
 * s.<domain> (plus its aliases, on a gateway that serves them) -> s, with
 * ext_authz off, except on /metrics where the service's metrics are
 * authenticated on this gateway.
 */
export function productionVirtualHost(ctx: XdsContext, service: RoutedService): Json {
  const domains = [`${service.name}.${ctx.settings.domain}`, ...(ctx.settings.serveAliases ? service.aliases : [])];
  const statPrefix = clusterName(service.namespace, service.name);
  const route = serviceRoute(ctx, service, { prefix: "/" });
  if (service.rateLimit !== undefined)
    route.typed_per_filter_config = ctx.shared.rateLimited(service.rateLimit, statPrefix);
  const routes = [route];
  if (ctx.extAuthz.filter && metricsAuthenticated(ctx.settings, service)) {
    // The same name and action (one object, written once): only the match and ext_authz differ.
    const rateLimit = service.rateLimit !== undefined ? { perSecond: service.rateLimit, statPrefix } : undefined;
    routes.unshift({
      name: route.name,
      match: { path_separated_prefix: METRICS_PATH },
      route: route.route,
      typed_per_filter_config: ctx.shared.metricsAuthenticated(rateLimit),
    });
  }
  const host: Json = { name: service.name, domains, routes };
  if (ctx.extAuthz.filter) host.typed_per_filter_config = ctx.shared.extAuthzOff;
  return withHostPolicies(
    ctx,
    host,
    service.retries,
    mergeSecurityHeaders(ctx.settings.securityHeaders, service.securityHeaders),
  );
}

/**
 * internal.<domain>/<namespace>/<service>/... -> that namespace's service,
 * through ext_authz (unless the gateway turns it off), with what every dev
 * route shares (`shared`, from the routing table).
 */
export function devVirtualHost(
  ctx: XdsContext,
  services: readonly RoutedService[],
  shared: RoutingTable["devRoutes"],
): Json {
  const onDemand = ctx.config.devNamespaces.clusters === "on-demand";
  const host: Json = {
    name: DEV_VIRTUAL_HOST,
    domains: [ctx.settings.devHost],
    routes: services.map((s) => {
      const match = { path_separated_prefix: `/${s.namespace}/${s.name}` };
      if (routedOnDemand(s)) return onDemandRoute(ctx, s, match);
      // With on-demand routes the virtual host appends the client's Host to x-forwarded-host for every route.
      return serviceRoute(ctx, s, match, !onDemand);
    }),
  };
  // Every dev/PR route's rate limit is the host's (the table gives each the same one), a bucket
  // per route: one config, not a limiter Envoy builds for each route.
  host.typed_per_filter_config = {
    ...ctx.shared.devHost,
    ...(onDemand ? ctx.shared.onDemandHost : {}),
    ...ctx.shared.rateLimitedPerRoute(shared.rateLimit, DEV_RATE_LIMIT_STATS),
  };
  if (onDemand) host.request_headers_to_remove = [UPSTREAM_HOST_HEADER];
  // Dev/PR services all take the table's dev retries and the gateway's security headers.
  return withHostPolicies(ctx, host, shared.retries, ctx.settings.securityHeaders);
}

/**
 * What every route of a virtual host shares: retries (connect failures and
 * resets before the request was sent for every method, resets before any
 * response for the idempotent ones) and the security headers added to
 * responses that lack them.
 */
function withHostPolicies(
  ctx: XdsContext,
  host: Json,
  retries: RoutedService["retries"],
  headers: SecurityHeaders,
): Json {
  if (retries.count > 0) {
    host.retry_policy = ctx.shared.retryPolicy(retries.count);
    if (retries.resetMethods.length > 0) host.request_headers_to_add = ctx.shared.retryOnReset(retries.resetMethods);
  }
  const responseHeaders = ctx.shared.securityHeaders(headers);
  if (responseHeaders) host.response_headers_to_add = responseHeaders;
  return host;
}

/**
 * Stat prefix of the dev/PR routes' rate limits: one for all of them (a prefix
 * per route would add counters for every dev/PR service); the 429 names the route.
 */
export const DEV_RATE_LIMIT_STATS = "dev";

/**
 * A dev/PR route to the on-demand cluster, named `<namespace>/<service>`: the
 * action (cluster, request time bound) is shared by every route with the same
 * timeouts, the virtual host sets the upstream host and the rate limit (a
 * bucket per route, by its name); Envoy counts its responses and latency
 * under vhost.dev.route.<namespace>/<service>. (the cluster's stats are the
 * on-demand cluster's and the sub-cluster's).
 */
function onDemandRoute(ctx: XdsContext, service: RoutedService, match: Json): Json {
  return {
    name: service.id,
    match,
    route: ctx.shared.onDemandAction(envoyDuration(service.routeTimeout), service.websocket),
    stat_prefix: service.id,
  };
}

/**
 * One route, named `<namespace>/<service>`: to the service's cluster (or
 * weighted clusters for several versions), Host rewritten to the Service name
 * (so SNI and the certificate check use it) with the original appended to
 * x-forwarded-host (here, unless the virtual host does it), the request time
 * bounded (unless the service opts out). Its rate limit is the caller's to
 * set: a production route's own, a dev/PR route's its virtual host's.
 */
function serviceRoute(
  ctx: XdsContext,
  service: RoutedService,
  match: Json,
  appendForwardedHost = true,
): Json & { name: string; route: Json } {
  const action: Json =
    service.versions.length === 1
      ? { cluster: service.versions[0]!.cluster }
      : { weighted_clusters: { clusters: service.versions.map((v) => ({ name: v.cluster, weight: v.weight })) } };
  action.auto_host_rewrite = true;
  if (appendForwardedHost) action.append_x_forwarded_host = true;
  action.timeout = envoyDuration(service.routeTimeout);
  if (service.websocket) action.idle_timeout = ctx.shared.websocketIdleTimeout;
  return { name: service.id, match, route: action };
}
