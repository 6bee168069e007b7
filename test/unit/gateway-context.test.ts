// The parts of a gateway's xDS that its routes and virtual hosts share
// (routing/envoy/context.ts): one object per distinct value, whatever order
// its input comes in, and ext_authz wherever one service needs it.
import { describe, expect, it } from "vitest";
import { routingConfig } from "../../routing/config/schema.js";
import { extAuthzUse, gatewayContext } from "../../routing/envoy/context.js";
import { stackConfig } from "./fixtures.js";

const config = routingConfig(stackConfig("prod"));
const { shared } = gatewayContext(config, "gateway");

describe("a gateway's shared parts", () => {
  it("one retry-on-reset header per set of methods, in any order; another set, another header", () => {
    const postPut = shared.retryOnReset(["POST", "PUT"]);
    expect(shared.retryOnReset(["PUT", "POST"])).toBe(postPut);
    expect(shared.retryOnReset(["POST"])).not.toEqual(postPut);
  });

  it("security headers in the order of their names, whatever the order of the keys", () => {
    const header = { value: "1", replace: false };
    const forward = shared.securityHeaders({ "x-a": header, "x-b": header, "x-c": header });
    const backward = shared.securityHeaders({ "x-c": header, "x-b": header, "x-a": header });
    expect(forward!.map((h) => (h.header as { key: string }).key)).toEqual(["x-a", "x-b", "x-c"]);
    expect(backward).toBe(forward);
  });
});

describe("ext_authz on a gateway", () => {
  const gateways = {
    ...config.gateways,
    gateway: { ...config.gateways.gateway, authenticateDevRoutes: false, authenticateMetrics: false },
  };
  const services = (...metrics: boolean[]) =>
    metrics.map((m, i) => ({ ...config.services[0]!, name: `s${i}`, authenticateMetrics: m }));

  it("runs when one production service's /metrics is authenticated there, though another's is not", () => {
    expect(extAuthzUse({ gateways, services: services(false, true) }, "gateway")).toEqual({
      filter: true,
      devRoutes: false,
    });
  });

  it("does not run when no service needs it and dev/PR routes are not authenticated", () => {
    expect(extAuthzUse({ gateways, services: services(false, false) }, "gateway")).toEqual({
      filter: false,
      devRoutes: false,
    });
  });
});
