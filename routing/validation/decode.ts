// Decoding a JSON document into an Envoy message exactly as strictly as
// Envoy does with --reject-unknown-dynamic-fields: unknown fields, bad enum
// names, oneof conflicts, wrong value types and unresolvable `@type`s are
// errors. On failure the error names the field path that is wrong.
import { fromJson, type DescField, type DescMessage, type JsonValue, type Message } from "@bufbuild/protobuf";
import { envoyApi } from "./descriptors.js";

export type DecodeResult = { ok: true; message: Message } | { ok: false; path: string; error: string };

/** Decodes `json` as the message `typeName` (a full proto name such as envoy.config.cluster.v3.Cluster). */
export function decode(typeName: string, json: unknown): DecodeResult {
  const { registry } = envoyApi();
  const desc = registry.getMessage(typeName);
  if (!desc) return { ok: false, path: "", error: `unknown message type ${typeName}` };
  try {
    return { ok: true, message: fromJson(desc, json as JsonValue, { registry }) };
  } catch (e) {
    const found = locate(desc, json, "");
    return { ok: false, path: found.path, error: found.error ?? (e as Error).message };
  }
}

/** The message type named by an `@type` URL. */
export function typeNameOf(typeUrl: unknown): string | undefined {
  return typeof typeUrl === "string" ? typeUrl.slice(typeUrl.lastIndexOf("/") + 1) : undefined;
}

function tryDecode(desc: DescMessage, json: unknown): string | undefined {
  try {
    fromJson(desc, json as JsonValue, { registry: envoyApi().registry });
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/**
 * Finds the deepest part of `json` that does not decode: descends into
 * message-typed fields (and the message inside an Any) while they fail.
 */
function locate(desc: DescMessage, json: unknown, path: string): { path: string; error?: string } {
  const { registry } = envoyApi();
  if (desc.typeName === "google.protobuf.Any") {
    if (json === null || typeof json !== "object" || Array.isArray(json))
      return { path, error: "must be an object with @type" };
    const typeUrl = (json as Record<string, unknown>)["@type"];
    const typeName = typeNameOf(typeUrl);
    const inner = typeName ? registry.getMessage(typeName) : undefined;
    if (!inner)
      return {
        path: join(path, "@type"),
        error: `unknown type ${JSON.stringify(typeUrl)} (not a message of Envoy's API)`,
      };
    const { "@type": _, ...rest } = json as Record<string, unknown>;
    if (inner.typeName.startsWith("google.protobuf.")) return { path };
    return locate(inner, rest, `${path}<${inner.name}>`);
  }
  if (
    json === null ||
    typeof json !== "object" ||
    Array.isArray(json) ||
    desc.typeName.startsWith("google.protobuf.")
  ) {
    return { path };
  }
  for (const [key, value] of Object.entries(json as Record<string, unknown>)) {
    const field = desc.fields.find((f) => f.name === key || f.jsonName === key);
    if (!field) return { path: join(path, key), error: `unknown field (${desc.typeName} has no field ${key})` };
    const sub = locateField(field, value, join(path, field.name));
    if (sub) return sub;
  }
  return { path };
}

function locateField(field: DescField, value: unknown, path: string): { path: string; error?: string } | undefined {
  if (value === null) return undefined;
  if (field.fieldKind === "message") {
    const err = tryDecode(field.message, value);
    return err === undefined ? undefined : withError(locate(field.message, value, path), err);
  }
  if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const err = tryDecode(field.message, value[i]);
      if (err !== undefined) return withError(locate(field.message, value[i], `${path}[${i}]`), err);
    }
  }
  if (field.fieldKind === "map" && field.mapKind === "message" && value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const err = tryDecode(field.message, v);
      if (err !== undefined) return withError(locate(field.message, v, `${path}[${JSON.stringify(k)}]`), err);
    }
  }
  return undefined;
}

function withError(found: { path: string; error?: string }, fallback: string): { path: string; error: string } {
  return { path: found.path, error: found.error ?? fallback };
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/**
 * Decodes many documents that share sub-objects (the translation reuses one
 * transport socket, one set of protocol options, one rate limit for
 * thousands of clusters and routes): a shared sub-object is decoded once and
 * the decoded message reused, which gives the same result as decoding each
 * document whole, several times faster. Messages decoded from a shared
 * object are listed in `shared`, so the rules check can visit them once.
 */
export class SharedDecoder {
  /** How many times each object is referenced across the documents. */
  private readonly refs = new Map<object, number>();
  /** Whether an object contains a shared object somewhere below it, worked out when first asked. */
  private readonly holdsShared = new Map<object, boolean>();
  private readonly memo = new Map<object, Map<unknown, unknown>>();
  /** Decoded messages that stand for a shared object. */
  readonly shared = new WeakSet<object>();
  /** How many documents were decoded whole after the shared decoding failed: none for valid documents, or sharing is lost. */
  fallbacks = 0;

  constructor(documents: readonly unknown[]) {
    for (const doc of documents) this.count(doc);
  }

  /** Decodes `json` as `typeName`; on any error, falls back to `decode` for a located message. */
  decode(typeName: string, json: unknown): DecodeResult {
    const desc = envoyApi().registry.getMessage(typeName);
    if (!desc) return { ok: false, path: "", error: `unknown message type ${typeName}` };
    try {
      return { ok: true, message: this.decodeMessage(desc, json) };
    } catch {
      this.fallbacks++;
      return decode(typeName, json);
    }
  }

  /**
   * Decodes an xDS resource (one of the documents given) as `typeName`, its
   * `@type` key (already checked by the caller) left out. The resource itself
   * is decoded, not a copy without `@type`, so the parts it shares are decoded
   * once like everywhere else.
   */
  decodeResource(typeName: string, resource: Record<string, unknown>): DecodeResult {
    const desc = envoyApi().registry.getMessage(typeName);
    if (!desc) return { ok: false, path: "", error: `unknown message type ${typeName}` };
    try {
      return { ok: true, message: this.decodeMessage(desc, resource, true) };
    } catch {
      this.fallbacks++;
      const { "@type": _, ...body } = resource;
      return decode(typeName, body);
    }
  }

  private count(value: unknown): void {
    if (value === null || typeof value !== "object") return;
    const n = (this.refs.get(value) ?? 0) + 1;
    this.refs.set(value, n);
    if (n > 1) return;
    for (const child of Array.isArray(value) ? value : Object.values(value)) this.count(child);
  }

  /** True when a shared object is somewhere below `value` (which must be one of the documents or part of one). */
  private containsShared(value: object): boolean {
    let found = this.holdsShared.get(value);
    if (found === undefined) {
      found = false;
      for (const child of Array.isArray(value) ? value : Object.values(value)) {
        if (child !== null && typeof child === "object" && (this.isShared(child) || this.containsShared(child))) {
          found = true;
          break;
        }
      }
      this.holdsShared.set(value, found);
    }
    return found;
  }

  private isShared(value: unknown): value is object {
    return value !== null && typeof value === "object" && (this.refs.get(value) ?? 0) > 1;
  }

  private cached<T>(value: object, key: unknown, make: () => T): T {
    let byKey = this.memo.get(value);
    if (!byKey) this.memo.set(value, (byKey = new Map()));
    if (byKey.has(key)) return byKey.get(key) as T;
    const made = make();
    byKey.set(key, made);
    return made;
  }

  /** `resource`: `json` is an xDS resource whose `@type` key is not a field. */
  private decodeMessage(desc: DescMessage, json: unknown, resource = false): Message {
    const { registry } = envoyApi();
    if (
      json === null ||
      typeof json !== "object" ||
      Array.isArray(json) ||
      isSpecial(desc) ||
      !this.containsShared(json)
    ) {
      if (resource && json !== null && typeof json === "object" && !Array.isArray(json)) {
        const { "@type": _, ...body } = json as Record<string, unknown>;
        return fromJson(desc, body as JsonValue, { registry });
      }
      return fromJson(desc, json as JsonValue, { registry });
    }
    const rest: Record<string, unknown> = {};
    const parts: [DescField, object][] = [];
    const byName = fieldsByName(desc);
    for (const [key, value] of Object.entries(json as Record<string, unknown>)) {
      if (resource && key === "@type") continue;
      const field = byName.get(key);
      if (!field) throw new Error(`unknown field ${key}`);
      if (value !== null && typeof value === "object" && (this.isShared(value) || this.containsShared(value)))
        parts.push([field, value]);
      else rest[key] = value;
    }
    const message = fromJson(desc, rest as JsonValue, { registry }) as unknown as Record<string, unknown>;
    for (const [field, value] of parts) {
      if (field.oneof && (message[field.oneof.localName] as { case?: unknown } | undefined)?.case !== undefined)
        throw new Error("oneof conflict");
      const decoded = this.decodeField(desc, field, value);
      if (field.oneof) message[field.oneof.localName] = { case: field.localName, value: decoded };
      else message[field.localName] = decoded;
    }
    return message as unknown as Message;
  }

  /** The decoded value of one field: messages and lists of messages recursively, anything else through a one-field document. */
  private decodeField(parent: DescMessage, field: DescField, value: object): unknown {
    if (field.fieldKind === "message" && !isSpecial(field.message)) return this.decodeChild(field.message, value);
    if (
      field.fieldKind === "list" &&
      field.listKind === "message" &&
      !isSpecial(field.message) &&
      Array.isArray(value)
    ) {
      const make = () => value.map((item) => this.decodeChild(field.message!, item));
      if (!this.isShared(value)) return make();
      // The messages of a shared list are shared too, so that the rules check visits them once.
      return this.cached(value, field, () => {
        const list = make();
        for (const m of list) this.shared.add(m);
        return list;
      });
    }
    const make = () => {
      const one = fromJson(parent, { [field.name]: value } as JsonValue, {
        registry: envoyApi().registry,
      }) as unknown as Record<string, unknown>;
      const v = field.oneof ? (one[field.oneof.localName] as { value: unknown }).value : one[field.localName];
      if (v !== null && typeof v === "object") {
        this.shared.add(v);
        // Entries of a shared map or list are shared too (the rules check keys on each message).
        for (const item of Array.isArray(v) ? v : field.fieldKind === "map" ? Object.values(v) : []) {
          if (item !== null && typeof item === "object") this.shared.add(item);
        }
      }
      return v;
    };
    return this.isShared(value) ? this.cached(value, field, make) : make();
  }

  private decodeChild(desc: DescMessage, value: unknown): Message {
    if (!this.isShared(value)) return this.decodeMessage(desc, value);
    return this.cached(value, desc, () => {
      const m = this.decodeMessage(desc, value);
      this.shared.add(m);
      return m;
    });
  }
}

const fieldMaps = new Map<DescMessage, Map<string, DescField>>();
/** A message's fields by proto name and JSON name. */
function fieldsByName(desc: DescMessage): Map<string, DescField> {
  let map = fieldMaps.get(desc);
  if (!map) {
    map = new Map();
    for (const f of desc.fields) map.set(f.name, f).set(f.jsonName, f);
    fieldMaps.set(desc, map);
  }
  return map;
}

/** Well-known types and Any have their own JSON forms: always decoded whole. */
function isSpecial(desc: DescMessage): boolean {
  return desc.typeName.startsWith("google.protobuf.");
}
