// HTTP connection managers, hardened as Envoy's "Configuring Envoy as an edge
// proxy" guidance lists: trusted client address, path normalisation, header
// name and size rules, timeouts, HTTP/2 stream and window limits.
import { envoyDuration } from "./units.js";
import type { GatewayContext } from "./context.js";
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
  if (ctx.config.devNamespaces.clusters === "on-demand") filters.push(devUpstreamHostFilter(), forwardProxyFilter());
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
  if (ctx.extAuthz.filter) hcm.local_reply_config = loginRedirect();
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
    mappers: [
      {
        filter: {
          status_code_filter: {
            comparison: { op: "EQ", value: { default_value: 401, runtime_key: "login_redirect_status" } },
          },
        },
        status_code: 302,
      },
    ],
  };
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
