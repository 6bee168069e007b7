// Writes route status (routing/route-status.ts) to the cluster: the
// annotation on each Service whose status changed (a merge patch of that one
// annotation: an admission policy lets the route-sync identity change
// nothing else), and the Events. An Event's name is derived from its object
// and what it says, so writing the same one again is refused by the API
// server as already there (409) and nothing is repeated: one Event per
// problem, however often syncs run. (The API server expires Events after its
// --event-ttl, one hour by default; a problem still there then is said once
// more.) Status is a report: a failure is returned as a line, never thrown,
// and never undoes a route.
import { createHash } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import type { StatusChange, StatusEvent } from "../routing/route-status.js";
import { ROUTE_STATUS_ANNOTATION } from "../routing/labels.js";
import { describeKubeError, withTimeout } from "./client.js";

/** The component Events name as their source. */
export const ROUTE_STATUS_COMPONENT = "envoy-gateways-route-sync";

/** How many status requests are in flight at once. */
const CONCURRENCY = 8;

export interface StatusWritten {
  annotated: number;
  events: number;
  /** One line per write that failed (who may not do what, or what the API server said). */
  failures: string[];
}

/**
 * Writes `changes` at `now`. `reported` holds the names of Events this
 * process already created or found (a watcher keeps it across syncs, so it
 * does not ask the API server again); it is updated.
 */
export async function writeRouteStatus(
  kc: k8s.KubeConfig,
  changes: readonly StatusChange[],
  now: Date,
  reported: Set<string> = new Set(),
): Promise<StatusWritten> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const result: StatusWritten = { annotated: 0, events: 0, failures: [] };
  const tasks: (() => Promise<void>)[] = [];
  for (const change of changes) {
    const { object } = change;
    if (change.annotation !== undefined && object.kind === "Service") {
      const annotation = change.annotation;
      tasks.push(async () => {
        try {
          await core.patchNamespacedService(
            {
              name: object.name,
              namespace: object.namespace!,
              body: { metadata: { annotations: { [ROUTE_STATUS_ANNOTATION]: annotation } } },
            },
            withTimeout(k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch)),
          );
          result.annotated++;
        } catch (e) {
          if (!(e instanceof k8s.ApiException && e.code === 404))
            result.failures.push(
              describeKubeError(kc, `annotating Service ${object.namespace}/${object.name}`, e).message,
            );
        }
      });
    }
    for (const event of change.events) {
      const body = eventObject(change.object, event, now);
      const name = body.metadata!.name!;
      if (reported.has(name)) continue;
      tasks.push(async () => {
        try {
          await core.createNamespacedEvent({ namespace: body.metadata!.namespace!, body }, withTimeout());
          result.events++;
          reported.add(name);
        } catch (e) {
          if (e instanceof k8s.ApiException && e.code === 409) reported.add(name);
          else if (!(e instanceof k8s.ApiException && e.code === 404))
            result.failures.push(
              describeKubeError(kc, `creating Event ${event.reason} for ${describe(object)}`, e).message,
            );
        }
      });
    }
  }
  await inParallel(tasks, CONCURRENCY);
  return result;
}

/**
 * The Event: about a Service in its namespace; about a Namespace (cluster-
 * scoped) in `default`, as the API server wants Events of cluster-scoped
 * objects. Named after the object (its uid too: a Service deleted and
 * created again is another object) and what the Event says.
 */
export function eventObject(object: StatusChange["object"], event: StatusEvent, now: Date): k8s.CoreV1Event {
  const digest = createHash("sha256")
    .update(
      JSON.stringify([object.kind, object.namespace ?? "", object.name, object.uid ?? "", event.reason, event.message]),
    )
    .digest("hex")
    .slice(0, 16);
  const namespace = object.kind === "Service" ? object.namespace! : "default";
  return {
    metadata: { name: `${object.name}.${digest}`, namespace },
    involvedObject: {
      apiVersion: "v1",
      kind: object.kind,
      name: object.name,
      ...(object.kind === "Service" ? { namespace: object.namespace! } : {}),
      ...(object.uid ? { uid: object.uid } : {}),
    },
    type: event.type,
    reason: event.reason,
    message: event.message,
    source: { component: ROUTE_STATUS_COMPONENT },
    reportingComponent: ROUTE_STATUS_COMPONENT,
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}

function describe(o: StatusChange["object"]): string {
  return o.kind === "Service" ? `Service ${o.namespace}/${o.name}` : `Namespace ${o.name}`;
}

/** Runs `tasks`, at most `limit` at a time. */
async function inParallel(tasks: readonly (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}
