// The upstream (gateway to pods) settings: load balancing, timeouts, circuit
// breakers, outlier detection, and retries (how many, and which methods are
// retried after a reset), which a service may also set for itself.
import { z } from "zod";
import { duration, intIn, refuse } from "./primitives.js";

/**
 * Methods whose requests may be repeated (RFC 9110 9.2.2): retried after a
 * reset even though the service may have received them. POST, PATCH and
 * CONNECT never are.
 */
export const IDEMPOTENT_METHODS = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"] as const;
const METHODS_HINT = `must list idempotent methods: ${IDEMPOTENT_METHODS.join(", ")} (never POST, PATCH or CONNECT: a service may act on them twice)`;
export const retryResetMethods = z
  .array(z.enum(IDEMPOTENT_METHODS, { error: METHODS_HINT }), { error: METHODS_HINT })
  .superRefine((list, ctx) => {
    list.forEach((m, i) => {
      if (list.indexOf(m) !== i) refuse(ctx, "is listed twice; list each method once", m, [i]);
    });
  });
export const retryCount = intIn(0, 10, "a whole number of retries");

export const upstream = z.strictObject({
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
