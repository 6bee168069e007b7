// The stack config's building blocks: the refusal every check reports through,
// DNS names, durations, Kubernetes quantities, whole numbers in a range, label
// selectors and annotations. Each says, when it refuses a value, what is allowed.
import { z } from "zod";
import { parseDuration, parseQuantity } from "../units.js";
import {
  ANNOTATIONS_MAX_BYTES,
  isDnsSubdomain,
  isLabelValue,
  isQualifiedName,
  labelSelectorProblem,
  QUALIFIED_NAME_HINT,
} from "./kubernetes.js";

/** Refuses the value a refinement or transform is given (or the part of it at `path`), naming it as written: `input`. */
export function refuse(ctx: z.RefinementCtx, message: string, input: unknown, path: PropertyKey[] = []): void {
  // Stryker disable next-line StringLiteral: the issue code of a refusal is never read; its message and input are
  ctx.addIssue({ code: "custom", path, message, input });
}

/** A Kubernetes object name that must also be a DNS label (RFC 1123). */
const CIDR_HINT = "must be an address range in CIDR notation, such as 10.0.0.0/8 or fd00::/8";

export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_LABEL_HINT =
  "a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters";
const DNS_NAME_HINT =
  "a lower-case DNS name such as example.org (labels of at most 63 letters, digits and '-', joined by dots, at most 253 characters)";

export const dnsLabel = z
  .string({ error: `must be ${DNS_LABEL_HINT}` })
  .max(63, { error: `must be ${DNS_LABEL_HINT}` })
  .regex(DNS_LABEL, { error: `must be ${DNS_LABEL_HINT}` });

export const dnsName = z
  .string({ error: `must be ${DNS_NAME_HINT}` })
  .refine(isDnsSubdomain, { error: `must be ${DNS_NAME_HINT}` });

/**
 * A duration as Go and Kubernetes write them (250ms, 5s, 10m, 1h: one unit),
 * from `min` to `max` (what Envoy accepts for the field it sets, and what makes sense).
 */
export const duration = (min: string, max: string, hint = "") => {
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
export const QUANTITY_OK = {
  cpu: (q: unknown) => typeof q === "string" && (parseQuantity(q) ?? 0) >= 0.001,
  memory: (q: unknown) => {
    const bytes = typeof q === "string" ? parseQuantity(q) : undefined;
    return bytes !== undefined && bytes >= 1 && Number.isInteger(Math.round(bytes * 1e6) / 1e6);
  },
};
export const cpuQuantity = z.string({ error: CPU_HINT }).refine(QUANTITY_OK.cpu, { error: CPU_HINT });
export const memoryQuantity = z.string({ error: MEMORY_HINT }).refine(QUANTITY_OK.memory, { error: MEMORY_HINT });

/** A container's CPU and memory requests and limits; a request above its limit is refused. */
export const containerResources = z
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

export type ContainerResources = z.infer<typeof containerResources>;

/** A whole number in [min, max]; every failure says the same thing: what is allowed. */
export const intIn = (min: number, max: number, what = "a whole number") => {
  const error = `must be ${what} from ${min.toLocaleString("en-US")} to ${max.toLocaleString("en-US")}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};
export const port = intIn(1, 65535, "a port number");

/** An equality-based label selector: `key=value` terms joined by commas. */
export const labelSelector = z
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

/** Labels that select `what` (pods, namespaces): at least one, each key and value as Kubernetes accepts them. */
export const matchLabels = (what: "pod" | "namespace") =>
  z.record(z.string(), z.string({ error: "label values must be strings" })).superRefine((map, ctx) => {
    if (Object.keys(map).length === 0)
      refuse(ctx, `must name at least one label (an empty selector would select every ${what})`, map);
    for (const [key, value] of Object.entries(map)) {
      if (!isQualifiedName(key)) refuse(ctx, `the label key must be ${QUALIFIED_NAME_HINT}`, key, [key]);
      else if (!isLabelValue(value))
        refuse(
          ctx,
          "the label value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
          value,
          [key],
        );
    }
  });

/** Labels that select pods. */
export const podSelector = matchLabels("pod");

/** An IPv4 or IPv6 address range in CIDR notation (10.0.0.0/8, fd00::/8). */
export const cidr = z
  .string({ error: CIDR_HINT })
  .refine((s) => z.cidrv4().safeParse(s).success || z.cidrv6().safeParse(s).success, { error: CIDR_HINT });

/** Annotations of an object: keys Kubernetes accepts, string values, 256 KiB in all. */
export const annotations = z
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
