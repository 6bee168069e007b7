// Discovery, the pure part: from the namespaces and Services the API server
// lists, the dev/PR routing facts. A namespace is routed when it carries the
// stack's routing label and is not terminating; a Service is routed when it
// carries the routing labels (one Service per version of a logical service).
// A Service with malformed labels or shift annotations is reported by name
// and left out; it never breaks the other routes.
import type { Problem } from "./config/errors.js";
import { LABEL, SHIFT_ANNOTATION } from "./labels.js";
import { checkShift, overlapProblem, type Shift, type ShiftSpec } from "./shifts.js";
import { isDnsLabel } from "./names.js";
import type { DevNamespaces, DevServiceFacts, DevVersionFacts } from "./table.js";

/** The parts of Kubernetes objects discovery reads (what client-node returns). */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  uid?: string;
  /** A Date from client-node, an RFC 3339 string from JSON. */
  creationTimestamp?: Date | string;
  deletionTimestamp?: unknown;
}
export interface NamespaceObject {
  metadata?: ObjectMeta;
  status?: { phase?: string };
}
export interface ServiceObject {
  metadata?: ObjectMeta;
  spec?: { clusterIP?: string; ports?: { name?: string; port?: number; targetPort?: unknown }[] };
}

export interface Discovered {
  devNamespaces: DevNamespaces;
  /** When each routed namespace was created (RFC 3339; absent when the API server did not say): the order they are admitted in when not all fit (capacity.ts). */
  created: Record<string, string>;
  /** Services left out, and why (each names the Service). */
  problems: Problem[];
  /** Notes that do not drop a route (such as a routed Service that is not headless). */
  warnings: Problem[];
}

/** Namespaces that are routed: selected by label upstream of this function, minus the terminating ones and the production namespace. */
export function routedNamespaces(namespaces: readonly NamespaceObject[], productionNamespace: string): string[] {
  return namespaces
    .filter(
      (ns) =>
        ns.metadata?.name &&
        ns.metadata.name !== productionNamespace &&
        ns.status?.phase !== "Terminating" &&
        !ns.metadata.deletionTimestamp,
    )
    .map((ns) => ns.metadata!.name!)
    .sort();
}

/**
 * The labelled namespaces that are never dev/PR namespaces, and why: the gateways' own (its
 * Services are production routes) and the protected ones (the cluster's own, by default).
 */
export function refusedNamespaces(
  namespaces: readonly NamespaceObject[],
  productionNamespace: string,
  protectedNamespaces: readonly string[],
): { name: string; why: string }[] {
  const names = namespaces.flatMap((ns) => (ns.metadata?.name ? [ns.metadata.name] : []));
  return names.sort().flatMap((name) => {
    if (name === productionNamespace)
      return [{ name, why: "it is the gateways' own namespace, whose Services are production routes" }];
    if (protectedNamespaces.includes(name)) return [{ name, why: "it is protected (devNamespaces.protected)" }];
    return [];
  });
}

/**
 * The dev/PR routing facts: for each routed namespace, its Services carrying
 * the routing labels grouped by logical service, with their versions and the
 * traffic shifts annotated on them. Weights are not facts: the routing table
 * derives them from the shifts, at the instant it is built.
 */
export function discoverRoutes(
  namespaces: readonly NamespaceObject[],
  services: readonly ServiceObject[],
  productionNamespace: string,
  protectedNamespaces: readonly string[] = [],
): Discovered {
  const refused = refusedNamespaces(namespaces, productionNamespace, protectedNamespaces);
  const problems: Problem[] = refused.map(({ name, why }) => ({
    key: `Namespace ${name}`,
    source: "namespaces",
    message: `carries the dev routing label but is not routed: ${why}`,
    objects: [{ kind: "Namespace", name }],
  }));
  const routed = new Set(
    routedNamespaces(namespaces, productionNamespace).filter((ns) => !refused.some((r) => r.name === ns)),
  );
  const warnings: Problem[] = [];
  // namespace -> logical service -> its Services, one per version
  const grouped = new Map<string, Map<string, Grouped[]>>();
  for (const svc of services) {
    const ns = svc.metadata?.namespace;
    const name = svc.metadata?.name;
    if (!ns || !name || !routed.has(ns)) continue;
    const key = `Service ${ns}/${name}`;
    const labels = svc.metadata?.labels ?? {};
    const errors = labelProblems(labels, svc);
    if (errors.length) {
      problems.push({
        key,
        source: "namespaces",
        message: `left out: ${errors.join("; ")}`,
        objects: [{ kind: "Service", namespace: ns, name }],
      });
      continue;
    }
    if (svc.spec?.clusterIP !== undefined && svc.spec.clusterIP !== "None") {
      warnings.push({
        key,
        source: "namespaces",
        message: `is not headless (clusterIP ${svc.spec.clusterIP}): the gateways reach one virtual IP instead of every pod; set clusterIP: None`,
        objects: [{ kind: "Service", namespace: ns, name }],
      });
    }
    const logical = labels[LABEL.service]!;
    const byService = grouped.get(ns) ?? new Map<string, Grouped[]>();
    grouped.set(ns, byService);
    const versions = byService.get(logical) ?? [];
    byService.set(logical, versions);
    versions.push({
      version: { version: labels[LABEL.version] ?? "", service: name },
      websocket: labels[LABEL.protocol] === "websocket",
      versionLabel: labels[LABEL.version],
      weightLabel: labels[LABEL.weight],
      key,
      shift: shiftAnnotations(labels[LABEL.version] ?? "", svc.metadata?.annotations ?? {}),
    });
  }
  const devNamespaces: DevNamespaces = {};
  for (const ns of [...grouped.keys()].sort()) {
    const found: DevServiceFacts[] = [];
    for (const [logical, versions] of [...grouped.get(ns)!.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const where = `service ${logical} in namespace ${ns} (${versions.map((s) => s.key).join(", ")})`;
      versions.sort((a, b) => (a.version.version < b.version.version ? -1 : 1));
      const problem = versionsProblem(versions) ?? shiftsProblem(logical, versions);
      if (problem) {
        problems.push({
          key: where,
          source: "namespaces",
          message: `left out: ${problem}`,
          objects: versions.map((v) => ({ kind: "Service", namespace: ns, name: v.version.service })),
        });
        continue;
      }
      const shifts = versions.flatMap((v) => (v.shift ? [v.shift] : []));
      found.push({
        name: logical,
        versions: versions.map((v) => v.version),
        websocket: versions.some((v) => v.websocket),
        ...(shifts.length ? { shifts } : {}),
      });
    }
    if (found.length) devNamespaces[ns] = found;
  }
  return { devNamespaces, created: creationTimes(namespaces, Object.keys(devNamespaces)), problems, warnings };
}

/** The creation time of each of `names`, as RFC 3339 (client-node gives a Date, JSON a string). */
function creationTimes(namespaces: readonly NamespaceObject[], names: readonly string[]): Record<string, string> {
  const wanted = new Set(names);
  const out: Record<string, string> = {};
  for (const ns of namespaces) {
    const { name, creationTimestamp: at } = ns.metadata ?? {};
    const time = at instanceof Date ? at : new Date(at ?? NaN);
    if (name && wanted.has(name) && !Number.isNaN(time.getTime())) out[name] = time.toISOString();
  }
  return out;
}

/** What is wrong with one Service's routing labels (empty when they are well-formed). */
export function labelProblems(labels: Record<string, string>, svc: ServiceObject): string[] {
  const out: string[] = [];
  const show = (k: string) => `label ${k}=${JSON.stringify(labels[k])}`;
  if (!isDnsLabel(labels[LABEL.service] ?? ""))
    out.push(`${show(LABEL.service)} must be a DNS label (lower-case letters, digits and '-', at most 63 characters)`);
  if (labels[LABEL.version] !== undefined && !isDnsLabel(labels[LABEL.version]!))
    out.push(`${show(LABEL.version)} must be a DNS label`);
  if (labels[LABEL.port] !== "443")
    out.push(`${show(LABEL.port)} must be "443" (the gateways speak TLS to every pod on 443)`);
  const portName = labels[LABEL.portName];
  if (portName === undefined) out.push(`label ${LABEL.portName} is missing (the name of the Service's 443 port)`);
  else if (svc.spec?.ports && !svc.spec.ports.some((p) => p.name === portName && p.port === 443))
    out.push(`${show(LABEL.portName)} names no port 443 of the Service`);
  const protocol = labels[LABEL.protocol];
  if (protocol !== undefined && protocol !== "http" && protocol !== "websocket")
    out.push(`${show(LABEL.protocol)} must be http or websocket`);
  const weight = labels[LABEL.weight];
  if (weight !== undefined && !/^(100|[1-9]?\d)$/.test(weight))
    out.push(`${show(LABEL.weight)} must be a whole percentage from 0 to 100`);
  return out;
}

interface Grouped {
  version: DevVersionFacts;
  websocket: boolean;
  versionLabel: string | undefined;
  weightLabel: string | undefined;
  key: string;
  /** The shift annotated on this version's Service, as written. */
  shift: ShiftSpec | undefined;
}

/**
 * Several Services for one logical service must each name a distinct version;
 * their split comes from a shift, never from weight labels alone.
 */
function versionsProblem(versions: Grouped[]): string | undefined {
  if (versions.length === 1) {
    const v = versions[0]!;
    return v.weightLabel !== undefined && v.weightLabel !== "100" && !v.shift
      ? `its only Service has weight ${v.weightLabel}; a single version takes all the traffic (100)`
      : undefined;
  }
  const labels = versions.map((v) => v.versionLabel);
  if (labels.some((v) => v === undefined)) return `several Services route it, so each needs a ${LABEL.version} label`;
  if (new Set(labels).size !== labels.length) return `two Services carry the same ${LABEL.version}`;
  if (!versions.some((v) => v.shift)) {
    return versions.some((v) => v.weightLabel !== undefined)
      ? `it has weight labels (${versions.map((v) => `${v.versionLabel}=${v.weightLabel ?? "none"}`).join(", ")}) but no traffic shift; annotate the new version's Service with ${SHIFT_ANNOTATION.from}, ${SHIFT_ANNOTATION.policy}, ${SHIFT_ANNOTATION.start} and ${SHIFT_ANNOTATION.duration}`
      : `it has ${versions.length} versions but no traffic shift says how to split its traffic (annotate the new version's Service with ${SHIFT_ANNOTATION.from}, ...)`;
  }
  return undefined;
}

/** The checks every shift gets (`checkShift`), on the annotated ones, each problem naming its annotation; then overlaps. */
function shiftsProblem(service: string, versions: Grouped[]): string | undefined {
  const names = versions.map((v) => v.version.version);
  const shifts: Shift[] = [];
  const errors: string[] = [];
  for (const v of versions) {
    if (!v.shift) continue;
    const checked = checkShift(service, v.shift, names);
    for (const p of checked.problems) {
      const annotation = p.field ? ANNOTATION_OF[p.field] : undefined;
      errors.push(
        annotation
          ? `annotation ${annotation}=${JSON.stringify(p.value ?? "")} ${p.message}`
          : `shift of ${service}: ${p.message}`,
      );
    }
    if (checked.shift) shifts.push(checked.shift);
  }
  if (errors.length) return errors.join("; ");
  return overlapProblem(service, shifts);
}

/** Which annotation carries each field of a shift (`to` is the annotated Service's own version). */
const ANNOTATION_OF: Record<keyof ShiftSpec, string | undefined> = {
  from: SHIFT_ANNOTATION.from,
  to: undefined,
  policy: SHIFT_ANNOTATION.policy,
  start: SHIFT_ANNOTATION.start,
  duration: SHIFT_ANNOTATION.duration,
  reversed: SHIFT_ANNOTATION.reversed,
};

/** The shift annotated on the Service of version `to`, as written; undefined when not annotated. */
function shiftAnnotations(to: string, annotations: Record<string, string>): ShiftSpec | undefined {
  const from = annotations[SHIFT_ANNOTATION.from];
  if (from === undefined) return undefined;
  const reversed = annotations[SHIFT_ANNOTATION.reversed];
  return {
    from,
    to,
    policy: annotations[SHIFT_ANNOTATION.policy] as ShiftSpec["policy"],
    start: annotations[SHIFT_ANNOTATION.start] ?? "",
    duration: annotations[SHIFT_ANNOTATION.duration] ?? "",
    ...(reversed !== undefined ? { reversed } : {}),
  };
}

/** The label selector for listing routed Services cluster-wide in one request. */
export const ROUTED_SERVICE_SELECTOR = LABEL.service;
