// The on-demand cluster's sub-clusters are bounded by the gateway pod's
// memory (routing/envoy/heap.ts): on the real Envoy, with the pod's two
// workers and a 64Mi memory limit (at most 409 sub-clusters), a request to
// every one of 420 dev/PR Services makes 409 sub-clusters, the other 11 get a
// 503 that says why (Envoy's "Sub cluster overflow", rewritten by the
// connection manager's local reply config), a Service already made keeps being
// served through its sub-cluster, the heap they take stays within what the
// bound assumes (SUB_CLUSTER_HEAP_BYTES each: this fails if an Envoy's
// sub-cluster costs more), and no overload action fires. DNS answers every Service name with an
// address where nothing listens: a request that makes its sub-cluster gets a
// 503 of a failed connection, told apart from the overflow by its body.
import { Agent } from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StackConfig } from "../../routing/config/schema.js";
import { maxOnDemandSubClusters, SUB_CLUSTER_HEAP_BYTES } from "../../routing/envoy/heap.js";
import { subClusterOverflowMessage } from "../../routing/envoy/http.js";
import { renderGateway } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { withGatewayMemory } from "../fixtures/gateway-memory.js";
import { syntheticNamespaces } from "../fixtures/namespaces.js";
import { httpsGet, type Response } from "../harness/client.js";
import { LoadCheck, type LoadedEnvoy } from "../harness/load-check.js";
import { sleep } from "../harness/processes.js";
import { e2eStackConfigWith } from "../harness/stack.js";

const MEMORY_LIMIT = "64Mi";
const SERVICES = 420;
const OVERFLOW_BODY = subClusterOverflowMessage("gateway", MEMORY_LIMIT);

/** The e2e stack with dev/PR routes on demand, the gateway's memory limit MEMORY_LIMIT, its dev routes' auth check off (nothing answers for it here). */
function stack(): StackConfig {
  const base = withGatewayMemory(e2eStackConfigWith("on-demand"), { gateway: MEMORY_LIMIT });
  const gateway = { ...base.gateways.gateway, authenticateDevRoutes: false };
  return { ...base, gateways: { ...base.gateways, gateway } };
}

const config = stack();
const dev = syntheticNamespaces(SERVICES, 10);
const paths = Object.entries(dev).flatMap(([ns, services]) => services.map((s) => `/${ns}/${String(s)}/`));
let check: LoadCheck;
let envoy: LoadedEnvoy;
let port: number;

async function get(path: string, agent: Agent): Promise<Response> {
  return httpsGet({ address: "127.0.0.1", port }, { host: config.gateways.gateway.devHost, path, agent });
}

beforeAll(async () => {
  check = await LoadCheck.create(config.clusterDomain, false, "127.0.0.2");
  const files = renderGateway(config, buildRoutingTable(config, dev), "gateway");
  envoy = await check.start({ ...files.bootstrap, ...files.xds }, undefined, 2);
  port = await envoy.envoy.listenerPort("https");
});

afterAll(async () => {
  await check?.stop();
});

describe("on-demand sub-clusters bounded by the gateway pod's memory, on the real Envoy", () => {
  it("makes as many sub-clusters as the memory allows, refuses the rest with a 503 that says why, and stays within their heap share", async () => {
    const max = maxOnDemandSubClusters(MEMORY_LIMIT);
    expect(max).toBe(409);
    expect(OVERFLOW_BODY).toContain("serves 409 dev/PR Services at once");
    expect(OVERFLOW_BODY).toContain("gateways.gateway.resources.limits.memory: 64Mi");
    const clustersBefore = await envoy.stats("^cluster_manager\\.active_clusters$");
    const heapBefore = await envoy.envoy.heapBytes();
    const agent = new Agent({ keepAlive: true, maxSockets: 16, rejectUnauthorized: false });
    const answers: Response[] = [];
    let next = 0;
    // 16 at a time: sub-clusters are made while others are still warming.
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < paths.length) {
          const i = next++;
          answers[i] = await get(paths[i]!, agent);
        }
      }),
    );
    const overflow = answers.filter((a) => a.body === OVERFLOW_BODY);
    const made = answers.filter((a) => a.body !== OVERFLOW_BODY);
    expect(answers).toHaveLength(SERVICES);
    expect(overflow.map((a) => a.status)).toEqual(Array(SERVICES - max).fill(503));
    // The others reached their sub-cluster: a failed connection to the address DNS gave.
    expect(
      made.every((a) => a.status === 503 && a.body.startsWith("upstream connect error")),
      made[0]?.body,
    ).toBe(true);
    const clustersAfter = await envoy.stats("^cluster_manager\\.active_clusters$");
    expect(
      clustersAfter.get("cluster_manager.active_clusters")! - clustersBefore.get("cluster_manager.active_clusters")!,
    ).toBe(max);

    // A Service with a sub-cluster is still served through it; one without is still refused.
    const served = answers.findIndex((a) => a.body !== OVERFLOW_BODY);
    const again = await get(paths[served]!, agent);
    expect(again.status).toBe(503);
    expect(again.body).toMatch(/^upstream connect error/);
    const refused = answers.findIndex((a) => a.body === OVERFLOW_BODY);
    expect((await get(paths[refused]!, agent)).body).toBe(OVERFLOW_BODY);
    agent.destroy();

    await sleep(2_000);
    const taken = (await envoy.envoy.heapBytes()) - heapBefore;
    expect(taken, `heap taken by ${max} sub-clusters`).toBeLessThanOrEqual(max * SUB_CLUSTER_HEAP_BYTES);
    // No overload action fired: production's requests were never at risk.
    const overload = await envoy.stats("^overload\\..*\\.active$");
    expect(
      [...overload.values()].some((v) => v > 0),
      JSON.stringify([...overload]),
    ).toBe(false);
    expect(overload.size).toBeGreaterThan(0);
  });
});
