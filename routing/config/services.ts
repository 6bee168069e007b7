// What the gateways route: the production services (with their versions),
// the traffic shifts between versions, and the dev/PR namespaces.
import { z } from "zod";
import { imageReference } from "./images.js";
import { containerResources, dnsLabel, dnsName, duration, intIn, labelSelector } from "./primitives.js";
import { securityHeaders } from "./security-headers.js";
import { retryCount, retryResetMethods } from "./upstream.js";

/** Resources of a declared service's pods when the stack sets none: a small web service's. */
export const SERVICE_RESOURCES = {
  requests: { cpu: "100m", memory: "128Mi" },
  limits: { cpu: "1", memory: "512Mi" },
} as const;

/**
 * The most a gateway's xDS ConfigMap is filled to with dev/PR routes: the
 * 1 MiB Kubernetes allows in a ConfigMap, less 8 KiB of headroom (a shift's
 * weights are rendered again later, and a weight's digits change).
 */
export const MAX_XDS_BYTES = 1024 * 1024 - 8 * 1024;

export const productionService = z.strictObject({
  /** Service name: served at <name>.<domain> and <name>.<internalDomain>. */
  name: dnsLabel,
  /** Pod replicas of the service (its headless Service carries this count). */
  replicas: intIn(1, 1000, "a whole number of replicas"),
  /** Requests per second for the whole service, shared across the gateway's pods however many run (optional: no limit). */
  rateLimit: intIn(1, 1_000_000, "a whole number of requests per second").optional(),
  /** Long-lived websocket traffic: the route gets the websocket idle timeout. */
  websocket: z.boolean({ error: "must be true or false" }).default(false),
  /** Extra public hosts routed to this service on the external gateway (such as the bare domain for www). */
  aliases: z.array(dnsName).default([]),
  /** Container image: when set, the program also declares the service's Deployment (pinning is the policy pack's images-pinned rule). */
  image: imageReference.optional(),
  /** CPU and memory of each pod of the Deployment declared with `image` (default SERVICE_RESOURCES). */
  resources: containerResources.optional(),
  /** Versions (stacks) running side by side, each behind a headless Service <name>-<version>; traffic moves between them by shifts. */
  versions: z
    .array(dnsLabel)
    .min(2, { error: "must list at least two versions (leave it out for a single one)" })
    .optional(),
  /** Upper bound on one request's time (default upstream.routeTimeout; 0s: none, for streaming responses). */
  routeTimeout: duration("0s", "720h", " (0s: no bound)").optional(),
  /** Retries of a failed request (default upstream.retries; 0: none). */
  retries: retryCount.optional(),
  /** Methods also retried when the service resets before answering (default upstream.retryResetMethods). */
  retryResetMethods: retryResetMethods.optional(),
  /** Whether /metrics requires developer auth (default: each gateway's authenticateMetrics). */
  authenticateMetrics: z.boolean({ error: "must be true or false" }).optional(),
  /** Security headers of this service's responses, merged over each gateway's. */
  securityHeaders: securityHeaders.optional(),
});

/**
 * A traffic shift. Its values get the checks every shift gets, wherever it is
 * written (`checkShift`, run with the checks across keys in cross-key.ts); here only
 * their types.
 */
export const shift = z.strictObject({
  /** Production service whose traffic moves (it must list versions). */
  service: dnsLabel,
  /** Version traffic moves away from. */
  from: z.string({ error: "must be a version of the service" }),
  /** Version traffic moves to. */
  to: z.string({ error: "must be a version of the service" }),
  /** linear: the old share falls evenly; atomic: everything moves at the end. */
  policy: z.enum(["linear", "atomic"], { error: "must be linear or atomic" }),
  /** When the shift starts (RFC 3339). */
  start: z.string({ error: "must be an RFC 3339 time such as 2026-11-30T10:00:00Z" }),
  /** How long it takes: 1 minute to 5 days (90s, 30m, 2h, 5d). */
  duration: z.string({ error: "must be a duration from 1 minute to 5 days, such as 90s, 30m, 2h or 5d" }),
  /** When the shift was reversed (while in progress): traffic replays back to the old version. */
  reversed: z.string({ error: "must be an RFC 3339 time such as 2026-11-30T10:00:00Z" }).optional(),
});

/** The cluster's own namespaces: never dev/PR namespaces (devNamespaces.protected's default). */
export const PROTECTED_NAMESPACES = ["kube-system", "kube-public", "kube-node-lease"] as const;

export const devNamespaces = z.strictObject({
  /** Label selector that marks namespaces whose services are routed as dev/PR routes. */
  selector: labelSelector.default("envoy-gateways.io/routes=dev"),
  /** Requests per second per dev route, shared across the gateway's pods however many run. */
  rateLimit: intIn(1, 1_000_000, "a whole number of requests per second").default(200),
  /** Upstream TLS to dev pods: verify (CA + client certificate, as production) or encrypt-only (no verification). */
  upstreamTls: z.enum(["verify", "encrypt-only"], { error: "must be verify or encrypt-only" }).default("verify"),
  /**
   * How dev/PR routes reach their pods. per-service: one DNS cluster per Service, written
   * in the xDS ConfigMap (about 1,500 pairs fit). on-demand: one dynamic forward proxy
   * cluster for them all, which makes a DNS sub-cluster for a Service's name on its first
   * request (a route costs about 130 bytes; about 7,800 pairs fit). A Service with several
   * versions, or named other than its service, keeps a cluster of its own either way.
   */
  clusters: z.enum(["per-service", "on-demand"], { error: "must be per-service or on-demand" }).default("per-service"),
  /**
   * Namespaces never routed as dev/PR namespaces, even when labelled: refused by name in the
   * sync's report, the others still routed. The gateways' own namespace is never one either.
   */
  protected: z.array(dnsLabel, { error: "must be a list of namespace names" }).default([...PROTECTED_NAMESPACES]),
  /**
   * The most bytes dev/PR routes may fill a gateway's xDS ConfigMap to, production included:
   * past it, the namespaces that do not fit are left out, the oldest routed first.
   */
  maxXdsBytes: intIn(16_384, MAX_XDS_BYTES, "a whole number of bytes").default(MAX_XDS_BYTES),
});
