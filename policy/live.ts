// What a policy reads from the cluster itself: a Service as it runs now, through the
// same kubeconfig the stack's Kubernetes provider uses (its `kubeconfig` input, or the
// ambient one when it has none, as the provider does).
import * as k8s from "@kubernetes/client-node";
import { HANDOVER_ANNOTATION } from "../adoption/handover.js";
import { describeKubeError, loadKubeConfig, withTimeout } from "../kube/client.js";

/** A Service as the cluster runs it. */
export interface LiveService {
  type: string;
  clusterIP?: string;
  /** In the middle of a hand-over to headless (dist/adopt). */
  handingOver: boolean;
}

/** Reads a Service from the cluster the provider points at: undefined when there is none; throws a sentence on failure. */
export type ServiceLookup = (
  provider: Record<string, unknown> | undefined,
  namespace: string,
  name: string,
) => Promise<LiveService | undefined>;

export const liveService: ServiceLookup = async (provider, namespace, name) => {
  const text = typeof provider?.kubeconfig === "string" ? provider.kubeconfig : undefined;
  const kc = loadKubeConfig(text);
  try {
    const s = await kc.makeApiClient(k8s.CoreV1Api).readNamespacedService({ name, namespace }, withTimeout());
    return {
      type: s.spec?.type ?? "ClusterIP",
      clusterIP: s.spec?.clusterIP,
      handingOver: s.metadata?.annotations?.[HANDOVER_ANNOTATION] !== undefined,
    };
  } catch (e) {
    if (e instanceof k8s.ApiException && e.code === 404) return undefined;
    throw describeKubeError(kc, `reading Service ${namespace}/${name}`, e);
  }
};
