// ext_authz on the real Envoy: dev/PR routes ask the auth service (allow
// passes, 401 becomes the login redirect with the original URL percent-encoded
// after next=, auth down fails closed), with the original method; production
// routes never ask it, except a service's own /metrics on the external
// gateway (unless the service says otherwise); the internal gateway never asks
// for /metrics.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GatewayHarness } from "../harness/gateway.js";
import { e2eHarnessOptions, e2eStackConfig, E2E_SERVICES } from "../harness/stack.js";

let h: GatewayHarness;

/** The e2e stack with one more service that keeps its /metrics public. */
const config = () =>
  e2eStackConfig({ services: [...E2E_SERVICES, { name: "grafana", replicas: 1, authenticateMetrics: false }] });

beforeAll(async () => {
  h = await GatewayHarness.start({ ...e2eHarnessOptions(), config: config() });
});

afterAll(async () => {
  await h?.stop();
});

beforeEach(async () => {
  await h.setAuthMode("allow");
  h.authChecks.length = 0;
});

const devRequests = () => h.group("pr-1234", "batch").pods.reduce((n, p) => n + p.requests, 0);
const prefix = () => h.config.auth.pathPrefix;

describe("ext_authz on dev routes", () => {
  it("passes an allowed request to the service, after asking auth with the original path and credentials", async () => {
    const res = await h.get("internal.hail.is", "/pr-1234/batch/jobs?page=2", {
      headers: { cookie: "session=abc", authorization: "Bearer t0ken", "x-unrelated": "1" },
    });
    expect(res.status, res.body).toBe(200);
    expect(res.echo().service).toBe("batch.pr-1234.svc.cluster.local");
    expect(h.authChecks).toHaveLength(1);
    const check = h.authChecks[0]!;
    expect(check.method).toBe("GET");
    expect(check.path).toBe(`${prefix()}/pr-1234/batch/jobs?page=2`);
    expect(check.headers.cookie).toBe("session=abc");
    expect(check.headers.authorization).toBe("Bearer t0ken");
    expect(check.headers["x-unrelated"]).toBeUndefined();
  });

  it("sends the original method to the auth service", async () => {
    for (const method of ["POST", "DELETE", "PUT"]) {
      const res = await h.get("internal.hail.is", "/pr-1234/batch/jobs/7", {
        method,
        body: "{}",
        headers: { "content-type": "application/json" },
      });
      expect(res.status, res.body).toBe(200);
      expect(res.echo().method).toBe(method);
    }
    expect(h.authChecks.map((c) => c.method)).toEqual(["POST", "DELETE", "PUT"]);
  });

  it("redirects a denied request to the login page with the original URL, without reaching the service", async () => {
    await h.setAuthMode("deny");
    const before = devRequests();
    const res = await h.get("internal.hail.is", "/pr-1234/batch/jobs?page=2");
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe(
      "https://auth.hail.is/login?next=https%3A%2F%2Finternal.hail.is%2Fpr-1234%2Fbatch%2Fjobs%3Fpage%3D2",
    );
    expect(h.authChecks.map((c) => c.decision)).toEqual(["deny"]);
    expect(devRequests()).toBe(before);
  });

  it("carries the whole original URL after next=, percent-encoded: & = % + and non-ASCII text come back exactly", async () => {
    await h.setAuthMode("deny");
    // As a browser sends it: non-ASCII text as percent-encoded UTF-8 (Envoy answers 400 to raw bytes).
    const query = new URLSearchParams({ q: "a&b=c", pct: "100%", name: "été 東京", plus: "1+1" }).toString();
    const path = `/pr-1234/batch/jobs/%C3%A9?${query}&raw=%3D%26`;
    const original = `https://internal.hail.is${path}`;
    const res = await h.get("internal.hail.is", path);
    expect(res.status).toBe(302);
    const location = res.headers.location as string;
    expect(location).toBe(`https://auth.hail.is/login?next=${encodeURIComponent(original)}`);
    // The login page reads next back as exactly the URL that was asked for, and its query as sent.
    const next = new URL(location).searchParams.get("next")!;
    expect(next).toBe(original);
    expect(Object.fromEntries(new URL(next).searchParams)).toEqual({
      q: "a&b=c",
      pct: "100%",
      name: "été 東京",
      plus: "1+1",
      raw: "=&",
    });
    expect(location.slice(location.indexOf("?") + 1).split("&")).toHaveLength(1);
  });

  it("fails closed when the auth service is down", async () => {
    await h.setAuthMode("down");
    const before = devRequests();
    for (const path of ["/pr-1234/batch/", "/pr-1234/batch-driver/x"]) {
      const res = await h.get("internal.hail.is", path);
      expect(res.status, path).toBe(503);
    }
    expect(devRequests()).toBe(before);
    // Back up: requests pass again.
    await h.setAuthMode("allow");
    expect((await h.get("internal.hail.is", "/pr-1234/batch/")).status).toBe(200);
  });
});

describe("production routes", () => {
  it("never call the auth service, whatever it would answer", async () => {
    for (const mode of ["allow", "deny", "down"] as const) {
      await h.setAuthMode(mode);
      for (const host of ["www.hail.is", "batch.hail.is", "hail.is"]) {
        const res = await h.get(host, "/account", { method: "POST", body: "x", headers: { cookie: "session=abc" } });
        expect(res.status, `${host} with auth ${mode}`).toBe(200);
      }
    }
    expect(h.authChecks).toEqual([]);
  });
});

describe("a production service's /metrics on the external gateway", () => {
  const podRequests = (service: string) => h.productionPods(service).reduce((n, p) => n + p.requests, 0);

  it("redirects to the login page without credentials, and never reaches the service", async () => {
    await h.setAuthMode("deny");
    const before = podRequests("www");
    for (const path of ["/metrics", "/metrics/", "/metrics?format=prometheus", "/metrics/../metrics", "/%6Detrics"]) {
      const res = await h.get("www.hail.is", path);
      expect(res.status, path).toBe(302);
      expect(new URL(res.headers.location as string).searchParams.get("next"), path).toMatch(
        /^https:\/\/www\.hail\.is\/metrics/,
      );
    }
    expect(h.authChecks.map((c) => c.path.slice(prefix().length))).toEqual([
      "/metrics",
      "/metrics/",
      "/metrics?format=prometheus",
      "/metrics",
      "/metrics",
    ]);
    expect(podRequests("www")).toBe(before);
  });

  it("serves it with credentials, after asking auth with them", async () => {
    const res = await h.get("batch.hail.is", "/metrics", { headers: { cookie: "session=abc" } });
    expect(res.status, res.body).toBe(200);
    expect(res.echo().service).toBe("batch.default.svc.cluster.local");
    expect(res.echo().path).toBe("/metrics");
    expect(h.authChecks).toHaveLength(1);
    expect(h.authChecks[0]!.path).toBe(`${prefix()}/metrics`);
    expect(h.authChecks[0]!.headers.cookie).toBe("session=abc");
  });

  it("never asks auth for the service's other paths, whatever it would answer", async () => {
    await h.setAuthMode("deny");
    for (const path of ["/", "/metricsx", "/api/metrics", "/metrics-old", "/x?metrics"]) {
      const res = await h.get("www.hail.is", path);
      expect(res.status, path).toBe(200);
      expect(res.echo().path, path).toBe(path);
    }
    expect(h.authChecks).toEqual([]);
  });

  it("leaves /metrics public for a service that says so (authenticateMetrics: false)", async () => {
    await h.setAuthMode("deny");
    const res = await h.get("grafana.hail.is", "/metrics");
    expect(res.status, res.body).toBe(200);
    expect(res.echo().path).toBe("/metrics");
    expect(h.authChecks).toEqual([]);
  });
});

describe("a production service's /metrics on the internal gateway", () => {
  let internal: GatewayHarness;

  beforeAll(async () => {
    internal = await GatewayHarness.start({ ...e2eHarnessOptions(), config: config(), gateway: "internal-gateway" });
  });

  afterAll(async () => {
    await internal?.stop();
  });

  it("is served without asking auth, as before", async () => {
    await internal.setAuthMode("deny");
    for (const service of ["www", "batch"]) {
      const res = await internal.get(internal.productionHost(service), "/metrics");
      expect(res.status, `${service}: ${res.body}`).toBe(200);
      expect(res.echo().path).toBe("/metrics");
    }
    expect(internal.authChecks).toEqual([]);
    // Its dev/PR routes still ask.
    expect((await internal.get(internal.devHost, "/pr-1234/batch/metrics")).status).toBe(302);
    expect(internal.authChecks).toHaveLength(1);
  });
});
