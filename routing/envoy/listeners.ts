// Listeners stay static in the bootstrap: changing a listener drains its
// connections, changing routes or clusters (RDS/CDS files) does not.
import type { GatewayContext } from "./context.js";
import { connectionLimitFilter, healthCheckFilter } from "./filters.js";
import { httpConnectionManager, httpsConnectionManager, plainConnectionManager } from "./http.js";
import { downstreamTransportSocket } from "./tls.js";
import { STATIC_CLUSTER, type Json } from "./types.js";

function hcmFilter(typedConfig: Json): Json {
  return { name: "envoy.filters.network.http_connection_manager", typed_config: typedConfig };
}

function address(host: string, port: number): Json {
  return { socket_address: { address: host, port_value: port } };
}

/**
 * TLS listener (Service port 443): every routed host. At most
 * edge.httpsMaxConnections connections (the overload manager's limit counts
 * all listeners together, so one listener could take them all).
 */
export function httpsListener(ctx: GatewayContext): Json {
  return {
    name: "https",
    address: address(ctx.listenAddress, ctx.ports.https),
    per_connection_buffer_limit_bytes: ctx.config.edge.bufferLimitBytes,
    filter_chains: [
      {
        filters: [
          connectionLimitFilter("https", ctx.config.edge.httpsMaxConnections),
          hcmFilter(httpsConnectionManager(ctx)),
        ],
        transport_socket: downstreamTransportSocket(ctx.config, ctx.paths),
      },
    ],
  };
}

/** Plain-HTTP listener (Service port 80): redirects, and ACME challenges when enabled; at most edge.httpMaxConnections connections. */
export function httpListener(ctx: GatewayContext): Json {
  return {
    name: "http",
    address: address(ctx.listenAddress, ctx.ports.http),
    per_connection_buffer_limit_bytes: ctx.config.edge.bufferLimitBytes,
    filter_chains: [
      {
        filters: [
          connectionLimitFilter("http", ctx.config.edge.httpMaxConnections),
          hcmFilter(httpConnectionManager(ctx, ctx.settings.acme ? STATIC_CLUSTER.acme : undefined)),
        ],
      },
    ],
  };
}

/** Readiness: GET /ready is 200 until Envoy starts draining; exempt from the connection limit. */
export function healthListener(ctx: GatewayContext): Json {
  return {
    name: "health",
    address: address(ctx.listenAddress, ctx.ports.health),
    ignore_global_conn_limit: true,
    filter_chains: [
      {
        filters: [
          hcmFilter(
            plainConnectionManager(
              "health",
              [{ match: { prefix: "/" }, direct_response: { status: 404 } }],
              [healthCheckFilter()],
            ),
          ),
        ],
      },
    ],
  };
}

/** Prometheus scraping: GET /stats/prometheus from the admin interface, nothing else. */
export function metricsListener(ctx: GatewayContext): Json {
  return {
    name: "metrics",
    address: address(ctx.listenAddress, ctx.ports.metrics),
    ignore_global_conn_limit: true,
    filter_chains: [
      {
        filters: [
          hcmFilter(
            plainConnectionManager(
              "metrics",
              [
                {
                  match: { path: "/stats/prometheus", headers: [{ name: ":method", string_match: { exact: "GET" } }] },
                  route: { cluster: STATIC_CLUSTER.admin, timeout: "10s" },
                },
                { match: { prefix: "/" }, direct_response: { status: 404 } },
              ],
              [],
            ),
          ),
        ],
      },
    ],
  };
}
