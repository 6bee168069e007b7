// Reading stack config: from Pulumi (a map of key -> string as the engine
// passes it) or straight from a Pulumi.<stack>.yaml file (for `render`).
import { readFileSync } from "node:fs";
import type { z } from "zod";
import { formatProblem, InputError, type Problem } from "./errors.js";
import { parseYamlSource } from "./yaml-source.js";
import { crossKeyProblems, routingConfigSchema, stackConfigSchema, type RoutingConfig, type StackConfig } from "./schema.js";

/** The Pulumi project name, which is also the config namespace. */
export const PROJECT = "envoy-gateways";

/**
 * The stack config key of the cluster's kubeconfig. It is a secret, read
 * apart from the rest (`kubeconfigOf`), and never part of a `StackConfig`, so
 * it cannot reach anything rendered from one.
 */
export const KUBECONFIG_KEY = "kubeconfig";

/** Top-level keys whose values are plain strings; every other key holds JSON (objects, lists, numbers, booleans). */
const STRING_KEYS = new Set(["domain", "internalDomain", "clusterDomain", "namespace", "envoyImage", "renderYamlToDirectory", KUBECONFIG_KEY]);

export interface ParseOptions {
  /** Top-level keys whose values are secrets (set with --secret): their errors never show the value. */
  secretKeys?: ReadonlySet<string>;
  /** Where each value was written (a stack file read by `readStackFile`): errors then name the file and line, and show values as written. */
  source?: ConfigSource;
}

/** Where the values of a stack file's config were written. */
export interface ConfigSource {
  file: string;
  /** The line and written text of the value at a config path (keys without the project prefix). */
  at(path: readonly (string | number)[]): { line: number; written?: string } | undefined;
}

/** A problem and the config path it concerns. */
type Located = { path: readonly (string | number)[]; problem: Problem };

/**
 * Validates raw stack config (keys without the `envoy-gateways:` prefix) into a
 * `StackConfig`. Throws one `InputError` listing every bad value. The
 * kubeconfig key is left to `kubeconfigOf`.
 */
export function parseStackConfig(raw: Record<string, unknown>, subject = "stack config", options: ParseOptions = {}): StackConfig {
  const { [KUBECONFIG_KEY]: _kubeconfig, ...rest } = raw;
  const { data, problems } = checked(stackConfigSchema, rest, options, [...kubeconfigProblems(raw), ...secretValueProblems(rest, options)]);
  if (data && problems.length === 0) return data;
  throw new InputError(subject, problems);
}

/** Validates the routing part of stack config (what the routes resources are given). */
export function parseRoutingConfig(raw: unknown, subject = "routes resource config"): RoutingConfig {
  const input = (raw && typeof raw === "object" && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
  if (raw !== input) throw new InputError(subject, [{ key: "config", message: "must be a mapping of the routing config", value: raw }]);
  const { data, problems } = checked(routingConfigSchema, input, {});
  if (data && problems.length === 0) return data;
  throw new InputError(subject, problems);
}

/** The kubeconfig text, if the stack sets one (checked by `parseStackConfig`). */
export function kubeconfigOf(raw: Record<string, unknown>): string | undefined {
  const value = raw[KUBECONFIG_KEY];
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/**
 * Only the kubeconfig may be a secret: every other value this program reads
 * ends up, in plain text, in what it renders (ConfigMaps, Deployments, the
 * routes resources' inputs), and so in the stack's state.
 */
function secretValueProblems(raw: Record<string, unknown>, options: ParseOptions): Located[] {
  const known = new Set(Object.keys((unwrap(stackConfigSchema) as { def: { shape: Record<string, unknown> } }).def.shape));
  return [...(options.secretKeys ?? [])]
    .filter((k) => k !== KUBECONFIG_KEY && k in raw && known.has(k))
    .map((k) => ({
      path: [k],
      problem: {
        key: configKey([k]),
        message: "is set as a secret, but it is rendered into the gateways' ConfigMaps and the stack's state in plain text like every value but the kubeconfig; set it without --secret (value not shown)",
      },
    }));
}

function kubeconfigProblems(raw: Record<string, unknown>): Located[] {
  const value = raw[KUBECONFIG_KEY];
  if (value === undefined || (typeof value === "string" && value.length > 0)) return [];
  return [{ path: [KUBECONFIG_KEY], problem: { key: configKey([KUBECONFIG_KEY]), message: "must be kubeconfig text, set with --secret (value not shown: it is a secret)" } }];
}

/**
 * `raw` through `schema`, with every schema and cross-key problem (and
 * `more`), each naming its key, once: secret values hidden, and, with a
 * source, the file and line and the value as written.
 */
function checked<T extends z.ZodType>(schema: T, raw: Record<string, unknown>, options: ParseOptions, more: Located[] = []): { data?: z.output<T>; problems: Problem[] } {
  const result = schema.safeParse(raw, { reportInput: true });
  const located: Located[] = result.success ? [] : result.error.issues.flatMap((issue) => toProblems(issue, raw, schema));
  for (const p of crossKeyProblems(raw)) {
    located.push({ path: p.path, problem: p.input === undefined ? { key: configKey(p.path), message: p.message } : { key: configKey(p.path), message: p.message, value: p.input } });
  }
  located.push(...more);
  const secret = options.secretKeys ?? new Set<string>();
  const seen = new Set<string>();
  const problems: Problem[] = [];
  for (const { path, problem } of located) {
    let p = problem;
    if (secret.has(String(path[0])) && "value" in p) p = { key: p.key, message: `${p.message} (value not shown: it is a secret)` };
    const at = options.source?.at(path);
    if (at) p = { ...p, key: `${options.source!.file}:${at.line}: ${p.key}`, ...(at.written !== undefined && "value" in p ? { written: at.written } : {}) };
    // The schema and the cross-key checks can say the same thing of one value: once.
    const line = formatProblem(p);
    if (!seen.has(line)) {
      seen.add(line);
      problems.push(p);
    }
  }
  return { ...(result.success ? { data: result.data } : {}), problems };
}

/**
 * Turns the engine's config map (`envoy-gateways:key` -> string, objects as
 * JSON text, as `pulumi.runtime.allConfig()` returns it) into raw values.
 * Keys of other namespaces (such as `kubernetes:context`) are left out.
 */
export function fromPulumiConfig(all: Record<string, string>): Record<string, unknown> {
  const raw: Record<string, unknown> = {};
  const problems: Problem[] = [];
  for (const [fullKey, text] of Object.entries(all)) {
    const [namespace, key] = splitKey(fullKey);
    if (namespace !== PROJECT || key === undefined) continue;
    if (STRING_KEYS.has(key)) {
      raw[key] = text;
      continue;
    }
    try {
      raw[key] = JSON.parse(text);
    } catch {
      // A bare word where JSON was expected: keep it as a string so the schema names the key.
      raw[key] = text;
    }
  }
  if (problems.length) throw new InputError("stack config", problems);
  return raw;
}

/**
 * Reads `envoy-gateways:*` values from a Pulumi.<stack>.yaml file, as Pulumi
 * reads it (anchors, aliases and `<<` merge keys). Secure (encrypted) values
 * cannot be read without the engine and are left out.
 */
export function readStackFile(path: string): Record<string, unknown> {
  return readStackFileSource(path).raw;
}

/** A stack file's config values, and where each was written. */
export function readStackFileSource(path: string): { raw: Record<string, unknown>; source: ConfigSource } {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new InputError(`stack file ${path}`, [{ key: path, message: `cannot be read: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}` }]);
  }
  const yaml = parseYamlSource(text, path, `stack file ${path}`);
  const doc = yaml.value;
  const source: ConfigSource = { file: path, at: ([top, ...rest]) => (top === undefined ? undefined : yaml.at(["config", `${PROJECT}:${top}`, ...rest])) };
  return { raw: stackFileConfig(doc, path), source };
}

function stackFileConfig(doc: unknown, path: string): Record<string, unknown> {
  const config = (doc as { config?: unknown } | null)?.config;
  if (config === undefined || config === null) return {};
  if (typeof config !== "object" || Array.isArray(config)) {
    throw new InputError(`stack file ${path}`, [{ key: `${path}: config`, message: "must be a mapping of config keys", value: config }]);
  }
  const raw: Record<string, unknown> = {};
  for (const [fullKey, value] of Object.entries(config as Record<string, unknown>)) {
    const [namespace, key] = splitKey(fullKey);
    if (namespace !== PROJECT || key === undefined) continue;
    if (value && typeof value === "object" && "secure" in value) continue;
    raw[key] = value;
  }
  return raw;
}

/** Loads and validates a stack's config file; errors name its lines and show values as written. */
export function loadStackFile(path: string): StackConfig {
  const { raw, source } = readStackFileSource(path);
  return parseStackConfig(raw, `stack config ${path}`, { source });
}

function splitKey(fullKey: string): [string, string | undefined] {
  const i = fullKey.indexOf(":");
  return i < 0 ? [fullKey, undefined] : [fullKey.slice(0, i), fullKey.slice(i + 1)];
}

/** Formats a schema path as Pulumi's `--path` syntax: a.b[2].c */
export function configKey(path: readonly PropertyKey[]): string {
  let key = "";
  for (const part of path) {
    if (typeof part === "number") key += `[${part}]`;
    else key += key ? `.${String(part)}` : String(part);
  }
  return `${PROJECT}:${key}`;
}

function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = raw;
  for (const part of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[part];
  }
  return v;
}

function toProblems(issue: z.core.$ZodIssue, raw: Record<string, unknown>, schema: z.ZodType): Located[] {
  const at = (path: readonly PropertyKey[], problem: Problem): Located => ({ path: path.map((p) => (typeof p === "number" ? p : String(p))), problem });
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((k) => at([...issue.path, k], { key: configKey([...issue.path, k]), message: `unknown key; ${allowedKeys(schema, issue.path)}`, value: valueAt(raw, [...issue.path, k]) }));
  }
  if (issue.code === "invalid_union" || issue.code === "invalid_key" || issue.code === "invalid_element") {
    return [at(issue.path, { key: configKey(issue.path), message: issue.message, value: valueAt(raw, issue.path) })];
  }
  const value = "input" in issue ? issue.input : valueAt(raw, issue.path);
  const message = issue.code === "invalid_type" && value === undefined ? `is required (${issue.expected}; see the stack config reference in README.md)` : issue.message;
  return [at(issue.path, value === undefined ? { key: configKey(issue.path), message } : { key: configKey(issue.path), message, value })];
}

/** Lists the keys the schema allows at a path, for "unknown key" errors. */
function allowedKeys(root: z.ZodType, path: readonly PropertyKey[]): string {
  let schema: unknown = root;
  for (const part of path) {
    schema = unwrap(schema);
    const def = (schema as { def?: { type?: string; shape?: Record<string, unknown>; element?: unknown; valueType?: unknown } }).def;
    if (def?.type === "object" && typeof part === "string") schema = def.shape?.[part];
    else if (def?.type === "array") schema = def.element;
    else if (def?.type === "record") schema = def.valueType;
    else return "see the stack config reference in README.md";
  }
  const shape = (unwrap(schema) as { def?: { shape?: Record<string, unknown> } }).def?.shape;
  return shape ? `allowed: ${Object.keys(shape).join(", ")}` : "see the stack config reference in README.md";
}

function unwrap(schema: unknown): unknown {
  let s = schema as { def?: { type?: string; innerType?: unknown; in?: unknown; schema?: unknown } } | undefined;
  for (let i = 0; i < 10 && s?.def; i++) {
    const t = s.def.type;
    if (t === "default" || t === "prefault" || t === "optional" || t === "nullable" || t === "readonly" || t === "catch") s = s.def.innerType as typeof s;
    else if (t === "pipe") s = s.def.in as typeof s;
    else break;
  }
  return s;
}
