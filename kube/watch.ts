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

/** kubectl apply's copy of the whole object, as an annotation: nothing here reads it. */
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/**
 * `o` without what nothing here reads and what can outweigh the rest of it:
 * the API server's field managers (`managedFields`: 12 of 21 MiB in a cache of
 * 5,000 Services, each with two managers) and kubectl apply's copy of the
 * object. The informers' caches keep every routed namespace and Service for as
 * long as the watch runs; `o` is a fresh object from a list or a watch event,
 * trimmed in place before the cache keeps it.
 */
function trimmed<T extends k8s.KubernetesObject>(o: T): T {
  const m = o.metadata;
  if (m === undefined) return o;
  delete m.managedFields;
  if (m.annotations && LAST_APPLIED in m.annotations) delete m.annotations[LAST_APPLIED];
  return o;
}

/** A client-node Watch whose events carry `trimmed` objects (an ERROR event's Status has neither field). */
class TrimmingWatch extends k8s.Watch {
  override watch(...[path, queryParams, callback, done]: Parameters<k8s.Watch["watch"]>): Promise<AbortController> {
    return super.watch(
      path,
      queryParams,
      (phase, apiObj, watchObj) => callback(phase, trimmed(apiObj), watchObj),
      done,
    );
  }
}

/** A list of `trimmed` objects. */
async function trimmedList<L extends { items: k8s.KubernetesObject[] }>(list: Promise<L>): Promise<L> {
  const read = await list;
  read.items.forEach(trimmed);
  return read;
}

/**
 * Starts `informer` and starts it again after each failed list or watch
 * (after 1 s, doubling up to 30 s, back to 1 s once it connects), telling
 * `onError` what failed, until `stopped()`; `onListed` after each start.
 */
function keepWatching<T extends k8s.KubernetesObject>(
  kc: k8s.KubeConfig,
  informer: k8s.ListWatch<T>,
  action: string,
  onError: WatchCallbacks["onError"],
  stopped: () => boolean,
  onListed: () => void = () => {},
): void {
  let delay = 1000;
  const start = () => void informer.start().then(onListed);
  informer.on(k8s.CONNECT, () => (delay = 1000));
  informer.on(k8s.ERROR, (e) => {
    if (stopped()) return;
    onError(describeKubeError(kc, action, e).message, delay);
    setTimeout(() => void (stopped() || start()), delay).unref();
    delay = Math.min(delay * 2, 30_000);
  });
  start();
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
  const watch = new TrimmingWatch(kc);
  const namespaces = new k8s.ListWatch<k8s.V1Namespace>(
    "/api/v1/namespaces",
    watch,
    () => trimmedList(core.listNamespace({ labelSelector: namespaceSelector }, withTimeout())),
    false,
    namespaceSelector,
  );
  const services = new k8s.ListWatch<k8s.V1Service>(
    "/api/v1/services",
    watch,
    () => trimmedList(core.listServiceForAllNamespaces({ labelSelector: serviceSelector }, withTimeout())),
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
    const changes = changeFilter(kind, ignored);
    const report = (what: string | undefined) => what !== undefined && callbacks.onChange(what);
    informer.on(k8s.ADD, (o) => report(changes.added(o)));
    informer.on(k8s.UPDATE, (o) => report(changes.updated(o)));
    informer.on(k8s.DELETE, (o) => report(changes.deleted(o)));
    keepWatching(kc, informer, `watching ${kind}s labelled ${selector}`, callbacks.onError, () => stopped, checkSynced);
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

/** A watch of one ConfigMap. */
export interface ConfigMapWatch {
  stop(): Promise<void>;
}

/**
 * Follows one ConfigMap (a list and watch with a field selector on its name,
 * which RBAC grants on that name alone): `onData` with its data after the
 * first list that was read and after each change, undefined while it does
 * not exist (a failed list or watch says nothing of it: `onError` is told).
 */
export function watchConfigMap(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
  callbacks: { onData(data: Record<string, string> | undefined): void; onError: WatchCallbacks["onError"] },
): ConfigMapWatch {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const fieldSelector = `metadata.name=${name}`;
  const informer = new k8s.ListWatch<k8s.V1ConfigMap>(
    `/api/v1/namespaces/${namespace}/configmaps`,
    new k8s.Watch(kc),
    () => core.listNamespacedConfigMap({ namespace, fieldSelector }, withTimeout()),
    false,
    undefined,
    fieldSelector,
  );
  let stopped = false;
  /** What was last reported: the data's digest, "absent", or undefined before the first list. */
  let last: string | undefined;
  const report = () => {
    const found = informer.get(name, namespace);
    const seen = found === undefined ? "absent" : jsonDigest(found.data ?? {});
    if (seen === last) return;
    last = seen;
    callbacks.onData(found === undefined ? undefined : { ...(found.data ?? {}) });
  };
  for (const verb of [k8s.ADD, k8s.UPDATE, k8s.DELETE] as const) informer.on(verb, report);
  // A failed list leaves the cache empty: only a list that was read says whether it exists.
  const listed = () => informer.latestResourceVersion() !== "" && report();
  keepWatching(kc, informer, `watching ConfigMap ${namespace}/${name}`, callbacks.onError, () => stopped, listed);
  return {
    async stop() {
      stopped = true;
      await informer.stop();
    },
  };
}
