// The real Envoy running the gateway's rendered config: routing, the HTTP
// listener, downstream and upstream TLS, edge headers, websockets, and what
// the admin and metrics listeners expose. See test/harness/ and docs/envoy-e2e.md.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayHarness } from "../harness/gateway.js";
import { opensslProbe, websocketExchange } from "../harness/client.js";
import { e2eHarnessOptions } from "../harness/stack.js";

let h: GatewayHarness;

beforeAll(async () => {
  h = await GatewayHarness.start(e2eHarnessOptions());
});

afterAll(async () => {
  await h?.stop();
});

describe("routing", () => {
  it("serves a production host from its service's pods, path and query unchanged", async () => {
    const res = await h.get("www.hail.is", "/docs/index.html?lang=en");
    expect(res.status, res.body).toBe(200);
    const echo = res.echo();
    expect(echo.service).toBe("www.default.svc.cluster.local");
    expect(echo.path).toBe("/docs/index.html?lang=en");
    // The pod sees its own Service name as Host, the public one in x-forwarded-host.
    expect(echo.headers.host).toBe("www.default.svc.cluster.local");
    expect(echo.headers["x-forwarded-host"]).toBe("www.hail.is");

    const batch = (await h.get("batch.hail.is", "/jobs")).echo();
    expect(batch.service).toBe("batch.default.svc.cluster.local");
    // An alias and a Host with a port reach the same service.
    expect((await h.get("hail.is", "/")).echo().service).toBe("www.default.svc.cluster.local");
    expect((await h.get("www.hail.is", "/", { headers: { host: "www.hail.is:443" } })).echo().service).toBe(
      "www.default.svc.cluster.local",
    );
  });

  it("serves dev paths /<namespace>/<service>/... from that namespace's service, the path kept", async () => {
    const res = await h.get("internal.hail.is", "/pr-1234/batch/jobs/1?full=true");
    expect(res.status, res.body).toBe(200);
    expect(res.echo().service).toBe("batch.pr-1234.svc.cluster.local");
    expect(res.echo().path).toBe("/pr-1234/batch/jobs/1?full=true");

    const driver = (await h.get("internal.hail.is", "/pr-1234/batch-driver/status")).echo();
    expect(driver.service).toBe("batch-driver.pr-1234.svc.cluster.local");
    expect(driver.path).toBe("/pr-1234/batch-driver/status");
  });

  it("never sends /ns/batch to batch-driver (or batchx anywhere)", async () => {
    for (const path of ["/pr-1234/batch", "/pr-1234/batch/", "/pr-1234/batch?x=1"]) {
      const res = await h.get("internal.hail.is", path);
      expect(res.status, `${path}: ${res.body}`).toBe(200);
      expect(res.echo().service, path).toBe("batch.pr-1234.svc.cluster.local");
    }
    const driverPods = h.group("pr-1234", "batch-driver").pods;
    const before = driverPods.reduce((n, p) => n + p.requests, 0);
    expect((await h.get("internal.hail.is", "/pr-1234/batchx")).status).toBe(404);
    expect((await h.get("internal.hail.is", "/pr-1234/batch-")).status).toBe(404);
    expect(driverPods.reduce((n, p) => n + p.requests, 0)).toBe(before);
  });

  it("answers 404 for unknown hosts and paths", async () => {
    expect((await h.get("unknown.hail.is", "/")).status).toBe(404);
    expect((await h.get("www.hail.is", "/", { headers: { host: "www.example.org" } })).status).toBe(404);
    expect((await h.get("internal.hail.is", "/")).status).toBe(404);
    expect((await h.get("internal.hail.is", "/pr-9999/batch/x")).status).toBe(404);
    expect((await h.get("internal.hail.is", "/pr-1234/query/x")).status).toBe(404);
    // Production services are not dev routes.
    expect((await h.get("internal.hail.is", "/default/www/")).status).toBe(404);
  });
});

describe("plain HTTP listener", () => {
  it("redirects to HTTPS with host, path and query kept", async () => {
    const res = await h.getPlain("www.hail.is", "/a/b?c=d");
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe("https://www.hail.is/a/b?c=d");
  });

  it("passes ACME challenges to the solver instead", async () => {
    const res = await h.getPlain("www.hail.is", "/.well-known/acme-challenge/token-123");
    expect(res.status, res.body).toBe(200);
    expect(res.echo().service).toBe("letsencrypt.default.svc.cluster.local");
    expect(res.echo().path).toBe("/.well-known/acme-challenge/token-123");
    expect((await h.getPlain("www.hail.is", "/.well-known/other")).status).toBe(301);
  });
});

describe("downstream TLS", () => {
  it("accepts TLS 1.2 with a modern cipher and TLS 1.3", async () => {
    const tls12 = await opensslProbe(
      h.https,
      "www.hail.is",
      ["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"],
      h.ca.certPath,
    );
    expect(tls12.connected, tls12.output).toBe(true);
    expect(tls12.cipher).toBe("ECDHE-ECDSA-AES128-GCM-SHA256");
    const tls13 = await opensslProbe(h.https, "www.hail.is", ["-tls1_3"], h.ca.certPath);
    expect(tls13.connected, tls13.output).toBe(true);
    expect(tls13.output).toMatch(/Verify return code: 0 \(ok\)/);
  });

  it("refuses TLS 1.1", async () => {
    // SECLEVEL=0 so that the client really offers TLS 1.1: the refusal is Envoy's.
    const probe = await opensslProbe(h.https, "www.hail.is", ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"]);
    expect(probe.connected, probe.output).toBe(false);
    expect(probe.output).toMatch(/alert protocol version/);
  });

  it("refuses weak ciphers", async () => {
    // No forward secrecy (RSA key exchange), or CBC mode: all refused.
    for (const cipher of ["AES128-SHA", "AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384"]) {
      const probe = await opensslProbe(h.https, "www.hail.is", ["-tls1_2", "-cipher", cipher]);
      expect(probe.connected, `${cipher}: ${probe.output}`).toBe(false);
      expect(probe.output, cipher).toMatch(/alert handshake failure/);
    }
  });
});

describe("upstream TLS", () => {
  it("presents the gateway's client certificate to production pods", async () => {
    const echo = (await h.get("www.hail.is", "/")).echo();
    expect(echo.clientCertificate).toBe("gateway.default.svc.cluster.local");
  });

  it("refuses a pod whose certificate is from another CA", async () => {
    const res = await h.get("blog.hail.is", "/");
    expect(res.status).toBe(503);
    expect(h.productionPods("blog").reduce((n, p) => n + p.requests, 0)).toBe(0);
    expect(await h.envoy.stat("cluster.default_blog.ssl.fail_verify_error")).toBeGreaterThan(0);
  });

  it("refuses a pod of our CA whose certificate names another Service", async () => {
    const res = await h.get("docs.hail.is", "/");
    expect(res.status).toBe(503);
    expect(h.productionPods("docs").reduce((n, p) => n + p.requests, 0)).toBe(0);
    expect(await h.envoy.stat("cluster.default_docs.ssl.fail_verify_san")).toBeGreaterThan(0);
  });
});

describe("edge headers and paths", () => {
  it("sets X-Real-IP from the client address, whatever the client sends", async () => {
    const echo = (
      await h.get("www.hail.is", "/", { headers: { "x-real-ip": "203.0.113.9", "x-forwarded-for": "203.0.113.9" } })
    ).echo();
    expect(echo.headers["x-real-ip"]).toBe(h.clientAddress);
    const dev = (
      await h.get("internal.hail.is", "/pr-1234/batch/", { headers: { "x-real-ip": "203.0.113.9" } })
    ).echo();
    expect(dev.headers["x-real-ip"]).toBe(h.clientAddress);
  });

  it("rejects a header name with an underscore", async () => {
    const before = h.productionPods("www").reduce((n, p) => n + p.requests, 0);
    const res = await h.get("www.hail.is", "/", { headers: { x_user: "admin" } });
    expect(res.status).toBe(400);
    expect(h.productionPods("www").reduce((n, p) => n + p.requests, 0)).toBe(before);
  });

  it("rejects oversized request headers", async () => {
    const limitKb = h.config.edge.maxRequestHeadersKb;
    const before = h.productionPods("www").reduce((n, p) => n + p.requests, 0);
    const res = await h.get("www.hail.is", "/", { headers: { "x-big": "a".repeat((limitKb + 4) * 1024) } });
    expect(res.status).toBe(431);
    expect(h.productionPods("www").reduce((n, p) => n + p.requests, 0)).toBe(before);
    // Just under the limit still passes.
    expect((await h.get("www.hail.is", "/", { headers: { "x-big": "a".repeat((limitKb - 4) * 1024) } })).status).toBe(
      200,
    );
  });

  it("normalizes paths and merges slashes before routing", async () => {
    expect((await h.get("www.hail.is", "/a/./b/../c")).echo().path).toBe("/a/c");
    expect((await h.get("www.hail.is", "//a///b//")).echo().path).toBe("/a/b/");
    // Dot segments cannot escape a dev route or reach another one.
    const res = await h.get("internal.hail.is", "/pr-1234/batch-driver/../batch/jobs");
    expect(res.echo().service).toBe("batch.pr-1234.svc.cluster.local");
    expect(res.echo().path).toBe("/pr-1234/batch/jobs");
    // An escaped slash is redirected to its unescaped form.
    const escaped = await h.get("www.hail.is", "/a%2Fb");
    expect(escaped.status).toBe(307);
    expect(escaped.headers.location).toBe("/a/b");
  });

  it("upgrades websockets end to end", async () => {
    const ws = await websocketExchange(h.https, "notebook.hail.is", "/kernels/1/channels", ["hello", "second message"]);
    expect(ws.status, ws.head).toBe(101);
    expect(ws.acceptValid).toBe(true);
    expect(ws.replies).toEqual(["default/notebook-0: hello", "default/notebook-0: second message"]);
  });
});

describe("admin and metrics", () => {
  it("keeps the admin interface off the pod address", async () => {
    const refused = await new Promise<string>((resolve) => {
      const socket = connect({ host: h.address, port: h.ports.admin });
      socket.on("connect", () => {
        socket.destroy();
        resolve("connected");
      });
      socket.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    expect(refused).toBe("ECONNREFUSED");
    // It is there on 127.0.0.1.
    expect(await h.envoy.admin("/ready")).toMatch(/LIVE/);
  });

  it("serves only GET /stats/prometheus on the metrics listener", async () => {
    const metrics = { address: h.address, port: h.ports.metrics };
    const get = (path: string, method = "GET") =>
      fetch(`http://${metrics.address}:${metrics.port}${path}`, { method, signal: AbortSignal.timeout(10_000) }).then(
        async (r) => ({ status: r.status, body: await r.text() }),
      );
    const prom = await get("/stats/prometheus");
    expect(prom.status).toBe(200);
    expect(prom.body).toMatch(/^envoy_cluster_upstream_rq_total\{envoy_cluster_name="default_www"\}/m);
    for (const path of [
      "/stats",
      "/config_dump",
      "/clusters",
      "/server_info",
      "/stats/prometheus/../../config_dump",
      "/",
    ]) {
      expect((await get(path)).status, path).toBe(404);
    }
    for (const path of ["/quitquitquit", "/healthcheck/fail", "/logging?level=trace"]) {
      expect((await get(path, "POST")).status, path).toBe(404);
    }
    expect((await get("/stats/prometheus", "POST")).status).toBe(404);
    expect(h.envoy.running).toBe(true);
    // Readiness on the health listener.
    const ready = await fetch(`http://${h.address}:${h.ports.health}/ready`, { signal: AbortSignal.timeout(10_000) });
    expect(ready.status).toBe(200);
  });
});
