// Reading stack config: from Pulumi (a map of key -> string as the engine
// passes it) or straight from a Pulumi.<stack>.yaml file (for `render`).
import { readFileSync } from "node:fs";
import type { z } from "zod";
import { formatProblem, InputError, type Problem } from "./errors.js";
import { parseYamlSource, writtenFor } from "./yaml-source.js";
import {
  crossKeyProblems,
  routingConfigSchema,
  stackConfigSchema,
  type RoutingConfig,
  type StackConfig,
} from "./schema.js";

/** The Pulumi project name, which is also the config namespace. */
export const PROJECT = "envoy-gateways";

/**
 * The stack config key of the cluster's kubeconfig. It is a secret, read
 * apart from the rest (`kubeconfigOf`), and never part of a `StackConfig`, so
 * it cannot reach anything rendered from one.
 */
export const KUBECONFIG_KEY = "kubeconfig";

/** Top-level keys whose values are plain strings; every other key holds JSON (objects, lists, numbers, booleans). */
const STRING_KEYS = new Set([
  "domain",
  "internalDomain",
  "clusterDomain",
  "namespace",
  "envoyImage",
  "renderYamlToDirectory",
  KUBECONFIG_KEY,
]);

export interface ParseOptions {
  /** Top-level keys whose values are secrets (set with --secret): their errors never show the value. */
  secretKeys?: ReadonlySet<string>;
  /** Where each value was written (a stack file read by `readStackFile`): errors then name the file and line, and show values as written. */
  source?: ConfigSource;
  /** Problems found reading the file (keys it holds that are no value), reported with the values' own. */
  fileProblems?: Problem[];
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
export function parseStackConfig(
  raw: Record<string, unknown>,
  subject = "stack config",
  options: ParseOptions = {},
): StackConfig {
  const { [KUBECONFIG_KEY]: _kubeconfig, ...rest } = raw;
  const { data, problems } = checked(stackConfigSchema, rest, options, [
    ...kubeconfigProblems(raw),
    ...secretValueProblems(rest, options.secretKeys ?? new Set()),
    ...(options.fileProblems ?? []),
  ]);
  if (data && problems.length === 0) return data;
  throw new InputError(subject, problems);
}

/** Validates the routing part of stack config (what the routes resources are given). */
export function parseRoutingConfig(raw: unknown, subject = "routes resource config"): RoutingConfig {
  const input = (raw && typeof raw === "object" && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
  if (raw !== input)
    throw new InputError(subject, [
      { key: "config", source: "config", message: "must be a mapping of the routing config", value: raw },
    ]);
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
function secretValueProblems(raw: Record<string, unknown>, secretKeys: ReadonlySet<string>): Problem[] {
  const known = new Set(Object.keys(defOf(unwrap(stackConfigSchema)).shape!));
  return [...secretKeys]
    .filter((k) => k in raw && known.has(k))
    .map((k) => ({
      key: configKey([k]),
      source: "config" as const,
      message:
        "is set as a secret, but it is rendered into the gateways' ConfigMaps and the stack's state in plain text like every value but the kubeconfig; set it without --secret (value not shown)",
    }));
}

function kubeconfigProblems(raw: Record<string, unknown>): Problem[] {
  const value = raw[KUBECONFIG_KEY];
  if (value === undefined || (typeof value === "string" && value.length > 0)) return [];
  return [
    {
      key: configKey([KUBECONFIG_KEY]),
      source: "config",
      message: "must be kubeconfig text, set with --secret (value not shown: it is a secret)",
    },
  ];
}

/**
 * `raw` through `schema`, with every schema and cross-key problem, each
 * naming its key, once: secret values hidden, and, with a source, the file
 * and line and the value as written. Then `more`, the problems of values no
 * file holds (the secrets).
 */
function checked<T extends z.ZodType>(
  schema: T,
  raw: Record<string, unknown>,
  options: ParseOptions,
  more: Problem[] = [],
): { data?: z.output<T>; problems: Problem[] } {
  const poisoned = prototypeKeyPaths(raw);
  const input = poisoned.length ? (withoutPrototypeKeys(raw) as Record<string, unknown>) : raw;
  const result = schema.safeParse(input, { reportInput: true });
  const located: Located[] = poisoned.map((path) =>
    locatedProblem(
      path,
      `is refused: no setting has that name, and a key named ${PROTO} would set an object's prototype`,
      undefined,
    ),
  );
  if (!result.success) located.push(...result.error.issues.flatMap((issue) => toProblems(issue, schema)));
  for (const p of crossKeyProblems(input)) located.push(locatedProblem(p.path, p.message, p.input));
  const secret = options.secretKeys ?? new Set<string>();
  const seen = new Set<string>();
  const problems: Problem[] = [];
  for (const { path, problem } of located) {
    let p = problem;
    if (secret.has(String(path[0])) && "value" in p)
      p = { key: p.key, source: p.source, message: `${p.message} (value not shown: it is a secret)` };
    const at = options.source?.at(path);
    // formatProblem shows the value as written in place of the value, where the problem is about that value.
    if (at) p = { ...p, key: `${options.source!.file}:${at.line}: ${p.key}`, written: writtenFor(at, p.value) };
    // The schema and the cross-key checks can say the same thing of one value: once.
    const line = formatProblem(p);
    if (!seen.has(line)) {
      seen.add(line);
      problems.push(p);
    }
  }
  problems.push(...more);
  return { ...(result.success ? { data: result.data } : {}), problems };
}

const PROTO = "__proto__";

/**
 * The paths of the keys named `__proto__` anywhere in `value`. JSON.parse and the YAML reader
 * make them own keys; copied by assignment (as a schema builds its output), such a key would
 * set the copy's prototype instead. None reaches the schema.
 */
function prototypeKeyPaths(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => prototypeKeyPaths(v, [...path, i]));
  if (!value || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([k, v]) => (k === PROTO ? [[...path, k]] : prototypeKeyPaths(v, [...path, k])));
}

/** `value` without its `__proto__` keys, at any depth (a copy of what holds one). */
function withoutPrototypeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutPrototypeKeys);
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => k !== PROTO)
      .map(([k, v]) => [k, withoutPrototypeKeys(v)]),
  );
}

/**
 * Turns the engine's config map (`envoy-gateways:key` -> string, objects as
 * JSON text, as `pulumi.runtime.allConfig()` returns it) into raw values.
 * Keys of other namespaces (such as `kubernetes:context`) are left out.
 */
export function fromPulumiConfig(all: Record<string, string>): Record<string, unknown> {
  const entries: [string, unknown][] = [];
  for (const [fullKey, text] of Object.entries(all)) {
    const key = projectKey(fullKey);
    if (key === undefined) continue;
    if (STRING_KEYS.has(key)) {
      entries.push([key, text]);
      continue;
    }
    try {
      entries.push([key, JSON.parse(text)]);
    } catch {
      // A bare word where JSON was expected: keep it as a string so the schema names the key.
      entries.push([key, text]);
    }
  }
  return ownKeys(entries);
}

/**
 * An object of exactly these keys, each its own property: a key such as `__proto__` is a
 * key like any other (the schema then refuses it by name), never the object's prototype.
 */
function ownKeys(entries: [string, unknown][]): Record<string, unknown> {
  return Object.fromEntries(entries);
}

/**
 * Reads `envoy-gateways:*` values from a Pulumi.<stack>.yaml file, as Pulumi
 * reads it (anchors, aliases and `<<` merge keys). Secure (encrypted) values
 * cannot be read without the engine and are left out.
 */
export function readStackFile(path: string): Record<string, unknown> {
  const { raw, problems } = readStackFileSource(path);
  if (problems.length) throw new InputError(`stack file ${path}`, problems);
  return raw;
}

/** A stack file's config values, where each was written, and the problems of its keys that hold no value of this project. */
export function readStackFileSource(path: string): {
  raw: Record<string, unknown>;
  source: ConfigSource;
  problems: Problem[];
} {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new InputError(`stack file ${path}`, [
      {
        key: path,
        source: "config",
        message: `cannot be read: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}`,
      },
    ]);
  }
  const yaml = parseYamlSource(text, path, `stack file ${path}`, "config");
  const doc = yaml.value;
  const source: ConfigSource = {
    file: path,
    at: ([top, ...rest]) => yaml.at(["config", `${PROJECT}:${top}`, ...rest]),
  };
  return { ...stackFileConfig(doc, path, (k) => yaml.at(["config", k])?.line), source };
}

/** The project's config values of a stack file, and its keys that have no namespace (so mean nothing). */
function stackFileConfig(
  doc: unknown,
  path: string,
  lineOf: (fullKey: string) => number | undefined,
): { raw: Record<string, unknown>; problems: Problem[] } {
  const config = (doc as { config?: unknown } | null)?.config;
  if (config === undefined || config === null) return { raw: {}, problems: [] };
  if (typeof config !== "object" || Array.isArray(config)) {
    throw new InputError(`stack file ${path}`, [
      { key: `${path}: config`, source: "config", message: "must be a mapping of config keys", value: config },
    ]);
  }
  const entries: [string, unknown][] = [];
  const unscoped: Problem[] = [];
  for (const [fullKey, value] of Object.entries(config as Record<string, unknown>)) {
    if (!fullKey.includes(":")) {
      unscoped.push({
        key: `${path}:${lineOf(fullKey) ?? "?"}: config.${fullKey}`,
        source: "config",
        message: `has no namespace, so it means nothing (Pulumi refuses such a key): write ${PROJECT}:${fullKey}`,
      });
      continue;
    }
    const key = projectKey(fullKey);
    if (key === undefined) continue;
    if (value && typeof value === "object" && "secure" in value) continue;
    entries.push([key, value]);
  }
  return { raw: ownKeys(entries), problems: unscoped };
}

/** Loads and validates a stack's config file; errors name its lines and show values as written. */
export function loadStackFile(path: string): StackConfig {
  const { raw, source, problems } = readStackFileSource(path);
  return parseStackConfig(raw, `stack config ${path}`, { source, fileProblems: problems });
}

/** The key of a project config key (`envoy-gateways:<key>`); undefined for another namespace's. */
function projectKey(fullKey: string): string | undefined {
  return fullKey.startsWith(`${PROJECT}:`) ? fullKey.slice(PROJECT.length + 1) : undefined;
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

/** A problem of the value at `path` (a string path: a YAML source finds list items by "0" as by 0). */
function locatedProblem(path: readonly PropertyKey[], message: string, value: unknown): Located {
  return {
    path: path.map(String),
    problem: { key: configKey(path), source: "config", message, ...(value === undefined ? {} : { value }) },
  };
}

/** A schema issue as problems: parsed with `reportInput`, every issue carries the value it is about. */
function toProblems(issue: z.core.$ZodIssue, schema: z.ZodType): Located[] {
  if (issue.code === "unrecognized_keys") {
    const object = issue.input as Record<string, unknown>;
    return issue.keys.map((k) =>
      locatedProblem([...issue.path, k], `unknown key; ${allowedKeys(schema, issue.path)}`, object[k]),
    );
  }
  const message =
    issue.code === "invalid_type" && issue.input === undefined
      ? `is required (${issue.expected}; see the stack config reference in README.md)`
      : issue.message;
  return [locatedProblem(issue.path, message, issue.input)];
}

/** What this file reads of a zod schema's definition (every zod schema has one). */
type SchemaDef = {
  type: string;
  shape?: Record<string, unknown>;
  element?: unknown;
  innerType?: unknown;
  in?: unknown;
};
const defOf = (schema: unknown): SchemaDef => (schema as { def: SchemaDef }).def;
/** Schemas that wrap another: the keys allowed are those of the one inside (of a pipe, a transform: its input side). */
const WRAPPERS = new Set(["default", "prefault", "optional", "nullable", "readonly", "catch", "pipe"]);

/** Lists the keys the schema allows at a path, for "unknown key" errors: such a path runs through objects and lists to a strict object. */
function allowedKeys(root: z.ZodType, path: readonly PropertyKey[]): string {
  let schema: unknown = root;
  for (const part of path) {
    const def = defOf(unwrap(schema));
    schema = def.type === "array" ? def.element : def.shape![String(part)];
  }
  return `allowed: ${Object.keys(defOf(unwrap(schema)).shape!).join(", ")}`;
}

function unwrap(schema: unknown): unknown {
  let def = defOf(schema);
  while (WRAPPERS.has(def.type)) {
    schema = def.type === "pipe" ? def.in : def.innerType;
    def = defOf(schema);
  }
  return schema;
}
