// Reading Kubernetes objects out of the resources the policy engine passes:
// kind, namespace and name; pod templates of workloads; label selectors.
// During preview the engine wraps properties so that reading a value not
// known yet throws UnknownValueError (from @pulumi/policy's proxy module,
// which the SDK does not type); policies catch it per resource, check what
// they can, and report the skipped resources as a note.
import type { PolicyResource } from "@pulumi/policy";

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a module path its package does not export
const policyProxy = require("@pulumi/policy/proxy") as {
  UnknownValueError: new (...args: unknown[]) => Error;
};

export function isUnknownValue(e: unknown): e is Error {
  return e instanceof policyProxy.UnknownValueError;
}

/** A Kubernetes object's identity, as policy messages and exemptions name it. */
export interface ObjectRef {
  kind: string;
  namespace: string;
  name: string;
}

/** "kubernetes:apps/v1:Deployment" -> "Deployment"; undefined for non-Kubernetes types. */
export function kindOf(type: string): string | undefined {
  const m = /^kubernetes:[^:]+:([A-Za-z]+)$/.exec(type);
  return m?.[1];
}

export function refOf(resource: { type: string; props: Record<string, any>; name: string }): ObjectRef {
  const meta = resource.props.metadata ?? {};
  return {
    kind: kindOf(resource.type) ?? resource.type,
    namespace: meta.namespace ?? "default",
    name: meta.name ?? resource.name,
  };
}

export function showRef(r: ObjectRef): string {
  return `${r.kind} ${r.namespace}/${r.name}`;
}

export const WORKLOAD_KINDS = new Set(["Deployment", "StatefulSet", "ReplicaSet"]);
export const AUTOSCALER_TYPES = new Set([
  "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
  "kubernetes:autoscaling/v1:HorizontalPodAutoscaler",
  "kubernetes:autoscaling/v2beta2:HorizontalPodAutoscaler",
]);
const POD_TEMPLATE_KINDS = new Set(["Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job"]);

/** The pod spec of a workload (or a Pod, or a CronJob's job template), if it has one. */
export function podSpecOf(
  resource: PolicyResource | { type: string; props: Record<string, any> },
): Record<string, any> | undefined {
  const kind = kindOf(resource.type);
  const spec = resource.props.spec;
  if (!kind || !spec) return undefined;
  if (kind === "Pod") return spec;
  if (kind === "CronJob") return spec.jobTemplate?.spec?.template?.spec;
  if (POD_TEMPLATE_KINDS.has(kind)) return spec.template?.spec;
  return undefined;
}

/** Every container (init containers too) of a pod spec. */
export function containersOf(pod: Record<string, any>): Record<string, any>[] {
  return [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
}

/** A Service selector (equality map) selects pods carrying all its labels. */
export function selects(
  selector: Record<string, string> | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

/** A workload's replicas as declared (Kubernetes defaults an unset count to 1). */
export function declaredReplicas(props: Record<string, any>): number {
  const r = props.spec?.replicas;
  return typeof r === "number" ? r : 1;
}
