// The routed namespaces and Services, kept current by client-node informers
// (list, then watch from the last resourceVersion; a list again when the
// server has compacted past it). Their caches answer discovery without
// another request.
import * as k8s from "@kubernetes/client-node";
import type { NamespaceObject, ServiceObject } from "../routing/discovery.js";
import { jsonDigest } from "../routing/units.js";
import { describeKubeError, withTimeout } from "./client.js";

export interface RoutedObjectsWatch {
  /** Resolves once both lists have been read (the caches hold what exists). */
  synced: Promise<void>;
  /** True once both lists have been read: before that the caches say nothing (not "nothing is routed"). */
  ready(): boolean;
  namespaces(): NamespaceObject[];
  services(): ServiceObject[];
  stop(): Promise<void>;
}

export interface WatchCallbacks {
  /** An object was added, changed or deleted ("namespace pr-1 added"); also for each object of a first list. */
  onChange(what: string): void;
  /** A list or watch failed; the informer is started again after `retryMs`. */
  onError(message: string, retryMs: number): void;
}

/**
 * What of an object a change is about, as a digest: its name, labels and
 * annotations but those in `ignored` (what the caller writes on the objects
 * itself), whether it is being deleted, its spec and its phase. An update
 * that leaves them the same (the API server's bookkeeping, the caller's own
 * route status) is no change to the routes: without this, writing the route
 * status on 5,000 Services came back as 5,000 changes, each a step. Objects
 * compare alike whether they came from a list (client-node's typed models:
 * Dates, unset fields present as undefined) or from a watch (plain JSON).
 */
export function changeDigest(o: k8s.KubernetesObject, ignored: ReadonlySet<string>): string {
  const m = o.metadata ?? {};
  const facts = {
    name: m.name,
    namespace: m.namespace,
    labels: m.labels ?? {},
    annotations: Object.fromEntries(Object.entries(m.annotations ?? {}).filter(([k]) => !ignored.has(k))),
    deleting: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
    spec: (o as { spec?: unknown }).spec,
    phase: (o as { status?: { phase?: unknown } }).status?.phase,
  };
  return jsonDigest(facts);
}

/**
 * What an informer's events say about one kind of object ("Service pr-1/batch
 * changed"), remembering each object's `changeDigest` as last reported: an
 * update that leaves it the same says nothing (undefined).
 */
export function changeFilter(
  kind: string,
  ignored: ReadonlySet<string>,
): Record<"added" | "updated" | "deleted", (o: k8s.KubernetesObject) => string | undefined> {
  const seen = new Map<string, string>();
  const name = (o: k8s.KubernetesObject) =>
    `${kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata?.name}`;
  return {
    added(o) {
      seen.set(name(o), changeDigest(o, ignored));
      return `${name(o)} added`;
    },
    updated(o) {
      const digest = changeDigest(o, ignored);
      if (seen.get(name(o)) === digest) return undefined;
      seen.set(name(o), digest);
      return `${name(o)} changed`;
    },
    deleted(o) {
      seen.delete(name(o));
      return `${name(o)} deleted`;
    },
  };
}

/**
 * Watches the namespaces matching `namespaceSelector` and the Services
 * matching `serviceSelector`, cluster-wide. An update that changes only the
 * `ignoredAnnotations` (or the server's bookkeeping) is not reported.
 */
export function watchRoutedObjects(
  kc: k8s.KubeConfig,
  namespaceSelector: string,
  serviceSelector: string,
  callbacks: WatchCallbacks,
  ignoredAnnotations: readonly string[] = [],
): RoutedObjectsWatch {
  const ignored = new Set(ignoredAnnotations);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const watch = new k8s.Watch(kc);
  const namespaces = new k8s.ListWatch<k8s.V1Namespace>(
    "/api/v1/namespaces",
    watch,
    () => core.listNamespace({ labelSelector: namespaceSelector }, withTimeout()),
    false,
    namespaceSelector,
  );
  const services = new k8s.ListWatch<k8s.V1Service>(
    "/api/v1/services",
    watch,
    () => core.listServiceForAllNamespaces({ labelSelector: serviceSelector }, withTimeout()),
    false,
    serviceSelector,
  );
  let stopped = false;
  const ready = () => namespaces.latestResourceVersion() !== "" && services.latestResourceVersion() !== "";
  let markSynced!: () => void;
  const synced = new Promise<void>((resolve) => (markSynced = resolve));
  const checkSynced = () => {
    if (ready()) markSynced();
  };
  const follow = <T extends k8s.KubernetesObject>(informer: k8s.ListWatch<T>, kind: string, selector: string): void => {
    let delay = 1000;
    const start = () => void informer.start().then(checkSynced);
    const changes = changeFilter(kind, ignored);
    const report = (what: string | undefined) => what !== undefined && callbacks.onChange(what);
    informer.on(k8s.ADD, (o) => report(changes.added(o)));
    informer.on(k8s.UPDATE, (o) => report(changes.updated(o)));
    informer.on(k8s.DELETE, (o) => report(changes.deleted(o)));
    informer.on(k8s.CONNECT, () => (delay = 1000));
    informer.on(k8s.ERROR, (e) => {
      if (stopped) return;
      callbacks.onError(describeKubeError(kc, `watching ${kind}s labelled ${selector}`, e).message, delay);
      setTimeout(() => void (stopped || start()), delay).unref();
      delay = Math.min(delay * 2, 30_000);
    });
    start();
  };
  follow(namespaces, "namespace", namespaceSelector);
  follow(services, "Service", serviceSelector);
  return {
    synced,
    ready,
    namespaces: () => namespaces.list() as NamespaceObject[],
    services: () => services.list() as ServiceObject[],
    async stop() {
      stopped = true;
      await Promise.all([namespaces.stop(), services.stop()]);
    },
  };
}
