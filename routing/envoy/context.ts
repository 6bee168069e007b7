// What every translation function of one gateway needs, computed once: the
// gateway's settings and the parts shared by many clusters and routes. Shared
// parts are single objects on purpose: the xDS YAML writes each once (an
// anchor) and refers to it from every cluster or route (an alias), which keeps
// the ConfigMap small; Envoy's YAML loader expands the aliases.
import type { GatewayName, GatewaySettings, RoutingConfig, SecurityHeaders, StackConfig } from "../config/schema.js";
import {
  DNS_CLUSTER_TYPE,
  FILTER,
  POD_PATHS,
  POD_PORTS,
  TYPE,
  type EnvoyPaths,
  type Json,
  type ListenerPorts,
} from "./types.js";
import { upstreamProtocolOptions, upstreamTransportSocket } from "./tls.js";
import { envoyDuration, formatLiteral } from "./units.js";
import { ON_DEMAND_CLUSTER } from "../names.js";
import {
  ExtAuthzDisabled,
  ExtAuthzEnabled,
  localRateLimit,
  onDemandUpstreamHost,
  rateLimitPerRoute,
} from "./filters.js";

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
  /** Whether the gateway runs ext_authz at all (dev/PR routes or some service's /metrics), and on the dev/PR routes. */
  extAuthz: { filter: boolean; devRoutes: boolean };
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
  /** The on-demand cluster's: a retry limit for all dev/PR routes together. */
  onDemandCircuitBreakers: Json;
  outlierDetection: Json;
  /** The DNS settings of every DNS cluster (dnsCluster's, and each on-demand sub-cluster's). */
  dnsSettings: Json;
  production: { transportSocket: Json; protocolOptions: Json };
  dev: { transportSocket: Json; protocolOptions: Json };
  /** The on-demand cluster's TLS: as dev's, with SNI and the SAN check from each request's Host. */
  onDemand: { transportSocket: Json; protocolOptions: Json };
  /** typed_per_filter_config of the dev virtual host: ext_authz off when the gateway does not authenticate dev routes. */
  devHost: Json;
  /**
   * typed_per_filter_config the dev virtual host adds with on-demand routes: the
   * upstream host taken from the path (`/<namespace>/<service>`).
   */
  onDemandHost: Json;
  /** The action of an on-demand route (one object per timeout and websocket setting). */
  onDemandAction(timeout: string, websocket: boolean): Json;
  /** typed_per_filter_config of a production virtual host: ext_authz off. */
  extAuthzOff: Json;
  websocketIdleTimeout: string;
  /**
   * typed_per_filter_config of a rate-limited route: `perSecond` for the whole
   * service (shared across the gateway pods), counted under `statPrefix`.
   * Routes with the same limit and prefix share one object.
   */
  rateLimited(perSecond: number, statPrefix: string): Json;
  /**
   * typed_per_filter_config of a virtual host whose routes each get
   * `perSecond` (as for rateLimited) from one config: a bucket per route.
   */
  rateLimitedPerRoute(perSecond: number, statPrefix: string): Json;
  /** typed_per_filter_config of a /metrics route: ext_authz on again, and the service's rate limit (if any, as for rateLimited). */
  metricsAuthenticated(rateLimit: { perSecond: number; statPrefix: string } | undefined): Json;
  /** A virtual host's retry_policy, by number of retries. */
  retryPolicy(count: number): Json;
  /** A virtual host's request_headers_to_add that also retries resets of these methods' requests. */
  retryOnReset(methods: readonly string[]): Json[];
  /** A virtual host's response_headers_to_add for these security headers (undefined when there are none). */
  securityHeaders(headers: SecurityHeaders): Json[] | undefined;
}

/** Whether a production service's /metrics requires developer auth on a gateway: the service's choice, else the gateway's. */
export function metricsAuthenticated(
  settings: { authenticateMetrics: boolean },
  service: { authenticateMetrics?: boolean | undefined },
): boolean {
  return service.authenticateMetrics ?? settings.authenticateMetrics;
}

/**
 * Whether a gateway runs ext_authz: for its dev/PR routes, or for a
 * production service's /metrics. The bootstrap (the filter, its cluster, the
 * login redirect) and the routes (who turns it off) agree through this.
 */
export function extAuthzUse(
  config: Pick<RoutingConfig, "gateways" | "services">,
  gateway: GatewayName,
): { filter: boolean; devRoutes: boolean } {
  const settings = config.gateways[gateway];
  const metrics = config.services.some((s) => metricsAuthenticated(settings, s));
  return { filter: settings.authenticateDevRoutes || metrics, devRoutes: settings.authenticateDevRoutes };
}

export function gatewayContext(config: StackConfig, gateway: GatewayName, options?: RenderOptions): GatewayContext;
export function gatewayContext(config: RoutingConfig, gateway: GatewayName, options?: RenderOptions): XdsContext;
export function gatewayContext(config: RoutingConfig, gateway: GatewayName, options: RenderOptions = {}): XdsContext {
  const settings = config.gateways[gateway];
  const paths = options.paths ?? POD_PATHS;
  const rateLimits = new Map<string, Json>();
  const metricsRoutes = new Map<string, Json>();
  const retryPolicies = new Map<number, Json>();
  const resetRetries = new Map<string, Json[]>();
  const headerLists = new Map<string, Json[] | undefined>();
  const up = config.upstream;
  const protocolOptions = upstreamProtocolOptions(config);
  const production = { transportSocket: upstreamTransportSocket(paths, "verify"), protocolOptions };
  const devTls = config.devNamespaces.upstreamTls;
  const dev =
    devTls === "verify" ? production : { transportSocket: upstreamTransportSocket(paths, devTls), protocolOptions };
  const dnsSettings = {
    respect_dns_ttl: true,
    dns_refresh_rate: envoyDuration(up.dnsRefreshRate),
    dns_lookup_family: up.dnsLookupFamily,
  };
  const extAuthz = extAuthzUse(config, gateway);
  const extAuthzOff = { [FILTER.extAuthz]: ExtAuthzDisabled };
  const onDemandActions = new Map<string, Json>();
  const shared: SharedParts = {
    dnsCluster: { name: DNS_CLUSTER_TYPE, typed_config: { "@type": TYPE.dnsCluster, ...dnsSettings } },
    dnsSettings,
    connectTimeout: envoyDuration(up.connectTimeout),
    // Retries in flight at most this share of the active requests (at least 3), instead of a fixed max_retries.
    circuitBreakers: circuitBreakers(up, {
      retry_budget: { budget_percent: { value: up.retryBudgetPercent }, min_retry_concurrency: 3 },
    }),
    // Envoy charges a retry to the route's cluster, the on-demand cluster, but counts the active
    // requests on the sub-cluster that sends them: a budget there would stay at its minimum, 3
    // retries in flight for every dev/PR route of the gateway pod. At most maxRequests instead.
    onDemandCircuitBreakers: circuitBreakers(up, { max_retries: up.maxRequests }),
    outlierDetection: {
      consecutive_5xx: up.consecutive5xx,
      base_ejection_time: envoyDuration(up.baseEjectionTime),
      max_ejection_percent: up.maxEjectionPercent,
    },
    production,
    dev,
    onDemand: {
      transportSocket: upstreamTransportSocket(paths, devTls, "request host"),
      protocolOptions: upstreamProtocolOptions(config, devTls),
    },
    extAuthzOff,
    devHost: extAuthz.filter && !extAuthz.devRoutes ? extAuthzOff : {},
    onDemandHost: onDemandUpstreamHost(config.clusterDomain),
    onDemandAction: (timeout, websocket) =>
      once(onDemandActions, `${timeout} ${websocket}`, () => ({
        cluster: ON_DEMAND_CLUSTER,
        timeout,
        ...(websocket ? { idle_timeout: shared.websocketIdleTimeout } : {}),
      })),
    websocketIdleTimeout: envoyDuration(config.edge.websocketIdleTimeout),
    rateLimited: (perSecond, statPrefix) =>
      once(rateLimits, `${perSecond} ${statPrefix}`, () => ({
        [FILTER.localRateLimit]: localRateLimit(perSecond, perReplicaLimit(perSecond, settings.replicas), statPrefix),
      })),
    rateLimitedPerRoute: (perSecond, statPrefix) => ({
      [FILTER.localRateLimit]: rateLimitPerRoute(perSecond, perReplicaLimit(perSecond, settings.replicas), statPrefix),
    }),
    metricsAuthenticated: (rateLimit) =>
      once(metricsRoutes, rateLimit ? `${rateLimit.perSecond} ${rateLimit.statPrefix}` : "", () => ({
        [FILTER.extAuthz]: ExtAuthzEnabled,
        ...(rateLimit ? shared.rateLimited(rateLimit.perSecond, rateLimit.statPrefix) : {}),
      })),
    retryPolicy: (count) => once(retryPolicies, count, () => retryPolicy(count)),
    retryOnReset: (methods) => once(resetRetries, [...methods].sort().join(","), () => [retryOnResetHeader(methods)]),
    securityHeaders(headers) {
      // By name: the files must not depend on the order of the mapping's keys (the engine hands state back with its keys sorted).
      const list = Object.entries(headers)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .flatMap(([name, h]) =>
          h === false
            ? []
            : [
                {
                  header: { key: name, value: formatLiteral(h.value) },
                  append_action: h.replace ? "OVERWRITE_IF_EXISTS_OR_ADD" : "ADD_IF_ABSENT",
                },
              ],
        );
      const key = JSON.stringify(list);
      if (!headerLists.has(key)) headerLists.set(key, list.length ? list : undefined);
      return headerLists.get(key);
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
    extAuthz,
    shared,
  };
}

/** The value cached under `key`, made by `make` the first time: parts alike are one object, written once. */
function once<K, V>(cache: Map<K, V>, key: K, make: () => V): V {
  if (!cache.has(key)) cache.set(key, make());
  return cache.get(key)!;
}

/** A cluster's circuit breakers (the default priority's): connections, pending and active requests, and `retries`. */
function circuitBreakers(up: RoutingConfig["upstream"], retries: Json): Json {
  return {
    thresholds: [
      {
        max_connections: up.maxConnections,
        max_pending_requests: up.maxPendingRequests,
        max_requests: up.maxRequests,
        ...retries,
        track_remaining: true,
      },
    ],
  };
}

/**
 * Retries that are safe for every method: the request never reached a pod
 * (connect failure, a refused HTTP/2 stream, a reset before any of it was
 * sent). Each retry goes to another pod (previous_hosts), after Envoy's
 * default backoff (25 ms doubling, at most 250 ms), within the clusters'
 * retry limits. The pick is made again up to 5 times while it lands on a pod
 * already tried: with two pods a random pick hits the failed one half the
 * time, so 3 re-picks sent 1 retry in 16 back to it (1 in 64 now).
 */
function retryPolicy(count: number): Json {
  return {
    retry_on: "connect-failure,refused-stream,reset-before-request",
    num_retries: count,
    retry_host_predicate: [
      { name: "envoy.retry_host_predicates.previous_hosts", typed_config: { "@type": TYPE.previousHosts } },
    ],
    host_selection_retry_max_attempts: 5,
  };
}

/**
 * Resets after the request was sent (before any response) are retried only
 * for idempotent methods: Envoy's retry policy cannot tell methods apart, so
 * the virtual host adds `x-envoy-retry-on: reset` to their requests before
 * the router reads its retry policy (request headers are finalized first),
 * and the router consumes the header (it never reaches the pod). The value
 * is empty, so no header is added, for every other method. Clients cannot
 * send the header themselves: Envoy strips x-envoy-* from external requests.
 */
function retryOnResetHeader(methods: readonly string[]): Json {
  const list = methods.map((m) => `'${m}'`).join(", ");
  return {
    header: { key: "x-envoy-retry-on", value: `%CEL(request.method in [${list}] ? 'reset' : '')%` },
    append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
  };
}

/** One gateway pod's share of a whole-service limit at `replicas` pods (at least 1): the burst a pod's bucket holds. */
export function perReplicaLimit(rateLimit: number, replicas: number): number {
  return Math.max(1, Math.ceil(rateLimit / replicas));
}
