// The stack config model: every value a stack can vary, with its default and
// what is allowed. Pulumi stores these under the project namespace
// (`envoy-gateways:<key>` in Pulumi.<stack>.yaml); `parseStackConfig` turns
// the raw values into a `StackConfig` or one error listing every bad value.
import { z } from "zod";
import { checkShift, overlapProblem, type Shift } from "../shifts.js";
import { parseDuration } from "../units.js";

/** A Kubernetes object name that must also be a DNS label (RFC 1123). */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_LABEL_HINT = "a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters";
/** A lower-case DNS name (RFC 1123 subdomain). */
const DNS_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_NAME_HINT = "a lower-case DNS name such as example.org (labels of letters, digits and '-', joined by dots, at most 253 characters)";

export const dnsLabel = z
  .string({ error: `must be ${DNS_LABEL_HINT}` })
  .max(63, { error: `must be ${DNS_LABEL_HINT}` })
  .regex(DNS_LABEL, { error: `must be ${DNS_LABEL_HINT}` });

const dnsName = z
  .string({ error: `must be ${DNS_NAME_HINT}` })
  .max(253, { error: `must be ${DNS_NAME_HINT}` })
  .regex(DNS_NAME, { error: `must be ${DNS_NAME_HINT}` });

/** Durations as Go/Kubernetes write them: 250ms, 5s, 10m, 1h (one unit). */
const duration = z
  .string({ error: "must be a duration such as 250ms, 5s, 10m or 1h" })
  .refine((text) => parseDuration(text, ["ms", "s", "m", "h"]) !== undefined, { error: "must be a duration such as 250ms, 5s, 10m or 1h" });

/** Kubernetes resource quantities (cpu: 500m, 2; memory: 256Mi, 1Gi). */
const cpuQuantity = z
  .string({ error: "must be a CPU quantity such as 250m or 2" })
  .regex(/^(\d+m|\d+(\.\d+)?)$/, { error: "must be a CPU quantity such as 250m or 2" });
const memoryQuantity = z
  .string({ error: "must be a memory quantity such as 256Mi or 1Gi" })
  .regex(/^\d+(Ki|Mi|Gi|Ti|k|M|G|T)?$/, { error: "must be a memory quantity such as 256Mi or 1Gi" });

/** A whole number in [min, max]; every failure says the same thing: what is allowed. */
const intIn = (min: number, max: number, what = "a whole number") => {
  const error = `must be ${what} from ${min.toLocaleString("en-US")} to ${max.toLocaleString("en-US")}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};
const port = intIn(1, 65535, "a port number");

const k8sLabelKey = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const k8sLabelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;
/** An equality-based label selector: `key=value` terms joined by commas. */
const labelSelector = z
  .string({ error: "must be a label selector such as envoy-gateways.io/routes=dev" })
  .refine(
    (s) =>
      s.length > 0 &&
      s.split(",").every((term) => {
        const m = /^([^=!]+)(==?|!=)(.*)$/.exec(term.trim());
        return !!m && k8sLabelKey.test(m[1]!.trim()) && k8sLabelValue.test(m[3]!.trim());
      }),
    { error: "must be a label selector of key=value (or key!=value) terms joined by commas, such as envoy-gateways.io/routes=dev" },
  );

/**
 * An Envoy image pinned to a version tag or a digest: `envoyproxy/envoy:v1.40.0`
 * or `...@sha256:<64 hex>`. `latest`, a missing tag or a non-version tag is refused.
 */
const PINNED_IMAGE = /^[a-z0-9]+([._\/:-][a-z0-9]+)*?(:v?\d+\.\d+\.\d+([-.][0-9A-Za-z.-]+)?)?(@sha256:[a-f0-9]{64})?$/;
/** True when an image reference names a version tag (v1.40.0, 1.40.0-rc1) or a sha256 digest; never latest or untagged. */
export function isPinnedImage(image: string): boolean {
  return PINNED_IMAGE.test(image) && (/:v?\d+\.\d+\.\d+[^/]*$/.test(image.split("@")[0]!) || /@sha256:[a-f0-9]{64}$/.test(image));
}
const envoyImage = z
  .string({ error: "must be an image reference pinned to a version tag or digest, such as envoyproxy/envoy:v1.40.0" })
  .refine(isPinnedImage, {
    error: "must be pinned to a version tag or a digest (envoyproxy/envoy:v1.40.0 or ...@sha256:<64 hex>), never latest or untagged",
  });

const resources = z.strictObject({
  /** Requested CPU and memory (the scheduler reserves these). */
  requests: z.strictObject({ cpu: cpuQuantity, memory: memoryQuantity }),
  /** CPU and memory limits; the memory limit also sizes Envoy's heap overload action. */
  limits: z.strictObject({ cpu: cpuQuantity, memory: memoryQuantity }),
});

const gatewayService = z.strictObject({
  /** Kubernetes Service type in front of the gateway pods. */
  type: z.enum(["LoadBalancer", "NodePort", "ClusterIP"], { error: "must be LoadBalancer, NodePort or ClusterIP" }).default("LoadBalancer"),
  /** A static load-balancer IP (optional). */
  loadBalancerIP: z.ipv4({ error: "must be an IPv4 address" }).optional(),
  /** Annotations for the Service (cloud load-balancer settings, such as an internal LB). */
  annotations: z.record(z.string(), z.string({ error: "annotation values must be strings" })).default({}),
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
  gateway: { domainKey: "domain", serveAliases: true, acme: true, compression: false },
  /** In-cluster clients: <service>.<internalDomain>, compressed responses. */
  "internal-gateway": { domainKey: "internalDomain", serveAliases: false, acme: false, compression: true },
} as const;

type GatewayRole = (typeof GATEWAY_ROLES)[keyof typeof GATEWAY_ROLES];

const gatewaySettings = (role: GatewayRole) =>
  z
    .strictObject({
      /** Replicas when idle: the HPA's minimum and the divisor of per-service rate limits. */
      replicas: intIn(1, 100, "a whole number of replicas"),
      /** The HPA's maximum replicas (default: 3 x replicas). */
      maxReplicas: intIn(1, 100, "a whole number of replicas").optional(),
      /** Average CPU utilisation (percent of requests) the HPA aims for. */
      targetCpuUtilization: intIn(1, 100, "a percentage").default(70),
      /** Container resources. */
      resources,
      /** The Service that exposes the gateway. */
      service: gatewayService.prefault({}),
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
    })
    .refine((g) => typeof g?.maxReplicas !== "number" || typeof g.replicas !== "number" || g.maxReplicas >= g.replicas, {
      error: "must be at least replicas",
      path: ["maxReplicas"],
      // Checked even when other keys of this gateway are bad, so every error is reported at once.
      when: () => true,
    });

const productionService = z.strictObject({
  /** Service name: served at <name>.<domain> and <name>.<internalDomain>. */
  name: dnsLabel,
  /** Pod replicas of the service (its headless Service carries this count). */
  replicas: intIn(1, 1000, "a whole number of replicas"),
  /** Requests per second for the whole service, shared out across gateway replicas (optional: no limit). */
  rateLimit: intIn(1, 1_000_000, "a whole number of requests per second").optional(),
  /** Long-lived websocket traffic: the route gets the websocket idle timeout. */
  websocket: z.boolean({ error: "must be true or false" }).default(false),
  /** Extra public hosts routed to this service on the external gateway (such as the bare domain for www). */
  aliases: z.array(dnsName).default([]),
  /** Container image: when set, the program also declares the service's Deployment. */
  image: z.string({ error: "must be an image reference" }).min(1).optional(),
  /** Versions (stacks) running side by side, each behind a headless Service <name>-<version>; traffic moves between them by shifts. */
  versions: z.array(dnsLabel).min(2, { error: "must list at least two versions (leave it out for a single one)" }).optional(),
});

/**
 * A traffic shift. Its values get the checks every shift gets, wherever it is
 * written (`checkShift`, run with the cross-key checks below); here only
 * their types.
 */
const shift = z.strictObject({
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

const upstream = z.strictObject({
  /** Load-balancing policy across the pods of a service. */
  lbPolicy: z.enum(["ROUND_ROBIN", "LEAST_REQUEST"], { error: "must be ROUND_ROBIN or LEAST_REQUEST" }).default("LEAST_REQUEST"),
  /** TCP+TLS connect timeout to a pod. */
  connectTimeout: duration.default("3s"),
  /** How often pod addresses are re-resolved when DNS gives no TTL (TTLs are honoured). */
  dnsRefreshRate: duration.default("5s"),
  /** Protocol spoken to the pods over TLS. */
  protocol: z.enum(["http1", "http2"], { error: "must be http1 or http2" }).default("http1"),
  /** Close pooled upstream connections idle this long. */
  idleTimeout: duration.default("300s"),
  /** Circuit breakers, per service and gateway replica. */
  maxConnections: intIn(1, 1_000_000).default(1024),
  maxPendingRequests: intIn(1, 1_000_000).default(1024),
  maxRequests: intIn(1, 1_000_000).default(1024),
  /** Outlier detection: eject a pod after this many consecutive 5xx. */
  consecutive5xx: intIn(1, 1000).default(5),
  /** Outlier detection: how long an ejected pod stays out (times the ejection count). */
  baseEjectionTime: duration.default("30s"),
  /** Outlier detection: at most this percent of a service's pods are ejected. */
  maxEjectionPercent: intIn(1, 100, "a percentage").default(50),
  /** Timeout of a whole request to a service (0s: none; streams are bounded by the idle timeouts). */
  routeTimeout: duration.default("0s"),
});

const edge = z.strictObject({
  /** Proxies in front of the gateway trusted to append X-Forwarded-For (0: the L4 load balancer preserves the client address). */
  trustedHops: intIn(0, 10).default(0),
  /** Downstream connections across all listeners of one gateway pod. */
  maxConnections: intIn(1, 10_000_000).default(50000),
  /** Maximum size of request headers, in KiB. */
  maxRequestHeadersKb: intIn(1, 8192, "a whole number of KiB").default(60),
  /** Close downstream connections idle this long. */
  idleTimeout: duration.default("1h"),
  /** Reset streams with no activity for this long. */
  streamIdleTimeout: duration.default("300s"),
  /** Time allowed to receive a whole request. */
  requestTimeout: duration.default("300s"),
  /** Time allowed to receive the request headers. */
  requestHeadersTimeout: duration.default("10s"),
  /** Stream idle timeout on websocket routes. */
  websocketIdleTimeout: duration.default("1h"),
  /** HTTP/2: concurrent streams per connection. */
  http2MaxConcurrentStreams: intIn(1, 2147483647).default(100),
  /** HTTP/2: initial stream window, in bytes. */
  http2InitialStreamWindowSize: intIn(65535, 2147483647, "a whole number of bytes").default(65536),
  /** HTTP/2: initial connection window, in bytes. */
  http2InitialConnectionWindowSize: intIn(65535, 2147483647, "a whole number of bytes").default(1048576),
  /** Per-connection read/write buffer limit, in bytes (downstream and upstream). */
  bufferLimitBytes: intIn(1024, 16_777_216, "a whole number of bytes").default(32768),
  /** Seconds Envoy drains connections on shutdown before exiting. */
  drainSeconds: intIn(1, 600, "a whole number of seconds").default(30),
});

const CIPHERS_TLS12 = [
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
] as const;
/** Ciphers a modern edge accepts for TLS 1.2 (TLS 1.3 suites are fixed by BoringSSL). */
export const MODERN_CIPHERS: readonly string[] = CIPHERS_TLS12;

const tls = z.strictObject({
  /** Oldest TLS version the listeners accept. */
  minimumVersion: z.enum(["TLSv1_2", "TLSv1_3"], { error: "must be TLSv1_2 or TLSv1_3" }).default("TLSv1_2"),
  /** TLS 1.2 cipher suites (forward-secret AEAD suites only). */
  cipherSuites: z
    .array(z.enum(CIPHERS_TLS12, { error: `must be one of ${CIPHERS_TLS12.join(", ")}` }))
    .min(1, { error: "must list at least one cipher suite" })
    .default([...CIPHERS_TLS12]),
});

const devNamespaces = z.strictObject({
  /** Label selector that marks namespaces whose services are routed as dev/PR routes. */
  selector: labelSelector.default("envoy-gateways.io/routes=dev"),
  /** Requests per second per dev route, shared out across gateway replicas. */
  rateLimit: intIn(1, 1_000_000, "a whole number of requests per second").default(200),
  /** Upstream TLS to dev pods: verify (CA + client certificate, as production) or encrypt-only (no verification). */
  upstreamTls: z.enum(["verify", "encrypt-only"], { error: "must be verify or encrypt-only" }).default("verify"),
});

const auth = z.strictObject({
  /** Service (in `namespace`) that checks dev/PR requests (ext_authz over HTTPS). */
  service: dnsLabel.default("auth"),
  namespace: dnsLabel.default("default"),
  port: port.default(443),
  /** Path prefix of the check request (the original path is appended). */
  pathPrefix: z
    .string({ error: "must be a path starting with /" })
    .regex(/^\/[A-Za-z0-9._~!$&'()*+,;=:@%\/-]*$/, { error: "must be a path starting with / (URL path characters only)" })
    .default("/api/v1alpha/verify_dev_credentials"),
  /** Login page a 401 redirects to; the original URL is appended as next=... (default https://auth.<domain>/login). */
  loginUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) URL such as https://auth.example.org/login" }).optional(),
  /** Time allowed for one check. */
  timeout: duration.default("500ms"),
  /** Request headers passed to the auth service (case-insensitive). */
  allowedHeaders: z.array(z.string().regex(/^[a-z0-9-]+$/, { error: "must be lower-case header names" })).default(["cookie", "authorization"]),
});

const acme = z.strictObject({
  /** Service (in `namespace`) that answers ACME HTTP-01 challenges. */
  service: dnsLabel.default("letsencrypt"),
  namespace: dnsLabel.default("default"),
  port: port.default(80),
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
    /** Local clusters without a kubelet only: skip the provider's readiness waits. Never set for real clusters. */
    skipAwait: z.boolean({ error: "must be true or false" }).default(false),
    /** Render manifests into this directory instead of applying them (the Kubernetes provider's render mode). */
    renderYamlToDirectory: z.string({ error: "must be a directory path" }).min(1).optional(),
  })
  .transform((c) => ({ ...c, gateways: resolveGateways(c) }));

/** Each gateway's settings with what its role decides filled in: the domain it serves and its dev/PR host. */
function resolveGateways<G extends { devHost?: string | undefined }>(c: { domain: string; internalDomain: string; gateways: Record<GatewayName, G> }): Record<GatewayName, G & { domain: string; devHost: string }> {
  const out = {} as Record<GatewayName, G & { domain: string; devHost: string }>;
  for (const gateway of GATEWAYS) {
    const settings = c.gateways[gateway];
    const domain = c[GATEWAY_ROLES[gateway].domainKey];
    out[gateway] = { ...settings, domain, devHost: settings.devHost ?? `internal.${domain}` };
  }
  return out;
}

/**
 * Checks across keys. They run on the raw input even when other keys are bad,
 * so that every error is reported at once; they read it defensively.
 */
export function crossKeyProblems(raw: Record<string, unknown>): { path: (string | number)[]; input: unknown; message: string }[] {
  const problems: { path: (string | number)[]; input: unknown; message: string }[] = [];
  const seen = new Map<string, number>();
  (Array.isArray(raw.services) ? raw.services : []).forEach((s: unknown, i: number) => {
    const name = (s as { name?: unknown } | null)?.name;
    if (typeof name !== "string") return;
    const first = seen.get(name);
    if (first !== undefined) problems.push({ path: ["services", i, "name"], input: name, message: `duplicates services[${first}].name; service names must be unique` });
    else if ((GATEWAYS as readonly string[]).includes(name)) problems.push({ path: ["services", i, "name"], input: name, message: `is the name of a gateway's own Service; choose another name` });
    else seen.set(name, i);
  });
  problems.push(...shiftConfigProblems(raw));
  if (typeof raw.domain === "string" && raw.domain === raw.internalDomain) {
    problems.push({ path: ["internalDomain"], input: raw.internalDomain, message: "must differ from domain" });
  }
  return problems;
}

/** Shifts against the services they move: known service with versions, the checks every shift gets, no overlaps, every multi-version service shifted. */
function shiftConfigProblems(raw: Record<string, unknown>): { path: (string | number)[]; input: unknown; message: string }[] {
  const out: { path: (string | number)[]; input: unknown; message: string }[] = [];
  const services = (Array.isArray(raw.services) ? raw.services : []) as { name?: unknown; versions?: unknown }[];
  const shifts = (Array.isArray(raw.shifts) ? raw.shifts : []) as Record<string, unknown>[];
  const versionsOf = new Map<string, string[]>();
  for (const s of services) if (typeof s?.name === "string") versionsOf.set(s.name, Array.isArray(s.versions) ? (s.versions as unknown[]).filter((v): v is string => typeof v === "string") : []);
  const parsed = new Map<string, Shift[]>();
  shifts.forEach((sh, i) => {
    if (!sh || typeof sh !== "object" || typeof sh.service !== "string") return;
    const versions = versionsOf.get(sh.service);
    if (versions === undefined) {
      out.push({ path: ["shifts", i, "service"], input: sh.service, message: "is not a service of this stack (envoy-gateways:services)" });
      return;
    }
    if (versions.length < 2) {
      out.push({ path: ["shifts", i, "service"], input: sh.service, message: "has no versions to shift between; list them in its versions" });
      return;
    }
    const checked = checkShift(sh.service, sh, versions);
    for (const p of checked.problems) out.push({ path: p.field ? ["shifts", i, p.field] : ["shifts", i], input: p.value, message: p.message });
    if (checked.shift) (parsed.get(sh.service) ?? parsed.set(sh.service, []).get(sh.service)!).push(checked.shift);
  });
  for (const [service, list] of parsed) {
    const problem = overlapProblem(service, list);
    if (problem) out.push({ path: ["shifts"], input: undefined, message: problem });
  }
  services.forEach((s, i) => {
    if (typeof s?.name === "string" && Array.isArray(s.versions) && s.versions.length >= 2 && !shifts.some((sh) => sh?.service === s.name)) {
      out.push({ path: ["services", i, "versions"], input: s.versions, message: `${s.name} has several versions but no shift in envoy-gateways:shifts says how to split its traffic` });
    }
  });
  return out;
}

export type StackConfig = z.output<typeof stackConfigSchema>;
export type GatewaySettings = StackConfig["gateways"]["gateway"];
export type ProductionService = StackConfig["services"][number];
export type UpstreamSettings = StackConfig["upstream"];
export type EdgeSettings = StackConfig["edge"];

/** The two gateways, in the order they are declared and rendered. */
export type GatewayName = keyof typeof GATEWAY_ROLES;
export const GATEWAYS = Object.keys(GATEWAY_ROLES) as GatewayName[];

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
  /** The divisor of per-service rate limits. */
  replicas: intIn(1, 100, "a whole number of replicas"),
});

export const routingConfigSchema = z.strictObject({
  clusterDomain: dnsName,
  namespace: dnsLabel,
  gateways: z.strictObject({ gateway: gatewayRouting, "internal-gateway": gatewayRouting }),
  services: z.array(productionService.pick({ name: true, rateLimit: true, websocket: true, aliases: true, versions: true })),
  shifts: z.array(shift),
  devNamespaces: devNamespaces.pick({ rateLimit: true, upstreamTls: true }),
  upstream,
  edge: edge.pick({ bufferLimitBytes: true, websocketIdleTimeout: true, http2MaxConcurrentStreams: true, http2InitialStreamWindowSize: true, http2InitialConnectionWindowSize: true }),
});

export type RoutingConfig = z.output<typeof routingConfigSchema>;

/** The routing part of a stack's config: exactly the keys of `routingConfigSchema`. */
export function routingConfig(config: StackConfig): RoutingConfig {
  const gateway = (g: GatewaySettings) => ({ domain: g.domain, devHost: g.devHost, serveAliases: g.serveAliases, authenticateDevRoutes: g.authenticateDevRoutes, replicas: g.replicas });
  return {
    clusterDomain: config.clusterDomain,
    namespace: config.namespace,
    gateways: { gateway: gateway(config.gateways.gateway), "internal-gateway": gateway(config.gateways["internal-gateway"]) },
    services: config.services.map((s) => ({
      name: s.name,
      ...(s.rateLimit !== undefined ? { rateLimit: s.rateLimit } : {}),
      websocket: s.websocket,
      aliases: [...s.aliases],
      ...(s.versions ? { versions: [...s.versions] } : {}),
    })),
    shifts: config.shifts.map((s) => ({ ...s })),
    devNamespaces: { rateLimit: config.devNamespaces.rateLimit, upstreamTls: config.devNamespaces.upstreamTls },
    upstream: { ...config.upstream },
    edge: {
      bufferLimitBytes: config.edge.bufferLimitBytes,
      websocketIdleTimeout: config.edge.websocketIdleTimeout,
      http2MaxConcurrentStreams: config.edge.http2MaxConcurrentStreams,
      http2InitialStreamWindowSize: config.edge.http2InitialStreamWindowSize,
      http2InitialConnectionWindowSize: config.edge.http2InitialConnectionWindowSize,
    },
  };
}
