// The validation rules annotated in Envoy's protos (protoc-gen-validate's
// `(validate.rules)`, `(validate.required)` on oneofs): Envoy checks them when
// it loads a document, @bufbuild/protobuf's JSON decoding does not, so this
// module does. It walks a decoded message, including the message inside
// every Any, and reports each broken rule with its field path. Fields marked
// deprecated in the API are reported too: generated documents never use them.
//
// Each message type's rules are compiled once into small check functions;
// the walk reads the decoded messages' fields directly. The rules checked are
// those Envoy's API uses (CHECKED_RULES); any other is refused when compiled,
// so that an Envoy API that starts using one fails compileEveryRule
// (validator.test.ts) instead of going unchecked.
import { getExtension, hasExtension, toJson, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import { anyUnpack, type Any } from "@bufbuild/protobuf/wkt";
import { RE2JS } from "@bufbuild/re2";
import { envoyApi } from "./descriptors.js";

type Rules = Record<string, unknown>;
type Check = (value: unknown) => string | undefined;
type Fields = Record<string, unknown>;

export interface RuleViolation {
  /** Field path inside the document, such as transport_socket.typed_config<UpstreamTlsContext>.sni */
  path: string;
  message: string;
}

/**
 * Checks every annotated rule in `message` (of type `desc`). Messages listed
 * in `shared` (reused in many places, see SharedDecoder) are checked once;
 * their violations are reported at every place they appear.
 */
export function checkRules(desc: DescMessage, message: Message, shared?: WeakSet<object>): RuleViolation[] {
  const out: RuleViolation[] = [];
  walkMessage(walkOf(shared), desc, message as unknown as Fields, [], out);
  return out;
}

/**
 * One walk state per set of shared messages (one SharedDecoder: one gateway's
 * documents), so a message shared by every cluster or route is checked once
 * for all the documents, not once per document.
 */
const walks = new WeakMap<WeakSet<object>, Walk>();
function walkOf(shared: WeakSet<object> | undefined): Walk {
  if (!shared) return { shared, memo: new WeakMap() };
  let walk = walks.get(shared);
  if (!walk) walks.set(shared, (walk = { shared, memo: new WeakMap() }));
  return walk;
}

/** What compiling every message of Envoy's API yields (see compileEveryRule). */
export interface CompiledRules {
  /** Message types planned. */
  messages: number;
  /** Fields with at least one compiled check (value, presence, collection, item, key or Any type). */
  fields: number;
  /** Oneofs that must have a member set. */
  requiredOneofs: number;
}

/**
 * Compiles the rules of every message type in Envoy's API at once (normally
 * each type is compiled when first met), so that every pattern compiles and
 * the number of rules checked can be reported.
 */
export function compileEveryRule(): CompiledRules {
  const out: CompiledRules = { messages: 0, fields: 0, requiredOneofs: 0 };
  for (const type of envoyApi().registry) {
    if (type.kind !== "message") continue;
    const plan = planFor(type);
    out.messages++;
    out.fields += plan.fields.filter(hasCheck).length;
    out.requiredOneofs += plan.requiredOneofs.length;
  }
  return out;
}

function hasCheck(fp: FieldPlan): boolean {
  return !!(fp.check || fp.required || fp.skipMessage || fp.checkCollection || fp.item?.check || fp.checkKey);
}

const RANGE = ["gt", "gte", "lt", "lte"];
const NUMBER = new Set([...RANGE, "ignore_empty"]);
/** The protoc-gen-validate rules Envoy's API uses, by kind of rule (scalars, collections, messages): the ones checked here. */
const CHECKED_RULES: Record<string, ReadonlySet<string>> = {
  string: new Set([
    "min_len",
    "max_len",
    "max_bytes",
    "prefix",
    "suffix",
    "in",
    "pattern",
    "well_known_regex",
    "strict",
    "ignore_empty",
  ]),
  bytes: new Set(["min_len", "max_len"]),
  bool: new Set(["const"]),
  enum: new Set(["defined_only", "not_in"]),
  ...Object.fromEntries(
    [
      "double",
      "float",
      "int32",
      "uint32",
      "sint32",
      "fixed32",
      "sfixed32",
      "int64",
      "uint64",
      "sint64",
      "fixed64",
      "sfixed64",
    ].map((k) => [k, NUMBER]),
  ),
  duration: new Set([...RANGE, "required"]),
  message: new Set(["required", "skip"]),
  any: new Set(["required"]),
  repeated: new Set(["min_items", "max_items", "unique", "items"]),
  map: new Set(["min_pairs", "keys", "values"]),
};

/** The rules (`kind.rule`, items and map keys and values inside) that are not among CHECKED_RULES. */
export function uncheckedRules(rules: Rules, prefix = ""): string[] {
  const out: string[] = [];
  for (const [kind, r] of Object.entries(rules)) {
    for (const [rule, inner] of Object.entries(r as Rules)) {
      if (!CHECKED_RULES[kind]?.has(rule)) out.push(`${prefix}${kind}.${rule}`);
      else if (rule === "items" || rule === "keys" || rule === "values")
        out.push(...uncheckedRules(inner as Rules, `${prefix}${kind}.${rule}.`));
    }
  }
  return out;
}

interface Walk {
  shared: WeakSet<object> | undefined;
  /** Violations (relative paths) of shared messages already checked, by message and field. */
  memo: WeakMap<object, Map<FieldPlan | undefined, RuleViolation[]>>;
}

/** How to check one field, compiled from its descriptor and rules. */
interface FieldPlan {
  field: DescField;
  /** Reads the field: undefined when a field with presence is unset. */
  read: (m: Fields) => unknown;
  deprecated: boolean;
  /** Rules on the value itself (scalars, enums, wrappers, durations). */
  check: Check | undefined;
  /** Message, Duration or Any that must be set. */
  required: boolean;
  /** (validate.rules).message.skip: the message set here is not checked. */
  skipMessage: boolean;
  /** Repeated/map size and uniqueness rules. */
  checkCollection: ((value: unknown) => string | undefined) | undefined;
  /** Rules on each list item or map value; and on map keys. */
  item: FieldPlan | undefined;
  checkKey: Check | undefined;
  /** The message type walked below this field (lists and maps: of their values). */
  message: DescMessage | undefined;
}

interface MessagePlan {
  fields: FieldPlan[];
  requiredOneofs: { localName: string; name: string; members: string }[];
}

const plans = new Map<DescMessage, MessagePlan>();

function planFor(desc: DescMessage): MessagePlan {
  let plan = plans.get(desc);
  if (plan) return plan;
  const api = envoyApi();
  const options = desc.proto.options;
  if (options !== undefined && hasExtension(options, api.messageDisabled))
    throw new Error(
      `${desc.typeName}: (validate.disabled) is a rule the validator does not check (routing/validation/rules.ts)`,
    );
  const fields: FieldPlan[] = [];
  for (const field of desc.fields) {
    const rules = fieldRules(field);
    const holdsMessages =
      field.fieldKind === "message" ||
      (field.fieldKind === "list" && field.listKind === "message") ||
      (field.fieldKind === "map" && field.mapKind === "message");
    if (rules || holdsMessages || field.deprecated) fields.push(compileField(field, rules));
  }
  const requiredOneofs = desc.oneofs
    .filter((o) => {
      const opts = o.proto.options;
      return (
        opts !== undefined && hasExtension(opts, api.oneofRequired) && getExtension(opts, api.oneofRequired) === true
      );
    })
    .map((o) => ({ localName: o.localName, name: o.name, members: o.fields.map((f) => f.name).join(", ") }));
  plan = { fields, requiredOneofs };
  plans.set(desc, plan);
  return plan;
}

function fieldRules(field: DescField): Rules | undefined {
  const api = envoyApi();
  const options = field.proto.options;
  if (!options || !hasExtension(options, api.fieldRules)) return undefined;
  const rules = toJson(
    api.registry.getMessage("validate.FieldRules")!,
    getExtension(options, api.fieldRules) as Message,
    { useProtoFieldName: true },
  ) as Rules;
  const unchecked = uncheckedRules(rules);
  if (unchecked.length)
    throw new Error(
      `${field.parent.typeName}.${field.name}: (validate.rules) ${unchecked.join(", ")}: not rules the validator checks (routing/validation/rules.ts CHECKED_RULES)`,
    );
  return rules;
}

const IMPLICIT = 2; // FeatureSet.FieldPresence.IMPLICIT: proto3 fields without `optional`

function compileField(field: DescField, rules: Rules | undefined): FieldPlan {
  const read = reader(field);
  const kind = field.fieldKind;
  const plan: FieldPlan = {
    field,
    read,
    deprecated: field.deprecated,
    check: undefined,
    required: false,
    skipMessage: false,
    checkCollection: undefined,
    item: undefined,
    checkKey: undefined,
    message:
      kind === "message" ||
      (kind === "list" && field.listKind === "message") ||
      (kind === "map" && field.mapKind === "message")
        ? field.message
        : undefined,
  };
  if (!rules) return plan;
  if (kind === "scalar" || kind === "enum") plan.check = compileValueRules(rules, field);
  if (kind === "message") {
    plan.required = isRequired(rules) && !field.oneof; // a oneof member's rules apply only when it is the member set
    plan.skipMessage = (rules.message as Rules | undefined)?.skip === true;
    plan.check = compileMessageValueRules(field.message, rules);
  }
  if (kind === "list") {
    const rep = rules.repeated as Rules | undefined;
    if (rep) {
      plan.checkCollection = compileRepeated(rep);
      const items = rep.items as Rules | undefined;
      if (items) plan.item = itemPlan(field, items, field.listKind === "message" ? field.message : undefined);
    }
  }
  if (kind === "map") {
    const map = rules.map as Rules | undefined;
    if (map) {
      plan.checkCollection = compileMapSize(map);
      if (map.keys) plan.checkKey = compileValueRules(map.keys as Rules, undefined);
      if (map.values)
        plan.item = itemPlan(field, map.values as Rules, field.mapKind === "message" ? field.message : undefined);
    }
  }
  return plan;
}

/** A plan for the items of a list or the values of a map. */
function itemPlan(field: DescField, rules: Rules, message: DescMessage | undefined): FieldPlan {
  return {
    field,
    read: () => undefined,
    deprecated: false,
    check: message ? compileMessageValueRules(message, rules) : compileValueRules(rules, field),
    required: false,
    skipMessage: (rules.message as Rules | undefined)?.skip === true,
    checkCollection: undefined,
    item: undefined,
    checkKey: undefined,
    message,
  };
}

function reader(field: DescField): (m: Fields) => unknown {
  const name = field.localName;
  if (field.oneof) {
    const oneof = field.oneof.localName;
    return (m) => {
      const o = m[oneof] as { case?: string; value?: unknown } | undefined;
      return o?.case === name ? o.value : undefined;
    };
  }
  if ((field.fieldKind === "scalar" || field.fieldKind === "enum") && field.presence === IMPLICIT) {
    const zero = field.fieldKind === "enum" ? 0 : zeroOf(field);
    return (m) => m[name] ?? zero;
  }
  return (m) => m[name];
}

function zeroOf(field: DescField): unknown {
  if (field.fieldKind !== "scalar") return undefined;
  switch (field.scalar) {
    case 9: // STRING
      return "";
    case 8: // BOOL
      return false;
    case 12: // BYTES
      return new Uint8Array(0);
    case 3: // INT64
    case 4: // UINT64
    case 6: // FIXED64
    case 16: // SFIXED64
    case 18: // SINT64
      return 0n;
    default:
      return 0;
  }
}

function isRequired(rules: Rules): boolean {
  return (
    (rules.message as Rules | undefined)?.required === true ||
    (rules.duration as Rules | undefined)?.required === true ||
    (rules.any as Rules | undefined)?.required === true
  );
}

function walkMessage(walk: Walk, desc: DescMessage, m: Fields, path: string[], out: RuleViolation[]): void {
  const plan = planFor(desc);
  for (const oneof of plan.requiredOneofs) {
    if ((m[oneof.localName] as { case?: unknown } | undefined)?.case === undefined)
      report(out, path, oneof.name, `exactly one of ${oneof.members} is required`);
  }
  for (const fp of plan.fields) {
    const value = fp.read(m);
    const field = fp.field;
    switch (field.fieldKind) {
      case "scalar":
      case "enum": {
        if (fp.deprecated && value !== undefined && !isZero(value))
          report(out, path, field.name, deprecatedMessage(desc, field));
        if (fp.check && value !== undefined) {
          const problem = fp.check(value);
          if (problem) report(out, path, field.name, problem);
        }
        break;
      }
      case "message": {
        if (value === undefined) {
          if (fp.required) report(out, path, field.name, "is required");
          break;
        }
        if (fp.deprecated) report(out, path, field.name, deprecatedMessage(desc, field));
        if (fp.skipMessage) break;
        path.push(field.name);
        visitMessageValue(walk, fp, value as Fields, path, out);
        path.pop();
        break;
      }
      case "list": {
        const list = value as unknown[];
        if (fp.deprecated && list.length > 0) report(out, path, field.name, deprecatedMessage(desc, field));
        if (fp.checkCollection) {
          const problem = fp.checkCollection(list);
          if (problem) report(out, path, field.name, problem);
        }
        if (fp.message && !fp.item?.skipMessage) {
          const itemPlanned = fp.item ?? itemPlanFor(fp);
          for (let i = 0; i < list.length; i++) {
            path.push(`${field.name}[${i}]`);
            visitMessageValue(walk, itemPlanned, list[i] as Fields, path, out);
            path.pop();
          }
        } else if (fp.item?.check) {
          for (let i = 0; i < list.length; i++) {
            const problem = fp.item.check(list[i]);
            if (problem) report(out, path, `${field.name}[${i}]`, problem);
          }
        }
        break;
      }
      case "map": {
        const map = value as Record<string, unknown>;
        const keys = Object.keys(map);
        if (fp.deprecated && keys.length > 0) report(out, path, field.name, deprecatedMessage(desc, field));
        if (fp.checkCollection) {
          const problem = fp.checkCollection(keys.length);
          if (problem) report(out, path, field.name, problem);
        }
        for (const key of keys) {
          const segment = `${field.name}[${JSON.stringify(key)}]`;
          if (fp.checkKey) {
            const problem = fp.checkKey(key);
            if (problem) report(out, path, segment, `key ${problem}`);
          }
          if (fp.message && !fp.item?.skipMessage) {
            path.push(segment);
            visitMessageValue(walk, fp.item ?? itemPlanFor(fp), map[key] as Fields, path, out);
            path.pop();
          } else if (fp.item?.check) {
            const problem = fp.item.check(map[key]);
            if (problem) report(out, path, segment, problem);
          }
        }
        break;
      }
    }
  }
}

const bareItemPlans = new Map<FieldPlan, FieldPlan>();
/** Items of a list or map of messages without item rules: just walked. */
function itemPlanFor(fp: FieldPlan): FieldPlan {
  let p = bareItemPlans.get(fp);
  if (!p)
    bareItemPlans.set(
      fp,
      (p = {
        ...fp,
        read: () => undefined,
        deprecated: false,
        check: undefined,
        required: false,
        skipMessage: false,
        checkCollection: undefined,
        item: undefined,
        checkKey: undefined,
      }),
    );
  return p;
}

/** A set message value; a shared one is checked once and its violations replayed here. */
function visitMessageValue(walk: Walk, fp: FieldPlan, value: Fields, path: string[], out: RuleViolation[]): void {
  if (!walk.shared?.has(value)) {
    checkMessageValue(walk, fp, value, path, out);
    return;
  }
  let byPlan = walk.memo.get(value);
  if (!byPlan) walk.memo.set(value, (byPlan = new Map()));
  let relative = byPlan.get(fp);
  if (!relative) {
    relative = [];
    checkMessageValue(walk, fp, value, [], relative);
    byPlan.set(fp, relative);
  }
  for (const v of relative) out.push({ path: joinPath([...path, v.path]), message: v.message });
}

/** Well-known types get their own rules; an Any is unpacked and its message walked; others are walked. */
function checkMessageValue(walk: Walk, fp: FieldPlan, value: Fields, path: string[], out: RuleViolation[]): void {
  const desc = fp.message!;
  if (fp.check) {
    const problem = fp.check(value);
    if (problem) report(out, path, "", problem);
  }
  const typeName = desc.typeName;
  if (typeName === "google.protobuf.Any") {
    const any = value as unknown as Any;
    const { registry } = envoyApi();
    // Decoding resolved every @type in the registry (decode.ts): the inner message is there.
    const innerDesc = registry.getMessage(any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1))!;
    const inner = anyUnpack(any, registry)!;
    path.push(`<${innerDesc.name}>`);
    walkMessage(walk, innerDesc, inner as unknown as Fields, path, out);
    path.pop();
    return;
  }
  if (typeName.startsWith("google.protobuf.")) return;
  walkMessage(walk, desc, value, path, out);
}

const WRAPPERS = new Set([
  "google.protobuf.DoubleValue",
  "google.protobuf.FloatValue",
  "google.protobuf.Int64Value",
  "google.protobuf.UInt64Value",
  "google.protobuf.Int32Value",
  "google.protobuf.UInt32Value",
  "google.protobuf.BoolValue",
  "google.protobuf.StringValue",
  "google.protobuf.BytesValue",
]);

/** Rules on a message-typed value: a wrapper's scalar rules, or a Duration's range. */
function compileMessageValueRules(desc: DescMessage, rules: Rules): Check | undefined {
  if (WRAPPERS.has(desc.typeName)) {
    // @bufbuild/protobuf holds a set wrapper field as its plain value.
    return compileValueRules(rules, desc.fields[0]);
  }
  if (desc.typeName === "google.protobuf.Duration" && rules.duration) {
    const d = rules.duration as Rules;
    const range = compileRange(d, parseDurationNanos, formatDuration);
    return (v) => {
      const m = v as { seconds: bigint; nanos: number };
      return range(BigInt(m.seconds) * 1_000_000_000n + BigInt(m.nanos));
    };
  }
  return undefined;
}

/** Rules on a scalar or enum value, compiled to a check. */
function compileValueRules(rules: Rules, field: DescField | undefined): Check | undefined {
  const entry = Object.entries(rules).find(([k]) => k !== "message");
  if (!entry) return undefined;
  const [kind, raw] = entry;
  const r = raw as Rules;
  switch (kind) {
    case "string":
      return compileString(r);
    case "bytes":
      return compileBytes(r);
    case "bool":
      return r.const === undefined ? undefined : (v) => (v !== r.const ? `must be ${String(r.const)}` : undefined);
    case "enum":
      return compileEnum(field, r);
    case "float":
    case "double": {
      const range = compileRange(r, Number, String);
      return (v) => (r.ignore_empty === true && v === 0 ? undefined : range(Number(v)));
    }
    case "int32":
    case "uint32":
    case "sint32":
    case "fixed32":
    case "sfixed32":
    case "int64":
    case "uint64":
    case "sint64":
    case "fixed64":
    case "sfixed64": {
      const range = compileRange(r, (x) => BigInt(x as string), String);
      return (v) =>
        r.ignore_empty === true && (v === 0 || v === 0n) ? undefined : range(BigInt(v as number | bigint));
    }
    default:
      return undefined;
  }
}

/** PGV numeric ranges (lower > upper means "outside"). */
function compileRange<T extends number | bigint>(
  r: Rules,
  parse: (x: unknown) => T,
  show: (x: T) => string,
): (v: T) => string | undefined {
  const lower =
    r.gt !== undefined
      ? { v: parse(r.gt), exclusive: true }
      : r.gte !== undefined
        ? { v: parse(r.gte), exclusive: false }
        : undefined;
  const upper =
    r.lt !== undefined
      ? { v: parse(r.lt), exclusive: true }
      : r.lte !== undefined
        ? { v: parse(r.lte), exclusive: false }
        : undefined;
  const lowerText = lower && `${lower.exclusive ? "greater than" : "at least"} ${show(lower.v)}`;
  const upperText = upper && `${upper.exclusive ? "less than" : "at most"} ${show(upper.v)}`;
  const outside = lower !== undefined && upper !== undefined && lower.v > upper.v;
  return (v) => {
    const aboveLower = lower === undefined || (lower.exclusive ? v > lower.v : v >= lower.v);
    const belowUpper = upper === undefined || (upper.exclusive ? v < upper.v : v <= upper.v);
    if (outside) return aboveLower || belowUpper ? undefined : `must be ${upperText} or ${lowerText} (got ${show(v)})`;
    if (!aboveLower || !belowUpper)
      return `must be ${[lowerText, upperText].filter(Boolean).join(" and ")} (got ${show(v)})`;
    return undefined;
  };
}

function compileEnum(field: DescField | undefined, r: Rules): Check {
  const desc = field?.enum;
  const name = (n: number) => desc?.values.find((v) => v.number === n)?.name ?? String(n);
  const defined = new Set(desc?.values.map((v) => v.number));
  const notIn = r.not_in as number[] | undefined; // EnumRules.not_in: enum numbers
  return (raw) => {
    const value = raw as number;
    if (r.defined_only === true && desc && !defined.has(value))
      return `is not a defined ${desc.name} value (got ${value})`;
    if (notIn?.includes(value)) return `must not be ${name(value)}`;
    return undefined;
  };
}

const HEADER_NAME = /^:?[0-9a-zA-Z!#$%&'*+\-.^_|~`]+$/;
// Header values and names exclude control characters, as Envoy's validate rules do.
// eslint-disable-next-line no-control-regex
const HEADER_VALUE = /^[^\u0000-\u0008\u000A-\u001F\u007F]*$/;
// eslint-disable-next-line no-control-regex
const HEADER_LOOSE = /^[^\u0000\u000A\u000D]*$/;

function compileString(r: Rules): Check {
  const checks: ((s: string) => string | undefined)[] = [];
  const n = (x: unknown) => Number(x);
  if (r.min_len !== undefined) {
    const min = n(r.min_len);
    checks.push((s) =>
      s.length < min && [...s].length < min
        ? min === 1
          ? "must not be empty"
          : `must be at least ${min} characters`
        : undefined,
    );
  }
  if (r.max_len !== undefined) {
    const max = n(r.max_len);
    checks.push((s) => (s.length > max && [...s].length > max ? `must be at most ${max} characters` : undefined));
  }
  if (r.max_bytes !== undefined)
    checks.push((s) => (Buffer.byteLength(s) > n(r.max_bytes) ? `must be at most ${r.max_bytes} bytes` : undefined));
  if (typeof r.prefix === "string")
    checks.push((s) => (!s.startsWith(r.prefix as string) ? `must start with ${JSON.stringify(r.prefix)}` : undefined));
  if (typeof r.suffix === "string")
    checks.push((s) => (!s.endsWith(r.suffix as string) ? `must end with ${JSON.stringify(r.suffix)}` : undefined));
  if (Array.isArray(r.in))
    checks.push((s) =>
      !(r.in as string[]).includes(s) ? `must be one of ${(r.in as string[]).join(", ")}` : undefined,
    );
  if (typeof r.pattern === "string") {
    const re = RE2JS.compile(r.pattern);
    checks.push((s) => (!re.test(s) ? `must match ${r.pattern} (got ${JSON.stringify(s)})` : undefined));
  }
  // strict: false loosens both header rules to "no NUL, CR or LF".
  if (r.well_known_regex === "HTTP_HEADER_NAME") {
    const re = r.strict === false ? HEADER_LOOSE : HEADER_NAME;
    checks.push((s) => (!re.test(s) ? `must be a valid HTTP header name (got ${JSON.stringify(s)})` : undefined));
  }
  if (r.well_known_regex === "HTTP_HEADER_VALUE") {
    const re = r.strict === false ? HEADER_LOOSE : HEADER_VALUE;
    checks.push((s) => (!re.test(s) ? "must be a valid HTTP header value" : undefined));
  }
  const ignoreEmpty = r.ignore_empty === true;
  return (v) => {
    const s = v as string;
    if (ignoreEmpty && s === "") return undefined;
    for (const c of checks) {
      const problem = c(s);
      if (problem) return problem;
    }
    return undefined;
  };
}

function compileBytes(r: Rules): Check {
  return (v) => {
    const b = v as Uint8Array;
    if (r.min_len !== undefined && b.length < Number(r.min_len)) return `must be at least ${r.min_len} bytes`;
    if (r.max_len !== undefined && b.length > Number(r.max_len)) return `must be at most ${r.max_len} bytes`;
    return undefined;
  };
}

function compileRepeated(r: Rules): (value: unknown) => string | undefined {
  return (value) => {
    const list = value as unknown[];
    if (r.min_items !== undefined && list.length < Number(r.min_items))
      return Number(r.min_items) === 1 ? "must have at least one entry" : `must have at least ${r.min_items} entries`;
    if (r.max_items !== undefined && list.length > Number(r.max_items))
      return `must have at most ${r.max_items} entries`;
    if (r.unique === true) {
      const seen = new Set<unknown>();
      // Envoy's API asks unique entries of lists of strings and numbers only: compared as values.
      for (const v of list) {
        if (seen.has(v)) return `entries must be unique (${String(v)} repeats)`;
        seen.add(v);
      }
    }
    return undefined;
  };
}

function compileMapSize(r: Rules): (size: unknown) => string | undefined {
  return (size) => {
    const n = size as number;
    if (r.min_pairs !== undefined && n < Number(r.min_pairs)) return `needs at least ${r.min_pairs} entries`;
    return undefined;
  };
}

function isZero(v: unknown): boolean {
  return v === 0 || v === 0n || v === "" || v === false || (v instanceof Uint8Array && v.length === 0);
}

function deprecatedMessage(desc: DescMessage, field: DescField): string {
  return `is deprecated in Envoy's API (${desc.typeName}.${field.name}); use its replacement`;
}

/** A Duration bound as protobuf JSON writes it (3s, 0.001s); Envoy's API has no negative bounds. */
function parseDurationNanos(x: unknown): bigint {
  const m = /^(\d+)(?:\.(\d{1,9}))?s$/.exec(String(x));
  if (!m)
    throw new Error(
      `duration rule ${String(x)}: not a duration bound the validator reads (routing/validation/rules.ts)`,
    );
  return BigInt(m[1]!) * 1_000_000_000n + BigInt((m[2] ?? "").padEnd(9, "0"));
}

function formatDuration(n: bigint): string {
  return `${Number(n) / 1e9}s`;
}

function report(out: RuleViolation[], path: string[], leaf: string, message: string): void {
  out.push({ path: joinPath(leaf ? [...path, leaf] : path), message });
}

/** Joins path segments with dots; a type segment (<Name>) attaches without a dot. */
function joinPath(segments: string[]): string {
  let text = "";
  for (const s of segments) {
    if (!s) continue;
    text += text && !s.startsWith("<") ? `.${s}` : s;
  }
  return text;
}
