// Where a workload's pods go (one per node where the nodes allow, and even across zones), and
// how its containers run (non-root, read-only, unprivileged).
import type * as k8s from "@pulumi/kubernetes";

/**
 * Anti-affinity that prefers a node without another of these pods, and an even spread across
 * zones (best effort: a one-node or one-zone cluster still schedules them all).
 */
export function spreadAcrossNodes(
  selector: Record<string, string>,
): Pick<k8s.types.input.core.v1.PodSpec, "affinity" | "topologySpreadConstraints"> {
  return {
    affinity: {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: { topologyKey: "kubernetes.io/hostname", labelSelector: { matchLabels: selector } },
          },
        ],
      },
    },
    topologySpreadConstraints: [
      {
        maxSkew: 1,
        topologyKey: "topology.kubernetes.io/zone",
        whenUnsatisfiable: "ScheduleAnyway",
        labelSelector: { matchLabels: selector },
      },
    ],
  };
}

/**
 * A container's security context as the gateways and the route controller run: user `uid`
 * (not root), a read-only root file system, no privilege or escalation, every capability
 * dropped, the runtime's default seccomp profile.
 */
export function hardenedContainer(uid: number): k8s.types.input.core.v1.SecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: uid,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    privileged: false,
    capabilities: { drop: ["ALL"] },
    seccompProfile: { type: "RuntimeDefault" },
  };
}
