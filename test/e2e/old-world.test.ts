// The starting point of adopting a running cluster: the old world (test/support/old-world.ts)
// serves, on the local node with kube-proxy, as the system this project replaces did.
// NGINX behind the gateway's NodePort Service resolves `<service>.<namespace>.svc` per
// request and reaches the pods through their ClusterIP Services; an in-cluster client
// calls `batch` directly. About 100 requests/s in all, none may fail: this is the
// baseline every migration phase is held to.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parseStackConfig } from "../../routing/config/load.js";
import type { StackConfig } from "../../routing/config/schema.js";
import { describeFailures, GatewayClient, runLoad } from "../support/gateway-client.js";
import { localStackConfig } from "../support/local-stack.js";
import { deployOldWorld, type OldWorld } from "../support/old-world.js";
import { until, Workloads } from "../support/workloads.js";

const cluster = inject("cluster");
const NAMESPACE = `old-world-${process.pid}`;
const HOSTS = ["www", "notebook"];

let config: StackConfig;
let world: OldWorld;
let w: Workloads;
let client: GatewayClient;

beforeAll(async () => {
  config = parseStackConfig({ ...localStackConfig("dev"), namespace: NAMESPACE }, "the old world's stack config");
  w = new Workloads(cluster);
  world = await deployOldWorld(cluster, { config, services: [...HOSTS, "batch"], gateway: "gateway" });
  client = await GatewayClient.viaNodePort(cluster, world.gatewayService, NAMESPACE);
}, 300_000);

afterAll(async () => {
  await client?.stop();
  await w?.deleteNamespace(NAMESPACE);
});

describe("the old world: NGINX gateways and ClusterIP Services", () => {
  it("runs its production services behind plain ClusterIP Services, and its gateway behind a NodePort Service", async () => {
    const services = await w.core.listNamespacedService({ namespace: NAMESPACE });
    const shape = Object.fromEntries(
      services.items.map((s) => [
        s.metadata?.name,
        `${s.spec?.type} ${s.spec?.clusterIP === "None" ? "headless" : "cluster IP"}`,
      ]),
    );
    expect(shape).toEqual({
      www: "ClusterIP cluster IP",
      notebook: "ClusterIP cluster IP",
      batch: "ClusterIP cluster IP",
      gateway: "NodePort cluster IP",
    });
    expect(Object.values(world.clusterIps).every((ip) => /^10\.0\.0\.\d+$/.test(ip))).toBe(true);
  });

  it("serves two production hosts through the gateway's node port and batch to an in-cluster client, none failed", async () => {
    const batchUrl = `https://batch.${NAMESPACE}.svc.${config.clusterDomain}/jobs`;
    await w.createClient(NAMESPACE, { name: "batch-client", url: batchUrl, rate: 40, count: 400, keepAlive: true });
    let i = 0;
    const load = await runLoad(
      () => client.request(`${HOSTS[i++ % HOSTS.length]}.${config.domain}`, "/", { timeoutMs: 5000 }),
      { rate: 60, maxMs: 12_000, maxRequests: 600 },
    );
    const tally = await until("the in-cluster client's 400 requests", 60_000, async () => {
      const t = await w.clientTally(NAMESPACE, "batch-client");
      return t.done ? t : undefined;
    });
    console.log(
      `old world: ${load.samples.length} requests through the gateway's node port (${describeFailures(load)}); ` +
        `in-cluster client to batch: ${tally.sent} sent, ${tally.failed} failed`,
    );
    expect(describeFailures(load)).toBe(`0 of ${load.samples.length} failed`);
    expect(load.samples.length).toBeGreaterThanOrEqual(500);
    expect({ sent: tally.sent, failed: tally.failed, failures: tally.failures }).toEqual({
      sent: 400,
      failed: 0,
      failures: [],
    });
    // NGINX opens a connection per request, so kube-proxy spreads them over every pod.
    const answered = [...load.byPod.keys()].sort();
    const pods = (await Promise.all(HOSTS.map((h) => w.pods(NAMESPACE, h)))).flat().map((p) => p.metadata?.name);
    expect(answered).toEqual(pods.sort());
    const answer = (await client.request(`www.${config.domain}`, "/")).answer();
    expect(answer.service).toBe(`www.${NAMESPACE}.svc.${config.clusterDomain}`);
    expect(answer.serverName).toBe(`www.${NAMESPACE}.svc.${config.clusterDomain}`);
  }, 180_000);
});
