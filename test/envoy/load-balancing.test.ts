// Load balancing on the real Envoy across the pods of a headless Service:
// DNS (dnsmasq) returns every pod address, Envoy spreads requests evenly,
// keeps pooled upstream TLS connections (few handshakes, not one per
// request), and follows pods coming and going in DNS.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayHarness } from "../harness/gateway.js";
import { keepAliveAgent } from "../harness/client.js";
import { waitFor } from "../harness/processes.js";
import type { Pod } from "../harness/pods.js";
import { e2eHarnessOptions } from "../harness/stack.js";

const WORKERS = 2;
const CLIENT_CONNECTIONS = 4;
let h: GatewayHarness;

beforeAll(async () => {
  h = await GatewayHarness.start({ ...e2eHarnessOptions(), concurrency: WORKERS });
});

afterAll(async () => {
  await h?.stop();
});

/** `total` requests to www.hail.is over CLIENT_CONNECTIONS keep-alive connections; throws on any non-200. */
async function load(total: number): Promise<void> {
  const agent = keepAliveAgent(h.https, CLIENT_CONNECTIONS);
  let next = 0;
  const failures: string[] = [];
  const worker = async () => {
    while (next < total && failures.length < 10) {
      next++;
      const res = await h.get("www.hail.is", "/lb", { agent }).catch((e: Error) => ({ status: 0, body: e.message }));
      if (res.status !== 200) failures.push(`${res.status} ${res.body.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: CLIENT_CONNECTIONS }, worker));
  agent.destroy();
  expect(failures, h.diagnostics()).toEqual([]);
}

const sum = (pods: Pod[], f: (p: Pod) => number) => pods.reduce((n, p) => n + f(p), 0);

describe("load balancing across the pods of a headless Service", () => {
  it("resolves www to all three pod addresses", async () => {
    const pods = h.productionPods("www");
    expect(pods).toHaveLength(3);
    const host = "www.default.svc.cluster.local";
    expect(await h.dns.query(host)).toEqual(pods.map((p) => p.address).sort());
    await waitFor(
      "Envoy to have the three pods",
      10_000,
      async () => (await h.envoy.clusterHosts("default_www")).length === 3,
    );
    expect(await h.envoy.clusterHosts("default_www")).toEqual(pods.map((p) => p.address).sort());
  });

  it("spreads 3,000 requests within 15% of a third each, over pooled TLS connections", async () => {
    const pods = h.productionPods("www");
    for (const p of pods) p.resetCounters();
    await load(3000);
    const counts = pods.map((p) => p.requests);
    expect(sum(pods, (p) => p.requests)).toBe(3000);
    for (const c of counts) {
      expect(c, `requests per pod: ${counts.join(", ")}`).toBeGreaterThanOrEqual(1000 * 0.85);
      expect(c, `requests per pod: ${counts.join(", ")}`).toBeLessThanOrEqual(1000 * 1.15);
    }
    // At most one connection per pod, Envoy worker and concurrent client request: not one per request.
    const handshakes = sum(pods, (p) => p.handshakes);
    expect(handshakes, `handshakes per pod: ${pods.map((p) => p.handshakes).join(", ")}`).toBeLessThanOrEqual(
      pods.length * WORKERS * CLIENT_CONNECTIONS,
    );
    expect(handshakes).toBeGreaterThanOrEqual(pods.length);
    expect(sum(pods, (p) => p.failedHandshakes)).toBe(0);
  });

  it("sends traffic to a pod added to DNS within the DNS refresh", async () => {
    const refreshSeconds = Number(/^(\d+)s$/.exec(h.config.upstream.dnsRefreshRate)?.[1] ?? 5);
    const added = await h.addPod("default", "www");
    expect(await h.dns.query("www.default.svc.cluster.local")).toContain(added.address);
    await waitFor(
      `Envoy to send requests to the new pod ${added.address}`,
      (refreshSeconds + 5) * 1000,
      async () => {
        await load(20);
        return added.requests > 0;
      },
      0,
    );
    const pods = h.productionPods("www");
    for (const p of pods) p.resetCounters();
    await load(800);
    for (const p of pods)
      expect(p.requests, `${p.id}: ${pods.map((q) => q.requests).join(", ")}`).toBeGreaterThan(800 / 4 / 2);
  });

  it("stops sending traffic to a pod removed from DNS within the DNS refresh", async () => {
    const refreshSeconds = Number(/^(\d+)s$/.exec(h.config.upstream.dnsRefreshRate)?.[1] ?? 5);
    const removed = h.productionPods("www")[0]!;
    await h.unpublishPod(removed); // still listening: any request Envoy sends it would show
    expect(await h.dns.query("www.default.svc.cluster.local")).not.toContain(removed.address);
    await waitFor(
      `Envoy to drop ${removed.address}`,
      (refreshSeconds + 5) * 1000,
      async () => !(await h.envoy.clusterHosts("default_www")).includes(removed.address),
    );
    removed.resetCounters();
    const remaining = h.productionPods("www");
    for (const p of remaining) p.resetCounters();
    await load(600);
    expect(removed.requests).toBe(0);
    expect(sum(remaining, (p) => p.requests)).toBe(600);
    await removed.stop();
  });
});
