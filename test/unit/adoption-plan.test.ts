// Where a live Service stands in its hand-over to headless, and the plan printed
// before anything changes (adoption/handover.ts, adoption/plan.ts).
import type { V1Service } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { HANDOVER_ANNOTATION, handoverNames, MAX_NAME_LENGTH, stageOf } from "../../adoption/handover.js";
import { describePlan, planHeadless } from "../../adoption/plan.js";

const TARGET = "www-handover.prod.svc.cluster.local";
const selector = { "app.kubernetes.io/name": "www" };

function service(spec: V1Service["spec"], annotations?: Record<string, string>): V1Service {
  return { metadata: { name: "www", namespace: "prod", ...(annotations ? { annotations } : {}) }, spec };
}

describe("stageOf", () => {
  it("a ClusterIP Service with an address is to be handed over, keeping that address", () => {
    expect(stageOf(service({ type: "ClusterIP", clusterIP: "10.0.0.7", selector }), TARGET)).toEqual({
      stage: "cluster-ip",
      clusterIP: "10.0.0.7",
    });
    // type defaults to ClusterIP
    expect(stageOf(service({ clusterIP: "10.0.0.7", selector }), TARGET).stage).toBe("cluster-ip");
  });

  it("a headless Service is done, or finishing a hand-over when it still carries the old address", () => {
    expect(stageOf(service({ type: "ClusterIP", clusterIP: "None", selector }), TARGET)).toEqual({
      stage: "headless",
      clusterIP: "",
      handingOver: false,
    });
    expect(stageOf(service({ clusterIP: "None", selector }, { [HANDOVER_ANNOTATION]: "10.0.0.7" }), TARGET)).toEqual({
      stage: "headless",
      clusterIP: "10.0.0.7",
      handingOver: true,
    });
  });

  it("an ExternalName Service is mid-hand-over only when it points at its stand-in and carries the old address", () => {
    const ours = service(
      { type: "ExternalName", externalName: TARGET, selector },
      { [HANDOVER_ANNOTATION]: "10.0.0.7" },
    );
    expect(stageOf(ours, TARGET)).toEqual({ stage: "external-name", clusterIP: "10.0.0.7" });
    const elsewhere = service(
      { type: "ExternalName", externalName: "db.example.org", selector },
      { [HANDOVER_ANNOTATION]: "10.0.0.7" },
    );
    expect(stageOf(elsewhere, TARGET)).toEqual({
      stage: "unsupported",
      reason: "it is an ExternalName Service pointing at db.example.org",
    });
    const unannotated = service({ type: "ExternalName", externalName: TARGET, selector });
    expect(stageOf(unannotated, TARGET).stage).toBe("unsupported");
  });

  it("refuses Services without a selector, and entry points (NodePort, LoadBalancer)", () => {
    expect(stageOf(service({ clusterIP: "10.0.0.7" }), TARGET)).toEqual({
      stage: "unsupported",
      reason: "it has no selector (its endpoints are kept by hand, so a headless Service would have none)",
    });
    expect(stageOf(service({ clusterIP: "10.0.0.7", selector: {} }), TARGET).stage).toBe("unsupported");
    expect(stageOf(service({ type: "NodePort", clusterIP: "10.0.0.7", selector }), TARGET)).toEqual({
      stage: "unsupported",
      reason: "it is a NodePort Service (only ClusterIP Services are turned headless; entry points stay as they are)",
    });
  });

  it("names the stand-ins after the Service, within a DNS label", () => {
    expect(handoverNames("www")).toEqual({ headless: "www-handover", clusterIp: "www-handover-ip" });
    expect(handoverNames("x".repeat(MAX_NAME_LENGTH)).clusterIp).toHaveLength(63);
  });
});

describe("planHeadless and describePlan", () => {
  const live = [
    { name: "www", service: service({ clusterIP: "10.0.0.7", selector }) },
    { name: "notebook", service: service({ clusterIP: "None", selector }) },
    { name: "auth", service: undefined },
    {
      name: "batch",
      service: {
        metadata: { name: "batch", annotations: { [HANDOVER_ANNOTATION]: "10.0.0.9" } },
        spec: { type: "ExternalName", externalName: "batch-handover.prod.svc.cluster.local", selector },
      },
    },
    { name: "legacy", service: service({ clusterIP: "10.0.0.8" }) },
  ];

  it("decides each Service from its live object", () => {
    expect(planHeadless("prod", "cluster.local", live)).toEqual([
      { service: "www", action: "hand-over", clusterIP: "10.0.0.7" },
      { service: "notebook", action: "none", why: "headless" },
      { service: "auth", action: "none", why: "absent" },
      { service: "batch", action: "resume", clusterIP: "10.0.0.9", stage: "external-name" },
      {
        service: "legacy",
        action: "refuse",
        why: "it has no selector (its endpoints are kept by hand, so a headless Service would have none)",
      },
    ]);
  });

  it("says it in words, one line per Service", () => {
    expect(describePlan("prod", planHeadless("prod", "cluster.local", live))).toEqual([
      "Service prod/www: ClusterIP 10.0.0.7 -> headless, in place (never deleted): ExternalName to a headless stand-in while 10.0.0.7 stays served, then headless",
      "Service prod/notebook: already headless, nothing to do",
      "Service prod/auth: not on the cluster, nothing to do (pulumi up creates it headless)",
      "Service prod/batch: resumes its hand-over (now ExternalName; it had 10.0.0.9)",
      "Service prod/legacy: cannot be turned headless: it has no selector (its endpoints are kept by hand, so a headless Service would have none)",
    ]);
  });
});
