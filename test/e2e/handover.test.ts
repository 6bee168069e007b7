// Turning a ClusterIP Service headless in place (adoption/handover.ts) when the run is
// killed: `dist/adopt headless` is SIGKILLed as it starts each step in turn, and every
// new run resumes where the last one stopped, under the old world's load (NGINX behind
// the gateway's node port resolving `www` per request; an in-cluster client with pooled
// connections to `www`'s cluster IP). No request fails, the Service is never deleted
// (same uid), and nothing of the hand-over is left behind. Before it, the policy pack
// blocks the plain `pulumi up` that would replace the live ClusterIP Service. After it,
// the adopting `pulumi up` and the cutover's are SIGKILLed mid-update and run again.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { HANDOVER_ANNOTATION, HANDOVER_LABEL } from "../../adoption/handover.js";
import { describeFailures, GatewayClient, startLoad } from "../support/gateway-client.js";
import { repoRoot } from "../support/components.js";
import { parsedLocalStackConfig } from "../support/local-stack.js";
import { deployOldWorld, type OldWorld } from "../support/old-world.js";
import { ProgramStack } from "../support/program.js";
import { killWithDescendants } from "../harness/processes.js";
import { until, Workloads } from "../support/workloads.js";

const cluster = inject("cluster");
const NAMESPACE = `handover-${process.pid}`;
const SERVICE = "www";
/** The steps of a hand-over, as dist/adopt announces them; each run is killed as it starts the next. */
const STEPS = [
  `${SERVICE}: a headless stand-in`,
  `${SERVICE}: ${SERVICE} -> ExternalName`,
  `${SERVICE}: DNS grace: clients drop the cluster IP`,
  `${SERVICE}: ${SERVICE} -> headless`,
  `${SERVICE}: DNS grace: clients drop the CNAME`,
];

let stack: ProgramStack;
let world: OldWorld;
let w: Workloads;
let client: GatewayClient;

function inNamespace(raw: Record<string, unknown>): Record<string, unknown> {
  const services = (raw.services as { name: string }[]).filter((s) => s.name === SERVICE);
  return { ...raw, namespace: NAMESPACE, services };
}

beforeAll(async () => {
  w = new Workloads(cluster);
  world = await deployOldWorld(cluster, {
    config: parsedLocalStackConfig("dev", inNamespace),
    services: [SERVICE],
    gateway: "gateway",
  });
  stack = await ProgramStack.create(cluster, { from: "dev", edit: inNamespace });
  client = await GatewayClient.viaNodePort(cluster, world.gatewayService, NAMESPACE);
}, 300_000);

afterAll(async () => {
  await client?.stop();
  // Destroyed, not only forgotten: its update declared cluster-wide objects (the route-sync
  // ClusterRole and binding) that the next stack on this cluster would find in its way.
  await stack?.dispose();
  await w?.deleteNamespace(NAMESPACE);
});

/**
 * Runs `dist/adopt headless` and SIGKILLs it, with what it started (a pulumi engine run and
 * its plugins), as soon as it prints a line containing `step`; its output.
 */
function adoptKilledAt(step: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = stack.spawnScript("adopt", ["headless", "--dns-grace", "6s"]);
    child.stdin.end();
    let out = "";
    const timer = setTimeout(() => killWithDescendants(child.pid!), 120_000);
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes(step)) killWithDescendants(child.pid!);
    });
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

/** The Envoy gateway's Deployment applied on the cluster (its pods awaited) but not yet recorded in the state. */
const CREATED_NOT_RECORDED =
  /Deployment\s+gateway\s+creating \(\d+s\) (Waiting for app ReplicaSet|warning: \[MinimumReplicasUnavailable\])/;

/** Runs `pulumi up` and SIGKILLs it (and its plugins) as soon as its output matches `at`; its output. */
function upKilledAt(at: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = stack.ws.spawn(["up", "--yes", "--skip-preview"]);
    child.stdin.end();
    let out = "";
    const timer = setTimeout(() => killWithDescendants(child.pid!), 300_000);
    const take = (d: Buffer) => {
      out += d.toString();
      if (at.test(out)) killWithDescendants(child.pid!);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", reject);
    child.on("close", () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

describe("the trap: a plain pulumi up over a live ClusterIP Service", () => {
  it("is blocked by the policy pack before anything changes, saying what to run instead", async () => {
    const before = await w.core.readNamespacedService({ name: SERVICE, namespace: NAMESPACE });
    const pack = stack.ws.policyPackLauncher(join(repoRoot, "policy"));
    const up = await stack.ws.run(["up", "--yes", "--policy-pack", pack], 300_000);
    expect(up.code).not.toBe(0);
    expect(up.stdout).toMatch(/\[mandatory\] +headless-in-place/);
    expect(up.stdout.replace(/\s+/g, " ")).toContain(
      `Service ${NAMESPACE}/${SERVICE} runs on the cluster as a ClusterIP Service with cluster IP ${world.clusterIps[SERVICE]}; ` +
        "this update declares it headless, which Kubernetes allows only by deleting it and creating it again, and its name would resolve to nothing in between. " +
        "Turn it headless in place first: dist/adopt --stack <this stack> headless (docs/adopting.md), then run this update again.",
    );
    const after = await w.core.readNamespacedService({ name: SERVICE, namespace: NAMESPACE });
    expect({ uid: after.metadata?.uid, clusterIP: after.spec?.clusterIP }).toEqual({
      uid: before.metadata?.uid,
      clusterIP: before.spec?.clusterIP,
    });
    const created = await w.apps.listNamespacedDeployment({ namespace: NAMESPACE });
    expect(created.items.map((d) => d.metadata?.name).sort()).toEqual(["gateway-nginx", SERVICE]);
  });
});

describe("a hand-over to headless, killed and resumed", () => {
  it("resumes after a SIGKILL at every step, and no request fails", async () => {
    const uid = (await w.core.readNamespacedService({ name: SERVICE, namespace: NAMESPACE })).metadata?.uid;
    const url = `https://${SERVICE}.${NAMESPACE}.svc.${stack.config.clusterDomain}/`;
    await w.createClient(NAMESPACE, { name: "www-client", url, rate: 30, count: 10_000, keepAlive: true });
    await until(
      "the in-cluster client to start",
      60_000,
      async () => (await w.clientTally(NAMESPACE, "www-client")).ok > 0,
    );
    const load = startLoad(() => client.request(`${SERVICE}.${stack.config.domain}`, "/", { timeoutMs: 5000 }), {
      rate: 40,
      maxMs: 240_000,
      maxRequests: 9600,
    });
    const runs: string[] = [];
    try {
      for (const step of STEPS) runs.push(await adoptKilledAt(step));
      const last = await stack.runScript("adopt", ["headless", "--dns-grace", "6s"]);
      expect(last.code).toBe(0);
      runs.push(last.stdout);
      await new Promise((r) => setTimeout(r, 3000));
    } finally {
      load.stop();
    }
    const result = await load.result;
    const tally = await w.clientTally(NAMESPACE, "www-client");
    console.log(runs.map((r, i) => `run ${i + 1}:\n${r.trim()}`).join("\n"));
    console.log(
      `through NGINX: ${describeFailures(result)}; in-cluster client to www: ${tally.sent} sent, ${tally.failed} failed`,
    );
    // Each run after the first picked up where the last one was killed.
    expect(runs[1]).toMatch(/ClusterIP .* -> headless, in place/);
    expect(runs.slice(3).every((r) => /resumes its hand-over/.test(r))).toBe(true);
    expect(runs.join("\n")).not.toContain("clients still using it fail");
    expect(runs.at(-1)).toContain(`Service ${NAMESPACE}/${SERVICE}: headless (`);
    expect(describeFailures(result)).toBe(`0 of ${result.samples.length} failed`);
    expect({ failed: tally.failed, failures: tally.failures }).toEqual({ failed: 0, failures: [] });

    const s = await w.core.readNamespacedService({ name: SERVICE, namespace: NAMESPACE });
    expect({ type: s.spec?.type, clusterIP: s.spec?.clusterIP, uid: s.metadata?.uid }).toEqual({
      type: "ClusterIP",
      clusterIP: "None",
      uid,
    });
    expect(s.metadata?.annotations?.[HANDOVER_ANNOTATION]).toBeUndefined();
    const left = await w.core.listNamespacedService({ namespace: NAMESPACE, labelSelector: HANDOVER_LABEL });
    expect(left.items.map((i) => i.metadata?.name)).toEqual([]);
  }, 400_000);

  it("does nothing for a Service that is already headless", async () => {
    const run = await stack.runScript("adopt", ["headless", "--dns-grace", "6s"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Service ${NAMESPACE}/${SERVICE}: already headless, nothing to do`);
    expect(run.stdout).not.toContain("DNS grace");
  });
});

describe("the adopting pulumi up and the cutover, killed and resumed", () => {
  it("each resumes after a SIGKILL mid-update (pulumi cancel, refresh, up), and no request fails", async () => {
    // What the platform team writes for step 2 (docs/adopting.md): the old world's Deployment
    // stays its own, the existing objects are adopted, the gateway Service keeps NGINX.
    await stack.ws.ok(["config", "rm", "--path", "services[0].image"]);
    await stack.ws.ok(["config", "set", "--path", "adoptExisting", "true"]);
    await stack.ws.ok(["config", "set", "--path", "gateways.gateway.service.servedBy.app", "gateway-nginx"]);
    const load = startLoad(() => client.request(`${SERVICE}.${stack.config.domain}`, "/", { timeoutMs: 5000 }), {
      rate: 40,
      maxMs: 600_000,
      maxRequests: 24_000,
    });
    const server = async () =>
      String((await client.request(`${SERVICE}.${stack.config.domain}`, "/", { keepAlive: false })).headers.server);
    // A killed update leaves the stack locked and its operations pending: the resume lifts the lock,
    // refreshes the state from the cluster (dropping the creates it never recorded: the next update
    // applies them again over what the killed one left), then runs the update again (docs/adopting.md).
    const resume = async () =>
      (await stack.ws.ok(["cancel", "--yes"])).stdout +
      (await stack.ws.ok(["refresh", "--clear-pending-creates", "--yes", "--skip-preview"], 600_000)).stdout +
      (await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000)).stdout;
    const runs: string[] = [];
    const served: string[] = [];
    try {
      // Killed while the Envoy gateway's Deployment is being created: applied (its pods are awaited),
      // not recorded. The resume applies it again over that object, as another field manager.
      runs.push(await upKilledAt(CREATED_NOT_RECORDED));
      runs.push(await resume());
      served.push(await server());
      // The cutover, killed as the gateway Service's update starts.
      await stack.ws.ok(["config", "rm", "--path", "gateways.gateway.service.servedBy"]);
      runs.push(await upKilledAt(/Service\s+gateway\s+updating/));
      runs.push(await resume());
      served.push(await server());
      await new Promise((r) => setTimeout(r, 3000));
    } finally {
      load.stop();
    }
    const result = await load.result;
    console.log(runs.map((r, i) => `pulumi up ${i + 1}:\n${r.trim()}`).join("\n"));
    console.log(`through the gateway's node port: ${describeFailures(result)}`);
    expect(runs[0]).toMatch(CREATED_NOT_RECORDED);
    expect(runs[2]).toMatch(/Service\s+gateway\s+updating/);
    expect(served.map((s) => s.split("/")[0])).toEqual(["nginx", "envoy"]);
    expect(describeFailures(result)).toBe(`0 of ${result.samples.length} failed`);
    expect(runs[3]).not.toContain("pending operations");
    const preview = await stack.ws.ok(["preview", "--expect-no-changes", "--diff"], 300_000);
    expect(preview.stdout).not.toMatch(/[~+-]\s+kubernetes:/);
    expect(preview.stdout + preview.stderr).not.toContain("pending operations");
  }, 900_000);
});
