// Live route changes on the real Envoy: the xDS files are swapped in the way
// the kubelet updates a ConfigMap volume while production traffic flows; new
// routes serve within seconds, removed ones go, and no request fails. A
// broken file forced into the directory is rejected and nothing is lost.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayHarness } from "../harness/gateway.js";
import { keepAliveAgent } from "../harness/client.js";
import { sleep, waitFor } from "../harness/processes.js";
import { renderGateway } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { E2E_DEV_NAMESPACES, e2eHarnessOptions } from "../harness/stack.js";

let h: GatewayHarness;

beforeAll(async () => {
  h = await GatewayHarness.start(e2eHarnessOptions());
});

afterAll(async () => {
  await h?.stop();
});

interface Loop {
  /** Requests completed so far. */
  count(): number;
  failures: string[];
  /** Stops the loop and waits for its requests in flight. */
  stop(): Promise<void>;
}

/**
 * A bounded concurrent request loop on production routes: `connections`
 * keep-alive clients, at most `maxRequests` requests or `maxSeconds`, every
 * non-200 recorded.
 */
function productionLoop(connections = 4, maxRequests = 50_000, maxSeconds = 90): Loop {
  const agent = keepAliveAgent(h.https, connections);
  const hosts = ["www.hail.is", "hail.is", "query.hail.is"];
  const failures: string[] = [];
  const deadline = Date.now() + maxSeconds * 1000;
  let done = 0;
  let stopped = false;
  const worker = async (i: number) => {
    while (!stopped && done < maxRequests && Date.now() < deadline) {
      const host = hosts[(done + i) % hosts.length]!;
      const res = await h.get(host, `/loop/${done}`, { agent }).catch((e: Error) => ({ status: 0, body: e.message }));
      done++;
      if (res.status !== 200) failures.push(`${host}: ${res.status} ${res.body.slice(0, 200)}`);
    }
  };
  const running = Promise.all(Array.from({ length: connections }, (_, i) => worker(i)));
  return {
    count: () => done,
    failures,
    async stop() {
      stopped = true;
      await running;
      agent.destroy();
    },
  };
}

const status = async (path: string) => (await h.get("internal.hail.is", path)).status;

describe("live reload of the xDS files", () => {
  it("adds a namespace's routes within seconds and removes them again, with zero failed requests", async () => {
    const cdsBefore = await h.envoy.stat("cluster_manager.cds.update_success");
    const rdsBefore = await h.envoy.stat("http.https.rds.https.update_success");
    expect(await status("/pr-2000/query/")).toBe(404);

    const loop = productionLoop();
    try {
      await sleep(500);
      await h.setDevNamespaces({ ...E2E_DEV_NAMESPACES, "pr-2000": ["batch", "query"] });
      await waitFor("the routes of pr-2000 to serve", 10_000, async () => (await status("/pr-2000/query/")) === 200);
      const res = await h.get("internal.hail.is", "/pr-2000/batch/jobs");
      expect(res.echo().service).toBe("batch.pr-2000.svc.cluster.local");
      const during = loop.count();
      await sleep(1_000);
      expect(loop.count()).toBeGreaterThan(during); // the loop kept going across the swap

      await h.setDevNamespaces(E2E_DEV_NAMESPACES);
      await waitFor("the routes of pr-2000 to go", 10_000, async () => (await status("/pr-2000/query/")) === 404);
      expect(await status("/pr-2000/batch/jobs")).toBe(404);
      await sleep(1_000);
    } finally {
      await loop.stop();
    }
    expect(loop.failures).toEqual([]);
    expect(loop.count()).toBeGreaterThan(100);
    expect(await status("/pr-1234/batch/")).toBe(200);
    expect(await h.envoy.stat("cluster_manager.cds.update_success")).toBeGreaterThanOrEqual(cdsBefore + 2);
    expect(await h.envoy.stat("http.https.rds.https.update_success")).toBeGreaterThanOrEqual(rdsBefore + 2);
  });

  it("rejects a broken xDS file forced into the directory and keeps serving the last good routes", async () => {
    const cdsRejected = await h.envoy.stat("cluster_manager.cds.update_rejected");
    const rdsRejected = await h.envoy.stat("http.https.rds.https.update_rejected");
    // Valid files for one more namespace, then broken by hand (as if edited in the ConfigMap, past the validator).
    const table = buildRoutingTable(h.config, { ...E2E_DEV_NAMESPACES, "pr-3000": ["batch"] });
    const good = renderGateway(h.config, table, h.gateway, h.renderOptions()).xds;
    const cds = good["cds.yaml"]!;
    const rds = good["rds.yaml"]!;
    expect(cds).toContain('"connect_timeout"');
    expect(rds).toContain('"path_separated_prefix"');
    const loop = productionLoop();
    try {
      h.writeXdsFiles({
        "cds.yaml": cds.replaceAll('"connect_timeout"', '"conect_timeout"'),
        "rds.yaml": rds.replaceAll('"path_separated_prefix"', '"path_separated_prefx"'),
      });
      await waitFor(
        "Envoy to reject the broken CDS and RDS files",
        10_000,
        async () =>
          (await h.envoy.stat("cluster_manager.cds.update_rejected")) > cdsRejected &&
          (await h.envoy.stat("http.https.rds.https.update_rejected")) > rdsRejected,
      );
      // Envoy says why, naming the field.
      await waitFor(
        "Envoy to log the rejections",
        5_000,
        () =>
          /update rejected.*'conect_timeout'/.test(h.envoy.log()) &&
          /update rejected.*'path_separated_prefx'/.test(h.envoy.log()),
      );
      // Nothing of the broken update applied, nothing of the last good one lost.
      expect(await status("/pr-3000/batch/")).toBe(404);
      expect(await status("/pr-1234/batch/")).toBe(200);
      expect(await status("/pr-1234/batch-driver/")).toBe(200);
      expect((await h.get("www.hail.is", "/")).status).toBe(200);

      // A truncated file (not even YAML) cannot be read at all: counted as an update failure, routes kept.
      const rdsFailures = await h.envoy.stat("http.https.rds.https.update_failure");
      h.writeXdsFiles({ "cds.yaml": cds, "rds.yaml": rds.slice(0, Math.floor(rds.length / 2)) });
      await waitFor(
        "Envoy to refuse the truncated RDS file",
        10_000,
        async () => (await h.envoy.stat("http.https.rds.https.update_failure")) > rdsFailures,
      );
      await waitFor("Envoy to log the failure", 5_000, () =>
        /update failure: in \S+rds\.yaml, yaml-cpp: error/.test(h.envoy.log()),
      );
      expect(await status("/pr-3000/batch/")).toBe(404);
      expect(await status("/pr-1234/batch/")).toBe(200);
      expect(h.envoy.running).toBe(true);
      await sleep(500);
    } finally {
      await loop.stop();
    }
    expect(loop.failures).toEqual([]);
    // Good files again: the next update applies.
    await h.setDevNamespaces({ ...E2E_DEV_NAMESPACES, "pr-3000": ["batch"] });
    await waitFor(
      "pr-3000 to serve after a good update",
      10_000,
      async () => (await status("/pr-3000/batch/")) === 200,
    );
  });
});
