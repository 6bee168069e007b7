// Clusters: one DNS cluster per version of a routed service (CDS), and the
// static clusters of the bootstrap (ext_authz, ACME solver, admin for metrics).
// DNS clusters use Envoy's DNS cluster extension (envoy.cluster.dns) with
// strict DNS semantics: every address DNS returns is an endpoint. The resolver
// itself (c-ares, no search-domain walk) is the bootstrap's, shared by all.
import { gatewayPodsService, ON_DEMAND_CLUSTER, serviceHost, UPSTREAM_PORT } from "../names.js";
import type { RoutedService, RoutingTable, ServiceVersion } from "../table.js";
import type { GatewayContext, XdsContext } from "./context.js";
import { maxOnDemandSubClusters, ON_DEMAND_SUB_CLUSTER_TTL_SECONDS } from "./heap.js";
import { FORWARD_PROXY_CLUSTER_TYPE, STATIC_CLUSTER, TYPE, type Json } from "./types.js";

/**
 * Every routed cluster of the table: production first, then dev, each in
 * table order. The on-demand cluster is not one of them: it is a static
 * cluster of the bootstrap (onDemandCluster).
 */
export function serviceClusters(ctx: XdsContext, table: RoutingTable): Json[] {
  const clusters: Json[] = [];
  for (const s of table.production) for (const v of s.versions) clusters.push(serviceCluster(ctx, s, v, "production"));
  for (const s of table.dev)
    for (const v of s.versions) if (v.cluster !== ON_DEMAND_CLUSTER) clusters.push(serviceCluster(ctx, s, v, "dev"));
  return clusters;
}

/** Whether the table sends a dev/PR service through the on-demand cluster (its one version's cluster). */
export function routedOnDemand(service: RoutedService): boolean {
  return service.versions.length === 1 && service.versions[0]!.cluster === ON_DEMAND_CLUSTER;
}

/**
 * The on-demand cluster of dev/PR routes (Envoy's dynamic forward proxy with
 * sub-clusters): the first request to a Service's name makes a sub-cluster
 * that is a strict DNS cluster on it, with everything a service cluster has
 * (every pod an endpoint, the load balancing policy, TLS with SNI and the
 * SAN check from that name, circuit breakers, outlier detection, bounded
 * buffers); a sub-cluster unused for ON_DEMAND_SUB_CLUSTER_TTL_SECONDS goes. It
 * keeps as many sub-clusters as the share of the pod's heap set aside for
 * them holds (maxOnDemandSubClusters).
 *
 * A static cluster of the bootstrap, beside the forward proxy filters that use
 * it, not a CDS cluster: Envoy applies a route update at once but a cluster
 * that CDS adds only once it has warmed, so one swap of the xDS files that
 * both adds the cluster and moves routes onto it answered those routes 503
 * (no cluster) for some milliseconds (a gateway pod that started with the
 * per-service files and then got the on-demand ones). In the bootstrap it is
 * there before the pod is ready, and its size follows the pod's own memory
 * limit: both change only with a new bootstrap, so with a pod roll.
 */
export function onDemandCluster(ctx: GatewayContext): Json {
  const shared = ctx.shared;
  const insecure = ctx.config.devNamespaces.upstreamTls === "encrypt-only";
  return {
    name: ON_DEMAND_CLUSTER,
    cluster_type: {
      name: FORWARD_PROXY_CLUSTER_TYPE,
      typed_config: {
        "@type": TYPE.forwardProxyCluster,
        sub_clusters_config: {
          lb_policy: ctx.config.upstream.lbPolicy,
          max_sub_clusters: maxOnDemandSubClusters(ctx.settings.resources.limits.memory),
          sub_cluster_ttl: `${ON_DEMAND_SUB_CLUSTER_TTL_SECONDS}s`,
          dns_cluster_config: shared.dnsSettings,
        },
        // encrypt-only: no certificate check, so no SAN check against the host either.
        ...(insecure ? { allow_insecure_cluster_options: true } : {}),
      },
    },
    connect_timeout: shared.connectTimeout,
    lb_policy: "CLUSTER_PROVIDED",
    transport_socket: shared.onDemand.transportSocket,
    typed_extension_protocol_options: shared.onDemand.protocolOptions,
    circuit_breakers: shared.onDemandCircuitBreakers,
    outlier_detection: shared.outlierDetection,
    per_connection_buffer_limit_bytes: ctx.config.edge.bufferLimitBytes,
  };
}

/**
 * The pods of one version: strict DNS on the headless Service's name (DNS
 * returns every ready pod IP, TTL honoured, only the configured address
 * family asked), port 443, upstream TLS, circuit breakers, outlier detection,
 * bounded per-connection buffers.
 */
export function serviceCluster(
  ctx: XdsContext,
  service: RoutedService,
  version: ServiceVersion,
  kind: "production" | "dev",
): Json {
  const name = version.cluster;
  const shared = ctx.shared;
  const cluster: Json = {
    "@type": TYPE.cluster,
    name,
    cluster_type: shared.dnsCluster,
    load_assignment: loadAssignment(
      name,
      serviceHost(version.service, service.namespace, ctx.config.clusterDomain),
      UPSTREAM_PORT,
    ),
    connect_timeout: shared.connectTimeout,
  };
  if (ctx.config.upstream.lbPolicy !== "ROUND_ROBIN") cluster.lb_policy = ctx.config.upstream.lbPolicy;
  Object.assign(cluster, {
    transport_socket: shared[kind].transportSocket,
    typed_extension_protocol_options: shared[kind].protocolOptions,
    circuit_breakers: shared.circuitBreakers,
    outlier_detection: shared.outlierDetection,
    per_connection_buffer_limit_bytes: ctx.config.edge.bufferLimitBytes,
  });
  return cluster;
}

/** A bootstrap cluster for one in-cluster Service, resolved like the routed ones, with the same bounded buffers. */
function serviceDnsCluster(
  ctx: XdsContext,
  name: string,
  target: { service: string; namespace: string; port: number },
): Json {
  return {
    name,
    cluster_type: ctx.shared.dnsCluster,
    connect_timeout: ctx.shared.connectTimeout,
    load_assignment: loadAssignment(
      name,
      serviceHost(target.service, target.namespace, ctx.config.clusterDomain),
      target.port,
    ),
    per_connection_buffer_limit_bytes: ctx.config.edge.bufferLimitBytes,
  };
}

/** The ext_authz service (HTTPS, verified like production upstreams). */
export function extAuthzCluster(ctx: GatewayContext): Json {
  return {
    ...serviceDnsCluster(ctx, STATIC_CLUSTER.extAuthz, ctx.config.auth),
    transport_socket: ctx.shared.production.transportSocket,
    typed_extension_protocol_options: ctx.shared.production.protocolOptions,
    circuit_breakers: ctx.shared.circuitBreakers,
  };
}

/** The ACME HTTP-01 solver (plain HTTP inside the cluster). */
export function acmeCluster(ctx: GatewayContext): Json {
  return serviceDnsCluster(ctx, STATIC_CLUSTER.acme, ctx.config.acme);
}

/**
 * The gateway's own pods (the bootstrap's local cluster): strict DNS on the
 * headless Service <gateway>-pods, so every Envoy counts the ready gateway
 * pods and takes its share of each service-wide rate limit. Envoy never sends
 * traffic to it; the port is the TLS listener's, for the record.
 */
export function gatewayPodsCluster(ctx: GatewayContext): Json {
  const host = serviceHost(gatewayPodsService(ctx.gateway), ctx.config.namespace, ctx.config.clusterDomain);
  return {
    name: STATIC_CLUSTER.gatewayPods,
    cluster_type: ctx.shared.dnsCluster,
    connect_timeout: ctx.shared.connectTimeout,
    load_assignment: loadAssignment(STATIC_CLUSTER.gatewayPods, host, ctx.ports.https),
    per_connection_buffer_limit_bytes: ctx.config.edge.bufferLimitBytes,
  };
}

/** Envoy's own admin interface, reached only through the metrics listener's one route. */
export function adminCluster(ctx: GatewayContext): Json {
  return {
    name: STATIC_CLUSTER.admin,
    type: "STATIC",
    connect_timeout: "1s",
    load_assignment: loadAssignment(STATIC_CLUSTER.admin, "127.0.0.1", ctx.ports.admin),
    per_connection_buffer_limit_bytes: ctx.config.edge.bufferLimitBytes,
  };
}

function loadAssignment(clusterName: string, address: string, port: number): Json {
  return {
    cluster_name: clusterName,
    endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address, port_value: port } } } }] }],
  };
}
