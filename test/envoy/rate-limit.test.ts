// Per-route local rate limits on the real Envoy. A service's limit is
// requests/s for the whole service: every gateway pod counts the pods of its
// gateway (the bootstrap's local cluster, the headless Service <gateway>-pods,
// here dnsmasq answering with the address of every running Envoy) and refills
// its bucket with its share, so the admitted total stays at the limit as the
// gateway scales out and in. A 429 names the route that limited it, and the
// route's counters (a stat prefix per production service) count it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readStackFile } from "../../routing/config/load.js";
import { GatewayHarness } from "../harness/gateway.js";
import { httpsGet, keepAliveAgent, type Endpoint } from "../harness/client.js";
import { sleep } from "../harness/processes.js";
import { e2eHarnessOptions, e2eStackConfig } from "../harness/stack.js";
import { join } from "node:path";
import { repoRoot } from "../support/components.js";
import type { Agent } from "node:https";

/**
 * The e2e stack with one gateway replica as the autoscaler's minimum (so a
 * bucket holds the whole limit and any number of pods shares it exactly) and
 * dev routes (on demand, as the prod stack routes them, unless `clusters`
 * says otherwise) limited to 20/s (small enough to exceed from one test process).
 */
function scalingConfig(clusters: "on-demand" | "per-service" = "on-demand") {
  const raw = readStackFile(join(repoRoot, "Pulumi.prod.yaml")) as {
    gateways: Record<string, Record<string, unknown>>;
    devNamespaces: Record<string, unknown>;
  };
  const gateways = structuredClone(raw.gateways);
  gateways.gateway!.replicas = 1;
  return e2eStackConfig({ gateways, devNamespaces: { ...raw.devNamespaces, rateLimit: 20, clusters } });
}

const LIMITED_HOST = "batch-driver.hail.is";
let h: GatewayHarness;

beforeAll(async () => {
  h = await GatewayHarness.start({ ...e2eHarnessOptions(), config: scalingConfig(), concurrency: 1 });
});

afterAll(async () => {
  await h?.stop();
});

const limit = () => h.config.services.find((s) => s.name === "batch-driver")!.rateLimit!;

/** Sends `count` requests at once to one gateway pod; returns the responses' statuses and headers. */
async function burst(endpoint: Endpoint, host: string, path: string, count: number) {
  const agent = keepAliveAgent(endpoint, count);
  try {
    // Open the connections first, so the burst itself is only requests.
    await Promise.all(
      Array.from({ length: count }, () =>
        httpsGet(endpoint, { host: "www.hail.is", path: "/warm", agent, localAddress: h.clientAddress }),
      ),
    );
    return await Promise.all(
      Array.from({ length: count }, () => httpsGet(endpoint, { host, path, agent, localAddress: h.clientAddress })),
    );
  } finally {
    agent.destroy();
  }
}

/**
 * Offers `perSecond` requests/s to `host` and `path` from `harness`'s client, spread evenly over `endpoints` (as
 * the gateway Service spreads clients over its pods), for `warmupSeconds` (the
 * buckets empty) and then `seconds`; returns the 200s per second of the
 * requests sent in the measured part. Bounded in count and time.
 */
async function admittedRate(
  harness: GatewayHarness,
  endpoints: Endpoint[],
  { host, path = "/" }: { host: string; path?: string },
  perSecond: number,
  warmupSeconds: number,
  seconds: number,
): Promise<{ rate: number; statuses: Set<number> }> {
  const agents: Agent[] = endpoints.map((e) => keepAliveAgent(e, 32));
  const total = Math.round(perSecond * (warmupSeconds + seconds));
  const start = performance.now();
  const measuredFrom = start + warmupSeconds * 1000;
  const pending: Promise<void>[] = [];
  const statuses = new Set<number>();
  let admitted = 0;
  try {
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / perSecond;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const measured = due >= measuredFrom;
      const k = i % endpoints.length;
      pending.push(
        httpsGet(endpoints[k]!, {
          host,
          path,
          agent: agents[k],
          localAddress: harness.clientAddress,
          timeoutMs: 5_000,
        }).then(
          (r) => {
            statuses.add(r.status);
            if (measured && r.status === 200) admitted++;
          },
          () => {
            statuses.add(0);
          },
        ),
      );
    }
    await Promise.all(pending);
  } finally {
    for (const a of agents) a.destroy();
  }
  return { rate: admitted / seconds, statuses };
}

describe("rate limits shared across the gateway's pods", () => {
  // Whole divisors of the limit (30/s): each pod's share is exact.
  for (const pods of [1, 3, 6, 2]) {
    it(`admits the service's limit in all with ${pods} gateway pod(s), not ${pods} times it`, async () => {
      await h.scaleGateway(pods);
      const offered = 4 * limit();
      const { rate, statuses } = await admittedRate(h, h.gatewayEndpoints, { host: LIMITED_HOST }, offered, 1.5, 6);
      expect([...statuses].sort(), "only 200 and 429 expected").toEqual([200, 429]);
      // Measured over 6 s against 1-s refills at each pod's own phase: within one refill either way.
      expect(
        rate,
        `admitted ${rate.toFixed(1)} requests/s with ${pods} pods for a limit of ${limit()}/s`,
      ).toBeGreaterThanOrEqual(limit() * (5 / 6) - 1);
      expect(rate).toBeLessThanOrEqual(limit() * (7 / 6) + 1);
      for (const envoy of h.gatewayEnvoys) expect(await envoy.stat("cluster.gateway-pods.membership_total")).toBe(pods);
    });
  }
  // Dev/PR routes take their limit from the virtual host, a bucket per route made on its first request.
  for (const pods of [3, 1]) {
    it(`admits a dev/PR route's limit in all with ${pods} gateway pod(s), and another dev/PR route its own`, async () => {
      await h.scaleGateway(pods);
      await expectOwnDevLimits(h, pods);
    });
  }
});

/** Each of two dev/PR routes admits the dev routes' limit, in all over the gateway's pods: its own bucket, not a share of one. */
async function expectOwnDevLimits(harness: GatewayHarness, pods: number): Promise<void> {
  const dev = harness.config.devNamespaces.rateLimit;
  const offered = 4 * dev;
  const [limited, other] = await Promise.all(
    ["/pr-1234/batch/", "/pr-1234/batch-driver/"].map((path) =>
      admittedRate(harness, harness.gatewayEndpoints, { host: harness.devHost, path }, offered, 1.5, 6),
    ),
  );
  for (const { rate, statuses } of [limited!, other!]) {
    expect([...statuses].sort(), "only 200 and 429 expected").toEqual([200, 429]);
    expect(rate, `admitted ${rate.toFixed(1)} requests/s with ${pods} pods for ${dev}/s`).toBeGreaterThanOrEqual(
      dev * (5 / 6) - 1,
    );
    expect(rate).toBeLessThanOrEqual(dev * (7 / 6) + 1);
  }
}

describe("dev/PR routes with a cluster per Service", () => {
  let perService: GatewayHarness;
  beforeAll(async () => {
    perService = await GatewayHarness.start({
      ...e2eHarnessOptions(),
      config: scalingConfig("per-service"),
      concurrency: 1,
    });
  });
  afterAll(async () => {
    await perService?.stop();
  });

  it("take the same limit from their virtual host: each route its own bucket", async () => {
    await perService.scaleGateway(1);
    await expectOwnDevLimits(perService, 1);
  });
});

describe("a 429 says which route limited it", () => {
  it("names the production route in x-ratelimit-route and counts it under the service's stat prefix", async () => {
    await h.scaleGateway(1);
    await sleep(1_200); // a full bucket again
    const before = await h.envoy.stat("default_batch-driver.http_local_rate_limit.rate_limited");
    const responses = await burst(h.https, LIMITED_HOST, "/", 2 * limit());
    const limited = responses.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(responses.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    for (const r of limited) expect(r.headers["x-ratelimit-route"]).toBe("default/batch-driver");
    expect(limited[0]!.headers["x-ratelimit-limit"]).toBe(String(limit()));
    // The 200s carry no such header.
    expect(responses.find((r) => r.status === 200)!.headers["x-ratelimit-route"]).toBeUndefined();
    const after = await h.envoy.stat("default_batch-driver.http_local_rate_limit.rate_limited");
    expect(after - before).toBe(limited.length);
    // Tagged by service in Prometheus.
    const metrics = await h.envoy.admin("/stats/prometheus");
    expect(metrics).toMatch(
      new RegExp(
        `envoy_http_local_rate_limit_rate_limited\\{envoy_local_http_ratelimit_prefix="default_batch-driver"\\} ${after}\\b`,
      ),
    );
  });

  it("names the dev/PR route, counted with the other dev routes", async () => {
    await sleep(1_200);
    const before = await h.envoy.stat("dev.http_local_rate_limit.rate_limited");
    const responses = await burst(h.https, h.devHost, "/pr-1234/batch/x", 40);
    const limited = responses.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    for (const r of limited) expect(r.headers["x-ratelimit-route"]).toBe("pr-1234/batch");
    expect((await h.envoy.stat("dev.http_local_rate_limit.rate_limited")) - before).toBe(limited.length);
  });

  it("limits each route on its own: others keep serving while one is limited", async () => {
    await sleep(1_200);
    const responses = await burst(h.https, LIMITED_HOST, "/", 2 * limit());
    expect(responses.map((r) => r.status)).toContain(429);
    const others = await Promise.all(["www.hail.is", "batch.hail.is"].map((host) => h.get(host, "/")));
    expect(others.map((r) => r.status)).toEqual([200, 200]);
  });

  it("serves again once the second is over", async () => {
    await sleep(1_200);
    const responses = await burst(h.https, LIMITED_HOST, "/", limit());
    expect(responses.map((r) => r.status)).toEqual(Array(limit()).fill(200));
  });
});
