// The two gateways: what sets them apart (their roles), the settings of each
// (replicas, resources, Service, certificates, features), and their names.
import { z } from "zod";
import { annotations, cidr, containerResources, dnsLabel, dnsName, intIn, podSelector, refuse } from "./primitives.js";
import {
  BROWSER_SECURITY_HEADERS,
  mergeSecurityHeaders,
  securityHeaders,
  type SecurityHeaders,
} from "./security-headers.js";

const gatewayService = z.strictObject({
  /** Kubernetes Service type in front of the gateway pods. */
  type: z
    .enum(["LoadBalancer", "NodePort", "ClusterIP"], { error: "must be LoadBalancer, NodePort or ClusterIP" })
    .default("LoadBalancer"),
  /** A static load-balancer IP (optional). */
  loadBalancerIP: z.ipv4({ error: "must be an IPv4 address" }).optional(),
  /** Annotations for the Service (cloud load-balancer settings, such as an internal LB). */
  annotations: annotations.default({}),
  /**
   * Labels of the pods the Service sends traffic to instead of the gateway's Envoy pods:
   * the old gateway's, while adopting a running cluster (docs/adopting.md). Unset, the
   * Envoy pods; removing it is the cutover, setting it again the way back.
   */
  servedBy: podSelector.optional(),
});

const gatewayTls = z.strictObject({
  /** Secret (type kubernetes.io/tls) with the certificate the TLS listener serves. */
  serverSecret: dnsLabel,
  /** Secret with tls.crt/tls.key (client certificate) and ca.crt (upstream CA) for upstream TLS. */
  upstreamSecret: dnsLabel,
});

/**
 * What sets the two gateways apart: which domain they serve and the defaults
 * of their settings. Nothing else in the code asks which gateway is which;
 * everything that differs is a setting of each gateway.
 */
export const GATEWAY_ROLES = {
  /** Internet-facing: <service>.<domain>, the services' aliases, ACME challenges. */
  gateway: {
    domainKey: "domain",
    serveAliases: true,
    acme: true,
    compression: false,
    authenticateMetrics: true,
    securityHeaders: BROWSER_SECURITY_HEADERS,
  },
  /** In-cluster clients: <service>.<internalDomain>, compressed responses. */
  "internal-gateway": {
    domainKey: "internalDomain",
    serveAliases: false,
    acme: false,
    compression: true,
    authenticateMetrics: false,
    securityHeaders: {} as SecurityHeaders,
  },
} as const;

type GatewayRole = (typeof GATEWAY_ROLES)[keyof typeof GATEWAY_ROLES];

export const gatewaySettings = (role: GatewayRole) =>
  z
    .strictObject({
      /** Replicas when idle: the HPA's minimum; a pod's rate-limit bucket holds the service's limit divided by it (its burst). */
      replicas: intIn(1, 100, "a whole number of replicas"),
      /** The HPA's maximum replicas (default: 3 x replicas). */
      maxReplicas: intIn(1, 100, "a whole number of replicas").optional(),
      /** Average CPU utilisation (percent of requests) the HPA aims for. */
      targetCpuUtilization: intIn(1, 100, "a percentage").default(70),
      /** Container resources. */
      resources: containerResources,
      /** The Service that exposes the gateway. */
      service: gatewayService.prefault({}),
      /**
       * Address ranges clients reach the listeners (80/443) from, for its NetworkPolicy: the load
       * balancer's and the clients' (the Service keeps client addresses). Unset: from anywhere.
       */
      listenersFrom: z
        .array(cidr, { error: "must be a list of address ranges" })
        .min(1, { error: "must list at least one address range (leave it out for anywhere)" })
        .optional(),
      /** Secrets with the gateway's certificates. */
      tls: gatewayTls,
      /** Compress responses (gzip) for clients that accept it. */
      compression: z.boolean({ error: "must be true or false" }).default(role.compression),
      /** Serve ACME HTTP-01 challenges on the plain-HTTP listener. */
      acme: z.boolean({ error: "must be true or false" }).default(role.acme),
      /** Serve the production services' aliases (extra hosts such as the bare domain). */
      serveAliases: z.boolean({ error: "must be true or false" }).default(role.serveAliases),
      /** Require ext_authz on dev/PR routes (production routes never call it). */
      authenticateDevRoutes: z.boolean({ error: "must be true or false" }).default(true),
      /** Host that serves dev/PR routes (default internal.<domain of this gateway>). */
      devHost: dnsName.optional(),
      /** Production services' /metrics (and below) require developer auth (ext_authz), unless a service says otherwise. */
      authenticateMetrics: z.boolean({ error: "must be true or false" }).default(role.authenticateMetrics),
      /** Browser security headers added to responses, merged over the role's defaults (false drops one). */
      securityHeaders: securityHeaders.transform((h) => mergeSecurityHeaders(role.securityHeaders, h)).prefault({}),
    })
    .superRefine(
      (g, ctx) => {
        // Two good replica counts are compared; a bad one is reported as such, once.
        const good = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 100;
        if (good(g?.maxReplicas) && good(g?.replicas) && g.maxReplicas < g.replicas) {
          refuse(ctx, `must be at least replicas (${g.replicas})`, g.maxReplicas, ["maxReplicas"]);
        }
      },
      { when: () => true },
    );

/** Each gateway's settings with what its role decides filled in: the domain it serves and its dev/PR host. */
export function resolveGateways<G extends { devHost?: string | undefined }>(c: {
  domain: string;
  internalDomain: string;
  gateways: Record<GatewayName, G>;
}): Record<GatewayName, G & { domain: string; devHost: string }> {
  const out = {} as Record<GatewayName, G & { domain: string; devHost: string }>;
  for (const gateway of GATEWAYS) {
    const settings = c.gateways[gateway];
    const domain = c[GATEWAY_ROLES[gateway].domainKey];
    out[gateway] = { ...settings, domain, devHost: settings.devHost ?? `internal.${domain}` };
  }
  return out;
}

/** The two gateways, in the order they are declared and rendered. */
export type GatewayName = keyof typeof GATEWAY_ROLES;
export const GATEWAYS = Object.keys(GATEWAY_ROLES) as GatewayName[];

/**
 * The headless Service of a gateway's own pods (`<gateway>-pods`): DNS gives
 * every ready gateway pod, which is how each Envoy learns how many share the
 * service-wide rate limits. No production service may take its name.
 */
export function gatewayPodsService(gateway: string): string {
  return `${gateway}-pods`;
}
