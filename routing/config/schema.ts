// The stack config model: every value a stack can vary, with its default and
// what is allowed. Pulumi stores these under the project namespace
// (`envoy-gateways:<key>` in Pulumi.<stack>.yaml); `parseStackConfig` turns
// the raw values into a `StackConfig` or one error listing every bad value.
import { z } from "zod";
import { checkShift, overlapProblem, type Shift } from "../shifts.js";
import { parseDuration, parseQuantity } from "../units.js";
import {
  ANNOTATIONS_MAX_BYTES,
  isDnsSubdomain,
  isQualifiedName,
  labelSelectorProblem,
  QUALIFIED_NAME_HINT,
} from "./kubernetes.js";

/** Refuses the value a refinement or transform is given (or the part of it at `path`), naming it as written: `input`. */
function refuse(ctx: z.RefinementCtx, message: string, input: unknown, path: PropertyKey[] = []): void {
  // Stryker disable next-line StringLiteral: the issue code of a refusal is never read; its message and input are
  ctx.addIssue({ code: "custom", path, message, input });
}

/** A list in the raw config, or none: the cross-key checks read values the schema may have refused. */
function listAt(value: unknown): unknown[] {
  // Stryker disable next-line ArrayDeclaration: what stands in for a missing list is never a service or a shift (no object), so it is skipped like none
  return Array.isArray(value) ? value : [];
}

/** A Kubernetes object name that must also be a DNS label (RFC 1123). */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_LABEL_HINT =
  "a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters";
const DNS_NAME_HINT =
  "a lower-case DNS name such as example.org (labels of at most 63 letters, digits and '-', joined by dots, at most 253 characters)";

export const dnsLabel = z
  .string({ error: `must be ${DNS_LABEL_HINT}` })
  .max(63, { error: `must be ${DNS_LABEL_HINT}` })
  .regex(DNS_LABEL, { error: `must be ${DNS_LABEL_HINT}` });

const dnsName = z
  .string({ error: `must be ${DNS_NAME_HINT}` })
  .refine(isDnsSubdomain, { error: `must be ${DNS_NAME_HINT}` });

/**
 * A duration as Go and Kubernetes write them (250ms, 5s, 10m, 1h: one unit),
 * from `min` to `max` (what Envoy accepts for the field it sets, and what makes sense).
 */
const duration = (min: string, max: string, hint = "") => {
  const [lo, hi] = [parseDuration(min)!, parseDuration(max)!];
  const error = `must be a duration from ${min} to ${max}, written like 250ms, 5s, 10m or 1h${hint}`;
  return z.string({ error }).refine(
    (text) => {
      const ms = parseDuration(text, ["ms", "s", "m", "h"]);
      return ms !== undefined && ms >= lo && ms <= hi;
    },
    { error },
  );
};

/** Kubernetes resource quantities (cpu: 500m, 0.5, 2; memory: 256Mi, 1Gi, 1.5G), more than zero. */
const CPU_HINT = "must be a CPU quantity Kubernetes accepts, such as 250m, 0.5 or 2, of at least 1m";
const MEMORY_HINT =
  "must be a memory quantity Kubernetes accepts, such as 256Mi, 1Gi or 1.5G: a whole number of bytes, more than zero";
/** Each resource's quantity, when it is one the schema accepts. */
const QUANTITY_OK = {
  cpu: (q: unknown) => typeof q === "string" && (parseQuantity(q) ?? 0) >= 0.001,
  memory: (q: unknown) => {
    const bytes = typeof q === "string" ? parseQuantity(q) : undefined;
    return bytes !== undefined && bytes >= 1 && Number.isInteger(Math.round(bytes * 1e6) / 1e6);
  },
};
const cpuQuantity = z.string({ error: CPU_HINT }).refine(QUANTITY_OK.cpu, { error: CPU_HINT });
const memoryQuantity = z.string({ error: MEMORY_HINT }).refine(QUANTITY_OK.memory, { error: MEMORY_HINT });

/** A whole number in [min, max]; every failure says the same thing: what is allowed. */
const intIn = (min: number, max: number, what = "a whole number") => {
  const error = `must be ${what} from ${min.toLocaleString("en-US")} to ${max.toLocaleString("en-US")}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};
const port = intIn(1, 65535, "a port number");

/** An equality-based label selector: `key=value` terms joined by commas. */
const labelSelector = z
  .string({ error: "must be a label selector such as envoy-gateways.io/routes=dev" })
  .superRefine((s, ctx) => {
    const problem = labelSelectorProblem(s);
    if (problem)
      refuse(
        ctx,
        `must be a label selector of key=value (or key!=value) terms joined by commas, such as envoy-gateways.io/routes=dev: ${problem}`,
        s,
      );
  });

/** Annotations of an object: keys Kubernetes accepts, string values, 256 KiB in all. */
const annotations = z
  .record(z.string(), z.string({ error: "annotation values must be strings" }))
  .superRefine((map, ctx) => {
    let bytes = 0;
    for (const [key, value] of Object.entries(map)) {
      if (!isQualifiedName(key)) refuse(ctx, `the annotation key must be ${QUALIFIED_NAME_HINT}`, key, [key]);
      bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
    }
    if (bytes > ANNOTATIONS_MAX_BYTES)
      refuse(
        ctx,
        `hold ${bytes.toLocaleString("en-US")} bytes; Kubernetes allows ${ANNOTATIONS_MAX_BYTES.toLocaleString("en-US")} in all`,
        undefined,
      );
  });

/** The parts of an image reference ([registry[:port]/]path[:tag][@sha256:<64 hex>]), or undefined when it is not one reference. */
export function parseImageReference(image: string): { name: string; tag?: string; digest?: string } | undefined {
  const m = /^([^@]+?)(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(sha256:[a-f0-9]{64}))?$/.exec(image);
  if (!m) return undefined;
  const [, name, tag, digest] = m as unknown as [string, string, string | undefined, string | undefined];
  const components = name.split("/");
  // A first component with a dot or a port, or localhost, is the registry.
  const registry = components.length > 1 && /[.:]|^localhost$/.test(components[0]!) ? components.shift()! : undefined;
  if (registry !== undefined && !/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$/.test(registry))
    return undefined;
  if (!components.every((c) => /^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$/.test(c))) return undefined;
  if (image.length > 255 + 129 + 72) return undefined;
  return { name, ...(tag !== undefined ? { tag } : {}), ...(digest !== undefined ? { digest } : {}) };
}

const IMAGE_HINT =
  "one image reference such as envoyproxy/envoy:v1.40.0, registry.example.org:5000/team/app:1.2.3 or ...@sha256:<64 hex>";

/**
 * True when an image reference is pinned: a version tag (v1.40.0,
 * 1.40.0-rc1) or a sha256 digest; never latest or untagged.
 */
export function isPinnedImage(image: string): boolean {
  const ref = parseImageReference(image);
  return (
    ref !== undefined &&
    (ref.digest !== undefined || (ref.tag !== undefined && /^v?\d+\.\d+\.\d+([-.+][0-9A-Za-z.-]+)?$/.test(ref.tag)))
  );
}

const imageReference = z
  .string({ error: `must be ${IMAGE_HINT}` })
  .refine((image) => parseImageReference(image) !== undefined, { error: `must be ${IMAGE_HINT}`, abort: true });

const envoyImage = imageReference.refine(isPinnedImage, {
  error:
    "must be pinned to a version tag or a digest (envoyproxy/envoy:v1.40.0 or ...@sha256:<64 hex>), never latest or untagged",
});

const resources = z
  .strictObject({
    /** Requested CPU and memory (the scheduler reserves these). */
    requests: z.strictObject({ cpu: cpuQuantity, memory: memoryQuantity }),
    /** CPU and memory limits; the memory limit also sizes Envoy's heap overload action. */
    limits: z.strictObject({ cpu: cpuQuantity, memory: memoryQuantity }),
  })
  .superRefine((r, ctx) => {
    for (const kind of ["cpu", "memory"] as const) {
      // A bad quantity is reported as such, once; only two good ones are compared.
      if (!QUANTITY_OK[kind](r?.requests?.[kind]) || !QUANTITY_OK[kind](r?.limits?.[kind])) continue;
      const [request, limit] = [parseQuantity(r.requests[kind])!, parseQuantity(r.limits[kind])!];
      if (request > limit)
        refuse(
          ctx,
          `must be at most the limit (limits.${kind}: ${r.limits[kind]}); Kubernetes refuses a request above its limit`,
          r.requests[kind],
          ["requests", kind],
        );
    }
  });

const gatewayService = z.strictObject({
  /** Kubernetes Service type in front of the gateway pods. */
  type: z
    .enum(["LoadBalancer", "NodePort", "ClusterIP"], { error: "must be LoadBalancer, NodePort or ClusterIP" })
    .default("LoadBalancer"),
  /** A static load-balancer IP (optional). */
  loadBalancerIP: z.ipv4({ error: "must be an IPv4 address" }).optional(),
  /** Annotations for the Service (cloud load-balancer settings, such as an internal LB). */
  annotations: annotations.default({}),
});

const gatewayTls = z.strictObject({
  /** Secret (type kubernetes.io/tls) with the certificate the TLS listener serves. */
  serverSecret: dnsLabel,
  /** Secret with tls.crt/tls.key (client certificate) and ca.crt (upstream CA) for upstream TLS. */
  upstreamSecret: dnsLabel,
});

/**
 * Response headers a gateway adds for browsers, by lower-case name: a value
 * is added when the service's response has no header of that name; with
 * `replace: true` it replaces the service's own; `false` adds none (to drop
 * a default).
 */
export type SecurityHeader = { value: string; replace: boolean } | false;
export type SecurityHeaders = Record<string, SecurityHeader>;

/**
 * The external gateway's default browser security headers: safe for any
 * service behind it. HSTS without includeSubDomains (other hosts under the
 * domain may not serve HTTPS), no preload; nosniff; the referrer policy
 * browsers default to anyway, for older ones. X-Frame-Options and a CSP are
 * left out: services embed each other across subdomains.
 */
export const BROWSER_SECURITY_HEADERS: SecurityHeaders = {
  "strict-transport-security": { value: "max-age=31536000", replace: false },
  "x-content-type-options": { value: "nosniff", replace: false },
  "referrer-policy": { value: "strict-origin-when-cross-origin", replace: false },
};

const HEADER_NAME = /^[a-z0-9!#$&'*+.^_`|~-]+$/;
/** Headers a gateway must not set on responses: framing, connection management, cookies. */
const NOT_SETTABLE = new Set([
  "connection",
  "content-length",
  "keep-alive",
  "proxy-connection",
  "set-cookie",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);
const HEADER_VALUE_MAX = 4096;
const HEADER_VALUE_HINT = `a header value (printable ASCII, no line breaks, no leading or trailing space, at most ${HEADER_VALUE_MAX.toLocaleString("en-US")} characters), { value: <that>, replace: true } to replace the service's own, or false to add none`;
const isHeaderValue = (v: unknown): v is string =>
  typeof v === "string" &&
  v.length > 0 &&
  v.length <= HEADER_VALUE_MAX &&
  /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(v);

/** A map of security headers (see `SecurityHeaders`), each entry checked on its own. */
const securityHeaders = z
  .record(z.string(), z.unknown(), { error: "must be a mapping of header name to value" })
  .transform((map, ctx): SecurityHeaders => {
    const out: SecurityHeaders = {};
    for (const [name, entry] of Object.entries(map)) {
      if (!HEADER_NAME.test(name)) {
        refuse(ctx, "is not a header name: lower-case letters, digits and !#$&'*+.^_`|~- only", name, [name]);
        continue;
      }
      if (NOT_SETTABLE.has(name)) {
        refuse(ctx, `is a header the gateway must not set on responses (${[...NOT_SETTABLE].join(", ")})`, name, [
          name,
        ]);
        continue;
      }
      if (entry === false) out[name] = false;
      else if (isHeaderValue(entry)) out[name] = { value: entry, replace: false };
      else if (
        entry &&
        typeof entry === "object" &&
        !Array.isArray(entry) &&
        Object.keys(entry).every((k) => k === "value" || k === "replace") &&
        isHeaderValue((entry as { value?: unknown }).value) &&
        typeof ((entry as { replace?: unknown }).replace ?? false) === "boolean"
      ) {
        const e = entry as { value: string; replace?: boolean };
        out[name] = { value: e.value, replace: e.replace ?? false };
      } else refuse(ctx, `must be ${HEADER_VALUE_HINT}`, entry, [name]);
    }
    return out;
  });

/** `over` merged onto `base`, entry by entry. */
export function mergeSecurityHeaders(base: SecurityHeaders, over: SecurityHeaders | undefined): SecurityHeaders {
  return over ? { ...base, ...over } : base;
}

/**
 * Methods whose requests may be repeated (RFC 9110 9.2.2): retried after a
 * reset even though the service may have received them. POST, PATCH and
 * CONNECT never are.
 */
export const IDEMPOTENT_METHODS = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"] as const;
const METHODS_HINT = `must list idempotent methods: ${IDEMPOTENT_METHODS.join(", ")} (never POST, PATCH or CONNECT: a service may act on them twice)`;
const retryResetMethods = z
  .array(z.enum(IDEMPOTENT_METHODS, { error: METHODS_HINT }), { error: METHODS_HINT })
  .superRefine((list, ctx) => {
    list.forEach((m, i) => {
      if (list.indexOf(m) !== i) refuse(ctx, "is listed twice; list each method once", m, [i]);
    });
  });
const retryCount = intIn(0, 10, "a whole number of retries");

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

const gatewaySettings = (role: GatewayRole) =>
  z
    .strictObject({
      /** Replicas when idle: the HPA's minimum; a pod's rate-limit bucket holds the service's limit divided by it (its burst). */
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

const productionService = z.strictObject({
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
  lbPolicy: z
    .enum(["ROUND_ROBIN", "LEAST_REQUEST"], { error: "must be ROUND_ROBIN or LEAST_REQUEST" })
    .default("LEAST_REQUEST"),
  /** TCP+TLS connect timeout to a pod. */
  connectTimeout: duration("1ms", "1h").default("3s"),
  /** How often pod addresses are re-resolved when DNS gives no TTL (TTLs are honoured). */
  dnsRefreshRate: duration("10ms", "1h").default("5s"),
  /** Address families asked of DNS for pod addresses (one query per family and refresh); pod IPs are IPv4 here. */
  dnsLookupFamily: z
    .enum(["V4_ONLY", "V6_ONLY", "V4_PREFERRED", "AUTO", "ALL"], {
      error: "must be V4_ONLY, V6_ONLY, V4_PREFERRED, AUTO or ALL",
    })
    .default("V4_ONLY"),
  /** Protocol spoken to the pods over TLS. */
  protocol: z.enum(["http1", "http2"], { error: "must be http1 or http2" }).default("http1"),
  /** Close pooled upstream connections idle this long. */
  idleTimeout: duration("0s", "720h").default("300s"),
  /** Circuit breakers, per service and gateway replica. */
  maxConnections: intIn(1, 1_000_000).default(1024),
  maxPendingRequests: intIn(1, 1_000_000).default(1024),
  maxRequests: intIn(1, 1_000_000).default(1024),
  /** Outlier detection: eject a pod after this many consecutive 5xx. */
  consecutive5xx: intIn(1, 1000).default(5),
  /** Outlier detection: how long an ejected pod stays out (times the ejection count). */
  baseEjectionTime: duration("1ms", "1h").default("30s"),
  /** Outlier detection: at most this percent of a service's pods are ejected. */
  maxEjectionPercent: intIn(1, 100, "a percentage").default(50),
  /** Upper bound on one request's time, from the end of the request to the end of the response (a service opts out with its own routeTimeout: 0s). */
  routeTimeout: duration("1s", "720h", " (a service without a bound sets services[].routeTimeout: 0s)").default("300s"),
  /** Retries of a request that never reached a pod (connect failure, refused stream, reset before it was sent), each on another pod. */
  retries: retryCount.default(2),
  /** Methods also retried when a pod resets before answering (the pod may have acted on the request). */
  retryResetMethods: retryResetMethods.default(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]),
  /** At most this percent of a service's active requests may be retries, per gateway replica (at least 3 at once). */
  retryBudgetPercent: intIn(1, 100, "a percentage").default(20),
});

const edge = z.strictObject({
  /** Proxies in front of the gateway trusted to append X-Forwarded-For (0: the L4 load balancer preserves the client address). */
  trustedHops: intIn(0, 10).default(0),
  /** Downstream connections across all listeners of one gateway pod. */
  maxConnections: intIn(1, 10_000_000).default(50000),
  /** Connections of the HTTPS listener, per pod (default: maxConnections less the HTTP listener's share). */
  httpsMaxConnections: intIn(1, 10_000_000).optional(),
  /** Connections of the plain-HTTP listener (redirects, ACME), per pod (default: a tenth of maxConnections). */
  httpMaxConnections: intIn(1, 10_000_000).optional(),
  /** Maximum size of request headers, in KiB. */
  maxRequestHeadersKb: intIn(1, 8192, "a whole number of KiB").default(60),
  /** Close downstream connections idle this long. */
  idleTimeout: duration("0s", "720h").default("1h"),
  /** Reset streams with no activity for this long. */
  streamIdleTimeout: duration("0s", "720h").default("300s"),
  /** Time allowed to receive a whole request. */
  requestTimeout: duration("0s", "720h").default("300s"),
  /** Time allowed to receive the request headers. */
  requestHeadersTimeout: duration("0s", "720h").default("10s"),
  /** Stream idle timeout on websocket routes. */
  websocketIdleTimeout: duration("0s", "720h").default("1h"),
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
  /** Access log of the client-facing listeners: json (a JSON line per request on stdout) or off. */
  accessLog: z.enum(["json", "off"], { error: "must be json or off" }).default("json"),
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
  /** Requests per second per dev route, shared across the gateway's pods however many run. */
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
    /** Which Envoy stats the gateways keep (per-cluster stats dominate memory with thousands of dev/PR clusters). */
    stats: stats.prefault({}),
    /** Local clusters without a kubelet only: skip the provider's readiness waits. Never set for real clusters. */
    skipAwait: z.boolean({ error: "must be true or false" }).default(false),
    /** Render manifests into this directory instead of applying them (the Kubernetes provider's render mode). */
    renderYamlToDirectory: z.string({ error: "must be a directory path" }).min(1).optional(),
  })
  .transform((c) => ({ ...c, gateways: resolveGateways(c), edge: resolveEdge(c.edge) }));

/** The per-listener connection limits filled in: the plain-HTTP listener a tenth of the pod's, HTTPS the rest. */
function resolveEdge<
  E extends {
    maxConnections: number;
    httpMaxConnections?: number | undefined;
    httpsMaxConnections?: number | undefined;
  },
>(edge: E): E & { httpMaxConnections: number; httpsMaxConnections: number } {
  const http = edge.httpMaxConnections ?? Math.max(1, Math.ceil(edge.maxConnections / 10));
  return {
    ...edge,
    httpMaxConnections: http,
    httpsMaxConnections: edge.httpsMaxConnections ?? Math.max(1, edge.maxConnections - http),
  };
}

/** Each gateway's settings with what its role decides filled in: the domain it serves and its dev/PR host. */
function resolveGateways<G extends { devHost?: string | undefined }>(c: {
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

/**
 * Checks across keys. They run on the raw input even when other keys are bad,
 * so that every error is reported at once; they read it defensively.
 */
export function crossKeyProblems(raw: Record<string, unknown>): CrossKeyProblem[] {
  const problems: CrossKeyProblem[] = [];
  const seen = new Map<string, number>();
  listAt(raw.services).forEach((s, i) => {
    const name = (s as { name?: unknown } | null)?.name;
    if (typeof name !== "string") return;
    const first = seen.get(name);
    if (first !== undefined)
      problems.push({
        path: ["services", i, "name"],
        input: name,
        message: `duplicates services[${first}].name; service names must be unique`,
      });
    else if ((GATEWAYS as readonly string[]).includes(name))
      problems.push({
        path: ["services", i, "name"],
        input: name,
        message: `is the name of a gateway's own Service; choose another name`,
      });
    else if (GATEWAYS.some((g) => gatewayPodsService(g) === name))
      problems.push({
        path: ["services", i, "name"],
        input: name,
        message: `is the name of the headless Service of a gateway's own pods; choose another name`,
      });
    else seen.set(name, i);
  });
  problems.push(...shiftConfigProblems(raw), ...derivedNameProblems(raw), ...listenerLimitProblems(raw));
  if (typeof raw.domain === "string" && raw.domain === raw.internalDomain) {
    problems.push({ path: ["internalDomain"], input: raw.internalDomain, message: "must differ from domain" });
  }
  return problems;
}

/** A problem of one key against others: its config path, the value as given (none for a problem of no single value) and what is wrong. */
export type CrossKeyProblem = { path: (string | number)[]; input: unknown; message: string };

/** A listener's connection limit above the pod's would never apply: refused, naming both. */
function listenerLimitProblems(raw: Record<string, unknown>): CrossKeyProblem[] {
  const edge = (raw.edge && typeof raw.edge === "object" ? raw.edge : {}) as Record<string, unknown>;
  const total = typeof edge.maxConnections === "number" ? edge.maxConnections : 50000;
  return (["httpsMaxConnections", "httpMaxConnections"] as const)
    .filter((key) => Number.isInteger(edge[key]) && (edge[key] as number) > total)
    .map((key) => ({
      path: ["edge", key],
      input: edge[key],
      message: `must be at most edge.maxConnections (${total.toLocaleString("en-US")}), the limit of the whole pod`,
    }));
}

/**
 * The names the program derives from the config: each gateway's hosts
 * (<service>.<domain>, the aliases it serves, its dev/PR host), the Services
 * of the versions (<service>-<version>) and their DNS names. Each must be a
 * name Kubernetes and DNS accept, and no two may coincide: a clash is
 * reported on the later key, naming the earlier one.
 */
function derivedNameProblems(raw: Record<string, unknown>): CrossKeyProblem[] {
  // One problem per key, whatever the number of names it spoils (one on each gateway, say).
  const byKey = new Map<string, CrossKeyProblem>();
  const out = {
    push(p: CrossKeyProblem) {
      const key = pathKey(p.path);
      const first = byKey.get(key);
      if (first) first.message += `; ${p.message}`;
      else byKey.set(key, { ...p });
    },
  };
  const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
  // Entries may be anything (null among them); those without a valid name are skipped first.
  const services = listAt(raw.services) as { name?: unknown; versions?: unknown; aliases?: unknown }[];
  const gateways = (raw.gateways && typeof raw.gateways === "object" ? raw.gateways : {}) as Record<
    string,
    Record<string, unknown> | undefined
  >;
  const namespace = str(raw.namespace) ?? "default";
  const clusterDomain = str(raw.clusterDomain) ?? "cluster.local";
  // A bad or duplicate name is reported by the schema and the checks above, once: not again here.
  const firstOf = new Map<string, number>();
  services.forEach((s, i) => {
    const name = str(s?.name);
    if (name && isDnsLabelName(name) && !firstOf.has(name)) firstOf.set(name, i);
  });
  // No service is named "": its name is no DNS label.
  const valid = (name: string | undefined, i: number): name is string => firstOf.get(name ?? "") === i;

  for (const gateway of GATEWAYS) {
    const g = gateways[gateway] ?? {};
    const domain = str(g.domain) ?? str(raw[GATEWAY_ROLES[gateway].domainKey]);
    if (!domain || !isDnsSubdomain(domain)) continue;
    const devHost = str(g.devHost) ?? `internal.${domain}`;
    const serveAliases = typeof g.serveAliases === "boolean" ? g.serveAliases : GATEWAY_ROLES[gateway].serveAliases;
    const hosts = new Map<string, string>([
      [devHost, `the dev/PR host of ${gateway} (envoy-gateways:gateways.${gateway}.devHost)`],
    ]);
    // The default dev/PR host: a given one was checked as a DNS name already. Too long, the domain is at fault, for every host.
    if (g.devHost === undefined && !isDnsSubdomain(devHost)) {
      out.push({
        path: [GATEWAY_ROLES[gateway].domainKey],
        input: domain,
        message: `gives ${gateway} hosts longer than the 253 characters DNS allows (its dev/PR host internal.<domain>, and <service>.<domain>); shorten it (or set gateways.${gateway}.devHost)`,
      });
      continue;
    }
    const claim = (host: string, path: (string | number)[], what: string) => {
      const other = hosts.get(host);
      if (other)
        out.push({
          path,
          input: host,
          message: `${what} ${host} on ${gateway} is also ${other}; each host is served once`,
        });
      else hosts.set(host, `${what} of envoy-gateways:${pathKey(path)}`);
    };
    services.forEach((s, i) => {
      const name = str(s?.name);
      if (!valid(name, i)) return;
      const host = `${name}.${domain}`;
      if (!isDnsSubdomain(host))
        out.push({
          path: ["services", i, "name"],
          input: name,
          message: `gives the host ${host} on ${gateway}, longer than the 253 characters DNS allows`,
        });
      else claim(host, ["services", i, "name"], "the host");
      if (!serveAliases || !Array.isArray(s.aliases)) return;
      s.aliases.forEach((alias: unknown, j: number) => {
        if (typeof alias === "string" && isDnsSubdomain(alias))
          claim(alias, ["services", i, "aliases", j], "the alias");
      });
    });
  }

  // Kubernetes Services: <service> for a single version, <service>-<version> for each of several.
  const owners = new Map<string, string>();
  services.forEach((s, i) => {
    const name = str(s?.name);
    if (!valid(name, i)) return;
    const versions = Array.isArray(s.versions) ? s.versions : undefined;
    const own = (service: string, path: (string | number)[], what: string) => {
      const other = owners.get(service);
      if (other)
        out.push({
          path,
          input: path.length === 4 ? versions![path[3] as number] : name,
          message: `${what} is the Service ${service}, which is also ${other}; choose another name`,
        });
      else owners.set(service, `the Service of envoy-gateways:${pathKey(path)}`);
      const host = `${service}.${namespace}.svc.${clusterDomain}`;
      if (host.length > 253)
        out.push({
          path,
          input: service,
          message: `${what}'s Service name gives the upstream host ${host}, longer than the 253 characters DNS allows`,
        });
    };
    if (!versions) return own(name, ["services", i, "name"], "this service");
    const seen = new Set<string>();
    versions.forEach((v: unknown, j: number) => {
      if (typeof v !== "string" || !isDnsLabelName(v)) return;
      if (seen.has(v))
        return out.push({
          path: ["services", i, "versions", j],
          input: v,
          message: `is listed twice; each version is listed once`,
        });
      seen.add(v);
      const service = `${name}-${v}`;
      if (service.length > 63)
        return out.push({
          path: ["services", i, "versions", j],
          input: v,
          message: `gives the Service ${service}, longer than the 63 characters a Kubernetes name allows`,
        });
      own(service, ["services", i, "versions", j], "this version");
    });
  });
  return [...byKey.values()];
}

function isDnsLabelName(name: string): boolean {
  return name.length <= 63 && DNS_LABEL.test(name);
}

/** A path as the config key after the project prefix: services[2].aliases[0]. */
function pathKey(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");
}

/** Shifts against the services they move: known service with versions, the checks every shift gets, no overlaps, every multi-version service shifted. */
function shiftConfigProblems(raw: Record<string, unknown>): CrossKeyProblem[] {
  const out: CrossKeyProblem[] = [];
  const services = listAt(raw.services) as ({ name?: unknown; versions?: unknown } | null)[];
  const shifts = listAt(raw.shifts) as (Record<string, unknown> | null)[];
  const versionsOf = new Map<string, string[]>();
  for (const s of services)
    if (typeof s?.name === "string")
      versionsOf.set(
        s.name,
        Array.isArray(s.versions) ? (s.versions as unknown[]).filter((v): v is string => typeof v === "string") : [],
      );
  const parsed = new Map<string, Shift[]>();
  shifts.forEach((sh, i) => {
    if (!sh || typeof sh !== "object" || typeof sh.service !== "string") return;
    const versions = versionsOf.get(sh.service);
    if (versions === undefined) {
      out.push({
        path: ["shifts", i, "service"],
        input: sh.service,
        message: "is not a service of this stack (envoy-gateways:services)",
      });
      return;
    }
    if (versions.length < 2) {
      out.push({
        path: ["shifts", i, "service"],
        input: sh.service,
        message: "has no versions to shift between; list them in its versions",
      });
      return;
    }
    const checked = checkShift(sh.service, sh, versions);
    for (const p of checked.problems)
      out.push({ path: p.field ? ["shifts", i, p.field] : ["shifts", i], input: p.value, message: p.message });
    if (checked.shift) (parsed.get(sh.service) ?? parsed.set(sh.service, []).get(sh.service)!).push(checked.shift);
  });
  for (const [service, list] of parsed) {
    const problem = overlapProblem(service, list);
    if (problem) out.push({ path: ["shifts"], input: undefined, message: problem });
  }
  services.forEach((s, i) => {
    if (
      typeof s?.name === "string" &&
      Array.isArray(s.versions) &&
      s.versions.length >= 2 &&
      !shifts.some((sh) => sh?.service === s.name)
    ) {
      out.push({
        path: ["services", i, "versions"],
        input: s.versions,
        message: `${s.name} has several versions but no shift in envoy-gateways:shifts says how to split its traffic`,
      });
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
 * The headless Service of a gateway's own pods (`<gateway>-pods`): DNS gives
 * every ready gateway pod, which is how each Envoy learns how many share the
 * service-wide rate limits. No production service may take its name.
 */
export function gatewayPodsService(gateway: string): string {
  return `${gateway}-pods`;
}

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
  devNamespaces: devNamespaces.pick({ rateLimit: true, upstreamTls: true }),
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
    devNamespaces: { rateLimit: config.devNamespaces.rateLimit, upstreamTls: config.devNamespaces.upstreamTls },
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
