// Errors that name what is wrong: the stack config key (or file and field),
// the bad value, and what is allowed. Collected, never only the first.

/**
 * Which input a problem is in, set where the problem is made: stack config
 * (or a stack file), the dev/PR namespaces (discovered, or a namespaces file),
 * the Envoy documents rendered from them, or the routes resource's own
 * choice of gateway.
 */
export type ProblemSource = "config" | "namespaces" | "documents" | "gateway";

/** Where in a gateway's documents a validation problem is, as the validator found it. */
export interface DocumentPlace {
  /** The gateway whose documents these are, or the ConfigMap (`namespace/name`) whose data was read. */
  gateway: string;
  /** The file (`envoy.yaml`, `cds.yaml`, `rds.yaml`, `sds-*.yaml`); absent where a rule does not tell (a cluster's endpoints: static or CDS). */
  file?: string;
  /** The resource of an xDS file: its kind (`cluster`, `route configuration`, `secret`), name when it has one, and index. */
  resource?: { kind: string; name?: string; index: number };
  /** The element one of Envoy's load-time rules names: a listener, cluster or route configuration (`part`: a listener's inline route configuration). */
  element?: { kind: string; name: string; part?: string };
  /** The field's path in the document or resource (`connect_timeout`, `virtual_hosts[0].routes[1].route.timeout`). */
  field?: string;
  /** The stack config key that set the field, when the translation sets it from one. */
  configKey?: string;
}

/** One problem with one value. */
export interface Problem {
  /** Where, for people: a stack config key such as `envoy-gateways:gateways.gateway.replicas`, or a file and field. */
  key: string;
  /** Which input the problem is in. */
  source: ProblemSource;
  /** For a problem of the Envoy documents: where in them, field by field. */
  place?: DocumentPlace;
  /** What is wrong and what is allowed. */
  message: string;
  /** The offending value, when there is one (printed compactly). */
  value?: unknown;
  /** The value as written in its file (`.nan`, `1e400`), shown instead of `value` when known. */
  written?: string;
  /** Where the value is in the input it came from (keys and list indexes), for readers of files to name the line. */
  path?: readonly (string | number)[];
  /** For a problem of discovered namespaces: the cluster objects it is about, which carry it as their route status (route-status.ts). */
  objects?: readonly ClusterObject[];
}

/** A namespace, or a Service in one, as discovery listed it. */
export interface ClusterObject {
  kind: "Namespace" | "Service";
  /** The Service's namespace (absent for a Namespace). */
  namespace?: string;
  name: string;
}

/** Prints a value for an error message: short, on one line, secrets never included by callers; NaN and infinities as such, not null. */
export function showValue(value: unknown): string {
  if (value === undefined) return "nothing";
  let text: string;
  try {
    text =
      JSON.stringify(value, (_, v: unknown) =>
        typeof v === "number" && !Number.isFinite(v) ? `\u0000${v}\u0000` : v,
      ) ?? String(value);
    text = text.replace(/"\\u0000(.*?)\\u0000"/g, "$1");
  } catch {
    text = String(value);
  }
  return shortened(text);
}

function shortened(text: string): string {
  const line = text.replace(/\n/g, "\\n");
  return line.length > 200 ? `${line.slice(0, 160)}... (${line.length.toLocaleString("en-US")} characters)` : line;
}

/**
 * True for a value that looks like a credential, whatever key it was given
 * under: kubeconfig text, a private key or certificate (PEM), a bearer token
 * or JWT, a long run of base64 or hex. Errors never print such a value.
 */
export function looksLikeCredential(value: unknown): boolean {
  const text =
    typeof value === "string"
      ? value
      : value !== null && typeof value === "object"
        ? (JSON.stringify(value) ?? "")
        : "";
  return (
    /-----BEGIN [A-Z ]*(PRIVATE KEY|CERTIFICATE)-----/.test(text) ||
    /\b(client-key-data|client-certificate-data|certificate-authority-data|token|password|secret|auth-provider)\b\s*["']?\s*:/i.test(
      text,
    ) ||
    /\bkind:\s*Config\b/.test(text) ||
    /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/.test(text) ||
    [...text.matchAll(/(sha256:)?([A-Za-z0-9+/=_-]{40,})/g)].some(([, digest, run]) => !digest && randomLooking(run!))
  );
}

/** A long run of mixed-case letters and digits (base64), or of hex digits: a key, not a name. */
function randomLooking(run: string): boolean {
  const digits = /[0-9]/.test(run);
  return (
    (digits && /[a-z]/.test(run) && /[A-Z]/.test(run)) || (digits && /^[0-9a-f]+$/i.test(run) && /[a-f]/i.test(run))
  );
}

/** What a problem reads as: its key, message and value. */
export type ProblemText = Pick<Problem, "key" | "message" | "value" | "written">;

export function formatProblem(p: ProblemText): string {
  if (!("value" in p)) return `${p.key}: ${p.message}`;
  if (looksLikeCredential(p.value) || looksLikeCredential(p.written))
    return `${p.key}: ${p.message} (value hidden: it looks like a credential)`;
  return `${p.key}: ${p.message} (got ${p.written !== undefined ? shortened(p.written) : showValue(p.value)})`;
}

/** Bad input: carries every problem found, each on its own line in `message`. */
export class InputError extends Error {
  constructor(
    /** What was being read, such as "stack config" or "namespaces file dev.yaml". */
    readonly subject: string,
    readonly problems: readonly Problem[],
  ) {
    super(
      `${subject}: ${problems.length} problem${problems.length === 1 ? "" : "s"}\n${problems.map((p) => `  - ${formatProblem(p)}`).join("\n")}`,
    );
    this.name = "InputError";
  }
}
