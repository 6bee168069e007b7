// HTTP filters of the TLS listener (ext_authz -> local_ratelimit ->
// [compressor] -> router) and their per-route configs.
import type { StackConfig } from "../config/schema.js";
import { serviceHost } from "../names.js";
import { FILTER, STATIC_CLUSTER, TYPE, type Json } from "./types.js";
import { envoyDuration } from "./units.js";

/** ext_authz over HTTPS to the auth service; fails closed (503) when it is down. */
export function extAuthzFilter(config: StackConfig): Json {
  const a = config.auth;
  return {
    name: FILTER.extAuthz,
    typed_config: {
      "@type": TYPE.extAuthz,
      http_service: {
        server_uri: {
          uri: `https://${serviceHost(a.service, a.namespace, config.clusterDomain)}:${a.port}`,
          cluster: STATIC_CLUSTER.extAuthz,
          timeout: envoyDuration(a.timeout),
        },
        path_prefix: a.pathPrefix,
      },
      allowed_headers: { patterns: a.allowedHeaders.map((h) => ({ exact: h, ignore_case: true })) },
      failure_mode_allow: false,
      status_on_error: { code: "ServiceUnavailable" },
    },
  };
}

/** The local rate limit filter; it limits only routes that carry a per-route config. */
export function localRateLimitFilter(): Json {
  return { name: FILTER.localRateLimit, typed_config: { "@type": TYPE.localRateLimit, stat_prefix: "http_local_rate_limiter" } };
}

/** gzip responses for clients that accept it (internal-gateway by default). */
export function compressorFilter(): Json {
  return {
    name: FILTER.compressor,
    typed_config: {
      "@type": TYPE.compressor,
      compressor_library: { name: "gzip", typed_config: { "@type": TYPE.gzip } },
    },
  };
}

/** The router; Envoy's x-envoy-* response headers are not sent to clients. */
export function routerFilter(): Json {
  return { name: FILTER.router, typed_config: { "@type": TYPE.router, suppress_envoy_headers: true } };
}

/** Answers GET /ready with 200, or 503 once Envoy is draining (the readiness probe). */
export function healthCheckFilter(): Json {
  return {
    name: FILTER.healthCheck,
    typed_config: {
      "@type": TYPE.healthCheck,
      pass_through_mode: false,
      headers: [{ name: ":path", string_match: { exact: "/ready" } }],
    },
  };
}

/** Per-route config that turns ext_authz off (production routes). */
export const ExtAuthzDisabled: Json = { "@type": TYPE.extAuthzPerRoute, disabled: true };

/** The response header of a 429 that names the route that limited it (`<namespace>/<service>`). */
export const RATE_LIMITED_ROUTE_HEADER = "x-ratelimit-route";

/**
 * Per-route local rate limit of `perSecond` requests per second for the whole
 * service, whatever the number of gateway pods: with local_cluster_rate_limit
 * each Envoy refills its bucket with its share, ceil(perSecond / n), n the
 * hosts of the bootstrap's local cluster (the ready gateway pods; 1 when it
 * has none). A bucket holds at most `burst` tokens (one pod's share at the
 * autoscaler's minimum), so an idle pod never admits more than that at once.
 * Over the limit: 429 with x-ratelimit-* headers and the route's name in
 * x-ratelimit-route; counters under `<statPrefix>.http_local_rate_limit.`.
 */
export function localRateLimit(perSecond: number, burst: number, statPrefix: string): Json {
  return {
    "@type": TYPE.localRateLimit,
    stat_prefix: statPrefix,
    token_bucket: { max_tokens: burst, tokens_per_fill: perSecond, fill_interval: "1s" },
    filter_enabled: RATE_LIMIT_ENABLED,
    filter_enforced: RATE_LIMIT_ENFORCED,
    local_cluster_rate_limit: {},
    response_headers_to_add: RATE_LIMITED_ROUTE_HEADERS,
    enable_x_ratelimit_headers: "DRAFT_VERSION_03",
  };
}

// Parts every route's rate limit shares (written once in rds.yaml).
const RATE_LIMIT_ENABLED: Json = { runtime_key: "route_rate_limit_enabled", default_value: { numerator: 100, denominator: "HUNDRED" } };
const RATE_LIMIT_ENFORCED: Json = { runtime_key: "route_rate_limit_enforced", default_value: { numerator: 100, denominator: "HUNDRED" } };
const RATE_LIMITED_ROUTE_HEADERS: Json[] = [{ header: { key: RATE_LIMITED_ROUTE_HEADER, value: "%ROUTE_NAME%" }, append_action: "OVERWRITE_IF_EXISTS_OR_ADD" }];

/** JSON access log line per request, to stdout. */
export function accessLog(): Json[] {
  return [
    {
      name: "envoy.access_loggers.stdout",
      typed_config: {
        "@type": TYPE.stdoutAccessLog,
        log_format: {
          json_format: {
            time: "%START_TIME%",
            status: "%RESPONSE_CODE%",
            flags: "%RESPONSE_FLAGS%",
            duration_ms: "%DURATION%",
            method: "%REQ(:METHOD)%",
            // The client's host: routes rewrite Host to the Service name and keep the original here.
            host: "%REQ(X-FORWARDED-HOST?:AUTHORITY)%",
            path: "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
            protocol: "%PROTOCOL%",
            client: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
            upstream: "%UPSTREAM_HOST%",
            cluster: "%UPSTREAM_CLUSTER%",
            bytes_received: "%BYTES_RECEIVED%",
            bytes_sent: "%BYTES_SENT%",
            user_agent: "%REQ(USER-AGENT)%",
            request_id: "%REQ(X-REQUEST-ID)%",
          },
        },
      },
    },
  ];
}
