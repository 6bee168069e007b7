// Browser security headers on the real Envoy: the external gateway adds HSTS,
// nosniff and a referrer policy to responses that lack them (production and
// dev/PR routes alike), keeps a service's own, and follows a service's
// overrides (another header, a default dropped, one that replaces the
// service's own); the internal gateway adds none.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IncomingHttpHeaders } from "node:http";
import { GatewayHarness } from "../harness/gateway.js";
import { e2eHarnessOptions, e2eStackConfig } from "../harness/stack.js";

const SERVICES = [
  { name: "www", replicas: 2, aliases: ["hail.is"] },
  {
    name: "wiki",
    replicas: 1,
    securityHeaders: {
      "x-frame-options": "DENY",
      "referrer-policy": false,
      "strict-transport-security": { value: "max-age=60", replace: true },
    },
  },
];
const config = () => e2eStackConfig({ services: SERVICES });

let h: GatewayHarness;

/** Pods of `service` answer /own with headers of their own; every other path is echoed. */
function setOwnHeaders(harness: GatewayHarness, service: string, headers: Record<string, string>): void {
  for (const pod of harness.productionPods(service)) {
    pod.handler = (req, res) => {
      if (!req.path.startsWith("/own")) return false;
      res.writeHead(200, { "content-type": "text/plain", "content-length": 2, ...headers });
      res.end("ok");
      return true;
    };
  }
}

const security = (headers: IncomingHttpHeaders) => ({
  hsts: headers["strict-transport-security"],
  nosniff: headers["x-content-type-options"],
  referrer: headers["referrer-policy"],
  frame: headers["x-frame-options"],
});

beforeAll(async () => {
  h = await GatewayHarness.start({ ...e2eHarnessOptions(), config: config() });
  setOwnHeaders(h, "www", { "strict-transport-security": "max-age=5", "referrer-policy": "no-referrer" });
  setOwnHeaders(h, "wiki", { "strict-transport-security": "max-age=5", "x-frame-options": "SAMEORIGIN" });
});

afterAll(async () => {
  await h?.stop();
});

describe("the external gateway's security headers", () => {
  const defaults = {
    hsts: "max-age=31536000",
    nosniff: "nosniff",
    referrer: "strict-origin-when-cross-origin",
    frame: undefined,
  };

  it("are added by default, on production hosts, aliases and dev/PR routes", async () => {
    for (const [host, path] of [
      ["www.hail.is", "/"],
      ["hail.is", "/a"],
      ["internal.hail.is", "/pr-1234/batch/"],
    ] as const) {
      const res = await h.get(host, path);
      expect(res.status, `${host}${path}`).toBe(200);
      expect(security(res.headers), `${host}${path}`).toEqual(defaults);
    }
  });

  it("leave a header the service sets alone: one value, the service's", async () => {
    const res = await h.get("www.hail.is", "/own");
    expect(res.status).toBe(200);
    // Not added next to the service's (Node would join two values with a comma).
    expect(security(res.headers)).toEqual({
      hsts: "max-age=5",
      nosniff: "nosniff",
      referrer: "no-referrer",
      frame: undefined,
    });
  });

  it("follow a service's overrides: another header added, a default dropped, one replacing the service's own", async () => {
    expect(security((await h.get("wiki.hail.is", "/")).headers)).toEqual({
      hsts: "max-age=60",
      nosniff: "nosniff",
      referrer: undefined,
      frame: "DENY",
    });
    // The pod's own: HSTS replaced (replace: true), X-Frame-Options kept (added only if absent).
    expect(security((await h.get("wiki.hail.is", "/own")).headers)).toEqual({
      hsts: "max-age=60",
      nosniff: "nosniff",
      referrer: undefined,
      frame: "SAMEORIGIN",
    });
  });
});

describe("the internal gateway", () => {
  let internal: GatewayHarness;

  beforeAll(async () => {
    internal = await GatewayHarness.start({ ...e2eHarnessOptions(), config: config(), gateway: "internal-gateway" });
  });

  afterAll(async () => {
    await internal?.stop();
  });

  it("adds no security headers", async () => {
    for (const [host, path] of [
      [internal.productionHost("www"), "/"],
      [internal.devHost, "/pr-1234/batch/"],
    ] as const) {
      const res = await internal.get(host, path);
      expect(res.status, `${host}${path}`).toBe(200);
      expect(security(res.headers), `${host}${path}`).toEqual({
        hsts: undefined,
        nosniff: undefined,
        referrer: undefined,
        frame: undefined,
      });
    }
  });
});
