// The client-facing side: edge hardening (connection limits, header sizes,
// timeouts, HTTP/2 windows, buffers, drain, access log) and downstream TLS.
import { z } from "zod";
import { duration, intIn } from "./primitives.js";

export const edge = z.strictObject({
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

export const tls = z.strictObject({
  /** Oldest TLS version the listeners accept. */
  minimumVersion: z.enum(["TLSv1_2", "TLSv1_3"], { error: "must be TLSv1_2 or TLSv1_3" }).default("TLSv1_2"),
  /** TLS 1.2 cipher suites (forward-secret AEAD suites only). */
  cipherSuites: z
    .array(z.enum(CIPHERS_TLS12, { error: `must be one of ${CIPHERS_TLS12.join(", ")}` }))
    .min(1, { error: "must list at least one cipher suite" })
    .default([...CIPHERS_TLS12]),
});

/** The per-listener connection limits filled in: the plain-HTTP listener a tenth of the pod's, HTTPS the rest. */
export function resolveEdge<
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
