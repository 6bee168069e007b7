// The program through the real engine on the local cluster: `pulumi up` of
// the dev stack declares everything and waits for its pods to be ready on the
// local node, a preview right after changes nothing,
// a replica change previews as exactly that, and `pulumi destroy` removes it all.
import { ApiException, AppsV1Api, KubeConfig } from "@kubernetes/client-node";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ProgramStack } from "../support/program.js";

const cluster = inject("cluster");
let stack: ProgramStack;

beforeAll(async () => {
  stack = await ProgramStack.create(cluster, { from: "dev" });
});

afterAll(async () => {
  await stack?.ws.dispose();
});

const apps = () => {
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  return kc.makeApiClient(AppsV1Api);
};

async function exists(read: Promise<unknown>): Promise<boolean> {
  try {
    await read;
    return true;
  } catch (e) {
    if (e instanceof ApiException && e.code === 404) return false;
    throw e;
  }
}

describe("the dev stack on the local cluster", () => {
  it("pulumi up creates both gateways, the headless Services and the xDS ConfigMaps", async () => {
    const up = await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    expect(up.stdout).toMatch(/Resources:\s+\+ \d+ created/);
    const core = stack.core();
    for (const gateway of ["gateway", "internal-gateway"]) {
      const d = await apps().readNamespacedDeployment({ name: gateway, namespace: "default" });
      expect(d.spec?.template.spec?.containers[0]?.image).toBe("envoyproxy/envoy:v1.40.0");
      expect(d.spec?.template.spec?.containers[0]?.securityContext?.readOnlyRootFilesystem).toBe(true);
      const xds = await core.readNamespacedConfigMap({ name: `${gateway}-xds`, namespace: "default" });
      expect(Object.keys(xds.data ?? {}).sort()).toEqual(["cds.yaml", "rds.yaml"]);
      // The routes resource owns the data now (its own field manager, its digest annotation).
      expect(xds.metadata?.managedFields?.map((f) => f.manager)).toContain("envoy-gateways-routes");
      expect(xds.metadata?.annotations?.["envoy-gateways.io/routes-digest"]).toMatch(/^[0-9a-f]{64}$/);
      const bootstrap = d.spec?.template.spec?.volumes?.find((v) => v.name === "bootstrap")?.configMap?.name ?? "";
      expect(bootstrap).toMatch(new RegExp(`^${gateway}-bootstrap-[0-9a-f]{10}$`));
      expect(
        Object.keys((await core.readNamespacedConfigMap({ name: bootstrap, namespace: "default" })).data ?? {}),
      ).toContain("envoy.yaml");
    }
    for (const service of ["www", "auth", "batch", "batch-driver", "notebook"]) {
      const s = await core.readNamespacedService({ name: service, namespace: "default" });
      expect(s.spec?.clusterIP).toBe("None");
      expect(s.spec?.ports?.map((p) => [p.port, p.targetPort])).toEqual([[443, 443]]);
      expect(s.metadata?.labels?.["envoy-gateways.io/service"]).toBe(service);
    }
    // `pulumi up` returned once every Deployment was ready: the pods run on the local node.
    for (const name of ["gateway", "internal-gateway", "www", "auth", "batch", "batch-driver", "notebook"]) {
      const d = await apps().readNamespacedDeployment({ name, namespace: "default" });
      expect(d.status?.readyReplicas, name).toBe(d.spec?.replicas);
    }
    const outputs = await stack.ws.outputs();
    expect((outputs.routes as Record<string, string[]>).gateway).toContain(
      "https://batch.dev.example.org/ -> batch.default.svc.cluster.local:443 (default_batch)",
    );
  });

  it("pulumi preview right after reports no changes", async () => {
    const preview = await stack.ws.run(["preview", "--expect-no-changes"], 300_000);
    expect(preview.stdout + preview.stderr, preview.stdout + preview.stderr).not.toMatch(/error/i);
    expect(preview.code).toBe(0);
    expect(preview.stdout).toMatch(/Resources:\s+\d+ unchanged/);
  });

  it("a service's replica count previews as exactly that change", async () => {
    const file = join(stack.ws.programDir, `Pulumi.${stack.ws.stack}.yaml`);
    const original = readFileSync(file, "utf8");
    // services[2] is batch, with 2 replicas in Pulumi.dev.yaml.
    await stack.ws.ok(["config", "set", "--path", "envoy-gateways:services[2].replicas", "4"]);
    expect(readFileSync(file, "utf8")).not.toBe(original);
    try {
      const preview = await stack.ws.ok(["preview", "--diff"], 300_000);
      // The replica label of the headless Service and PodDisruptionBudget, and the Deployment the
      // local stack declares (the service has an image).
      expect(preview.stdout).toMatch(
        /~ kubernetes:core\/v1:Service: \(update\)[\s\S]*\[urn=[^\]]*HeadlessService\$kubernetes:core\/v1:Service::batch\]/,
      );
      expect(preview.stdout).toMatch(
        /~ kubernetes:apps\/v1:Deployment: \(update\)[\s\S]*\[urn=[^\]]*HeadlessService\$kubernetes:apps\/v1:Deployment::batch\][\s\S]*~ replicas: 2 => 4/,
      );
      expect(preview.stdout).toMatch(/~ envoy-gateways\.io\/replicas: "2" => "4"/);
      expect(preview.stdout).toMatch(
        /~ kubernetes:policy\/v1:PodDisruptionBudget: \(update\)[\s\S]*\[urn=[^\]]*HeadlessService\$kubernetes:policy\/v1:PodDisruptionBudget::batch\]/,
      );
      expect(preview.stdout).toMatch(/Resources:\s+~ 3 to update/);
    } finally {
      writeFileSync(file, original);
    }
  });

  it("pulumi destroy removes everything", async () => {
    await stack.ws.ok(["destroy", "--yes", "--skip-preview"], 600_000);
    const core = stack.core();
    for (const gateway of ["gateway", "internal-gateway"]) {
      expect(await exists(apps().readNamespacedDeployment({ name: gateway, namespace: "default" }))).toBe(false);
      expect(await exists(core.readNamespacedConfigMap({ name: `${gateway}-xds`, namespace: "default" }))).toBe(false);
      expect(await exists(core.readNamespacedService({ name: gateway, namespace: "default" }))).toBe(false);
    }
    expect(await exists(core.readNamespacedService({ name: "batch", namespace: "default" }))).toBe(false);
  });
});
