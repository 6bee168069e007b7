// HTTP connection managers, hardened as Envoy's "Configuring Envoy as an edge
// proxy" guidance lists: trusted client address, path normalisation, header
// name and size rules, timeouts, HTTP/2 stream and window limits.
import { envoyDuration } from "./units.js";
import type { GatewayName } from "../config/schema.js";
import type { GatewayContext } from "./context.js";
import { maxOnDemandSubClusters, ON_DEMAND_SUB_CLUSTER_TTL_SECONDS } from "./heap.js";
import {
  accessLog,
  compressorFilter,
  devUpstreamHostFilter,
  extAuthzFilter,
  forwardProxyFilter,
  localRateLimitFilter,
  loginLocationFilter,
  routerFilter,
} from "./filters.js";
import { HTTPS_ROUTE_CONFIG, TYPE, type Json } from "./types.js";

/** Settings every client-facing connection manager shares. */
function edgeSettings(ctx: GatewayContext): Json {
  const edge = ctx.config.edge;
  const settings: Json = {
    codec_type: "AUTO",
    use_remote_address: true,
    normalize_path: true,
    merge_slashes: true,
    path_with_escaped_slashes_action: "UNESCAPE_AND_REDIRECT",
    strip_any_host_port: true,
    common_http_protocol_options: {
      idle_timeout: envoyDuration(edge.idleTimeout),
      headers_with_underscores_action: "REJECT_REQUEST",
    },
    http2_protocol_options: {
      max_concurrent_streams: edge.http2MaxConcurrentStreams,
      initial_stream_window_size: edge.http2InitialStreamWindowSize,
      initial_connection_window_size: edge.http2InitialConnectionWindowSize,
    },
    max_request_headers_kb: edge.maxRequestHeadersKb,
    stream_idle_timeout: envoyDuration(edge.streamIdleTimeout),
    request_timeout: envoyDuration(edge.requestTimeout),
    request_headers_timeout: envoyDuration(edge.requestHeadersTimeout),
  };
  if (edge.accessLog === "json") settings.access_log = accessLog();
  if (edge.trustedHops > 0) settings.xff_num_trusted_hops = edge.trustedHops;
  return settings;
}

/** The TLS listener's connection manager: routes by RDS from the watched xDS directory. */
export function httpsConnectionManager(ctx: GatewayContext): Json {
  const filters: Json[] = [];
  if (ctx.extAuthz.filter) filters.push(loginLocationFilter(loginUrl(ctx)), extAuthzFilter(ctx.config));
  filters.push(localRateLimitFilter());
  if (ctx.settings.compression) filters.push(compressorFilter());
  const onDemand = ctx.config.devNamespaces.clusters === "on-demand";
  if (onDemand) filters.push(devUpstreamHostFilter(), forwardProxyFilter());
  filters.push(routerFilter());
  const hcm: Json = {
    "@type": TYPE.hcm,
    stat_prefix: "https",
    rds: {
      route_config_name: HTTPS_ROUTE_CONFIG,
      config_source: {
        resource_api_version: "V3",
        path_config_source: { path: `${ctx.paths.xdsDir}/rds.yaml`, watched_directory: { path: ctx.paths.xdsDir } },
      },
    },
    http_filters: filters,
    upgrade_configs: [{ upgrade_type: "websocket" }],
    ...edgeSettings(ctx),
  };
  const mappers = [
    ...(ctx.extAuthz.filter ? [loginRedirect()] : []),
    ...(onDemand ? [subClusterOverflowReply(ctx)] : []),
  ];
  if (mappers.length > 0) hcm.local_reply_config = { mappers };
  return hcm;
}

/** Where a 401 from the auth check redirects (default https://auth.<domain>/login). */
export function loginUrl(ctx: GatewayContext): string {
  return ctx.config.auth.loginUrl ?? `https://auth.${ctx.config.domain}/login`;
}

/**
 * A 401 from the auth check becomes a 302 to the login page; the first
 * filter (loginLocationFilter) adds its Location, with the original URL
 * percent-encoded after `next=`.
 */
export function loginRedirect(): Json {
  return {
    filter: {
      status_code_filter: {
        comparison: { op: "EQ", value: { default_value: 401, runtime_key: "login_redirect_status" } },
      },
    },
    status_code: 302,
  };
}

/** The access-log filter extension that matches on a CEL expression (local reply mappers use access-log filters). */
const CEL_ACCESS_LOG_FILTER = "envoy.access_loggers.extension_filters.cel";

/** Envoy's details of the 503 a request gets when the on-demand cluster keeps as many sub-clusters as it may. */
const SUB_CLUSTER_OVERFLOW_DETAILS = "sub_cluster_overflow";

/**
 * The 503 of a dev/PR route whose Service would be one sub-cluster more than
 * the gateway pod keeps (maxOnDemandSubClusters, from its memory limit) says,
 * instead of Envoy's "Sub cluster overflow", what the limit is, which setting
 * gives it, and when the Service is served.
 */
export function subClusterOverflowReply(ctx: GatewayContext): Json {
  const memory = ctx.settings.resources.limits.memory;
  return {
    filter: {
      extension_filter: {
        name: CEL_ACCESS_LOG_FILTER,
        typed_config: {
          "@type": TYPE.celAccessLogFilter,
          expression: `response.code_details == '${SUB_CLUSTER_OVERFLOW_DETAILS}'`,
        },
      },
    },
    body: { inline_string: subClusterOverflowMessage(ctx.gateway, memory) },
  };
}

/** The body of that 503. */
export function subClusterOverflowMessage(gateway: GatewayName, memoryLimit: string): string {
  return (
    `This gateway pod serves ${maxOnDemandSubClusters(memoryLimit)} dev/PR Services at once, as many as its memory ` +
    `limit allows (gateways.${gateway}.resources.limits.memory: ${memoryLimit}); this one is served once one of ` +
    `them has gone unused for ${ON_DEMAND_SUB_CLUSTER_TTL_SECONDS / 60} minutes.\n`
  );
}

/** The plain-HTTP listener: ACME challenges to the solver, everything else 301 to HTTPS. */
export function httpConnectionManager(ctx: GatewayContext, acmeCluster: string | undefined): Json {
  const routes: Json[] = [];
  if (acmeCluster)
    routes.push({ match: { prefix: "/.well-known/acme-challenge/" }, route: { cluster: acmeCluster, timeout: "10s" } });
  routes.push({ match: { prefix: "/" }, redirect: { https_redirect: true } });
  return {
    "@type": TYPE.hcm,
    stat_prefix: "http",
    route_config: { name: "http", virtual_hosts: [{ name: "http", domains: ["*"], routes }] },
    http_filters: [routerFilter()],
    ...edgeSettings(ctx),
  };
}

/** A connection manager with a fixed route table for the pod-internal listeners (health, metrics). */
export function plainConnectionManager(statPrefix: string, routes: Json[], filters: Json[]): Json {
  return {
    "@type": TYPE.hcm,
    stat_prefix: statPrefix,
    codec_type: "AUTO",
    route_config: { name: statPrefix, virtual_hosts: [{ name: statPrefix, domains: ["*"], routes }] },
    http_filters: [...filters, routerFilter()],
    common_http_protocol_options: { headers_with_underscores_action: "REJECT_REQUEST" },
  };
}
