// Per-route local rate limit on the real Envoy: a service's requests/s are
// shared out across the gateway replicas (batch-driver: 30/s over 3 replicas
// = 10/s per Envoy); over that, 429, while other routes keep serving.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayHarness } from "../harness/gateway.js";
import { keepAliveAgent } from "../harness/client.js";
import { sleep } from "../harness/processes.js";
import { e2eHarnessOptions } from "../harness/stack.js";

let h: GatewayHarness;

beforeAll(async () => {
  h = await GatewayHarness.start(e2eHarnessOptions());
});

afterAll(async () => {
  await h?.stop();
});

/** Sends `count` requests at once; returns the statuses and how long the burst took. */
async function burst(host: string, path: string, count: number): Promise<{ statuses: number[]; seconds: number; limitHeader: string | undefined }> {
  const agent = keepAliveAgent(h.https, count);
  // Open the connections first, so the burst itself is only requests.
  await Promise.all(Array.from({ length: count }, () => h.get("www.hail.is", "/warm", { agent })));
  const start = process.hrtime.bigint();
  const responses = await Promise.all(Array.from({ length: count }, () => h.get(host, path, { agent })));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  agent.destroy();
  return { statuses: responses.map((r) => r.status), seconds, limitHeader: responses.find((r) => r.status === 429)?.headers["x-ratelimit-limit"] as string | undefined };
}

describe("per-route rate limit", () => {
  const service = () => h.config.services.find((s) => s.name === "batch-driver")!;
  const perEnvoy = () => Math.ceil(service().rateLimit! / h.config.gateways.gateway.replicas);

  it("answers 429 to the requests over the limit within a second, and serves the others", async () => {
    expect(perEnvoy()).toBe(10);
    await sleep(1_500); // the bucket is full again
    const { statuses, seconds, limitHeader } = await burst("batch-driver.hail.is", "/", 3 * perEnvoy());
    const ok = statuses.filter((s) => s === 200).length;
    const limited = statuses.filter((s) => s === 429).length;
    expect(ok + limited, `only 200 and 429 expected: ${statuses.join(",")}`).toBe(statuses.length);
    // A full bucket serves `perEnvoy` at once; during the burst it refills at perEnvoy/s.
    expect(ok).toBeGreaterThanOrEqual(perEnvoy());
    expect(ok).toBeLessThanOrEqual(perEnvoy() + Math.ceil(perEnvoy() * seconds));
    expect(limited).toBeGreaterThan(0);
    expect(limitHeader).toBe(String(perEnvoy()));
  });

  it("limits each route on its own", async () => {
    await sleep(1_500);
    const { statuses } = await burst("batch-driver.hail.is", "/", 3 * perEnvoy());
    expect(statuses).toContain(429);
    // Right after, other routes still serve: www has no limit, batch has its own 200/s.
    const others = await Promise.all(["www.hail.is", "batch.hail.is"].map((host) => h.get(host, "/")));
    expect(others.map((r) => r.status)).toEqual([200, 200]);
  });

  it("serves again once the second is over", async () => {
    await sleep(1_500);
    const { statuses } = await burst("batch-driver.hail.is", "/", perEnvoy());
    expect(statuses).toEqual(Array(perEnvoy()).fill(200));
  });
});
