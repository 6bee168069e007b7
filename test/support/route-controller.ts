// The route controller's pods on the local node, as the e2e test and the
// benchmark see them: its image built and imported, the stack config that
// switches it on, its pods, the Lease's holder, its metrics and its processes.
import { CoordinationV1Api, CoreV1Api, KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { execFile } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { promisify } from "node:util";
import { ROUTE_CONTROLLER } from "../../routes-provider/controller-config.js";
import { CONTROLLER_RESOURCES } from "../../routing/config/route-sync.js";
import type { LocalCluster } from "./cluster.js";
import type { ConfigEdit } from "./local-stack.js";
import { isReady, until } from "./workloads.js";

const run = promisify(execFile);

/** Builds the controller's image from this checkout (cached by content) into the node's containerd; its tag. */
export async function importRouteControllerImage(cluster: LocalCluster): Promise<string> {
  const { stdout } = await run(
    "bash",
    ["scripts/route-controller-image.sh", "--import", cluster.node.containerdSocket],
    { maxBuffer: 1 << 20, timeout: 300_000 },
  );
  return stdout.trim().split("\n").pop()!;
}

/**
 * The stack config's change that switches the controller on: `replicas` pods of `image`, and the
 * local API server's port in the NetworkPolicy (pods reach it behind the kubernetes Service).
 */
export function inCluster(cluster: LocalCluster, image: string, replicas = 2): ConfigEdit {
  return (raw) => ({
    ...raw,
    routeSync: { inCluster: { image, replicas } },
    networkPolicy: { ...(raw.networkPolicy as object), apiServer: { ports: [cluster.ports.apiserver] } },
  });
}

/** The same change as `pulumi config set` arguments, for a stack that runs without the controller so far. */
export function inClusterConfigSets(
  cluster: LocalCluster,
  image: string,
  replicas = 2,
  cpuRequest?: string,
): string[][] {
  return [
    ["config", "set", "--path", "envoy-gateways:routeSync.inCluster.image", image],
    ...(cpuRequest
      ? [
          // The whole resources key (requests and limits), the defaults but the CPU request; strings, as the schema takes.
          ...Object.entries({
            "requests.cpu": cpuRequest,
            "requests.memory": CONTROLLER_RESOURCES.requests.memory,
            "limits.cpu": CONTROLLER_RESOURCES.limits.cpu,
            "limits.memory": CONTROLLER_RESOURCES.limits.memory,
          }).map(([key, value]) => [
            "config",
            "set",
            "--path",
            "--type",
            "string",
            `envoy-gateways:routeSync.inCluster.resources.${key}`,
            value,
          ]),
        ]
      : []),
    ["config", "set", "--path", "--type", "int", "envoy-gateways:routeSync.inCluster.replicas", String(replicas)],
    [
      "config",
      "set",
      "--path",
      "--type",
      "int",
      "envoy-gateways:networkPolicy.apiServer.ports[0]",
      String(cluster.ports.apiserver),
    ],
  ];
}

/** A Prometheus sample's value in a /metrics text (NaN when absent). */
export const metric = (text: string, name: string): number =>
  Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? "NaN");

/** The controller's pods, Lease and metrics in one namespace. */
export class RouteControllerPods {
  private readonly core: CoreV1Api;
  private readonly coordination: CoordinationV1Api;

  constructor(
    kubeconfig: string,
    readonly namespace: string,
  ) {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    this.core = kc.makeApiClient(CoreV1Api);
    this.coordination = kc.makeApiClient(CoordinationV1Api);
  }

  /** Its pods, those being deleted left out. */
  async pods(): Promise<V1Pod[]> {
    const pods = await this.core.listNamespacedPod({
      namespace: this.namespace,
      labelSelector: `app.kubernetes.io/name=${ROUTE_CONTROLLER}`,
    });
    return pods.items.filter((p) => !p.metadata?.deletionTimestamp);
  }

  /** The Lease's holder: the pod's name and a suffix new at each start of its process. */
  async holderIdentity(): Promise<string> {
    const lease = await this.coordination.readNamespacedLease({ name: ROUTE_CONTROLLER, namespace: this.namespace });
    return lease.spec?.holderIdentity ?? "";
  }

  /** The holder's identity if it renewed the Lease at `ms` (epoch ms, this machine's clock) or later, else "". */
  async renewedSince(ms: number): Promise<string> {
    const lease = await this.coordination.readNamespacedLease({ name: ROUTE_CONTROLLER, namespace: this.namespace });
    const renewed = lease.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : 0;
    return renewed >= ms ? (lease.spec?.holderIdentity ?? "") : "";
  }

  /** The pod holding the Lease ("" for none). */
  async holder(): Promise<string> {
    return (await this.holderIdentity()).replace(/_[0-9a-f]{8}$/, "");
  }

  /** The holder once it is one of the ready pods (and not `not`). */
  async readyHolder(not = "", timeoutMs = 120_000, pollMs?: number): Promise<string> {
    return until(
      `a ready route controller pod other than "${not}" to hold the Lease`,
      timeoutMs,
      async () => {
        const h = await this.holder();
        const ready = (await this.pods()).filter(isReady).map((p) => p.metadata!.name!);
        return h && h !== not && ready.includes(h) ? h : undefined;
      },
      undefined,
      pollMs,
    );
  }

  /** A pod's /metrics. */
  async metrics(pod: V1Pod): Promise<string> {
    const r = await fetch(`http://${pod.status!.podIP}:8080/metrics`, { signal: AbortSignal.timeout(5000) });
    return r.text();
  }

  /** The metrics of the pod named `name`. */
  async metricsOf(name: string): Promise<string> {
    const pod = (await this.pods()).find((p) => p.metadata!.name === name);
    if (!pod) throw new Error(`no route controller pod ${name}`);
    return this.metrics(pod);
  }
}

/** The route controller's Node process of `pod` on this node (its environment names the pod). */
export function controllerPid(pod: string): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (!cmd.includes("route-controller.bundle.js")) continue;
      if (readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(`POD_NAME=${pod}`)) return Number(entry);
    } catch {
      // A process that exited meanwhile.
    }
  }
  throw new Error(`no route controller process of pod ${pod} on this node`);
}
