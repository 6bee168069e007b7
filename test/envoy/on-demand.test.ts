// On-demand dev/PR routes (devNamespaces.clusters: on-demand) on the real
// Envoy: one dynamic forward proxy cluster, a sub-cluster per Service name
// made on the first request. Every property a cluster of its own gives is
// checked here: the Service named in the path is served, by every pod of it,
// with its name as Host, SNI and certificate check; the route is counted by
// name; ext_authz and the rate limit still apply; a namespace added later
// changes only rds.yaml, so the other routes keep their pooled connections.
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ON_DEMAND_CLUSTER } from "../../routing/names.js";
import { RATE_LIMITED_ROUTE_HEADER, UPSTREAM_HOST_HEADER } from "../../routing/envoy/filters.js";
import { DEV_CLUSTER_STATS } from "../../routing/envoy/stats.js";
import { keepAliveAgent } from "../harness/client.js";
import { GatewayHarness } from "../harness/gateway.js";
import { sleep, waitFor } from "../harness/processes.js";
import { e2eHarnessOptions, e2eStackConfigWith } from "../harness/stack.js";

const DEV = { "pr-1": ["batch", "web"], "pr-2": ["batch"], "pr-3": ["docs"], "pr-5": ["stalled"] };
let h: GatewayHarness;

beforeAll(async () => {
  h = await GatewayHarness.start({
    ...e2eHarnessOptions(),
    config: e2eStackConfigWith("on-demand"),
    devNamespaces: DEV,
    podCount: (namespace, service) => (namespace === "pr-1" && service === "batch" ? 3 : undefined),
    // pr-3's docs presents a certificate for another name.
    podCertificate: (namespace) => (namespace === "pr-3" ? "wrong-name" : undefined),
  });
});

afterAll(async () => {
  await h?.stop();
});

const devGet = (path: string, headers: Record<string, string> = {}) => h.get(h.devHost, path, { headers });

describe("on-demand dev/PR routes on the real Envoy", () => {
  it("writes no cluster per dev/PR Service: production's in cds.yaml, the one on-demand cluster in the bootstrap", () => {
    const names = h.files.documents.cds.resources.map((c) => String(c.name));
    expect(names).not.toContain(ON_DEMAND_CLUSTER);
    expect(names.filter((n) => n.startsWith("pr-"))).toEqual([]);
    const statics = (h.files.documents.bootstrap.static_resources as { clusters: { name: string }[] }).clusters;
    expect(statics.map((c) => c.name)).toContain(ON_DEMAND_CLUSTER);
  });

  it("serves /<namespace>/<service>/... from that Service's pods, with its name as Host and the client's in x-forwarded-host", async () => {
    for (const [path, service] of [
      ["/pr-1/batch/jobs/1?full=true", "batch.pr-1.svc.cluster.local"],
      ["/pr-2/batch", "batch.pr-2.svc.cluster.local"],
      ["/pr-1/web/", "web.pr-1.svc.cluster.local"],
    ] as const) {
      const res = await devGet(path);
      expect(res.status, `${path}: ${res.body}\n${h.diagnostics()}`).toBe(200);
      const echo = res.echo();
      expect(echo.service, path).toBe(service);
      expect(echo.path, path).toBe(path);
      expect(echo.headers.host, path).toBe(service);
      expect(echo.headers["x-forwarded-host"], path).toBe(h.devHost);
      expect(echo.headers[UPSTREAM_HOST_HEADER], path).toBeUndefined();
    }
    expect((await devGet("/pr-1/batchx")).status).toBe(404);
  });

  it("takes the upstream host from the path only: a client's own header is neither used nor sent on", async () => {
    const res = await devGet("/pr-1/batch/x", { [UPSTREAM_HOST_HEADER]: "batch.pr-2.svc.cluster.local" });
    expect(res.status, res.body).toBe(200);
    expect(res.echo().service).toBe("batch.pr-1.svc.cluster.local");
    expect(res.echo().headers[UPSTREAM_HOST_HEADER]).toBeUndefined();
  });

  it("spreads requests over every pod of the Service, on pooled connections", async () => {
    const pods = h.group("pr-1", "batch").pods;
    expect(pods).toHaveLength(3);
    for (const p of pods) p.resetCounters();
    const agent = keepAliveAgent(h.https, 2);
    // Paced under the dev routes' rate limit (200 per second).
    for (let i = 0; i < 150; i++) {
      const res = await h.get(h.devHost, "/pr-1/batch/lb", { agent });
      expect(res.status, res.body).toBe(200);
      await sleep(5);
    }
    agent.destroy();
    const counts = pods.map((p) => p.requests);
    // A third each is 50; least request over 3 pods stays near it.
    for (const c of counts) expect(c, `requests per pod: ${counts.join(", ")}`).toBeGreaterThanOrEqual(30);
    expect(pods.reduce((n, p) => n + p.handshakes, 0)).toBeLessThanOrEqual(pods.length * 2 * 2);
  });

  it("follows a pod added to DNS within the DNS refresh", async () => {
    const added = await h.addPod("pr-1", "batch");
    await waitFor("a request to reach the new pod", 15_000, async () => {
      await devGet("/pr-1/batch/new");
      return added.requests > 0;
    });
    expect(added.requests).toBeGreaterThan(0);
  });

  it("checks the pod's certificate against the Service name: a certificate for another name gets 503", async () => {
    const res = await devGet("/pr-3/docs/");
    expect(res.status, res.body).toBe(503);
    expect(h.group("pr-3", "docs").pods.every((p) => p.requests === 0)).toBe(true);
  });

  it("keeps for a sub-cluster what dashboards use, tagged in Prometheus by service and namespace; each route's responses by route name", async () => {
    for (let i = 0; i < 3; i++) expect((await devGet("/pr-2/batch/prom")).status).toBe(200);
    const sub = "cluster.DFPCluster:batch.pr-2.svc.cluster.local:443.".replaceAll(":", "_");
    const kept = (await h.envoy.admin("/stats"))
      .split("\n")
      .filter((l) => l.startsWith(sub))
      .map((l) => l.slice(sub.length, l.indexOf(":")));
    expect(kept).toEqual(expect.arrayContaining(["upstream_rq_total", "membership_total", "upstream_cx_active"]));
    for (const s of kept) expect(DEV_CLUSTER_STATS, s).toContain(s);
    const prom = await h.envoy.admin("/stats/prometheus");
    expect(prom).toMatch(
      /^envoy_cluster_upstream_rq_total\{envoy_cluster_name="DFPCluster_batch",dev_namespace="pr-2"\} \d+$/m,
    );
    expect(prom).not.toMatch(/svc_cluster_local/);
    expect(prom).toMatch(
      /^envoy_vhost_route_upstream_rq_xx\{envoy_response_code_class="2",envoy_virtual_host="dev",envoy_route="pr-2\/batch"\} \d+$/m,
    );
  });

  it("counts each route's responses under its own name, and the sub-cluster's requests under the Service name", async () => {
    await devGet("/pr-2/batch/count");
    const stats = await h.envoy.stats("pr-2");
    expect(stats.get("vhost.dev.route.pr-2/batch.upstream_rq_2xx"), [...stats.keys()].join("\n")).toBeGreaterThan(0);
    expect(
      [...stats.entries()].some(
        ([name, n]) => name.includes("batch.pr-2.svc.cluster.local") && name.endsWith(".upstream_rq_total") && n > 0,
      ),
      [...stats.keys()].join("\n"),
    ).toBe(true);
  });

  it("still asks ext_authz on dev/PR routes: a denied request goes to the login page, not to the pods", async () => {
    await h.setAuthMode("deny");
    const pods = h.group("pr-1", "web").pods;
    const before = pods.reduce((n, p) => n + p.requests, 0);
    try {
      const res = await devGet("/pr-1/web/x");
      expect(res.status, res.body).toBe(302);
      expect(res.headers.location).toBe(`https://auth.hail.is/login?next=https%3A%2F%2F${h.devHost}%2Fpr-1%2Fweb%2Fx`);
      expect(pods.reduce((n, p) => n + p.requests, 0)).toBe(before);
    } finally {
      await h.setAuthMode("allow");
    }
  });

  it("routes a namespace added later by rds.yaml alone: cds.yaml and the pooled connections stay", async () => {
    const agent = keepAliveAgent(h.https, 1);
    expect((await h.get(h.devHost, "/pr-2/batch/", { agent })).status).toBe(200);
    const pods = h.group("pr-2", "batch").pods;
    const handshakes = pods.reduce((n, p) => n + p.handshakes, 0);
    const cds = h.files.xds["cds.yaml"];
    const files = await h.setDevNamespaces({ ...DEV, "pr-4": ["batch"] });
    expect(files.xds["cds.yaml"]).toBe(cds);
    await waitFor("pr-4's route", 10_000, async () => (await devGet("/pr-4/batch/")).status === 200);
    expect((await devGet("/pr-4/batch/")).echo().service).toBe("batch.pr-4.svc.cluster.local");
    expect((await h.get(h.devHost, "/pr-2/batch/", { agent })).status).toBe(200);
    agent.destroy();
    expect(pods.reduce((n, p) => n + p.handshakes, 0)).toBe(handshakes);
  });

  it("retries every request whose connection failed, however many are in flight on the dev/PR routes at once", async () => {
    // pr-5's stalled pods accept a connection and close it a second later, before the TLS
    // handshake: each try fails as a connection failure, and its retries overlap.
    const servers: Server[] = [];
    const sockets = new Set<Socket>();
    for (const pod of h.group("pr-5", "stalled").pods) {
      await pod.stop();
      const server = createServer((socket) => {
        sockets.add(socket);
        setTimeout(() => socket.destroy(), 1000);
      });
      await new Promise<void>((resolve) => server.listen(pod.port, pod.address, resolve));
      servers.push(server);
    }
    try {
      const stat = (name: string) => h.envoy.stat(`cluster.${ON_DEMAND_CLUSTER}.${name}`);
      const [retries, overflow] = [await stat("upstream_rq_retry"), await stat("upstream_rq_retry_overflow")];
      const inFlight = 12;
      const statuses = await Promise.all(
        Array.from({ length: inFlight }, (_, i) => devGet(`/pr-5/stalled/${i}`).then((r) => r.status)),
      );
      expect(statuses).toEqual(Array.from({ length: inFlight }, () => 503));
      // Every request got the stack's retries: none was refused for a retry limit shared by all routes.
      expect((await stat("upstream_rq_retry_overflow")) - overflow).toBe(0);
      expect((await stat("upstream_rq_retry")) - retries).toBe(inFlight * h.config.upstream.retries);
    } finally {
      for (const socket of sockets) socket.destroy();
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    }
  });

  it("limits each route's rate, and the 429 names the route", async () => {
    const agent = keepAliveAgent(h.https, 2);
    let limited: Awaited<ReturnType<typeof devGet>> | undefined;
    for (let i = 0; i < 500 && !limited; i++) {
      const res = await h.get(h.devHost, "/pr-1/web/burst", { agent });
      if (res.status === 429) limited = res;
      else expect(res.status, res.body).toBe(200);
    }
    agent.destroy();
    expect(limited?.headers[RATE_LIMITED_ROUTE_HEADER]).toBe("pr-1/web");
  });
});
