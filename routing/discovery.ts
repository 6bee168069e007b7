// Discovery, the pure part: from the namespaces and Services the API server
// lists, the dev/PR part of the routing table. A namespace is routed when it
// carries the stack's routing label and is not terminating; a Service is
// routed when it carries the routing labels (one Service per stack of a
// logical service). A Service with malformed labels is reported by name and
// left out; it never breaks the other routes.
import type { Problem } from "./config/errors.js";
import { LABEL, SHIFT_ANNOTATION } from "./labels.js";
import { parseShiftDuration, shiftInfo, shiftProblems, versionWeights, type Shift } from "./shifts.js";
import { isDnsLabel } from "./names.js";
import type { DevNamespaces, DevServiceSpec, UpstreamStack } from "./table.js";

/** The parts of Kubernetes objects discovery reads (what client-node returns). */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
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
  /** Services left out, and why (each names the Service). */
  problems: Problem[];
  /** Notes that do not drop a route (such as a routed Service that is not headless). */
  warnings: Problem[];
}

/** Namespaces that are routed: selected by label upstream of this function, minus the terminating ones and the production namespace. */
export function routedNamespaces(namespaces: readonly NamespaceObject[], productionNamespace: string): string[] {
  return namespaces
    .filter((ns) => ns.metadata?.name && ns.metadata.name !== productionNamespace && ns.status?.phase !== "Terminating" && !ns.metadata.deletionTimestamp)
    .map((ns) => ns.metadata!.name!)
    .sort();
}

/**
 * The dev/PR routes: for each routed namespace, its Services carrying the
 * routing labels grouped by logical service into stacks with weights.
 */
export function discoverRoutes(namespaces: readonly NamespaceObject[], services: readonly ServiceObject[], productionNamespace: string, now: Date = new Date()): Discovered {
  const routed = new Set(routedNamespaces(namespaces, productionNamespace));
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  // namespace -> logical service -> stacks (with the Service each came from)
  const grouped = new Map<string, Map<string, Grouped[]>>();
  for (const svc of services) {
    const ns = svc.metadata?.namespace;
    const name = svc.metadata?.name;
    if (!ns || !name || !routed.has(ns)) continue;
    const key = `Service ${ns}/${name}`;
    const labels = svc.metadata?.labels ?? {};
    const errors = labelProblems(labels, svc);
    if (errors.length) {
      problems.push({ key, message: `left out: ${errors.join("; ")}` });
      continue;
    }
    if (svc.spec?.clusterIP !== undefined && svc.spec.clusterIP !== "None") {
      warnings.push({ key, message: `is not headless (clusterIP ${svc.spec.clusterIP}): the gateways reach one virtual IP instead of every pod; set clusterIP: None` });
    }
    const logical = labels[LABEL.service]!;
    const byService = grouped.get(ns) ?? new Map();
    grouped.set(ns, byService);
    const stacks = byService.get(logical) ?? [];
    byService.set(logical, stacks);
    stacks.push({
      stack: { version: labels[LABEL.version] ?? "", service: name, weight: labels[LABEL.weight] === undefined ? 100 : Number(labels[LABEL.weight]) },
      websocket: labels[LABEL.protocol] === "websocket",
      versionLabel: labels[LABEL.version],
      weightLabel: labels[LABEL.weight],
      key,
      shift: shiftAnnotations(logical, labels[LABEL.version] ?? "", svc.metadata?.annotations ?? {}),
    });
  }
  const devNamespaces: DevNamespaces = {};
  for (const ns of [...grouped.keys()].sort()) {
    const specs: DevServiceSpec[] = [];
    for (const [logical, stacks] of [...grouped.get(ns)!.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const where = `service ${logical} in namespace ${ns} (${stacks.map((s) => s.key).join(", ")})`;
      const problem = stackProblem(stacks);
      if (problem) {
        problems.push({ key: where, message: `left out: ${problem}` });
        continue;
      }
      stacks.sort((a, b) => (a.stack.version < b.stack.version ? -1 : 1));
      const shifts = stacks.flatMap((s) => (s.shift ? [s.shift] : []));
      const shiftErrors = shifts.flatMap((sh) => (typeof sh === "string" ? [sh] : shiftProblems(sh)));
      if (shiftErrors.length) {
        problems.push({ key: where, message: `left out: ${shiftErrors.join("; ")}` });
        continue;
      }
      const spec: DevServiceSpec = { name: logical, stacks: stacks.map((s) => s.stack), websocket: stacks.some((s) => s.websocket) };
      if (stacks.length > 1 || shifts.length) {
        const result = versionWeights(logical, stacks.map((s) => s.stack.version), shifts as Shift[], now);
        if ("problem" in result) {
          problems.push({ key: where, message: `left out: ${result.problem}` });
          continue;
        }
        for (const s of spec.stacks!) s.weight = result.weights[s.version]!;
        if (result.shift) spec.shift = shiftInfo(result.shift);
      }
      specs.push(spec);
    }
    if (specs.length) devNamespaces[ns] = specs;
  }
  return { devNamespaces, problems, warnings };
}

/** What is wrong with one Service's routing labels (empty when they are well-formed). */
export function labelProblems(labels: Record<string, string>, svc: ServiceObject): string[] {
  const out: string[] = [];
  const show = (k: string) => `label ${k}=${JSON.stringify(labels[k])}`;
  if (!isDnsLabel(labels[LABEL.service] ?? "")) out.push(`${show(LABEL.service)} must be a DNS label (lower-case letters, digits and '-', at most 63 characters)`);
  if (labels[LABEL.version] !== undefined && !isDnsLabel(labels[LABEL.version]!)) out.push(`${show(LABEL.version)} must be a DNS label`);
  if (labels[LABEL.port] !== "443") out.push(`${show(LABEL.port)} must be "443" (the gateways speak TLS to every pod on 443)`);
  const portName = labels[LABEL.portName];
  if (portName === undefined) out.push(`label ${LABEL.portName} is missing (the name of the Service's 443 port)`);
  else if (svc.spec?.ports && !svc.spec.ports.some((p) => p.name === portName && p.port === 443)) out.push(`${show(LABEL.portName)} names no port 443 of the Service`);
  const protocol = labels[LABEL.protocol];
  if (protocol !== undefined && protocol !== "http" && protocol !== "websocket") out.push(`${show(LABEL.protocol)} must be http or websocket`);
  const weight = labels[LABEL.weight];
  if (weight !== undefined && !/^(100|[1-9]?\d)$/.test(weight)) out.push(`${show(LABEL.weight)} must be a whole percentage from 0 to 100`);
  return out;
}

interface Grouped {
  stack: UpstreamStack;
  websocket: boolean;
  versionLabel: string | undefined;
  weightLabel: string | undefined;
  key: string;
  /** The shift annotated on this version's Service (or what is wrong with the annotations). */
  shift: Shift | string | undefined;
}

/**
 * Several Services for one logical service must each name a distinct version;
 * their split comes from a shift, never from weight labels alone.
 */
function stackProblem(stacks: Grouped[]): string | undefined {
  if (stacks.length === 1) {
    const s = stacks[0]!;
    return s.weightLabel !== undefined && s.stack.weight !== 100 && !s.shift ? `its only Service has weight ${s.stack.weight}; a single version takes all the traffic (100)` : undefined;
  }
  const versions = stacks.map((s) => s.versionLabel);
  if (versions.some((v) => v === undefined)) return `several Services route it, so each needs a ${LABEL.version} label`;
  if (new Set(versions).size !== versions.length) return `two Services carry the same ${LABEL.version}`;
  if (!stacks.some((s) => s.shift)) {
    return stacks.some((s) => s.weightLabel !== undefined)
      ? `it has weight labels (${stacks.map((s) => `${s.versionLabel}=${s.weightLabel ?? "none"}`).join(", ")}) but no traffic shift; annotate the new version's Service with ${SHIFT_ANNOTATION.from}, ${SHIFT_ANNOTATION.policy}, ${SHIFT_ANNOTATION.start} and ${SHIFT_ANNOTATION.duration}`
      : `it has ${stacks.length} versions but no traffic shift says how to split its traffic (annotate the new version's Service with ${SHIFT_ANNOTATION.from}, ...)`;
  }
  return undefined;
}

/** A shift from the annotations of the Service of version `to`; a string says what is wrong; undefined when not annotated. */
function shiftAnnotations(service: string, to: string, annotations: Record<string, string>): Shift | string | undefined {
  const from = annotations[SHIFT_ANNOTATION.from];
  if (from === undefined) return undefined;
  const policy = annotations[SHIFT_ANNOTATION.policy];
  if (policy !== "linear" && policy !== "atomic") return `annotation ${SHIFT_ANNOTATION.policy}=${JSON.stringify(policy)} must be linear or atomic`;
  const durationText = annotations[SHIFT_ANNOTATION.duration] ?? "";
  const durationMs = parseShiftDuration(durationText);
  if (durationMs === undefined) return `annotation ${SHIFT_ANNOTATION.duration}=${JSON.stringify(durationText)} must be a duration from 1 minute to 5 days, such as 30m, 2h or 5d`;
  const reversed = annotations[SHIFT_ANNOTATION.reversed];
  return {
    service,
    from,
    to,
    policy,
    start: new Date(annotations[SHIFT_ANNOTATION.start] ?? "not a time"),
    durationMs,
    ...(reversed !== undefined ? { reversedAt: new Date(reversed) } : {}),
  };
}

/** The label selector for listing routed Services cluster-wide in one request. */
export const ROUTED_SERVICE_SELECTOR = LABEL.service;
