// Route status, where developers look: on their own Services and
// namespaces, not in a CI job's log. Derived, forward only, from what a sync
// listed, discovered and routed: each labelled Service in a dev/PR namespace
// gets an annotation saying where it is served (a URL per gateway) or why it
// is not, and an Event when that changes (Normal "Routed", Warning
// "NotRouted"); a Service routed with something to fix gets a Warning
// "RouteWarning", a namespace left out or refused a Warning "NotRouted".
// The Services' current annotations are read only to leave alone what already
// says the same, so a sync that changes nothing writes no annotation; Events
// are named after what they say (kube/route-status.ts), so one problem makes
// one Event, not one per sync. Services in the gateways' own and the
// protected namespaces are never written: production's status is the stack's
// outputs, and the cluster's own namespaces are not ours to annotate.
import type { ClusterObject, Problem } from "./config/errors.js";
import { GATEWAYS, type GatewayName } from "./config/schema.js";
import type { Discovered, NamespaceObject, ServiceObject } from "./discovery.js";
import { LABEL, ROUTE_STATUS_ANNOTATION } from "./labels.js";
import type { RoutesView } from "./routes-view.js";

/** An Event about one object. */
export interface StatusEvent {
  type: "Normal" | "Warning";
  reason: "Routed" | "NotRouted" | "RouteWarning";
  message: string;
}

/** What to write about one object: its route status annotation (Services only) and the Events to create. */
export interface StatusChange {
  object: ClusterObject & { uid?: string };
  /** The annotation's new value (absent: it already says this, or the object is a Namespace). */
  annotation?: string;
  events: StatusEvent[];
}

/** What a sync listed and discovered, and the routes each gateway serves now. */
export interface StatusFacts {
  /** The gateways' namespace. */
  productionNamespace: string;
  /** Namespaces never routed as dev/PR namespaces (devNamespaces.protected). */
  protectedNamespaces: readonly string[];
  namespaces: readonly NamespaceObject[];
  services: readonly ServiceObject[];
  /** Discovery after admission (capacity.ts): every problem and warning names the objects it is about. */
  found: Discovered;
  /** Each gateway's routes. */
  routes: Partial<Record<GatewayName, RoutesView>>;
}

/**
 * The Services a sync listed, each with the route status annotation that
 * `latest` (the same Services as read since) holds. A watcher's status write
 * runs after the write before it, which may have taken a minute at thousands
 * of Services: what that one wrote is then not written again.
 */
export function withLatestStatus(listed: readonly ServiceObject[], latest: readonly ServiceObject[]): ServiceObject[] {
  const key = (s: ServiceObject) => `${s.metadata?.namespace}/${s.metadata?.name}`;
  const now = new Map(latest.map((s) => [key(s), s.metadata?.annotations?.[ROUTE_STATUS_ANNOTATION]]));
  return listed.map((s) => {
    const annotations = s.metadata?.annotations ?? {};
    if (!now.has(key(s)) || now.get(key(s)) === annotations[ROUTE_STATUS_ANNOTATION]) return s;
    const { [ROUTE_STATUS_ANNOTATION]: _, ...others } = annotations;
    const status = now.get(key(s));
    return {
      ...s,
      metadata: {
        ...s.metadata,
        annotations: status === undefined ? others : { ...others, [ROUTE_STATUS_ANNOTATION]: status },
      },
    };
  });
}

/** Every Service and namespace whose route status does not say what it should yet. */
export function routeStatusChanges(facts: StatusFacts): StatusChange[] {
  const problems = problemsByObject(facts.found.problems);
  const warnings = problemsByObject(facts.found.warnings);
  const changes: StatusChange[] = [];
  for (const svc of facts.services) {
    const { namespace, name, uid } = svc.metadata ?? {};
    if (!namespace || !name) continue;
    if (namespace === facts.productionNamespace || facts.protectedNamespaces.includes(namespace)) continue;
    const object: StatusChange["object"] = { kind: "Service", namespace, name, ...(uid ? { uid } : {}) };
    const current = svc.metadata?.annotations?.[ROUTE_STATUS_ANNOTATION];
    const wanted = serviceStatus(facts.routes, svc, [
      ...(problems.get(objectKey(object)) ?? []),
      ...(problems.get(objectKey({ kind: "Namespace", name: namespace })) ?? []),
    ]);
    const changed = wanted !== undefined && wanted.annotation !== current;
    const events = [
      ...(changed ? [wanted.event] : []),
      ...(warnings.get(objectKey(object)) ?? []).map((w): StatusEvent => ({
        type: "Warning",
        reason: "RouteWarning",
        message: `${w.key} ${w.message}`,
      })),
    ];
    if (changed || events.length)
      changes.push({ object, ...(changed ? { annotation: wanted.annotation } : {}), events });
  }
  const uids = new Map(facts.namespaces.map((ns) => [ns.metadata?.name, ns.metadata?.uid]));
  for (const p of facts.found.problems)
    for (const o of p.objects ?? []) {
      if (o.kind !== "Namespace") continue;
      const uid = uids.get(o.name);
      changes.push({
        object: { ...o, ...(uid ? { uid } : {}) },
        events: [{ type: "Warning", reason: "NotRouted", message: `${p.key} ${p.message}` }],
      });
    }
  return changes;
}

/** What one Service's status says (undefined: nothing to say, it was never routed). */
function serviceStatus(
  routes: StatusFacts["routes"],
  svc: ServiceObject,
  problems: readonly Problem[],
): { annotation: string; event: StatusEvent } | undefined {
  const served = servedAt(routes, svc.metadata!.namespace!, svc.metadata?.labels ?? {});
  if (served.length) {
    const annotation = served.join(", ");
    return { annotation, event: { type: "Normal", reason: "Routed", message: `served at ${annotation}` } };
  }
  if (problems.length) {
    const annotation = `not routed: ${problems.map((p) => `${p.key} ${p.message}`).join("; ")}`;
    return { annotation, event: { type: "Warning", reason: "NotRouted", message: annotation } };
  }
  if (svc.metadata?.annotations?.[ROUTE_STATUS_ANNOTATION] === undefined) return undefined;
  // Routed once; its namespace is no longer selected for routing.
  const annotation = "not routed: its namespace is not a routed dev/PR namespace (devNamespaces.selector)";
  return { annotation, event: { type: "Normal", reason: "NotRouted", message: annotation } };
}

/** Where a Service's version is served: one URL per gateway, naming the gateway (and the version, when the service has several). */
function servedAt(routes: StatusFacts["routes"], namespace: string, labels: Record<string, string>): string[] {
  const logical = labels[LABEL.service];
  const version = labels[LABEL.version] ?? "";
  const out: string[] = [];
  // In the gateways' own order, whatever order the routes came in: the same status reads the same.
  for (const gateway of GATEWAYS) {
    const route = routes[gateway]?.[`${namespace}/${logical}`];
    const versions = Object.values(route?.clusters ?? {});
    if (!route || !versions.some((c) => c.version === version)) continue;
    out.push(`${route.match} (${gateway}${versions.length > 1 ? `, version ${version}` : ""})`);
  }
  return out;
}

function objectKey(o: ClusterObject): string {
  return o.kind === "Namespace" ? `Namespace ${o.name}` : `Service ${o.namespace}/${o.name}`;
}

function problemsByObject(problems: readonly Problem[]): Map<string, Problem[]> {
  const out = new Map<string, Problem[]>();
  for (const p of problems)
    for (const o of p.objects ?? []) {
      const key = objectKey(o);
      out.set(key, [...(out.get(key) ?? []), p]);
    }
  return out;
}
