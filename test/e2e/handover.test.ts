// Turning the old world's ClusterIP Services headless in place (adoption/handover.ts),
// under the old world's own load: NGINX behind the gateway's node port resolves each
// Service per request and connects through kube-proxy; an in-cluster client keeps
// pooled connections to `batch`'s cluster IP. No request may fail, the Services are
// never deleted (same uid), and a second run does nothing.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { HANDOVER_ANNOTATION, HANDOVER_LABEL, handOver, type HandoverReport } from "../../adoption/handover.js";
import { loadKubeConfig } from "../../kube/client.js";
import { parseStackConfig } from "../../routing/config/load.js";
import type { StackConfig } from "../../routing/config/schema.js";
import { describeFailures, GatewayClient, startLoad } from "../support/gateway-client.js";
import { localStackConfig } from "../support/local-stack.js";
import { deployOldWorld, type OldWorld } from "../support/old-world.js";
import { until, Workloads } from "../support/workloads.js";
import { readFileSync } from "node:fs";

const cluster = inject("cluster");
const NAMESPACE = `handover-${process.pid}`;
const HOSTS = ["www", "notebook"];
const SERVICES = [...HOSTS, "batch"];
/** CoreDNS's TTL here is 5 s; NGINX keeps an answer 1 s (`valid=1s`). */
const DNS_GRACE_MS = 6000;

let config: StackConfig;
let world: OldWorld;
let w: Workloads;
let client: GatewayClient;

beforeAll(async () => {
  config = parseStackConfig({ ...localStackConfig("dev"), namespace: NAMESPACE }, "the hand-over's stack config");
  w = new Workloads(cluster);
  world = await deployOldWorld(cluster, { config, services: SERVICES, gateway: "gateway" });
  client = await GatewayClient.viaNodePort(cluster, world.gatewayService, NAMESPACE);
}, 300_000);

afterAll(async () => {
  await client?.stop();
  await w?.deleteNamespace(NAMESPACE);
});

const kc = () => loadKubeConfig(readFileSync(cluster.kubeconfig, "utf8"));

describe("ClusterIP Services handed over to headless, in place", () => {
  it("serves every request while the three Services turn headless one after the other", async () => {
    const uids = Object.fromEntries(
      await Promise.all(
        SERVICES.map(async (name) => [
          name,
          (await w.core.readNamespacedService({ name, namespace: NAMESPACE })).metadata?.uid,
        ]),
      ),
    );
    const batchUrl = `https://batch.${NAMESPACE}.svc.${config.clusterDomain}/jobs`;
    await w.createClient(NAMESPACE, { name: "batch-client", url: batchUrl, rate: 40, count: 4000, keepAlive: true });
    await until(
      "the in-cluster client to start",
      60_000,
      async () => (await w.clientTally(NAMESPACE, "batch-client")).ok > 0,
    );
    let i = 0;
    const load = startLoad(
      () => client.request(`${HOSTS[i++ % HOSTS.length]}.${config.domain}`, "/", { timeoutMs: 5000 }),
      { rate: 60, maxMs: 150_000, maxRequests: 9000 },
    );
    const reports: HandoverReport[] = [];
    try {
      for (const name of SERVICES)
        reports.push(
          await handOver(kc(), {
            namespace: NAMESPACE,
            name,
            clusterDomain: config.clusterDomain,
            dnsGraceMs: DNS_GRACE_MS,
          }),
        );
      await new Promise((r) => setTimeout(r, 3000)); // and a little after
    } finally {
      load.stop();
    }
    const result = await load.result;
    const tally = await w.clientTally(NAMESPACE, "batch-client");
    for (const r of reports)
      console.log(`${r.service} (was ${r.clusterIP}): ${r.steps.map((s) => `${s.step} ${s.ms} ms`).join("; ")}`);
    console.log(
      `through NGINX: ${describeFailures(result)}; in-cluster client to batch: ${tally.sent} sent, ${tally.failed} failed`,
    );
    expect(describeFailures(result)).toBe(`0 of ${result.samples.length} failed`);
    expect({ failed: tally.failed, failures: tally.failures }).toEqual({ failed: 0, failures: [] });
    expect(tally.ok).toBeGreaterThan(1000);

    for (const name of SERVICES) {
      const s = await w.core.readNamespacedService({ name, namespace: NAMESPACE });
      expect({ name, type: s.spec?.type, clusterIP: s.spec?.clusterIP, uid: s.metadata?.uid }).toEqual({
        name,
        type: "ClusterIP",
        clusterIP: "None",
        uid: uids[name],
      });
      expect(s.metadata?.annotations?.[HANDOVER_ANNOTATION]).toBeUndefined();
    }
    const left = await w.core.listNamespacedService({ namespace: NAMESPACE, labelSelector: HANDOVER_LABEL });
    expect(left.items.map((s) => s.metadata?.name)).toEqual([]);
  }, 400_000);

  it("does nothing for a Service that is already headless", async () => {
    const report = await handOver(kc(), {
      namespace: NAMESPACE,
      name: "www",
      clusterDomain: config.clusterDomain,
      dnsGraceMs: DNS_GRACE_MS,
    });
    expect(report).toEqual({ service: `${NAMESPACE}/www`, clusterIP: "", steps: [] });
  });
});
