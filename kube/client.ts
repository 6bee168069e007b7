// The Kubernetes API through @kubernetes/client-node: the kubeconfig (the
// stack's secret, or the ambient one), the few calls this project makes, and
// errors that say what went wrong in words (who may not do what, which API
// server cannot be reached).
import * as k8s from "@kubernetes/client-node";
import type * as https from "node:https";
import type { NamespaceObject, ServiceObject } from "../routing/discovery.js";
import { jsonDigest } from "../routing/units.js";

/** A kubeconfig from text (the stack's secret), or the ambient one (KUBECONFIG, ~/.kube/config, in-cluster). */
export function loadKubeConfig(text?: string): k8s.KubeConfig {
  const kc = new PooledKubeConfig();
  if (text) kc.loadFromString(text);
  else kc.loadFromDefault();
  return kc;
}

type Dispatcher = NonNullable<ReturnType<k8s.RequestContext["getDispatcher"]>>;

/**
 * A KubeConfig whose API calls share one undici connection pool while the TLS
 * connection would be made with the same CA, client certificate and server
 * name. client-node 2.0.1 builds a new undici Agent for every call, so each
 * call paid a TCP connection and a TLS handshake of its own: the route
 * controller's leader reads and renews its Lease every 2 s, and the sync
 * writes a route status on each of thousands of Services. Headers (the token,
 * reread from its file as before) are still set per call by client-node. When
 * the TLS material changes (a rotated CA or client certificate file), the next
 * call gets a new pool and the old one is closed once its requests end.
 */
export class PooledKubeConfig extends k8s.KubeConfig {
  #pool: { key: string; dispatcher: Dispatcher } | undefined;

  override async applySecurityAuthentication(context: k8s.RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const made = context.getDispatcher();
    if (made === undefined) return;
    const tls: https.AgentOptions = {};
    await this.applyToHTTPSOptions(tls);
    const key = jsonDigest(this.createDispatcherOptions(this.getCurrentCluster(), tls));
    if (this.#pool?.key !== key) {
      void this.#pool?.dispatcher.close();
      this.#pool = { key, dispatcher: made };
    }
    context.setDispatcher(this.#pool.dispatcher);
  }
}

/** Turns an API or connection failure into a sentence naming the user, the action and the server. */
export function describeKubeError(kc: k8s.KubeConfig, action: string, e: unknown): Error {
  const server = kc.getCurrentCluster()?.server ?? "the Kubernetes API";
  const user = kc.getCurrentUser()?.name ?? "the current user";
  if (e instanceof k8s.ApiException) {
    const body = typeof e.body === "string" ? safeJson(e.body) : e.body;
    const reason = (body as { message?: string } | undefined)?.message ?? String(e.message).split("\n")[0];
    if (e.code === 401)
      return new Error(
        `${action}: the API server ${server} did not accept the credentials of ${user} (401 Unauthorized)`,
      );
    if (e.code === 403)
      return new Error(
        `${action}: ${user} is not allowed to (403 Forbidden: ${reason}); grant it the envoy-gateways route-sync role (see README, RBAC)`,
      );
    if (e.code === 409)
      return new Error(
        `${action}: someone else changed it since it was read (409 Conflict: ${reason}); nothing was overwritten, run again`,
      );
    return new Error(`${action}: the API server answered ${e.code}: ${reason}`);
  }
  const err = e as { name?: string; code?: string; cause?: { code?: string; message?: string }; message?: string };
  if (err?.name === "TimeoutError")
    return new Error(
      `${action}: the Kubernetes API at ${server} did not answer within ${API_TIMEOUT_MS / 1000}s; the request was cancelled`,
    );
  const code = err?.cause?.code ?? err?.code;
  if (code) return new Error(`${action}: cannot reach the Kubernetes API at ${server} (${code})`);
  return new Error(`${action}: ${err?.message ?? String(e)}`);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
}

/** How long one API request may take before it counts as failed (an API server that accepts connections but never answers). */
export const API_TIMEOUT_MS = 20_000;

/**
 * Request options that cancel a request still unanswered after
 * API_TIMEOUT_MS (an API server that accepts connections but never answers):
 * the request is aborted, and the call fails with a TimeoutError.
 */
export function withTimeout(options?: ApiOptions): ApiOptions {
  const timeout: ApiMiddleware = {
    pre: (request) => {
      request.setSignal(AbortSignal.timeout(API_TIMEOUT_MS));
      return new k8s.Observable(Promise.resolve(request));
    },
    post: (response) => new k8s.Observable(Promise.resolve(response)),
  };
  return { ...options, middleware: [...(options?.middleware ?? []), timeout], middlewareMergeStrategy: "append" };
}

/** The options every API call takes (the generated client's ConfigurationOptions), and one of their middlewares. */
type ApiOptions = NonNullable<Parameters<k8s.CoreV1Api["listNamespace"]>[1]>;
type ApiMiddleware = NonNullable<ApiOptions["middleware"]>[number];

/**
 * The routed namespaces (by the stack's label selector) and every Service
 * carrying the routing labels, cluster-wide: two requests, whatever the
 * number of namespaces.
 */
export async function listRoutedObjects(
  kc: k8s.KubeConfig,
  namespaceSelector: string,
  serviceSelector: string,
): Promise<{ namespaces: NamespaceObject[]; services: ServiceObject[] }> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let namespaces: k8s.V1NamespaceList;
  let services: k8s.V1ServiceList;
  try {
    namespaces = await core.listNamespace({ labelSelector: namespaceSelector }, withTimeout());
  } catch (e) {
    throw describeKubeError(kc, `listing namespaces labelled ${namespaceSelector}`, e);
  }
  try {
    services = await core.listServiceForAllNamespaces({ labelSelector: serviceSelector }, withTimeout());
  } catch (e) {
    throw describeKubeError(kc, `listing Services labelled ${serviceSelector}`, e);
  }
  return { namespaces: namespaces.items as NamespaceObject[], services: services.items as ServiceObject[] };
}

export interface ConfigMapState {
  data: Record<string, string>;
  resourceVersion: string;
  annotations: Record<string, string>;
}

/** A ConfigMap's data and resourceVersion, or undefined when it does not exist. */
export async function readConfigMap(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
): Promise<ConfigMapState | undefined> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    const cm = await core.readNamespacedConfigMap({ name, namespace }, withTimeout());
    return {
      data: cm.data ?? {},
      resourceVersion: cm.metadata?.resourceVersion ?? "",
      annotations: cm.metadata?.annotations ?? {},
    };
  } catch (e) {
    if (e instanceof k8s.ApiException && e.code === 404) return undefined;
    throw describeKubeError(kc, `reading ConfigMap ${namespace}/${name}`, e);
  }
}

/** The field manager that owns the xDS ConfigMaps' data. */
export const ROUTES_FIELD_MANAGER = "envoy-gateways-routes";

/**
 * Writes a ConfigMap's data in one server-side-apply request under our own
 * field manager, taking ownership of `data` from whoever created it, but only
 * if the object is still at `resourceVersion` (a concurrent writer makes the
 * API server refuse with 409, and nothing is overwritten).
 */
export async function applyConfigMapData(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
  data: Record<string, string>,
  resourceVersion: string,
  annotations: Record<string, string>,
): Promise<string> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const body = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace, resourceVersion, annotations },
    data,
  };
  try {
    const written = await core.patchNamespacedConfigMap(
      { name, namespace, body, fieldManager: ROUTES_FIELD_MANAGER, force: true },
      withTimeout(k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply)),
    );
    return written.metadata?.resourceVersion ?? "";
  } catch (e) {
    throw describeKubeError(kc, `writing ConfigMap ${namespace}/${name}`, e);
  }
}

/**
 * Sets `annotations` on every pod matching `labelSelector` in `namespace`
 * (one list, one merge patch per pod whose annotations differ). A pod update
 * makes its kubelet sync the pod at once, which projects changed ConfigMap
 * volumes then instead of at its next periodic sync (up to a minute or more).
 * Returns how many pods were patched.
 */
export async function annotatePods(
  kc: k8s.KubeConfig,
  namespace: string,
  labelSelector: string,
  annotations: Record<string, string>,
): Promise<number> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let pods: k8s.V1PodList;
  try {
    pods = await core.listNamespacedPod({ namespace, labelSelector }, withTimeout());
  } catch (e) {
    throw describeKubeError(kc, `listing pods labelled ${labelSelector} in ${namespace}`, e);
  }
  const patch = async (name: string): Promise<number> => {
    try {
      await core.patchNamespacedPod(
        { name, namespace, body: { metadata: { annotations } } },
        withTimeout(k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch)),
      );
      return 1;
    } catch (e) {
      // A pod deleted meanwhile needs nothing; anything else is a failure.
      if (e instanceof k8s.ApiException && e.code === 404) return 0;
      throw describeKubeError(kc, `annotating pod ${namespace}/${name}`, e);
    }
  };
  const names = pods.items.flatMap((pod) => {
    const name = pod.metadata?.name;
    if (!name || pod.metadata?.deletionTimestamp) return [];
    return Object.entries(annotations).every(([k, v]) => pod.metadata?.annotations?.[k] === v) ? [] : [name];
  });
  // Every pod at once: each kubelet projects the ConfigMap as soon as its own pod is told.
  const patched = await Promise.all(names.map(patch));
  return patched.reduce((sum, n) => sum + n, 0);
}

/** An equality label selector for a set of labels ("a=b,c=d"). */
export function labelSelector(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
}
