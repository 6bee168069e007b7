// The "headless" step of adopting a running cluster, for a stack: the plan from the
// live Services, then one hand-over at a time (cli/adopt.ts runs it).
import * as k8s from "@kubernetes/client-node";
import { describeKubeError, loadKubeConfig, withTimeout } from "../kube/client.js";
import type { StackConfig } from "../routing/config/schema.js";
import { handOver } from "./handover.js";
import { describePlan, planHeadless } from "./plan.js";

export interface AdoptHeadlessOptions {
  /** The stack's services to turn headless, by name. */
  services: string[];
  dnsGraceMs: number;
  /** Print the plan and change nothing. */
  dryRun: boolean;
  log: (line: string) => void;
}

/** "refused" when some Service cannot be handed over (then nothing changed). */
export async function adoptHeadless(
  config: StackConfig,
  kubeconfig: string | undefined,
  o: AdoptHeadlessOptions,
): Promise<"done" | "planned" | "refused"> {
  const kc = loadKubeConfig(kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const namespace = config.namespace;
  const live = await Promise.all(
    o.services.map(async (name) => {
      try {
        return { name, service: await core.readNamespacedService({ name, namespace }, withTimeout()) };
      } catch (e) {
        if (e instanceof k8s.ApiException && e.code === 404) return { name, service: undefined };
        throw describeKubeError(kc, `reading Service ${namespace}/${name}`, e);
      }
    }),
  );
  const plan = planHeadless(namespace, config.clusterDomain, live);
  for (const line of describePlan(namespace, plan)) o.log(line);
  if (plan.some((e) => e.action === "refuse")) {
    o.log("nothing was changed: fix or leave out (--service) the Services above that cannot be turned headless");
    return "refused";
  }
  if (o.dryRun) return "planned";
  for (const entry of plan) {
    if (entry.action !== "hand-over" && entry.action !== "resume") continue;
    const report = await handOver(kc, {
      namespace,
      name: entry.service,
      clusterDomain: config.clusterDomain,
      dnsGraceMs: o.dnsGraceMs,
      log: o.log,
    });
    const total = report.steps.reduce((sum, s) => sum + s.ms, 0);
    o.log(`Service ${report.service}: headless (${(total / 1000).toFixed(1)} s)`);
  }
  return "done";
}
