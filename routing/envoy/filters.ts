// HTTP filters of the TLS listener (ext_authz -> local_ratelimit ->
// [compressor] -> [dev upstream host -> dynamic forward proxy] -> router) and
// their per-route configs.
import type { StackConfig } from "../config/schema.js";
import { serviceHost } from "../names.js";
import { FILTER, STATIC_CLUSTER, TYPE, type Json } from "./types.js";
import { celString, envoyDuration } from "./units.js";

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
  return {
    name: FILTER.localRateLimit,
    typed_config: { "@type": TYPE.localRateLimit, stat_prefix: "http_local_rate_limiter" },
  };
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

/**
 * The request header that carries an on-demand route's upstream host from
 * the dev upstream host filter to the forward proxy filter; a client's own
 * is overwritten, and it is removed before the request goes upstream.
 */
export const UPSTREAM_HOST_HEADER = "x-gateway-upstream-host";

/** Sets UPSTREAM_HOST_HEADER where a virtual host says how (onDemandUpstreamHost); does nothing elsewhere. */
export function devUpstreamHostFilter(): Json {
  return { name: FILTER.devUpstreamHost, typed_config: { "@type": TYPE.headerMutation } };
}

/**
 * The dynamic forward proxy: for a route to the on-demand cluster, makes (or
 * finds) the sub-cluster of the request's upstream host, a strict DNS cluster
 * on that name, before the router picks a pod of it. Other routes pass.
 */
export function forwardProxyFilter(): Json {
  return {
    name: FILTER.forwardProxy,
    typed_config: { "@type": TYPE.forwardProxy, sub_cluster_config: { cluster_init_timeout: "5s" } },
  };
}

/**
 * The per-filter configs of the on-demand dev routes' virtual host: the
 * upstream host is the Service named in the path, `/<namespace>/<service>`
 * -> `<service>.<namespace>.svc.<clusterDomain>` (the route matched that
 * prefix, so the path always has it); the forward proxy sends the request
 * there with that Host (so SNI and the certificate check use it), and the
 * client's Host is appended to x-forwarded-host, as routes with a cluster of
 * their own do.
 */
export function onDemandUpstreamHost(clusterDomain: string): Json {
  const host = `re.extract(request.path, '^/([^/]+)/([^/?]+).*$', ${celString(`\\2.\\1.svc.${clusterDomain}`)})`;
  return {
    [FILTER.devUpstreamHost]: {
      "@type": TYPE.headerMutationPerRoute,
      mutations: {
        request_mutations: [
          {
            append: {
              header: { key: "x-forwarded-host", value: "%REQ(:AUTHORITY)%" },
              append_action: "APPEND_IF_EXISTS_OR_ADD",
            },
          },
          // A client's own value goes first, so that nothing but the path can name the host.
          { remove: UPSTREAM_HOST_HEADER },
          {
            append: {
              header: { key: UPSTREAM_HOST_HEADER, value: `%CEL(${host})%` },
              append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
            },
          },
        ],
        formatters: [{ name: "envoy.formatter.cel", typed_config: { "@type": TYPE.celFormatter, cel_config: {} } }],
      },
    },
    [FILTER.forwardProxy]: { "@type": TYPE.forwardProxyPerRoute, host_rewrite_header: UPSTREAM_HOST_HEADER },
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

/** Per-route config that turns ext_authz on again under a virtual host that turns it off (a production service's /metrics). */
export const ExtAuthzEnabled: Json = { "@type": TYPE.extAuthzPerRoute, check_settings: {} };

/**
 * What encodeURIComponent escapes, among the characters a request target can
 * hold: Envoy answers 400 to a path with anything but printable ASCII (a
 * browser sends non-ASCII text percent-encoded, as UTF-8), so the original
 * URL is printable ASCII, and escaping these (% first) percent-encodes it
 * exactly as encodeURIComponent would.
 */
const URI_COMPONENT_ESCAPED = [
  "%",
  " ",
  '"',
  "#",
  "$",
  "&",
  "+",
  ",",
  "/",
  ":",
  ";",
  "<",
  "=",
  ">",
  "?",
  "@",
  "[",
  "\\",
  "]",
  "^",
  "`",
  "{",
  "|",
  "}",
];

/** A CEL expression of `expr` (a string) percent-encoded as a URI component. */
export function celUriComponent(expr: string): string {
  const hex = (ch: string) => `%${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`;
  return URI_COMPONENT_ESCAPED.reduce((e, ch) => `${e}.replace(${celString(ch)}, ${celString(hex(ch))})`, `(${expr})`);
}

/**
 * The Location of a login redirect: when ext_authz denied a request and the
 * local reply mapper made that a 302, `<loginUrl>?next=` and the original
 * URL (https, host, path and query, as routed) percent-encoded. Envoy's
 * header values cannot encode; this filter's CEL formatter, with its string
 * functions, can. It runs first, so it sees the replies ext_authz sends; on
 * every other response the value is empty and nothing is added. A Location
 * the auth service set itself is kept.
 */
export function loginLocationFilter(loginUrl: string): Json {
  const base = `${loginUrl}${loginUrl.includes("?") ? "&" : "?"}next=`;
  const original = celUriComponent("'https://' + request.host + request.path");
  const expr = `response.code == 302 && response.code_details == 'ext_authz_denied' ? ${celString(base)} + ${original} : ''`;
  return {
    name: FILTER.headerMutation,
    typed_config: {
      "@type": TYPE.headerMutation,
      mutations: {
        response_mutations: [
          { append: { header: { key: "location", value: `%CEL(${expr})%` }, append_action: "ADD_IF_ABSENT" } },
        ],
        formatters: [
          {
            name: "envoy.formatter.cel",
            typed_config: {
              "@type": TYPE.celFormatter,
              cel_config: { enable_string_concat: true, enable_string_functions: true },
            },
          },
        ],
      },
    },
  };
}

/** At most `max` connections open at once on the listener whose filter chain starts with this filter; more are closed at once. */
export function connectionLimitFilter(statPrefix: string, max: number): Json {
  return {
    name: "envoy.filters.network.connection_limit",
    typed_config: { "@type": TYPE.connectionLimit, stat_prefix: statPrefix, max_connections: max },
  };
}

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

/** The rate limit descriptor key whose value is the matched route's name (one bucket per route). */
const ROUTE_DESCRIPTOR = "route";

/**
 * The most per-route buckets one rateLimitPerRoute config keeps (the least
 * recently used goes first): more routes than an xDS ConfigMap holds.
 */
const MAX_ROUTE_BUCKETS = 16384;

/**
 * localRateLimit's limit for each route of a virtual host, from one config on
 * the virtual host: a bucket per route, keyed by the route's name (a
 * descriptor with an empty value, made on the route's first request), shared
 * across the gateway pods as localRateLimit's is. The default bucket is the
 * same, and a request with its route's bucket does not also take from it. A
 * per-route config makes Envoy build a limiter for every route: at 5,000
 * dev/PR routes that was over half of loading rds.yaml.
 */
export function rateLimitPerRoute(perSecond: number, burst: number, statPrefix: string): Json {
  const limit = localRateLimit(perSecond, burst, statPrefix);
  return {
    ...limit,
    descriptors: [{ entries: [{ key: ROUTE_DESCRIPTOR }], token_bucket: limit.token_bucket }],
    max_dynamic_descriptors: MAX_ROUTE_BUCKETS,
    always_consume_default_token_bucket: false,
    rate_limits: [
      {
        actions: [
          {
            extension: {
              name: "envoy.rate_limit_descriptors.expr",
              typed_config: { "@type": TYPE.exprDescriptor, descriptor_key: ROUTE_DESCRIPTOR, text: "xds.route_name" },
            },
          },
        ],
      },
    ],
  };
}

// Parts every route's rate limit shares (written once in rds.yaml).
const RATE_LIMIT_ENABLED: Json = {
  runtime_key: "route_rate_limit_enabled",
  default_value: { numerator: 100, denominator: "HUNDRED" },
};
const RATE_LIMIT_ENFORCED: Json = {
  runtime_key: "route_rate_limit_enforced",
  default_value: { numerator: 100, denominator: "HUNDRED" },
};
const RATE_LIMITED_ROUTE_HEADERS: Json[] = [
  { header: { key: RATE_LIMITED_ROUTE_HEADER, value: "%ROUTE_NAME%" }, append_action: "OVERWRITE_IF_EXISTS_OR_ADD" },
];

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
            // The route (`<namespace>/<service>` for a dev/PR route): the cluster of an on-demand route is the shared one.
            route: "%ROUTE_NAME%",
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
