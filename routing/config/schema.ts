// The stack config model: every value a stack can vary, with its default and
// what is allowed. Pulumi stores these under the project namespace
// (`envoy-gateways:<key>` in Pulumi.<stack>.yaml); `parseStackConfig` turns
// the raw values into a `StackConfig` or one error listing every bad value.
//
// This file assembles the schema from its parts (primitives.ts, images.ts,
// security-headers.ts, upstream.ts, edge.ts, gateways.ts, services.ts,
// route-sync.ts) and the
// services the gateways call (auth, ACME), and exports what the rest of the
// code reads: cross-key.ts has the checks across keys, routing-config.ts the
// routing part the routes resources are given.
import { z } from "zod";
import { edge, resolveEdge, tls } from "./edge.js";
import { GATEWAY_ROLES, gatewaySettings, resolveGateways } from "./gateways.js";
import { envoyImage } from "./images.js";
import { cidr, dnsLabel, dnsName, duration, matchLabels, port } from "./primitives.js";
import { routeSync } from "./route-sync.js";
import { devNamespaces, productionService, shift } from "./services.js";
import { upstream } from "./upstream.js";

export { crossKeyProblems, type CrossKeyProblem } from "./cross-key.js";
export { GATEWAY_ROLES, GATEWAYS, gatewayPodsService, type GatewayName } from "./gateways.js";
export { isPinnedImage, parseImageReference } from "./images.js";
export { DNS_LABEL, dnsLabel } from "./primitives.js";
export { routingConfig, routingConfigSchema, type RoutingConfig } from "./routing-config.js";
export {
  BROWSER_SECURITY_HEADERS,
  mergeSecurityHeaders,
  type SecurityHeader,
  type SecurityHeaders,
} from "./security-headers.js";
export { IDEMPOTENT_METHODS } from "./upstream.js";
export { MODERN_CIPHERS } from "./edge.js";

const auth = z.strictObject({
  /** Service (in `namespace`) that checks dev/PR requests (ext_authz over HTTPS). */
  service: dnsLabel.default("auth"),
  namespace: dnsLabel.default("default"),
  port: port.default(443),
  /** The port its pods listen on, if the Service maps `port` to another (what the gateways' NetworkPolicy allows; default `port`). */
  podPort: port.optional(),
  /** Path prefix of the check request (the original path is appended). */
  pathPrefix: z
    .string({ error: "must be a path starting with /" })
    .regex(/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/, {
      error: "must be a path starting with / (URL path characters only)",
    })
    .default("/api/v1alpha/verify_dev_credentials"),
  /** Login page a 401 redirects to; the original URL is appended as next=... (default https://auth.<domain>/login). */
  loginUrl: z
    .url({ protocol: /^https?$/, error: "must be an http(s) URL such as https://auth.example.org/login" })
    .optional(),
  /** Time allowed for one check. */
  timeout: duration("1ms", "1h").default("500ms"),
  /** Request headers passed to the auth service (case-insensitive). */
  allowedHeaders: z
    .array(z.string().regex(/^[a-z0-9-]+$/, { error: "must be lower-case header names" }))
    .default(["cookie", "authorization"]),
});

const stats = z.strictObject({
  /** dashboards: dev/PR clusters keep only the stats dashboards use (production and static clusters keep all); all: every stat for every cluster. */
  devClusters: z.enum(["dashboards", "all"], { error: "must be dashboards or all" }).default("dashboards"),
  /** Create a cluster's traffic stats on its first request rather than with the cluster (saves memory for idle dev/PR clusters). */
  deferredCreation: z.boolean({ error: "must be true or false" }).default(true),
});

const acme = z.strictObject({
  /** Service (in `namespace`) that answers ACME HTTP-01 challenges. */
  service: dnsLabel.default("letsencrypt"),
  namespace: dnsLabel.default("default"),
  port: port.default(80),
  /** The port its pods listen on, if the Service maps `port` to another (what the gateways' NetworkPolicy allows; default `port`). */
  podPort: port.optional(),
});

/** The NetworkPolicy of each gateway: who reaches it, and what it may reach (docs/network-policy.md). */
const networkPolicy = z.strictObject({
  /** Declare a NetworkPolicy for each gateway (the cluster needs an enforcer for it to mean anything). */
  enabled: z.boolean({ error: "must be true or false" }).default(true),
  /** Who may scrape the gateways' metrics port: pods with `pods` labels in namespaces with `namespaces` labels. */
  metricsScrapers: z
    .strictObject({
      namespaces: matchLabels("namespace").default({ "kubernetes.io/metadata.name": "monitoring" }),
      pods: matchLabels("pod").default({ "app.kubernetes.io/name": "prometheus" }),
    })
    .prefault({}),
  /**
   * The cluster DNS the gateways resolve Service names with: its pods (`pods` in `namespace`), and
   * address ranges for a DNS server outside the pod network (a node-local cache, a DNS on the nodes).
   */
  clusterDns: z
    .strictObject({
      namespace: dnsLabel.default("kube-system"),
      pods: matchLabels("pod").default({ "k8s-app": "kube-dns" }),
      cidrs: z.array(cidr, { error: "must be a list of address ranges" }).default([]),
    })
    .prefault({}),
  /**
   * The Kubernetes API server the route controller calls (routeSync.inCluster): its addresses
   * (default: any) and ports, as the pods reach it after the `kubernetes` Service's translation.
   */
  apiServer: z
    .strictObject({
      cidrs: z.array(cidr, { error: "must be a list of address ranges" }).default([]),
      ports: z.array(port, { error: "must be a list of port numbers" }).min(1).default([443, 6443]),
    })
    .prefault({}),
});

export const stackConfigSchema = z
  .strictObject({
    /** Public domain: production service s is served at s.<domain> by the gateway. */
    domain: dnsName,
    /** In-cluster domain: production service s is served at s.<internalDomain> by the internal-gateway. */
    internalDomain: dnsName,
    /** Cluster DNS domain of Service names (<svc>.<ns>.svc.<clusterDomain>). */
    clusterDomain: dnsName.default("cluster.local"),
    /** Namespace of the gateways and the production services. */
    namespace: dnsLabel.default("default"),
    /** Envoy image the gateways run, pinned to a version tag or digest. */
    envoyImage,
    /** Settings of the two gateways. */
    gateways: z.strictObject({
      gateway: gatewaySettings(GATEWAY_ROLES.gateway),
      "internal-gateway": gatewaySettings(GATEWAY_ROLES["internal-gateway"]),
    }),
    /** Production services, routed from both gateways. */
    services: z.array(productionService).default([]),
    /** Traffic shifts between versions of production services. */
    shifts: z.array(shift).default([]),
    /** Dev/PR namespaces: which are routed and how. */
    devNamespaces: devNamespaces.prefault({}),
    /** Who keeps the dev/PR routes in step: `sync-routes` from outside, or the route controller in the cluster. */
    routeSync: routeSync.prefault({}),
    /** The ext_authz service for dev/PR routes. */
    auth: auth.prefault({}),
    /** The ACME HTTP-01 solver. */
    acme: acme.prefault({}),
    /** Upstream (gateway to pods) connection settings. */
    upstream: upstream.prefault({}),
    /** Edge hardening (Envoy's edge-proxy guidance). */
    edge: edge.prefault({}),
    /** Downstream TLS. */
    tls: tls.prefault({}),
    /** Which Envoy stats the gateways keep (per-cluster stats dominate memory with thousands of dev/PR clusters). */
    stats: stats.prefault({}),
    /** The gateways' NetworkPolicies. */
    networkPolicy: networkPolicy.prefault({}),
    /** Local clusters without a kubelet only: skip the provider's readiness waits. Never set for real clusters. */
    skipAwait: z.boolean({ error: "must be true or false" }).default(false),
    /**
     * Adopting a running cluster: the Services this program declares may already exist
     * (made by kubectl or a chart); server-side apply takes over the fields it declares,
     * whoever set them (the provider's pulumi.com/patchForce). See docs/adopting.md.
     */
    adoptExisting: z.boolean({ error: "must be true or false" }).default(false),
    /** Render manifests into this directory instead of applying them (the Kubernetes provider's render mode). */
    renderYamlToDirectory: z.string({ error: "must be a directory path" }).min(1).optional(),
  })
  .transform((c) => ({ ...c, gateways: resolveGateways(c), edge: resolveEdge(c.edge) }));

export type StackConfig = z.output<typeof stackConfigSchema>;
export type GatewaySettings = StackConfig["gateways"]["gateway"];
export type ProductionService = StackConfig["services"][number];
export type UpstreamSettings = StackConfig["upstream"];
export type EdgeSettings = StackConfig["edge"];
