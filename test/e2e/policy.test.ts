// The policy pack through the real engine: the dev and prod stacks pass it,
// a three-replica Deployment behind a ClusterIP Service fails the preview
// with the policy's message, and an advisory violation only warns.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoRoot } from "../support/components.js";
import { ProgramStack } from "../support/program.js";
import { PulumiWorkspace } from "../support/pulumi.js";

const cluster = inject("cluster");
const packDir = join(repoRoot, "policy");
let fixture: PulumiWorkspace;

beforeAll(async () => {
  fixture = new PulumiWorkspace({ programDir: join(repoRoot, "test/fixtures/workloads"), stack: "policy" });
  await fixture.init();
  await fixture.setConfig("kubeconfig", readFileSync(cluster.kubeconfig, "utf8"), true);
  await fixture.setConfig("namespace", "default");
});

afterAll(async () => {
  await fixture?.dispose();
});

describe("the policy pack", () => {
  it.each([
    ["dev", []],
    ["prod", ["--policy-pack-config", join(packDir, "prod.json")]],
  ] as const)("passes `pulumi preview` of the %s stack", async (from, extra) => {
    const stack = await ProgramStack.create(cluster, { from, stack: `policy-${from}` });
    try {
      const pack = stack.ws.policyPackLauncher(packDir);
      const preview = await stack.ws.run(["preview", "--policy-pack", pack, ...extra], 300_000);
      expect(preview.code, preview.stdout + preview.stderr).toBe(0);
      expect(preview.stdout).toContain("Loading policy packs...: done");
      expect(preview.stdout).not.toMatch(/\[(mandatory|advisory)\]/);
    } finally {
      await stack.ws.dispose();
    }
  });

  it("fails the preview of a three-replica Deployment behind a ClusterIP Service, naming both", async () => {
    await fixture.setConfig("case", "clusterip-replicas");
    const preview = await fixture.run(["preview", "--policy-pack", fixture.policyPackLauncher(packDir)], 300_000);
    expect(preview.code).not.toBe(0);
    expect(preview.stdout).toMatch(/\[mandatory\] +multi-replica-workloads-headless/);
    expect(preview.stdout).toContain(
      "Service default/batch selects the pods of Deployment default/batch (3 replicas) but is not headless",
    );
  });

  it("prints an advisory violation as a warning and lets the preview pass", async () => {
    await fixture.setConfig("case", "unpinned-envoy");
    const preview = await fixture.run(["preview", "--policy-pack", fixture.policyPackLauncher(packDir)], 300_000);
    expect(preview.code, preview.stdout + preview.stderr).toBe(0);
    expect(preview.stdout).toMatch(/\[advisory\] +envoy-image-pinned/);
    expect(preview.stdout).toContain("Deployment default/edge container envoy runs envoyproxy/envoy:latest");
  });

  it("makes the same violation mandatory with the production config", async () => {
    const preview = await fixture.run(
      [
        "preview",
        "--policy-pack",
        fixture.policyPackLauncher(packDir),
        "--policy-pack-config",
        join(packDir, "prod.json"),
      ],
      300_000,
    );
    expect(preview.code).not.toBe(0);
    expect(preview.stdout).toMatch(/\[mandatory\] +envoy-image-pinned/);
  });
});
