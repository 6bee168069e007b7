// ext_authz on the real Envoy: dev/PR routes ask the auth service (allow
// passes, 401 becomes the login redirect with the original URL, auth down
// fails closed), with the original method; production routes never ask it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GatewayHarness } from "../harness/gateway.js";
import { e2eHarnessOptions } from "../harness/stack.js";

let h: GatewayHarness;

beforeAll(async () => {
  h = await GatewayHarness.start(e2eHarnessOptions());
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
    const res = await h.get("internal.hail.is", "/pr-1234/batch/jobs?page=2", { headers: { cookie: "session=abc", authorization: "Bearer t0ken", "x-unrelated": "1" } });
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
      const res = await h.get("internal.hail.is", "/pr-1234/batch/jobs/7", { method, body: "{}", headers: { "content-type": "application/json" } });
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
    expect(res.headers.location).toBe("https://auth.hail.is/login?next=https://internal.hail.is/pr-1234/batch/jobs?page=2");
    expect(h.authChecks.map((c) => c.decision)).toEqual(["deny"]);
    expect(devRequests()).toBe(before);
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
