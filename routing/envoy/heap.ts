// Envoy's heap, sized from the gateway pod's memory limit: the overload
// manager's limit, and the share of it that on-demand dev/PR sub-clusters may
// take, so that no amount of dev/PR traffic can push a gateway pod into the
// overload action that stops all its requests, production's with them.
import { memoryBytes } from "./units.js";

/** The heap the overload manager allows, as a share of the container's memory limit (the rest: Envoy's own overhead). */
export const HEAP_SHARE_OF_MEMORY_LIMIT = 0.8;

/** The share of that heap that on-demand sub-clusters may fill; the rest is production's. */
export const ON_DEMAND_SHARE_OF_HEAP = 0.5;

/**
 * What one on-demand sub-cluster adds to Envoy's heap, rounded up: 56 KiB
 * measured (Envoy 1.40, two workers, with its TLS context, outlier detection
 * and the dev/PR stats kept; `bench/dev-routes.ts --parts`), about 3 KiB of it
 * per worker: it holds up to 4 workers (a CPU limit of 4). With more, the
 * sub-clusters may take a little more than their share (8 workers: under 60%
 * of the heap), still far from the overload manager's limit.
 * test/envoy/on-demand-memory.test.ts fails if an Envoy needs more.
 */
export const SUB_CLUSTER_HEAP_BYTES = 64 * 1024;

/**
 * The most sub-clusters the on-demand cluster keeps, whatever the memory:
 * more than an xDS ConfigMap holds routes (and the bound of every gateway
 * before memory sized it).
 */
export const MAX_ON_DEMAND_SUB_CLUSTERS = 16_384;

/** How long an on-demand sub-cluster unused stays (Envoy's default, written out: the 503 past the bound names it). */
export const ON_DEMAND_SUB_CLUSTER_TTL_SECONDS = 300;

/** The overload manager's heap limit for a container memory limit ("2Gi"), in bytes. */
export function heapLimitBytes(memoryLimit: string): number {
  return Math.floor(memoryBytes(memoryLimit) * HEAP_SHARE_OF_MEMORY_LIMIT);
}

/**
 * The most on-demand sub-clusters (dev/PR Services requested within the
 * sub-cluster TTL) a gateway pod with this memory limit keeps: as many as
 * ON_DEMAND_SHARE_OF_HEAP of its heap holds, at least 1, at most
 * MAX_ON_DEMAND_SUB_CLUSTERS. A request for one more Service gets Envoy's 503
 * "Sub cluster overflow" (subClusterOverflowReply rewrites it) until one goes
 * unused for ON_DEMAND_SUB_CLUSTER_TTL_SECONDS.
 */
export function maxOnDemandSubClusters(memoryLimit: string): number {
  const fit = Math.floor((heapLimitBytes(memoryLimit) * ON_DEMAND_SHARE_OF_HEAP) / SUB_CLUSTER_HEAP_BYTES);
  return Math.min(MAX_ON_DEMAND_SUB_CLUSTERS, Math.max(1, fit));
}
