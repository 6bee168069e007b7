// The routing table: plain data saying what the gateways route where. Built
// from validated stack config (production services) and the live dev/PR
// namespaces (from discovery, or a namespaces file for `render`). One table
// feeds both the first ConfigMap content and every later update.
import { InputError, type Problem } from "./config/errors.js";
import type { StackConfig } from "./config/schema.js";
import { clusterName, isDnsLabel, routeId, serviceHost } from "./names.js";
import { shiftFromInfo, shiftInfo, versionWeights, type ShiftInfo } from "./shifts.js";

/** One version (stack) of a logical service, behind its own headless Service. */
export interface UpstreamStack {
  /** Version id; "" when the service has one unversioned stack. */
  version: string;
  /** The Kubernetes Service (headless) selecting this version's pods. */
  service: string;
  /** Whole percent of the logical service's traffic (all stacks sum to 100). */
  weight: number;
}

/** A logical service the gateways route to. */
export interface RoutedService {
  /** Stable id `<namespace>/<name>`. */
  id: string;
  namespace: string;
  /** Logical service name: the host label (production) or path segment (dev). */
  name: string;
  /** Its versions, each with a weight; one today unless traffic is shifting. */
  stacks: UpstreamStack[];
  /** Requests per second for the whole service across gateway replicas; undefined: no limit. */
  rateLimit: number | undefined;
  /** Long-lived websocket streams: the route gets the websocket idle timeout. */
  websocket: boolean;
  /** Extra hosts on the external gateway (production only). */
  aliases: string[];
  /** The traffic shift that set the weights, when the service has several versions. */
  shift?: ShiftInfo;
}

export interface RoutingTable {
  /** Production services (namespace from config), in config order. */
  production: RoutedService[];
  /** Dev/PR services, sorted by namespace then name. */
  dev: RoutedService[];
}

/** A dev/PR service as discovery reports it (or a namespaces file lists it). */
export interface DevServiceSpec {
  /** Logical service name (the path segment after the namespace). */
  name: string;
  /** Versions; default: one stack, the Service of the same name, weight 100. */
  stacks?: UpstreamStack[];
  websocket?: boolean;
  /** The shift the weights come from (discovery computes the weights). */
  shift?: ShiftInfo;
}

/** Dev/PR namespace name -> its routed services (names, or specs with versions). */
export type DevNamespaces = Record<string, readonly (string | DevServiceSpec)[]>;

const LABEL_RULE = "a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)";

/**
 * Builds the routing table. Throws one `InputError` naming every bad
 * namespace or service (`subject` says where the dev namespaces came from).
 */
export function buildRoutingTable(config: StackConfig, devNamespaces: DevNamespaces = {}, subject = "dev namespaces", now: Date = new Date()): RoutingTable {
  const problems: Problem[] = [];
  const production = config.services.map<RoutedService>((s) => {
    const routed: RoutedService = {
      id: routeId(config.namespace, s.name),
      namespace: config.namespace,
      name: s.name,
      stacks: [{ version: "", service: s.name, weight: 100 }],
      rateLimit: s.rateLimit,
      websocket: s.websocket,
      aliases: s.aliases,
    };
    if (s.versions) {
      const shifts = config.shifts.filter((x) => x.service === s.name).map((x) => shiftFromInfo(s.name, x));
      const result = versionWeights(s.name, s.versions, shifts, now);
      if ("problem" in result) problems.push({ key: `envoy-gateways:services (${s.name})`, message: result.problem });
      else {
        routed.stacks = s.versions.map((v) => ({ version: v, service: versionServiceName(s.name, v), weight: result.weights[v]! }));
        if (result.shift) routed.shift = shiftInfo(result.shift);
        for (const v of s.versions) {
          if (versionServiceName(s.name, v).length > 63) problems.push({ key: `envoy-gateways:services (${s.name})`, message: `the Service of version ${v}, ${versionServiceName(s.name, v)}, is longer than the 63 characters a Kubernetes name allows` });
        }
      }
    }
    return routed;
  });

  const dev: RoutedService[] = [];
  for (const namespace of Object.keys(devNamespaces).sort()) {
    const entries = devNamespaces[namespace] ?? [];
    if (!isDnsLabel(namespace)) {
      problems.push({ key: namespace, message: `namespace must be ${LABEL_RULE}`, value: namespace });
      continue;
    }
    if (namespace === config.namespace) {
      problems.push({ key: namespace, message: `is the production namespace (envoy-gateways:namespace); its services are routed as production services, not dev routes`, value: namespace });
      continue;
    }
    if (!Array.isArray(entries)) {
      problems.push({ key: namespace, message: "must be a list of services (names, or mappings with name)", value: entries });
      continue;
    }
    const seen = new Set<string>();
    entries.forEach((entry, i) => {
      const spec = (typeof entry === "string" ? { name: entry } : entry) as DevServiceSpec;
      const key = `${namespace}[${i}]`;
      const before = problems.length;
      checkDevService(spec, namespace, config.clusterDomain, key, problems);
      if (problems.length > before) return;
      if (seen.has(spec.name)) {
        problems.push({ key, message: `service ${spec.name} is listed twice in namespace ${namespace}`, value: spec.name });
        return;
      }
      seen.add(spec.name);
      dev.push({
        id: routeId(namespace, spec.name),
        namespace,
        name: spec.name,
        stacks: spec.stacks?.map((s) => ({ ...s })) ?? [{ version: "", service: spec.name, weight: 100 }],
        rateLimit: config.devNamespaces.rateLimit,
        websocket: spec.websocket ?? false,
        aliases: [],
        ...(spec.shift ? { shift: { ...spec.shift } } : {}),
      });
    });
  }
  if (problems.length) throw new InputError(problems.every((p) => p.key.startsWith("envoy-gateways:")) ? "stack config" : subject, problems);
  dev.sort((a, b) => (a.namespace === b.namespace ? compare(a.name, b.name) : compare(a.namespace, b.namespace)));
  return { production, dev };
}

const SERVICE_KEYS = new Set(["name", "websocket", "stacks", "shift"]);
const STACK_KEYS = new Set(["version", "service", "weight"]);

/** Checks one dev service entry (from a file or discovery: untyped data, read defensively). */
function checkDevService(spec: DevServiceSpec, namespace: string, clusterDomain: string, key: string, problems: Problem[]): void {
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    problems.push({ key, message: "must be a service name, or a mapping with name (and optionally websocket, stacks)", value: spec });
    return;
  }
  if (typeof spec.name !== "string" || !isDnsLabel(spec.name)) {
    problems.push({ key, message: `service name must be ${LABEL_RULE}`, value: spec.name });
    return;
  }
  const where = `${key} (${spec.name})`;
  for (const k of Object.keys(spec)) if (!SERVICE_KEYS.has(k)) problems.push({ key: `${where}.${k}`, message: "unknown key; allowed: name, websocket, stacks" });
  if (spec.websocket !== undefined && typeof spec.websocket !== "boolean") problems.push({ key: `${where}.websocket`, message: "must be true or false", value: spec.websocket });
  const stacks: unknown = spec.stacks ?? [{ version: "", service: spec.name, weight: 100 }];
  if (!Array.isArray(stacks) || stacks.length === 0) {
    problems.push({ key: `${where}.stacks`, message: "must list at least one version", value: stacks });
    return;
  }
  const versions = new Set<string>();
  let total = 0;
  stacks.forEach((stack: UpstreamStack, i) => {
    const at = `${where}.stacks[${i}]`;
    if (stack === null || typeof stack !== "object") {
      problems.push({ key: at, message: "must be a mapping with version, service and weight", value: stack });
      return;
    }
    for (const k of Object.keys(stack)) if (!STACK_KEYS.has(k)) problems.push({ key: `${at}.${k}`, message: "unknown key; allowed: version, service, weight" });
    if (typeof stack.version !== "string" || (stacks.length > 1 && !isDnsLabel(stack.version))) {
      problems.push({ key: `${at}.version`, message: `a version of a service with several versions must be ${LABEL_RULE}`, value: stack.version });
    } else if (versions.has(stack.version)) {
      problems.push({ key: `${at}.version`, message: "is listed twice", value: stack.version });
    }
    versions.add(String(stack.version));
    if (typeof stack.service !== "string" || !isDnsLabel(stack.service)) {
      problems.push({ key: `${at}.service`, message: `Kubernetes Service name must be ${LABEL_RULE}`, value: stack.service });
    } else if (serviceHost(stack.service, namespace, clusterDomain).length > 253) {
      problems.push({ key: `${at}.service`, message: `upstream host ${serviceHost(stack.service, namespace, clusterDomain)} is longer than the 253 characters DNS allows`, value: stack.service });
    }
    if (typeof stack.weight !== "number" || !Number.isInteger(stack.weight) || stack.weight < 0 || stack.weight > 100) {
      problems.push({ key: `${at}.weight`, message: "must be a whole percentage from 0 to 100", value: stack.weight });
    } else total += stack.weight;
  });
  if (spec.shift) {
    for (const v of [spec.shift.from, spec.shift.to]) {
      if (!stacks.some((s: UpstreamStack) => s?.version === v)) problems.push({ key: `${where}.shift`, message: `names version ${v}, which the service does not have`, value: spec.shift });
    }
  }
  if (total !== 100 && stacks.every((s: UpstreamStack) => typeof s?.weight === "number" && Number.isInteger(s.weight))) {
    problems.push({ key: `${where}.stacks`, message: "weights of its versions must sum to 100", value: stacks.map((s: UpstreamStack) => s.weight) });
  }
}

/** The Kubernetes Service of one version of a production service: <service>-<version>. */
export function versionServiceName(service: string, version: string): string {
  return `${service}-${version}`;
}

/** The Envoy cluster name of each stack of a service. */
export function stackClusterName(service: RoutedService, stack: UpstreamStack): string {
  return clusterName(service.namespace, service.name, service.stacks.length > 1 ? stack.version : "");
}

/** Counts for messages and benchmarks. */
export function tableCounts(table: RoutingTable): { production: number; dev: number; namespaces: number } {
  return { production: table.production.length, dev: table.dev.length, namespaces: new Set(table.dev.map((s) => s.namespace)).size };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
