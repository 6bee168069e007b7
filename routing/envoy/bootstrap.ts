// The bootstrap (envoy.yaml): node, admin on loopback, the static listeners
// and clusters, CDS from the watched xDS directory, the overload manager, the
// stats kept.
import { heapLimitBytes } from "./heap.js";
import type { GatewayContext } from "./context.js";
import { acmeCluster, adminCluster, extAuthzCluster, gatewayPodsCluster, onDemandCluster } from "./clusters.js";
import { healthListener, httpListener, httpsListener, metricsListener } from "./listeners.js";
import { statsSettings } from "./stats.js";
import { STATIC_CLUSTER, TYPE, type Json } from "./types.js";

export function bootstrap(ctx: GatewayContext): Json {
  const clusters: Json[] = [];
  if (ctx.extAuthz.filter) clusters.push(extAuthzCluster(ctx));
  if (ctx.settings.acme) clusters.push(acmeCluster(ctx));
  clusters.push(adminCluster(ctx));
  clusters.push(gatewayPodsCluster(ctx));
  if (ctx.config.devNamespaces.clusters === "on-demand") clusters.push(onDemandCluster(ctx));
  const doc: Json = {
    node: { id: ctx.gateway, cluster: ctx.gateway },
    admin: { address: { socket_address: { address: "127.0.0.1", port_value: ctx.ports.admin } } },
    static_resources: {
      listeners: [httpListener(ctx), httpsListener(ctx), healthListener(ctx), metricsListener(ctx)],
      clusters,
    },
    // The gateway's pods: each route's rate limit is shared across them (local_cluster_rate_limit).
    cluster_manager: { local_cluster_name: STATIC_CLUSTER.gatewayPods },
    dynamic_resources: {
      cds_config: {
        resource_api_version: "V3",
        path_config_source: { path: `${ctx.paths.xdsDir}/cds.yaml`, watched_directory: { path: ctx.paths.xdsDir } },
      },
    },
    overload_manager: overloadManager(ctx),
    layered_runtime: { layers: [{ name: "admin", admin_layer: {} }] },
    typed_dns_resolver_config: dnsResolver(ctx.dnsResolver),
    ...statsSettings(ctx.config),
  };
  return doc;
}

/**
 * Heap: shrink at 95% and stop accepting requests at 98% of the heap limit
 * (heapLimitBytes: 80% of the container's memory limit). Connections: at most edge.maxConnections
 * downstream (health and metrics listeners exempt).
 */
export function overloadManager(ctx: GatewayContext): Json {
  const heap = heapLimitBytes(ctx.settings.resources.limits.memory);
  const heapMonitor = "envoy.resource_monitors.fixed_heap";
  return {
    refresh_interval: "0.25s",
    resource_monitors: [
      { name: heapMonitor, typed_config: { "@type": TYPE.fixedHeap, max_heap_size_bytes: heap } },
      {
        name: "envoy.resource_monitors.global_downstream_max_connections",
        typed_config: {
          "@type": TYPE.downstreamConnections,
          max_active_downstream_connections: ctx.config.edge.maxConnections,
        },
      },
    ],
    actions: [
      { name: "envoy.overload_actions.shrink_heap", triggers: [{ name: heapMonitor, threshold: { value: 0.95 } }] },
      {
        name: "envoy.overload_actions.stop_accepting_requests",
        triggers: [{ name: heapMonitor, threshold: { value: 0.98 } }],
      },
    ],
  };
}

/**
 * The resolver of every DNS cluster: c-ares, one instance for the whole
 * gateway (a resolver config on each cluster would give each its own). Names
 * are asked as written, never with the resolv.conf search domains appended:
 * c-ares skips the search list when ARES_FLAG_NOSEARCH is set, which is what
 * no_default_search_domain sets, so `ndots:5` of a pod's resolv.conf never
 * turns one lookup of <svc>.<ns>.svc.<clusterDomain> into one per search
 * domain. The DNS servers are the pod's (resolv.conf) unless `server` is given.
 */
function dnsResolver(server: { address: string; port: number } | undefined): Json {
  return {
    name: "envoy.network.dns_resolver.cares",
    typed_config: {
      "@type": TYPE.caresResolver,
      ...(server ? { resolvers: [{ socket_address: { address: server.address, port_value: server.port } }] } : {}),
      dns_resolver_options: { no_default_search_domain: true },
    },
  };
}
