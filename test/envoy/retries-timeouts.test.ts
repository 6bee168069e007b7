// Retries and route timeouts on the real Envoy. A request that never reached
// a pod (the pod refuses connections) is retried on another pod whatever its
// method; a request a pod reset after receiving it is retried only when its
// method is idempotent; a service with retries: 0 gets none. Every route is
// bounded by upstream.routeTimeout (504 past it), except a service that opts
// out (routeTimeout: 0s) and upgraded websocket streams.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerResponse } from "node:http";
import { GatewayHarness } from "../harness/gateway.js";
import { websocketExchange } from "../harness/client.js";
import type { Pod, PodRequest } from "../harness/pods.js";
import { e2eHarnessOptions, e2eStackConfig } from "../harness/stack.js";
import { readStackFile } from "../../routing/config/load.js";
import { repoRoot } from "../support/components.js";
import { join } from "node:path";

/** The bound of every route here: short, so the slow pods below outlast it. */
const ROUTE_TIMEOUT_S = 2;
/** How long the slow pods take to answer. */
const SLOW_MS = (ROUTE_TIMEOUT_S + 1.5) * 1000;

const SERVICES = [
  // One pod of two resets every request it receives.
  { name: "flaky", replicas: 2 },
  // Both pods reset every request they receive.
  { name: "broken", replicas: 2 },
  // One pod of two refuses connections.
  { name: "half-down", replicas: 2 },
  // The same, for a service that asks for no retries.
  { name: "no-retries", replicas: 2, retries: 0 },
  // Slow pods: bounded by the stack's route timeout, or not (a streaming service).
  { name: "slow", replicas: 1 },
  { name: "stream", replicas: 1, routeTimeout: "0s" },
  { name: "notebook", replicas: 1, websocket: true },
];

let h: GatewayHarness;

const upstreamConfig = () =>
  (readStackFile(join(repoRoot, "Pulumi.prod.yaml")).upstream ?? {}) as Record<string, unknown>;

beforeAll(async () => {
  const config = e2eStackConfig({
    services: SERVICES,
    upstream: { ...upstreamConfig(), routeTimeout: `${ROUTE_TIMEOUT_S}s` },
  });
  h = await GatewayHarness.start({ ...e2eHarnessOptions(), config, devNamespaces: {} });
  const reset = (_req: PodRequest, res: ServerResponse) => {
    res.socket?.destroy(); // after the whole request arrived, before any response
    return true;
  };
  h.productionPods("flaky")[0]!.handler = reset;
  for (const pod of h.productionPods("broken")) pod.handler = reset;
  const slow = (_req: PodRequest, res: ServerResponse) => {
    setTimeout(() => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": 4 });
      res.end("done");
    }, SLOW_MS);
    return true;
  };
  for (const service of ["slow", "stream"]) for (const pod of h.productionPods(service)) pod.handler = slow;
});

afterAll(async () => {
  await h?.stop();
});

const requestsOf = (pods: Pod[]) => pods.reduce((n, p) => n + p.requests, 0);
const stat = (cluster: string, name: string) => h.envoy.stat(`cluster.${cluster}.${name}`);

describe("retries", () => {
  it("retry a GET a pod reset on the other pod: every request succeeds", async () => {
    const [resetting, healthy] = h.productionPods("flaky") as [Pod, Pod];
    const statuses: number[] = [];
    // Until the resetting pod got a few (least-request picks at random between the two), at most 60.
    for (let i = 0; i < 60 && resetting.requests < 3; i++)
      statuses.push((await h.get("flaky.hail.is", `/get/${i}`)).status);
    expect(resetting.requests, "the resetting pod was never picked").toBeGreaterThanOrEqual(3);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    // Each request it reset was retried once, on the healthy pod.
    expect(await stat("default_flaky", "upstream_rq_retry")).toBe(resetting.requests);
    expect(healthy.requests).toBe(statuses.length);
    // The retry header the gateway adds is Envoy's own: it never reaches a pod.
    expect(healthy.seen.every((r) => r.headers["x-envoy-retry-on"] === undefined)).toBe(true);
  });

  it("never retry a POST a pod reset after receiving it; retry a GET, up to the stack's retries", async () => {
    const pods = h.productionPods("broken");
    const post = await h.get("broken.hail.is", "/jobs", {
      method: "POST",
      body: '{"n":1}',
      headers: { "content-type": "application/json" },
    });
    expect(post.status).toBe(503);
    expect(requestsOf(pods), "the POST reached a pod once").toBe(1);
    // Nor can a client ask for it: Envoy drops x-envoy-* headers from external requests.
    for (const p of pods) p.resetCounters();
    const asked = await h.get("broken.hail.is", "/jobs", {
      method: "POST",
      body: "{}",
      headers: { "x-envoy-retry-on": "reset,5xx", "x-envoy-max-retries": "5" },
    });
    expect(asked.status).toBe(503);
    expect(requestsOf(pods)).toBe(1);
    for (const p of pods) p.resetCounters();
    const get = await h.get("broken.hail.is", "/jobs/1");
    expect(get.status).toBe(503);
    expect(requestsOf(pods)).toBe(1 + h.config.upstream.retries);
    // The first retry on the other pod (previous_hosts); the second on either, both having been tried.
    expect(pods.map((p) => p.requests).sort()).toEqual([1, 2]);
  });

  it("retry a POST that never reached a pod (the pod refuses connections): every request succeeds", async () => {
    const [down, up] = h.productionPods("half-down") as [Pod, Pod];
    await down.stop(); // still in DNS: Envoy keeps trying it until outlier detection ejects it
    const statuses: number[] = [];
    for (let i = 0; i < 40 && (await stat("default_half-down", "upstream_rq_retry")) === 0; i++) {
      statuses.push((await h.get("half-down.hail.is", `/jobs/${i}`, { method: "POST", body: "x" })).status);
    }
    expect(
      await stat("default_half-down", "upstream_cx_connect_fail"),
      "no request was sent to the pod that refuses",
    ).toBeGreaterThan(0);
    expect(await stat("default_half-down", "upstream_rq_retry")).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(up.requests).toBe(statuses.length);
  });

  it("leave a service with retries: 0 without them: the refused request fails", async () => {
    const [down] = h.productionPods("no-retries") as [Pod, Pod];
    await down.stop();
    const statuses: number[] = [];
    for (let i = 0; i < 40 && !statuses.includes(503); i++)
      statuses.push((await h.get("no-retries.hail.is", `/x/${i}`)).status);
    expect(statuses).toContain(503);
    expect(await stat("default_no-retries", "upstream_rq_retry")).toBe(0);
  });
});

describe("route timeouts", () => {
  it("answer 504 when a pod takes longer than the route's bound", async () => {
    const res = await h.get("slow.hail.is", "/report", { timeoutMs: SLOW_MS + 10_000 });
    expect(res.status).toBe(504);
    expect(res.body).toBe("upstream request timeout");
    expect(await stat("default_slow", "upstream_rq_timeout")).toBe(1);
  });

  it("let a service that opts out (routeTimeout: 0s) answer as late as it needs", async () => {
    const res = await h.get("stream.hail.is", "/export", { timeoutMs: SLOW_MS + 10_000 });
    expect(res.status).toBe(200);
    expect(res.body).toBe("done");
  });

  it("never cut an upgraded websocket at the route's bound", async () => {
    // Three messages, each sent well after the last reply: the stream lives past the bound.
    const ws = await websocketExchange(
      h.https,
      "notebook.hail.is",
      "/kernels/1/channels",
      ["one", "two", "three"],
      SLOW_MS * 3 + 10_000,
      SLOW_MS,
    );
    expect(ws.status, ws.head).toBe(101);
    expect(ws.replies).toEqual(["default/notebook-0: one", "default/notebook-0: two", "default/notebook-0: three"]);
  });
});
