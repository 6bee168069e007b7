// The routing table: plain data saying what the gateways route where. Built
// from facts only: the routing part of stack config (production services,
// their versions and shifts) and the dev/PR namespaces with their services,
// versions and shifts (from discovery, or a namespaces file for `render`).
// Weights are derived here, at an instant, from the shifts. One table feeds
// the first ConfigMap content, every later update, and the previews.
import { InputError, type Problem } from "./config/errors.js";
import type { RoutingConfig, SecurityHeaders } from "./config/schema.js";
import { clusterName, isDnsLabel, ON_DEMAND_CLUSTER, routeId, serviceHost, versionServiceName } from "./names.js";
import { checkShift, shiftSpec, versionWeights, type Shift, type ShiftSpec } from "./shifts.js";

/** One version of a logical service, behind its own headless Service. */
export interface ServiceVersion {
  /** Version id; "" when the service has a single, unnamed version. */
  version: string;
  /** The Kubernetes Service (headless) selecting this version's pods. */
  service: string;
  /** The Envoy cluster of this version. */
  cluster: string;
  /** Whole percent of the logical service's traffic (all versions sum to 100). */
  weight: number;
}

/** A logical service the gateways route to. */
export interface RoutedService {
  /** Stable id `<namespace>/<name>`. */
  id: string;
  namespace: string;
  /** Logical service name: the host label (production) or path segment (dev). */
  name: string;
  /** Its versions with their weights; one unless traffic is shifting. */
  versions: ServiceVersion[];
  /** Requests per second for the whole service across gateway replicas; undefined: no limit. */
  rateLimit: number | undefined;
  /** Long-lived websocket streams: the route gets the websocket idle timeout. */
  websocket: boolean;
  /** Extra hosts (production only; served by gateways that serve aliases). */
  aliases: string[];
  /** The traffic shift that set the weights, when the service has several versions. */
  shift?: ShiftSpec;
  /** Upper bound on one request's time, as stack config writes durations ("0s": none). */
  routeTimeout: string;
  /** Retries of a failed request ("count", 0: none) and the methods also retried after a reset before any response. */
  retries: { count: number; resetMethods: string[] };
  /** Production only: whether /metrics requires developer auth, when the service decides rather than each gateway. */
  authenticateMetrics?: boolean;
  /** Production only: the service's security headers, merged over each gateway's. */
  securityHeaders?: SecurityHeaders;
}

export interface RoutingTable {
  /** Production services (namespace from config), in config order. */
  production: RoutedService[];
  /** Dev/PR services, sorted by namespace then name. */
  dev: RoutedService[];
  /**
   * What every dev/PR route shares (set once, on their one virtual host): the
   * stack's upstream retries and devNamespaces.rateLimit (each route's own
   * bucket), as each dev service has them.
   */
  devRoutes: { retries: RoutedService["retries"]; rateLimit: number };
}

/** One version of a dev/PR service: its version id and the Service that selects its pods. */
export interface DevVersionFacts {
  version: string;
  service: string;
}

/** A dev/PR service as discovery reports it (or a namespaces file lists it): facts only; weights come from its shifts. */
export interface DevServiceFacts {
  /** Logical service name (the path segment after the namespace). */
  name: string;
  /** Its versions; default: one version, the Service of the same name. */
  versions?: DevVersionFacts[];
  /** Long-lived websocket streams (default false). */
  websocket?: boolean;
  /** Traffic shifts between its versions (a service with several versions needs one). */
  shifts?: ShiftSpec[];
}

/** Dev/PR namespace name -> its routed services (names, or facts with versions and shifts). */
export type DevNamespaces = Record<string, readonly (string | DevServiceFacts)[]>;

const LABEL_RULE =
  "a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)";

/**
 * Builds the routing table at `now` (the instant shift weights are taken
 * at). Throws one `InputError` naming every bad namespace or service
 * (`subject` says where the dev namespaces came from).
 */
export function buildRoutingTable(
  config: RoutingConfig,
  devNamespaces: DevNamespaces = {},
  subject = "dev namespaces",
  now: Date = new Date(),
): RoutingTable {
  const problems: Problem[] = [];
  const production = config.services.map((s) => productionService(config, s, now, problems));
  const dev: RoutedService[] = [];
  for (const namespace of Object.keys(devNamespaces).sort()) {
    const entries = devNamespaces[namespace] ?? [];
    if (!isDnsLabel(namespace)) {
      problems.push({
        key: namespace,
        source: "namespaces",
        message: `namespace must be ${LABEL_RULE}`,
        value: namespace,
        path: [namespace],
      });
      continue;
    }
    if (namespace === config.namespace) {
      problems.push({
        key: namespace,
        source: "namespaces",
        message: `is the production namespace (envoy-gateways:namespace); its services are routed as production services, not dev routes`,
        value: namespace,
        path: [namespace],
      });
      continue;
    }
    if (!Array.isArray(entries)) {
      problems.push({
        key: namespace,
        source: "namespaces",
        message: "must be a list of services (names, or mappings with name)",
        value: entries,
        path: [namespace],
      });
      continue;
    }
    const seen = new Set<string>();
    entries.forEach((entry, i) => {
      const service = devService(config, namespace, entry, [namespace, i], now, problems);
      if (!service) return;
      if (seen.has(service.name)) {
        problems.push({
          key: `${namespace}[${i}]`,
          source: "namespaces",
          message: `service ${service.name} is listed twice in namespace ${namespace}`,
          value: service.name,
          path: [namespace, i],
        });
        return;
      }
      seen.add(service.name);
      dev.push(service);
    });
  }
  if (problems.length)
    throw new InputError(problems.every((p) => p.source === "config") ? "stack config" : subject, problems);
  dev.sort((a, b) => (a.namespace === b.namespace ? compare(a.name, b.name) : compare(a.namespace, b.namespace)));
  return { production, dev, devRoutes: { retries: devRetries(config), rateLimit: config.devNamespaces.rateLimit } };
}

function productionService(
  config: RoutingConfig,
  s: RoutingConfig["services"][number],
  now: Date,
  problems: Problem[],
): RoutedService {
  const key = `envoy-gateways:services (${s.name})`;
  const names = s.versions ?? [""];
  // The config layer checked these names (crossKeyProblems: lengths, clashes).
  const versions = names.map((v) => ({ version: v, service: v ? versionServiceName(s.name, v) : s.name }));
  // Stack config shifts were checked with the stack config (cross-key checks): only this service's own.
  const shifts = config.shifts
    .filter((x) => x.service === s.name)
    .flatMap((x) => checkShift(s.name, x, names).shift ?? []);
  return {
    id: routeId(config.namespace, s.name),
    namespace: config.namespace,
    name: s.name,
    ...weighted(config.namespace, s.name, versions, shifts, now, (message) =>
      problems.push({ key, source: "config", message }),
    ),
    rateLimit: s.rateLimit,
    websocket: s.websocket,
    aliases: [...s.aliases],
    routeTimeout: s.routeTimeout ?? config.upstream.routeTimeout,
    retries: {
      count: s.retries ?? config.upstream.retries,
      resetMethods: [...(s.retryResetMethods ?? config.upstream.retryResetMethods)],
    },
    ...(s.authenticateMetrics !== undefined ? { authenticateMetrics: s.authenticateMetrics } : {}),
    ...(s.securityHeaders ? { securityHeaders: s.securityHeaders } : {}),
  };
}

const SERVICE_KEYS = new Set(["name", "websocket", "versions", "shifts"]);
const VERSION_KEYS = new Set(["version", "service"]);
const SHIFT_KEYS = new Set(["from", "to", "policy", "start", "duration", "reversed"]);

/** A problem's key in a dev service entry: `pr-1[0] (web).versions[1].service`, and its path in the namespaces. */
type At = (path: readonly (string | number)[], message: string, value?: unknown) => Problem;

/** One dev service entry (from a file or discovery: untyped data, read defensively), or undefined with its problems. */
function devService(
  config: RoutingConfig,
  namespace: string,
  entry: unknown,
  base: [string, number],
  now: Date,
  problems: Problem[],
): RoutedService | undefined {
  const facts = (typeof entry === "string" ? { name: entry } : entry) as DevServiceFacts;
  const key = `${base[0]}[${base[1]}]`;
  if (facts === null || typeof facts !== "object" || Array.isArray(facts)) {
    problems.push({
      key,
      source: "namespaces",
      message: "must be a service name, or a mapping with name (and optionally websocket, versions, shifts)",
      value: entry,
      path: base,
    });
    return undefined;
  }
  if (typeof facts.name !== "string" || !isDnsLabel(facts.name)) {
    problems.push({
      key,
      source: "namespaces",
      message: `service name must be ${LABEL_RULE}`,
      value: facts.name,
      path: typeof entry === "string" ? base : [...base, "name"],
    });
    return undefined;
  }
  const name = facts.name;
  const at: At = (path, message, ...value) => ({
    key: `${key} (${name})${path.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("")}`,
    source: "namespaces",
    message,
    ...(value.length ? { value: value[0] } : {}),
    path: [...base, ...path],
  });
  const before = problems.length;
  for (const k of Object.keys(facts))
    if (!SERVICE_KEYS.has(k))
      problems.push(
        at(
          [k],
          `unknown key; allowed: ${[...SERVICE_KEYS].join(", ")}`,
          (facts as unknown as Record<string, unknown>)[k],
        ),
      );
  if (facts.websocket !== undefined && typeof facts.websocket !== "boolean")
    problems.push(at(["websocket"], "must be true or false", facts.websocket));
  const versions = devVersions(facts, namespace, config.clusterDomain, at, problems);
  const shifts = devShifts(facts, versionIds(facts), at, problems);
  if (!versions || !shifts || problems.length > before) return undefined;
  return {
    id: routeId(namespace, facts.name),
    namespace,
    name: facts.name,
    ...onDemand(
      config,
      facts.name,
      weighted(namespace, facts.name, versions, shifts, now, (message) => problems.push(at(["versions"], message))),
    ),
    rateLimit: config.devNamespaces.rateLimit,
    websocket: facts.websocket ?? false,
    aliases: [],
    routeTimeout: config.upstream.routeTimeout,
    retries: devRetries(config),
  };
}

/**
 * Which cluster a dev/PR service's version goes to: with on-demand routes
 * (devNamespaces.clusters), a service whose one version is the Service of its
 * own name shares the on-demand cluster (its upstream host comes from the
 * path); any other keeps a cluster per version.
 */
function onDemand(
  config: RoutingConfig,
  name: string,
  routed: Pick<RoutedService, "versions" | "shift">,
): Pick<RoutedService, "versions" | "shift"> {
  const [only, ...others] = routed.versions;
  if (config.devNamespaces.clusters !== "on-demand" || !only || others.length || only.service !== name) return routed;
  return { ...routed, versions: [{ ...only, cluster: ON_DEMAND_CLUSTER }] };
}

/** The retries of every dev/PR service: the stack's upstream retries (a dev service cannot choose its own). */
function devRetries(config: RoutingConfig): RoutedService["retries"] {
  return { count: config.upstream.retries, resetMethods: [...config.upstream.retryResetMethods] };
}

/** The version ids a service's shifts may name: the well-formed ones (a bad one is reported with the versions, not again as "not a version"). */
function versionIds(facts: DevServiceFacts): string[] {
  if (facts.versions === undefined) return [""];
  if (!Array.isArray(facts.versions)) return [];
  return facts.versions.flatMap((v: unknown) => {
    const id = (v as { version?: unknown } | null)?.version;
    return typeof id === "string" && isDnsLabel(id) ? [id] : [];
  });
}

function devVersions(
  facts: DevServiceFacts,
  namespace: string,
  clusterDomain: string,
  at: At,
  problems: Problem[],
): DevVersionFacts[] | undefined {
  const list: unknown = facts.versions ?? [{ version: "", service: facts.name }];
  if (!Array.isArray(list) || list.length === 0) {
    problems.push(at(["versions"], "must list at least one version", list));
    return undefined;
  }
  const seen = new Set<string>();
  const services = new Set<string>();
  const before = problems.length;
  list.forEach((v: DevVersionFacts, i) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
      problems.push(at(["versions", i], "must be a mapping with version and service", v));
      return;
    }
    for (const k of Object.keys(v))
      if (!VERSION_KEYS.has(k))
        problems.push(
          at(
            ["versions", i, k],
            `unknown key; allowed: ${[...VERSION_KEYS].join(", ")}`,
            (v as unknown as Record<string, unknown>)[k],
          ),
        );
    if (typeof v.version !== "string" || (list.length > 1 && !isDnsLabel(v.version))) {
      problems.push(
        at(["versions", i, "version"], `a version of a service with several versions must be ${LABEL_RULE}`, v.version),
      );
    } else if (seen.has(v.version)) {
      problems.push(at(["versions", i, "version"], "is listed twice", v.version));
    } else seen.add(v.version);
    if (typeof v.service !== "string" || !isDnsLabel(v.service)) {
      problems.push(at(["versions", i, "service"], `Kubernetes Service name must be ${LABEL_RULE}`, v.service));
    } else if (serviceHost(v.service, namespace, clusterDomain).length > 253) {
      problems.push(
        at(
          ["versions", i, "service"],
          `upstream host ${serviceHost(v.service, namespace, clusterDomain)} is longer than the 253 characters DNS allows`,
          v.service,
        ),
      );
    } else if (services.has(v.service)) {
      problems.push(
        at(
          ["versions", i, "service"],
          "is the Service of another version of this service; each version has its own",
          v.service,
        ),
      );
    } else services.add(v.service);
  });
  return problems.length > before
    ? undefined
    : (list as DevVersionFacts[]).map((v) => ({ version: v.version, service: v.service }));
}

function devShifts(
  facts: DevServiceFacts,
  versions: readonly string[],
  at: At,
  problems: Problem[],
): Shift[] | undefined {
  const list: unknown = facts.shifts ?? [];
  if (!Array.isArray(list)) {
    problems.push(at(["shifts"], "must be a list of traffic shifts (from, to, policy, start, duration)", list));
    return undefined;
  }
  const before = problems.length;
  const shifts: Shift[] = [];
  list.forEach((spec: unknown, i) => {
    if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
      problems.push(at(["shifts", i], "must be a mapping with from, to, policy, start and duration", spec));
      return;
    }
    for (const k of Object.keys(spec))
      if (!SHIFT_KEYS.has(k))
        problems.push(
          at(
            ["shifts", i, k],
            `unknown key; allowed: ${[...SHIFT_KEYS].join(", ")}`,
            (spec as Record<string, unknown>)[k],
          ),
        );
    // A problem of the versions was reported with them: do not repeat it as "not a version".
    if (versions.length === 0) return;
    const checked = checkShift(facts.name, spec, versions);
    for (const p of checked.problems)
      problems.push(at(p.field ? ["shifts", i, p.field] : ["shifts", i], p.message, p.value));
    if (checked.shift) shifts.push(checked.shift);
  });
  return problems.length > before ? undefined : shifts;
}

/**
 * The versions with their weights at `now`, and the shift that decides them;
 * a problem (several versions but no shift, overlapping shifts) is reported.
 */
function weighted(
  namespace: string,
  name: string,
  versions: readonly DevVersionFacts[],
  shifts: readonly Shift[],
  now: Date,
  report: (message: string) => void,
): Pick<RoutedService, "versions" | "shift"> {
  const several = versions.length > 1;
  const result = versionWeights(
    name,
    versions.map((v) => v.version),
    shifts,
    now,
  );
  if ("problem" in result) report(result.problem);
  return {
    versions: versions.map((v) => ({
      version: v.version,
      service: v.service,
      cluster: clusterName(namespace, name, several ? v.version : ""),
      weight: "weights" in result ? result.weights[v.version]! : 0,
    })),
    ...("shift" in result && result.shift ? { shift: shiftSpec(result.shift) } : {}),
  };
}

/** Counts for messages and benchmarks. */
export function tableCounts(table: RoutingTable): { production: number; dev: number; namespaces: number } {
  return {
    production: table.production.length,
    dev: table.dev.length,
    namespaces: new Set(table.dev.map((s) => s.namespace)).size,
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
