// Envoy documents are built as plain JSON objects in Envoy's own field names
// (snake_case, as in Envoy's docs), then validated against Envoy's API.

export type Json = { [key: string]: unknown };

const T = "type.googleapis.com/";
/** Type URLs of every Envoy message the translation emits. */
export const TYPE = {
  cluster: `${T}envoy.config.cluster.v3.Cluster`,
  dnsCluster: `${T}envoy.extensions.clusters.dns.v3.DnsCluster`,
  forwardProxyCluster: `${T}envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig`,
  forwardProxy: `${T}envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig`,
  forwardProxyPerRoute: `${T}envoy.extensions.filters.http.dynamic_forward_proxy.v3.PerRouteConfig`,
  headerMutationPerRoute: `${T}envoy.extensions.filters.http.header_mutation.v3.HeaderMutationPerRoute`,
  routeConfiguration: `${T}envoy.config.route.v3.RouteConfiguration`,
  secret: `${T}envoy.extensions.transport_sockets.tls.v3.Secret`,
  hcm: `${T}envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager`,
  router: `${T}envoy.extensions.filters.http.router.v3.Router`,
  extAuthz: `${T}envoy.extensions.filters.http.ext_authz.v3.ExtAuthz`,
  extAuthzPerRoute: `${T}envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute`,
  headerMutation: `${T}envoy.extensions.filters.http.header_mutation.v3.HeaderMutation`,
  celFormatter: `${T}envoy.extensions.formatter.cel.v3.Cel`,
  connectionLimit: `${T}envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit`,
  previousHosts: `${T}envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate`,
  localRateLimit: `${T}envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit`,
  exprDescriptor: `${T}envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor`,
  compressor: `${T}envoy.extensions.filters.http.compressor.v3.Compressor`,
  gzip: `${T}envoy.extensions.compression.gzip.compressor.v3.Gzip`,
  healthCheck: `${T}envoy.extensions.filters.http.health_check.v3.HealthCheck`,
  downstreamTls: `${T}envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext`,
  upstreamTls: `${T}envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext`,
  httpProtocolOptions: `${T}envoy.extensions.upstreams.http.v3.HttpProtocolOptions`,
  stdoutAccessLog: `${T}envoy.extensions.access_loggers.stream.v3.StdoutAccessLog`,
  celAccessLogFilter: `${T}envoy.extensions.access_loggers.filters.cel.v3.ExpressionFilter`,
  fixedHeap: `${T}envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig`,
  downstreamConnections: `${T}envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig`,
  caresResolver: `${T}envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig`,
} as const;

/** The cluster extension that resolves its endpoints by DNS (STRICT_DNS or LOGICAL_DNS semantics). */
export const DNS_CLUSTER_TYPE = "envoy.cluster.dns";

/** The cluster extension that makes a sub-cluster per upstream host on demand. */
export const FORWARD_PROXY_CLUSTER_TYPE = "envoy.clusters.dynamic_forward_proxy";

/** Names of the HTTP filters, as used in typed_per_filter_config. */
export const FILTER = {
  headerMutation: "envoy.filters.http.header_mutation",
  /** A second header_mutation: sets the on-demand dev routes' upstream host (its own name, so the login filter's config stays its own). */
  devUpstreamHost: "envoy-gateways.dev-upstream-host",
  forwardProxy: "envoy.filters.http.dynamic_forward_proxy",
  extAuthz: "envoy.filters.http.ext_authz",
  localRateLimit: "envoy.filters.http.local_ratelimit",
  compressor: "envoy.filters.http.compressor",
  healthCheck: "envoy.filters.http.health_check",
  router: "envoy.filters.http.router",
} as const;

/**
 * Names of the static clusters in the bootstrap. None contains `_`, so none
 * can collide with a routed cluster (`<namespace>_<service>`).
 */
export const STATIC_CLUSTER = {
  extAuthz: "ext-authz",
  acme: "acme-solver",
  admin: "envoy-admin",
  gatewayPods: "gateway-pods",
} as const;

/** Names of the SDS secrets (one file each in the bootstrap directory). */
export const SECRET = {
  server: "server-cert",
  upstreamClient: "upstream-client-cert",
  upstreamCa: "upstream-ca",
} as const;

/** Name of the route configuration the TLS listener loads by RDS. */
export const HTTPS_ROUTE_CONFIG = "https";

/** Name of its virtual host of the dev/PR routes (a production service's virtual host is named after the service). */
export const DEV_VIRTUAL_HOST = "dev";

/** Where the files live in the gateway pod (and where the test harness puts them instead). */
export interface EnvoyPaths {
  /** Bootstrap ConfigMap mount: envoy.yaml and the sds-*.yaml files. */
  bootstrapDir: string;
  /** xDS ConfigMap mount (cds.yaml, rds.yaml), watched for the kubelet's ..data swap. */
  xdsDir: string;
  /** Secret with the served certificate (tls.crt, tls.key). */
  serverTlsDir: string;
  /** Secret with the upstream client certificate and CA (tls.crt, tls.key, ca.crt). */
  upstreamTlsDir: string;
}

export const POD_PATHS: EnvoyPaths = {
  bootstrapDir: "/etc/envoy/bootstrap",
  xdsDir: "/etc/envoy/xds",
  serverTlsDir: "/etc/envoy/tls/server",
  upstreamTlsDir: "/etc/envoy/tls/upstream",
};

/** Container ports: unprivileged; the gateway Service maps 80 and 443 to http and https. */
export interface ListenerPorts {
  http: number;
  https: number;
  /** Readiness (fails while draining). */
  health: number;
  /** Prometheus: serves only /stats/prometheus. */
  metrics: number;
  /** Admin interface, on 127.0.0.1 only. */
  admin: number;
}

export const POD_PORTS: ListenerPorts = { http: 8080, https: 8443, health: 8081, metrics: 9102, admin: 9901 };

/** The xDS and bootstrap files of a gateway, by file name. */
export const XDS_FILES = { cds: "cds.yaml", rds: "rds.yaml" } as const;
export const BOOTSTRAP_FILE = "envoy.yaml";
export const SDS_FILES = {
  [SECRET.server]: "sds-server-cert.yaml",
  [SECRET.upstreamClient]: "sds-upstream-client-cert.yaml",
  [SECRET.upstreamCa]: "sds-upstream-ca.yaml",
} as const;
