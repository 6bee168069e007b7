// Reading stack config: from Pulumi (a map of key -> string as the engine
// passes it) or straight from a Pulumi.<stack>.yaml file (for `render`).
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { InputError, type Problem } from "./errors.js";
import { crossKeyProblems, stackConfigSchema, type StackConfig } from "./schema.js";

/** The Pulumi project name, which is also the config namespace. */
export const PROJECT = "envoy-gateways";

/** Top-level keys whose values are plain strings; every other key holds JSON (objects, lists, numbers, booleans). */
const STRING_KEYS = new Set(["domain", "internalDomain", "clusterDomain", "namespace", "envoyImage", "renderYamlToDirectory", "kubeconfig"]);

/**
 * Validates raw stack config (keys without the `envoy-gateways:` prefix) into a
 * `StackConfig`. Throws one `InputError` listing every bad value.
 */
export function parseStackConfig(raw: Record<string, unknown>, subject = "stack config"): StackConfig {
  const result = stackConfigSchema.safeParse(raw, { reportInput: true });
  const problems: Problem[] = result.success ? [] : result.error.issues.flatMap((issue) => toProblems(issue, raw));
  for (const p of crossKeyProblems(raw)) problems.push(p.input === undefined ? { key: configKey(p.path), message: p.message } : { key: configKey(p.path), message: p.message, value: p.input });
  if (result.success && problems.length === 0) return result.data;
  throw new InputError(subject, problems);
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
 * Reads `envoy-gateways:*` values from a Pulumi.<stack>.yaml file. Secure
 * (encrypted) values cannot be read without the engine and are left out.
 */
export function readStackFile(path: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, "utf8"));
  } catch (e) {
    throw new InputError(`stack file ${path}`, [{ key: path, message: `cannot be read as YAML: ${(e as Error).message}` }]);
  }
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

/** Loads and validates a stack's config file. */
export function loadStackFile(path: string): StackConfig {
  return parseStackConfig(readStackFile(path), `stack config ${path}`);
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

/** Keys whose values are secrets: their errors never show the value. */
const SECRET_KEYS = new Set(["kubeconfig"]);

function toProblems(issue: z.core.$ZodIssue, raw: Record<string, unknown>): Problem[] {
  if (SECRET_KEYS.has(String(issue.path[0]))) return [{ key: configKey(issue.path), message: `${issue.message} (value not shown: it is a secret)` }];
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((k) => ({
      key: configKey([...issue.path, k]),
      message: `unknown key; ${allowedKeys(issue.path)}`,
      value: valueAt(raw, [...issue.path, k]),
    }));
  }
  if (issue.code === "invalid_union" || issue.code === "invalid_key" || issue.code === "invalid_element") {
    return [{ key: configKey(issue.path), message: issue.message, value: valueAt(raw, issue.path) }];
  }
  const value = "input" in issue ? issue.input : valueAt(raw, issue.path);
  const message = issue.code === "invalid_type" && value === undefined ? `is required (${issue.expected}; see the stack config reference in README.md)` : issue.message;
  return [value === undefined ? { key: configKey(issue.path), message } : { key: configKey(issue.path), message, value }];
}

/** Lists the keys the schema allows at a path, for "unknown key" errors. */
function allowedKeys(path: readonly PropertyKey[]): string {
  let schema: unknown = stackConfigSchema;
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
