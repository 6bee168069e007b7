// Writing Envoy documents as the files Envoy reads.
//
// xDS files (cds.yaml, rds.yaml) are shaped as a DiscoveryResponse (what
// path_config_source expects) and kept compact, because one ConfigMap must
// hold the routes of every dev/PR namespace:
//   - each resource is one line of JSON (JSON is YAML; JSON quotes every
//     string, which matters: Envoy's YAML loader turns an unquoted scalar that
//     looks like a boolean, such as a namespace called `no`, into a boolean);
//   - parts the translation shares between resources (one transport socket,
//     one set of protocol options, one rate limit for thousands of clusters
//     and routes) and long repeated strings are written once, in a leading
//     `!ignore` mapping that Envoy's loader drops, as YAML anchors; each use
//     is an alias, which the loader expands;
//   - route configurations put each virtual host and each route on its own
//     line, so a change shows as a changed line.
// The bootstrap and SDS files are small and written as readable block YAML
// by the `yaml` library.
import { Document, isMap, isScalar, parseDocument } from "yaml";
import type { Json } from "./types.js";
import { contentVersion } from "../units.js";

/** A DiscoveryResponse-shaped xDS file. */
export interface XdsDocument extends Json {
  version_info: string;
  resources: Json[];
}

/** Wraps resources as a DiscoveryResponse; version_info is a digest of their content. */
export function discoveryResponse(resources: Json[]): XdsDocument {
  return { version_info: contentVersion(resources), resources };
}

/** Shared objects smaller than this (as JSON) are written in place: an alias would not save much. */
const MIN_ALIASED_OBJECT = 40;
/** A repeated string is aliased when that saves at least this many bytes overall. */
const MIN_STRING_SAVING = 16;
/** Keys whose list elements each get a line of their own. */
const LINE_PER_ELEMENT = new Set(["virtual_hosts", "routes"]);
/** The key of the leading mapping that holds the anchors (Envoy ignores keys tagged !ignore). */
const ANCHORS_KEY = "!ignore anchors";

/** Compact YAML for an xDS file (see the top of this module). */
export function toXdsYaml(doc: XdsDocument): string {
  const aliases = findAliases(doc.resources);
  const writer = new JsonWriter(aliases);
  const definitions = [...aliases.order].map(
    (value) => `  ${aliases.names.get(value)}: &${aliases.names.get(value)} ${writer.value(value, true, " ")}`,
  );
  const resources = doc.resources.map((r) => `- ${writer.value(r, false, "")}`);
  return [
    ...(definitions.length ? [`${ANCHORS_KEY}:`, ...definitions] : []),
    `version_info: ${JSON.stringify(doc.version_info)}`,
    resources.length ? "resources:" : "resources: []",
    ...resources,
    "",
  ].join("\n");
}

interface Aliases {
  /** Shared values in definition order (a value's own aliases are defined before it). */
  order: Set<unknown>;
  names: Map<unknown, string>;
}

/** Objects referenced more than once and long strings written more than once. */
function findAliases(resources: Json[]): Aliases {
  const refs = new Map<object, number>();
  const strings = new Map<string, number>();
  const count = (v: unknown): void => {
    if (typeof v === "string") {
      if (v.length >= 6) strings.set(v, (strings.get(v) ?? 0) + 1);
      return;
    }
    if (v === null || typeof v !== "object") return;
    const n = (refs.get(v) ?? 0) + 1;
    refs.set(v, n);
    if (n === 1) for (const child of Array.isArray(v) ? v : Object.values(v)) count(child);
  };
  resources.forEach(count);
  const shared = new Set<unknown>();
  for (const [obj, n] of refs) if (n > 1 && JSON.stringify(obj).length >= MIN_ALIASED_OBJECT) shared.add(obj);
  // Each use shrinks from the quoted string to `*sN`; the definition line costs about its length plus 12.
  for (const [s, n] of strings)
    if (n * (JSON.stringify(s).length - 4) - (JSON.stringify(s).length + 12) >= MIN_STRING_SAVING) shared.add(s);
  const order = new Set<unknown>();
  const names = new Map<unknown, string>();
  let objects = 0;
  let texts = 0;
  const define = (v: unknown, seen: Set<object>): void => {
    if (v !== null && typeof v === "object") {
      if (seen.has(v)) return;
      seen.add(v);
      for (const child of Array.isArray(v) ? v : Object.values(v)) define(child, seen);
    }
    if (shared.has(v) && !order.has(v)) {
      order.add(v);
      names.set(v, typeof v === "string" ? `s${++texts}` : `o${++objects}`);
    }
  };
  const seen = new Set<object>();
  resources.forEach((r) => define(r, seen));
  return { order, names };
}

/** Writes JSON with aliases in place of shared values, and a line per element under LINE_PER_ELEMENT keys. */
class JsonWriter {
  constructor(private readonly aliases: Aliases) {}

  /** `defining`: the value is the anchor's own definition, so it is written out, not aliased. */
  value(v: unknown, defining: boolean, indent: string): string {
    // Only objects and strings are ever aliased.
    if (v === null || (typeof v !== "object" && typeof v !== "string")) return JSON.stringify(v);
    if (!defining) {
      const name = this.aliases.names.get(v);
      if (name) return `*${name}`;
    }
    if (typeof v === "string") return JSON.stringify(v);
    if (Array.isArray(v)) {
      let out = "[";
      for (let i = 0; i < v.length; i++) out += (i ? "," : "") + this.value(v[i], false, indent);
      return `${out}]`;
    }
    let out = "{";
    let first = true;
    for (const k in v) {
      const x = (v as Record<string, unknown>)[k];
      if (x === undefined) continue;
      out += (first ? "" : ",") + quotedKey(k) + ":";
      first = false;
      if (LINE_PER_ELEMENT.has(k) && Array.isArray(x) && x.length > 0) {
        // Continuation lines of a flow collection only need to be indented past their block.
        const inner = `${indent} `;
        out += `[\n${inner}${x.map((e) => this.value(e, false, inner)).join(`,\n${inner}`)}]`;
      } else out += this.value(x, false, indent);
    }
    return `${out}}`;
  }
}

/** Keys repeat across thousands of resources: each is quoted once. */
const quotedKeys = new Map<string, string>();
function quotedKey(k: string): string {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = JSON.stringify(k);
    if (quotedKeys.size < 10_000) quotedKeys.set(k, q);
  }
  return q;
}

/** Readable YAML (block style, no aliases, every string quoted) for the bootstrap and SDS files. */
export function toReadableYaml(doc: Json): string {
  return new Document(doc, { aliasDuplicateObjects: false }).toString({
    defaultStringType: "QUOTE_DOUBLE",
    defaultKeyType: "PLAIN",
    lineWidth: 0,
    minContentWidth: 0,
  });
}

/**
 * Parses a file this project wrote, as Envoy reads it: aliases expanded (no
 * alias limit: the files are ours), keys tagged `!ignore` dropped.
 */
export function parseEnvoyYaml(text: string): unknown {
  const doc = parseDocument(text, { customTags: [{ tag: "!ignore", resolve: (value: string) => value }] });
  if (doc.errors.length) throw new Error(`not valid YAML: ${doc.errors[0]!.message}`);
  const ignored = isMap(doc.contents)
    ? doc.contents.items
        .filter((p) => isScalar(p.key) && p.key.tag === "!ignore")
        .map((p) => String((p.key as { value: unknown }).value))
    : [];
  const value = doc.toJS({ maxAliasCount: -1 }) as Record<string, unknown>;
  for (const key of ignored) delete value[key];
  return value;
}
