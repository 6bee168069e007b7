// The routing part of the stack config: what the routes resources are given.
import { z } from "zod";
import { edge } from "./edge.js";
import { dnsLabel, dnsName, intIn, memoryQuantity } from "./primitives.js";
import type { GatewaySettings, StackConfig } from "./schema.js";
import { securityHeaders } from "./security-headers.js";
import { devNamespaces, productionService, shift } from "./services.js";
import { upstream } from "./upstream.js";

/**
 * The stack config the xDS files (cds.yaml, rds.yaml) are rendered from: an
 * allow-list of keys, so nothing else (secrets, the image, resources, the
 * bootstrap's settings) reaches the routes resources' inputs and state.
 */
const gatewayRouting = z.strictObject({
  /** Domain of this gateway's production hosts: <service>.<domain>. */
  domain: dnsName,
  /** Host of the dev/PR routes. */
  devHost: dnsName,
  serveAliases: z.boolean({ error: "must be true or false" }),
  authenticateDevRoutes: z.boolean({ error: "must be true or false" }),
  /** The autoscaler's minimum: a pod's rate-limit bucket holds the service's limit divided by it. */
  replicas: intIn(1, 100, "a whole number of replicas"),
  authenticateMetrics: z.boolean({ error: "must be true or false" }),
  /** The gateway's security headers, defaults already merged in. */
  securityHeaders,
  /**
   * Read from routes state only, never rendered from: releases that kept the
   * on-demand cluster in cds.yaml recorded the pod's memory limit, which sized
   * it. The cluster is in the bootstrap now, sized there.
   */
  resources: z.strictObject({ limits: z.strictObject({ memory: memoryQuantity }) }).optional(),
});

export const routingConfigSchema = z.strictObject({
  clusterDomain: dnsName,
  namespace: dnsLabel,
  gateways: z.strictObject({ gateway: gatewayRouting, "internal-gateway": gatewayRouting }),
  services: z.array(
    productionService.pick({
      name: true,
      rateLimit: true,
      websocket: true,
      aliases: true,
      versions: true,
      routeTimeout: true,
      retries: true,
      retryResetMethods: true,
      authenticateMetrics: true,
      securityHeaders: true,
    }),
  ),
  shifts: z.array(shift),
  devNamespaces: devNamespaces.pick({ rateLimit: true, upstreamTls: true, clusters: true }),
  upstream,
  edge: edge.pick({
    bufferLimitBytes: true,
    websocketIdleTimeout: true,
    http2MaxConcurrentStreams: true,
    http2InitialStreamWindowSize: true,
    http2InitialConnectionWindowSize: true,
  }),
});

export type RoutingConfig = z.output<typeof routingConfigSchema>;

/** The routing part of a stack's config: exactly the keys of `routingConfigSchema`. */
export function routingConfig(config: StackConfig): RoutingConfig {
  const gateway = (g: GatewaySettings) => ({
    domain: g.domain,
    devHost: g.devHost,
    serveAliases: g.serveAliases,
    authenticateDevRoutes: g.authenticateDevRoutes,
    replicas: g.replicas,
    authenticateMetrics: g.authenticateMetrics,
    securityHeaders: structuredClone(g.securityHeaders),
  });
  return {
    clusterDomain: config.clusterDomain,
    namespace: config.namespace,
    gateways: {
      gateway: gateway(config.gateways.gateway),
      "internal-gateway": gateway(config.gateways["internal-gateway"]),
    },
    services: config.services.map((s) => ({
      name: s.name,
      ...(s.rateLimit !== undefined ? { rateLimit: s.rateLimit } : {}),
      websocket: s.websocket,
      aliases: [...s.aliases],
      ...(s.versions ? { versions: [...s.versions] } : {}),
      ...(s.routeTimeout !== undefined ? { routeTimeout: s.routeTimeout } : {}),
      ...(s.retries !== undefined ? { retries: s.retries } : {}),
      ...(s.retryResetMethods ? { retryResetMethods: [...s.retryResetMethods] } : {}),
      ...(s.authenticateMetrics !== undefined ? { authenticateMetrics: s.authenticateMetrics } : {}),
      ...(s.securityHeaders ? { securityHeaders: structuredClone(s.securityHeaders) } : {}),
    })),
    shifts: config.shifts.map((s) => ({ ...s })),
    devNamespaces: {
      rateLimit: config.devNamespaces.rateLimit,
      upstreamTls: config.devNamespaces.upstreamTls,
      clusters: config.devNamespaces.clusters,
    },
    upstream: { ...config.upstream, retryResetMethods: [...config.upstream.retryResetMethods] },
    edge: {
      bufferLimitBytes: config.edge.bufferLimitBytes,
      websocketIdleTimeout: config.edge.websocketIdleTimeout,
      http2MaxConcurrentStreams: config.edge.http2MaxConcurrentStreams,
      http2InitialStreamWindowSize: config.edge.http2InitialStreamWindowSize,
      http2InitialConnectionWindowSize: config.edge.http2InitialConnectionWindowSize,
    },
  };
}
