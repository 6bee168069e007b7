// Workloads on the local node the way CI creates them in a dev/PR namespace: a
// namespace with the routing label, and per service a Secret with the pod
// certificate, a Deployment of the stand-in pod image and a headless Service
// with the routing labels. Helpers wait for what a user would wait for (ready
// pods, pods gone) by reading the API.
import {
  AppsV1Api,
  AutoscalingV2Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Container,
  type V1Deployment,
  type V1Pod,
  type V1Volume,
} from "@kubernetes/client-node";
import { LABEL, routingLabels } from "../../routing/labels.js";
import { UPSTREAM_PORT } from "../../routing/names.js";
import { POD_TLS_DIR, podTlsSecretName, serviceWorkloadSpec } from "../../components/headless-service.js";
import type { LocalCluster } from "./cluster.js";
import { applySecret, localImages, STANDIN_RESOURCES, WorkloadPki } from "./local-stack.js";

/** The label that routes a dev/PR namespace (the stacks' devNamespaces.selector). */
export const DEV_LABEL = { "envoy-gateways.io/routes": "dev" };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface RoutedServiceSpec {
  name: string;
  /** Pods (default 1). */
  replicas?: number;
  /** Image (default the stand-in echo pod). */
  image?: string;
  /**
   * false: the Service has no selector (a route only, for benchmarks: no
   * EndpointSlice for kube-controller-manager to keep). Default true.
   */
  selectsPods?: boolean;
}

/** The port of `standin client`'s tally (GET /stats, plain HTTP). */
const CLIENT_STATS_PORT = 8080;

export interface ClientSpec {
  name: string;
  /** https:// URL to call. */
  url: string;
  /** Requests per second. */
  rate: number;
  /** Requests in all; then the client stops and keeps its tally. */
  count: number;
  /** Pooled connections (true) or one connection per request (false). */
  keepAlive: boolean;
}

/** What `standin client` serves on GET /stats (tools/pod-images/standin/client.go). */
export interface ClientTally {
  url: string;
  sent: number;
  ok: number;
  failed: number;
  /** Answers per stand-in pod (its X-Pod header). */
  pods: Record<string, number>;
  /** The last failures. */
  failures: { at: string; error: string }[];
  /** All `count` requests sent and answered or failed. */
  done: boolean;
}

export class Workloads {
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly autoscaling: AutoscalingV2Api;
  private readonly pki: WorkloadPki;

  constructor(readonly cluster: LocalCluster) {
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    this.core = kc.makeApiClient(CoreV1Api);
    this.apps = kc.makeApiClient(AppsV1Api);
    this.autoscaling = kc.makeApiClient(AutoscalingV2Api);
    this.pki = new WorkloadPki(cluster);
  }

  /** A namespace (with the dev label unless `labelled` is false). */
  async createNamespace(name: string, labelled = true): Promise<void> {
    await this.core.createNamespace({ body: { metadata: { name, labels: labelled ? DEV_LABEL : {} } } });
  }

  /** Secret, Deployment and headless Service of one routed service in `namespace`. */
  async createService(namespace: string, spec: RoutedServiceSpec): Promise<void> {
    await this.createWorkload(namespace, spec);
    await this.createRoutedService(namespace, spec);
  }

  /** The pods of a service: the Secret with their certificate and the Deployment. */
  async createWorkload(namespace: string, spec: RoutedServiceSpec): Promise<void> {
    await applySecret(this.core, this.pki.podSecret(spec.name, namespace, this.cluster.node.clusterDomain));
    await this.apps.createNamespacedDeployment({ namespace, body: deployment(namespace, spec) });
  }

  /** The headless Service with the routing labels, selecting the service's pods. */
  async createRoutedService(namespace: string, spec: RoutedServiceSpec): Promise<void> {
    await this.core.createNamespacedService({
      namespace,
      body: {
        metadata: {
          name: spec.name,
          labels: routingLabels({ service: spec.name, weight: 100, replicas: spec.replicas ?? 1, websocket: false }),
        },
        spec: {
          clusterIP: "None",
          ...(spec.selectsPods === false ? {} : { selector: { [LABEL.app]: spec.name } }),
          publishNotReadyAddresses: false,
          ports: [{ name: "https", port: UPSTREAM_PORT, targetPort: UPSTREAM_PORT, protocol: "TCP" }],
        },
      },
    });
  }

  /**
   * An in-cluster client (the stand-in image's `standin client`, as a batch driver calls a
   * Service directly): one pod calling `spec.url` at `spec.rate` per second until it has
   * sent `spec.count`; read its tally with `clientTally`. It trusts the services CA (the
   * Secret made for its own name holds it as ca.crt).
   */
  async createClient(namespace: string, spec: ClientSpec): Promise<void> {
    await applySecret(this.core, this.pki.podSecret(spec.name, namespace, this.cluster.node.clusterDomain));
    const selector = { [LABEL.app]: spec.name };
    const args = [`-url=${spec.url}`, `-rate=${spec.rate}`, `-count=${spec.count}`, `-keepalive=${spec.keepAlive}`];
    await this.apps.createNamespacedDeployment({
      namespace,
      body: hardenedDeployment({
        name: spec.name,
        selector,
        replicas: 1,
        container: {
          name: spec.name,
          image: localImages().echo,
          command: ["/standin", "client", ...args],
          ports: [{ name: "stats", containerPort: CLIENT_STATS_PORT }],
          readinessProbe: { tcpSocket: { port: "stats" }, periodSeconds: 1 },
          volumeMounts: [{ name: "tls", mountPath: POD_TLS_DIR, readOnly: true }],
        },
        volumes: [{ name: "tls", secret: { secretName: podTlsSecretName(spec.name) } }],
      }),
    });
  }

  /** The tally of a client made by `createClient`, read from its pod (the host reaches pod IPs). */
  async clientTally(namespace: string, name: string): Promise<ClientTally> {
    const [pod] = await this.waitReady(namespace, name, 1);
    const response = await fetch(`http://${pod?.status?.podIP}:${CLIENT_STATS_PORT}/stats`, {
      signal: AbortSignal.timeout(5000),
    });
    if (!response.ok) throw new Error(`GET /stats of ${namespace}/${name}: ${response.status}`);
    return (await response.json()) as ClientTally;
  }

  /** A labelled namespace with its services. */
  async createDevNamespace(name: string, services: RoutedServiceSpec[], labelled = true): Promise<void> {
    await this.createNamespace(name, labelled);
    for (const s of services) await this.createService(name, s);
  }

  /** Adds the dev label to an existing namespace. */
  async labelNamespace(name: string): Promise<void> {
    await this.core.patchNamespace(
      { name, body: { metadata: { labels: DEV_LABEL } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  }

  /** Deletes a namespace (no wait); a namespace already gone is fine. */
  async deleteNamespace(name: string): Promise<void> {
    await this.core.deleteNamespace({ name }).catch((e: { code?: number }) => {
      if (e.code !== 404) throw e;
    });
  }

  /** Waits until the namespace is gone (its pods terminated, its objects deleted). */
  async waitNamespaceGone(name: string, timeoutMs = 180_000): Promise<void> {
    await until(`namespace ${name} to be deleted`, timeoutMs, async () => {
      try {
        await this.core.readNamespace({ name });
        return false;
      } catch (e) {
        if ((e as { code?: number }).code === 404) return true;
        throw e;
      }
    });
  }

  async scale(namespace: string, name: string, replicas: number): Promise<void> {
    await this.apps.patchNamespacedDeploymentScale(
      { name, namespace, body: { spec: { replicas } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  }

  /** The pods of a service (app label), not yet deleted. */
  async pods(namespace: string, app: string): Promise<V1Pod[]> {
    const list = await this.core.listNamespacedPod({ namespace, labelSelector: `${LABEL.app}=${app}` });
    return list.items;
  }

  /** Waits until exactly `count` pods of the service run and are ready (and no other pod of it exists); returns them. */
  async waitReady(namespace: string, app: string, count: number, timeoutMs = 180_000): Promise<V1Pod[]> {
    return until(
      `${count} ready pods of ${namespace}/${app}`,
      timeoutMs,
      async () => {
        const pods = await this.pods(namespace, app);
        const ready = pods.filter((p) => !p.metadata?.deletionTimestamp && isReady(p));
        return pods.length === count && ready.length === count ? ready : undefined;
      },
      async () => describePods(await this.pods(namespace, app)),
    );
  }

  /** Waits until a Deployment's rollout is complete (all replicas updated, ready and available). */
  async waitRollout(namespace: string, name: string, timeoutMs = 300_000): Promise<V1Deployment> {
    return until(`the rollout of ${namespace}/${name}`, timeoutMs, async () => {
      const d = await this.apps.readNamespacedDeployment({ name, namespace });
      const want = d.spec?.replicas ?? 1;
      const s = d.status ?? {};
      const done =
        (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) &&
        s.updatedReplicas === want &&
        s.readyReplicas === want &&
        s.availableReplicas === want &&
        (s.replicas ?? 0) === want;
      return done ? d : undefined;
    });
  }
}

/** The stand-in pod's Deployment: the program's own spec for a production service with an image. */
function deployment(namespace: string, spec: RoutedServiceSpec): V1Deployment {
  const selector = { [LABEL.app]: spec.name };
  return {
    metadata: { name: spec.name, namespace, labels: selector },
    // Plain values only (no Outputs), so it is the client's type too.
    spec: serviceWorkloadSpec(
      {
        name: spec.name,
        image: spec.image ?? localImages().echo,
        replicas: spec.replicas ?? 1,
        resources: STANDIN_RESOURCES,
      },
      selector,
    ) as V1Deployment["spec"],
  };
}

/**
 * A Deployment of one container, hardened as the program's own pods are (non-root,
 * seccomp RuntimeDefault, read-only root, no privilege escalation, no capabilities), for
 * the test workloads that are not a routed service's pods (clients, the old world).
 */
export function hardenedDeployment(o: {
  name: string;
  selector: Record<string, string>;
  replicas: number;
  container: V1Container;
  volumes: V1Volume[];
}): V1Deployment {
  return {
    metadata: { name: o.name, labels: o.selector },
    spec: {
      replicas: o.replicas,
      selector: { matchLabels: o.selector },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels: o.selector },
        spec: {
          securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
          containers: [
            {
              ...o.container,
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ["ALL"] },
              },
            },
          ],
          volumes: o.volumes,
        },
      },
    },
  };
}

export function isReady(pod: V1Pod): boolean {
  return (
    pod.status?.phase === "Running" &&
    (pod.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")
  );
}

function describePods(pods: V1Pod[]): string {
  return (
    pods
      .map((p) => {
        const states = (p.status?.containerStatuses ?? [])
          .map((c) => `${c.name}: ${JSON.stringify(c.state)}`)
          .join("; ");
        return `${p.metadata?.name} ${p.status?.phase}${p.metadata?.deletionTimestamp ? " (terminating)" : ""} ready=${isReady(p)} ${states}`;
      })
      .join("\n") || "no pods"
  );
}

/** Polls `check` until it returns a value (not undefined/false); throws after `timeoutMs` with `what`. */
export async function until<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined | false>,
  explain?: () => Promise<string>,
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const detail = explain ? await explain().catch((e: Error) => e.message) : "";
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ""}${detail ? `\n${detail}` : ""}`,
      );
    }
    await sleep(intervalMs);
  }
}
