// The browser security headers a gateway adds to responses: their model, the
// external gateway's defaults, the schema of a map of them and how maps merge.
import { z } from "zod";
import { refuse } from "./primitives.js";

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
export const securityHeaders = z
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
