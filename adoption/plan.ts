// What turning a stack's services headless will do, decided from the live Services
// before anything changes: printed first (and alone with --dry-run), so a reviewer
// sees which Service keeps which address until when.
import type * as k8s from "@kubernetes/client-node";
import { handoverNames, stageOf } from "./handover.js";

export type PlanEntry =
  | { service: string; action: "hand-over"; clusterIP: string }
  | { service: string; action: "resume"; clusterIP: string; stage: "external-name" | "headless" }
  | { service: string; action: "none"; why: "headless" | "absent" }
  | { service: string; action: "refuse"; why: string };

/** One entry per service name, from its live Service (undefined when there is none). */
export function planHeadless(
  namespace: string,
  clusterDomain: string,
  live: { name: string; service: k8s.V1Service | undefined }[],
): PlanEntry[] {
  return live.map(({ name, service }): PlanEntry => {
    if (!service) return { service: name, action: "none", why: "absent" };
    const target = `${handoverNames(name).headless}.${namespace}.svc.${clusterDomain}`;
    const stage = stageOf(service, target);
    switch (stage.stage) {
      case "cluster-ip":
        return { service: name, action: "hand-over", clusterIP: stage.clusterIP };
      case "external-name":
        return { service: name, action: "resume", clusterIP: stage.clusterIP, stage: "external-name" };
      case "headless":
        return stage.handingOver
          ? { service: name, action: "resume", clusterIP: stage.clusterIP, stage: "headless" }
          : { service: name, action: "none", why: "headless" };
      case "unsupported":
        return { service: name, action: "refuse", why: stage.reason };
    }
  });
}

/** The plan in words, one line per service. */
export function describePlan(namespace: string, plan: PlanEntry[]): string[] {
  return plan.map((e) => {
    const s = `Service ${namespace}/${e.service}`;
    switch (e.action) {
      case "hand-over":
        return `${s}: ClusterIP ${e.clusterIP} -> headless, in place (never deleted): ExternalName to a headless stand-in while ${e.clusterIP} stays served, then headless`;
      case "resume":
        return `${s}: resumes its hand-over (now ${e.stage === "external-name" ? "ExternalName" : "headless, stand-ins still there"}; it had ${e.clusterIP})`;
      case "none":
        return e.why === "headless"
          ? `${s}: already headless, nothing to do`
          : `${s}: not on the cluster, nothing to do (pulumi up creates it headless)`;
      case "refuse":
        return `${s}: cannot be turned headless: ${e.why}`;
    }
  });
}
