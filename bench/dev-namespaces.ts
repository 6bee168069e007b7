// What the benchmarks that time dev/PR namespaces on the local node share: a
// background of routed namespaces, the gateway's xDS ConfigMap's versions as a
// watch sees them, and the figures they print.
import { KubeConfig, Watch, type V1ConfigMap, type V1Pod } from "@kubernetes/client-node";
import { gatewayPodLabels, XDS_DIGEST_ANNOTATION } from "../routing/labels.js";
import { until, type Workloads } from "../test/support/workloads.js";

export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** The nearest-rank percentile `q` (0-1) of `xs`. */
export const percentile = (xs: number[], q: number): number =>
  [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil(q * xs.length) - 1)]!;

/** The median as the namespace benchmark has always printed it (the lower middle). */
export const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

/** A dev/PR route in an rds.yaml, as the gateway's xDS holds it. */
export const routeIn = (namespace: string, service: string): string =>
  `"path_separated_prefix":"/${namespace}/${service}"`;

/**
 * Labelled namespaces named `names`, each with routed Services named `services` without pods or a
 * selector: only the routes count (with a selector, kube-controller-manager's backlog of their
 * EndpointSlices delayed the timed namespaces' own by minutes). 16 made at a time.
 */
export async function createBackground(w: Workloads, names: string[], services: string[]): Promise<void> {
  const queue = [...names];
  const creator = async () => {
    for (let ns = queue.shift(); ns !== undefined; ns = queue.shift()) {
      await w.createNamespace(ns);
      for (const name of services) await w.createRoutedService(ns, { name, selectsPods: false });
    }
  };
  await Promise.all(Array.from({ length: 16 }, creator));
}

/**
 * A watch on `path` with `query`, started again whenever the API server ends it, until the
 * returned stop() (a missed event would leave a wait on it waiting).
 */
async function watchKeptOpen<T>(
  kc: KubeConfig,
  path: string,
  query: Record<string, string>,
  onObject: (object: T) => void,
): Promise<() => void> {
  let watching = true;
  let abort: AbortController | undefined;
  const start = async (): Promise<void> => {
    abort = await new Watch(kc).watch(
      path,
      query,
      (_type: string, object: T) => onObject(object),
      () => {
        if (watching) void start();
      },
    );
  };
  await start();
  return () => {
    watching = false;
    abort?.abort();
  };
}

/**
 * An xDS ConfigMap's versions as the API server sends them (a watch, not a read of its
 * 0.7 MB every few hundred ms, which would load the cores being measured), each with the
 * instant it came; watched again whenever the API server ends the watch.
 */
export class XdsVersions {
  private readonly versions: { at: number; rds: string }[] = [];
  private stopWatch = () => {};

  static async start(kubeconfig: string, namespace: string, name = "gateway-xds"): Promise<XdsVersions> {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const v = new XdsVersions();
    v.stopWatch = await watchKeptOpen<V1ConfigMap>(
      kc,
      `/api/v1/namespaces/${namespace}/configmaps`,
      { fieldSelector: `metadata.name=${name}` },
      (cm) => v.versions.push({ at: performance.now(), rds: cm.data?.["rds.yaml"] ?? "" }),
    );
    return v;
  }

  /** When the first version since `since` came that `holds`: the ConfigMap's own instant, not a poll's. */
  heldAt(what: string, since: number, holds: (rds: string) => boolean, limitMs = 300_000): Promise<number> {
    return until(
      what,
      limitMs,
      async () => this.versions.find((v) => v.at >= since && holds(v.rds))?.at,
      undefined,
      20,
    ).finally(() => this.versions.splice(0, this.versions.length - 1));
  }

  stop(): void {
    this.stopWatch();
  }
}

/**
 * The gateway pods' xds-digest annotation as a watch sees it change: when the writer told
 * their kubelets to project a new ConfigMap (the part between the write and the kubelet).
 */
export class PodsTold {
  private readonly changes: { at: number; digest: string }[] = [];
  private readonly last = new Map<string, string>();
  private stopWatch = () => {};

  static async start(kubeconfig: string, namespace: string, gateway = "gateway"): Promise<PodsTold> {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const t = new PodsTold();
    const labelSelector = Object.entries(gatewayPodLabels(gateway))
      .map(([k, v]) => `${k}=${v}`)
      .join(",");
    t.stopWatch = await watchKeptOpen<V1Pod>(kc, `/api/v1/namespaces/${namespace}/pods`, { labelSelector }, (pod) => {
      const digest = pod.metadata?.annotations?.[XDS_DIGEST_ANNOTATION] ?? "";
      const name = pod.metadata?.name ?? "";
      if (t.last.get(name) !== digest) t.changes.push({ at: performance.now(), digest });
      t.last.set(name, digest);
    });
    return t;
  }

  /** When the pods were first told of a new digest at `since` or later (undefined: not yet). */
  toldSince(since: number): number | undefined {
    return this.changes.find((c) => c.at >= since)?.at;
  }

  stop(): void {
    this.stopWatch();
  }
}
