// What every translation function of one gateway needs, computed once: the
// gateway's settings and the parts shared by many clusters and routes. Shared
// parts are single objects on purpose: the xDS YAML writes each once (an
// anchor) and refers to it from every cluster or route (an alias), which keeps
// the ConfigMap small; Envoy's YAML loader expands the aliases.
import type { GatewayName, GatewaySettings, RoutingConfig, StackConfig } from "../config/schema.js";
import { DNS_CLUSTER_TYPE, FILTER, POD_PATHS, POD_PORTS, TYPE, type EnvoyPaths, type Json, type ListenerPorts } from "./types.js";
import { upstreamProtocolOptions, upstreamTransportSocket } from "./tls.js";
import { envoyDuration } from "./units.js";
import { ExtAuthzDisabled, localRateLimit } from "./filters.js";

/** Options for where and how Envoy runs; the defaults are the gateway pod's. */
export interface RenderOptions {
  /** File locations (default: the pod's mount paths). */
  paths?: EnvoyPaths;
  /** Listener and admin ports (default: the pod's container ports). */
  ports?: ListenerPorts;
  /** Address the listeners bind (default 0.0.0.0, the pod address). */
  listenAddress?: string;
  /** A DNS server for upstream names (default: the pod's resolv.conf, i.e. cluster DNS). */
  dnsResolver?: { address: string; port: number };
}

/**
 * One gateway's translation context for its xDS files (cds.yaml, rds.yaml):
 * they need only the routing part of stack config.
 */
export interface XdsContext {
  gateway: GatewayName;
  config: RoutingConfig;
  settings: RoutingConfig["gateways"][GatewayName];
  paths: EnvoyPaths;
  ports: ListenerPorts;
  listenAddress: string;
  dnsResolver: { address: string; port: number } | undefined;
  shared: SharedParts;
}

/** The context of the whole gateway: the bootstrap needs all of stack config. */
export interface GatewayContext extends XdsContext {
  config: StackConfig;
  settings: GatewaySettings;
}

/** Objects many clusters or routes refer to (each written once in YAML). */
export interface SharedParts {
  /** cluster_type of every DNS cluster: Envoy's DNS cluster extension (strict DNS: every address an endpoint). */
  dnsCluster: Json;
  connectTimeout: string;
  circuitBreakers: Json;
  outlierDetection: Json;
  production: { transportSocket: Json; protocolOptions: Json };
  dev: { transportSocket: Json; protocolOptions: Json };
  /** typed_per_filter_config of a production virtual host: ext_authz off. */
  extAuthzOff: Json;
  routeTimeout: string;
  websocketIdleTimeout: string;
  /**
   * typed_per_filter_config of a rate-limited route: `perSecond` for the whole
   * service (shared across the gateway pods), counted under `statPrefix`.
   * Routes with the same limit and prefix share one object.
   */
  rateLimited(perSecond: number, statPrefix: string): Json;
}

export function gatewayContext(config: StackConfig, gateway: GatewayName, options?: RenderOptions): GatewayContext;
export function gatewayContext(config: RoutingConfig, gateway: GatewayName, options?: RenderOptions): XdsContext;
export function gatewayContext(config: RoutingConfig, gateway: GatewayName, options: RenderOptions = {}): XdsContext {
  const settings = config.gateways[gateway];
  const paths = options.paths ?? POD_PATHS;
  const rateLimits = new Map<string, Json>();
  const up = config.upstream;
  const protocolOptions = upstreamProtocolOptions(config);
  const production = { transportSocket: upstreamTransportSocket(paths, "verify"), protocolOptions };
  const dev = config.devNamespaces.upstreamTls === "verify" ? production : { transportSocket: upstreamTransportSocket(paths, "encrypt-only"), protocolOptions };
  const shared: SharedParts = {
    dnsCluster: {
      name: DNS_CLUSTER_TYPE,
      typed_config: {
        "@type": TYPE.dnsCluster,
        respect_dns_ttl: true,
        dns_refresh_rate: envoyDuration(up.dnsRefreshRate),
        dns_lookup_family: up.dnsLookupFamily,
      },
    },
    connectTimeout: envoyDuration(up.connectTimeout),
    circuitBreakers: {
      thresholds: [{ max_connections: up.maxConnections, max_pending_requests: up.maxPendingRequests, max_requests: up.maxRequests, track_remaining: true }],
    },
    outlierDetection: {
      consecutive_5xx: up.consecutive5xx,
      base_ejection_time: envoyDuration(up.baseEjectionTime),
      max_ejection_percent: up.maxEjectionPercent,
    },
    production,
    dev,
    extAuthzOff: { [FILTER.extAuthz]: ExtAuthzDisabled },
    routeTimeout: envoyDuration(up.routeTimeout),
    websocketIdleTimeout: envoyDuration(config.edge.websocketIdleTimeout),
    rateLimited(perSecond, statPrefix) {
      const key = `${perSecond} ${statPrefix}`;
      let config = rateLimits.get(key);
      if (!config) rateLimits.set(key, (config = { [FILTER.localRateLimit]: localRateLimit(perSecond, perReplicaLimit(perSecond, settings.replicas), statPrefix) }));
      return config;
    },
  };
  return {
    gateway,
    config,
    settings,
    paths,
    ports: options.ports ?? POD_PORTS,
    listenAddress: options.listenAddress ?? "0.0.0.0",
    dnsResolver: options.dnsResolver,
    shared,
  };
}

/** One gateway pod's share of a whole-service limit at `replicas` pods (at least 1): the burst a pod's bucket holds. */
export function perReplicaLimit(rateLimit: number, replicas: number): number {
  return Math.max(1, Math.ceil(rateLimit / replicas));
}
