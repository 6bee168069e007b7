// Which stats the real Envoy keeps with the generated bootstrap: a dev/PR
// cluster only the ones dashboards use (DEV_CLUSTER_STATS), created on its
// first request; a production cluster every stat, with Envoy's tags; every
// stat outside cluster.* as before. With a cluster per dev/PR Service
// (devNamespaces.clusters: per-service); on-demand.test.ts has the stats of
// on-demand routes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_CLUSTER_STATS } from "../../routing/envoy/stats.js";
import { GatewayHarness } from "../harness/gateway.js";
import { e2eHarnessOptions, e2eStackConfigWith } from "../harness/stack.js";

let h: GatewayHarness;

beforeAll(async () => {
  h = await GatewayHarness.start({ ...e2eHarnessOptions(), config: e2eStackConfigWith("per-service") });
});

afterAll(async () => {
  await h?.stop();
});

/** The stat names (counters, gauges, histograms) under cluster.<cluster>., as /stats lists them. */
async function clusterStats(cluster: string): Promise<string[]> {
  const prefix = `cluster.${cluster}.`;
  return (await h.envoy.admin("/stats"))
    .split("\n")
    .filter((l) => l.startsWith(prefix))
    .map((l) => l.slice(prefix.length, l.indexOf(":")))
    .sort();
}

describe("stats kept", () => {
  it("keeps for an idle dev/PR cluster only what dashboards use, and makes its traffic stats on the first request", async () => {
    const idle = await clusterStats("pr-1234_batch-driver");
    expect(idle.length).toBeGreaterThan(0);
    for (const s of idle) expect(DEV_CLUSTER_STATS, s).toContain(s);
    expect(idle).not.toContain("upstream_rq_total");
    expect(idle).toEqual(expect.arrayContaining(["membership_healthy", "membership_total"]));
  });

  it("counts a dev/PR cluster's requests, responses by class and latency, and nothing else", async () => {
    for (let i = 0; i < 3; i++) expect((await h.get(h.devHost, "/pr-1234/batch/x")).status).toBe(200);
    const dev = await clusterStats("pr-1234_batch");
    for (const s of dev) expect(DEV_CLUSTER_STATS, s).toContain(s);
    expect(dev).toEqual(
      expect.arrayContaining([
        "upstream_rq_total",
        "upstream_rq_2xx",
        "upstream_rq_time",
        "upstream_cx_active",
        "upstream_rq_active",
        "membership_total",
      ]),
    );
    // Dropped: exact codes, connection details, circuit breakers, TLS details, the load balancer's.
    for (const s of [
      "upstream_rq_200",
      "upstream_cx_total",
      "upstream_cx_connect_ms",
      "circuit_breakers.default.rq_open",
      "ssl.handshake",
      "lb_healthy_panic",
    ])
      expect(dev).not.toContain(s);
    expect(await h.envoy.stat("cluster.pr-1234_batch.upstream_rq_total")).toBe(3);
    expect(await h.envoy.stat("cluster.pr-1234_batch.upstream_rq_2xx")).toBe(3);
  });

  it("keeps every stat of production clusters", async () => {
    expect((await h.get("www.hail.is", "/")).status).toBe(200);
    const prod = await clusterStats("default_www");
    expect(prod.length).toBeGreaterThan(100);
    expect(prod).toEqual(
      expect.arrayContaining([
        "upstream_rq_200",
        "upstream_cx_total",
        "upstream_cx_connect_ms",
        "circuit_breakers.default.rq_open",
        "ssl.handshake",
        "outlier_detection.ejections_enforced_total",
        ...["upstream_rq_total", "upstream_rq_2xx", "upstream_rq_time"],
      ]),
    );
    // The bootstrap's static clusters too.
    expect((await clusterStats("ext-authz")).length).toBeGreaterThan(100);
  });

  it("tags dev/PR and production clusters alike in Prometheus, and keeps every stat outside cluster.*", async () => {
    const prom = await h.envoy.admin("/stats/prometheus");
    expect(prom).toMatch(/^envoy_cluster_upstream_rq_total\{envoy_cluster_name="pr-1234_batch"\} 3$/m);
    expect(prom).toMatch(
      /^envoy_cluster_upstream_rq_xx\{envoy_response_code_class="2",envoy_cluster_name="pr-1234_batch"\} 3$/m,
    );
    expect(prom).toMatch(/^envoy_cluster_upstream_rq_total\{envoy_cluster_name="default_www"\} \d+$/m);
    expect(prom).toMatch(
      /^envoy_cluster_upstream_rq\{envoy_response_code="200",envoy_cluster_name="default_www"\} \d+$/m,
    );
    expect(prom).not.toMatch(
      /envoy_cluster_upstream_rq\{envoy_response_code="200",envoy_cluster_name="pr-1234_batch"\}/,
    );
    expect(prom).toMatch(/^envoy_cluster_upstream_rq_time_bucket\{envoy_cluster_name="pr-1234_batch",le="/m);
    for (const name of [
      "envoy_http_downstream_rq_total",
      "envoy_listener_downstream_cx_total",
      "envoy_server_memory_allocated",
      "envoy_cluster_manager_active_clusters",
    ])
      expect(prom, name).toContain(`${name}`);
  });
});
