// The routes resource: its inputs (the routing table keyed by id), check and
// diff as the engine calls them, and reading a ConfigMap back.
import { describe, expect, it } from "vitest";
import { checkFailures, checkRoutes, diffRoutes, digest, render, type RoutesInputs, type RoutesOutputs } from "../../routes-provider/core.js";
import { readRoutesFromXds } from "../../routing/read-back.js";
import { productionOnly, routesInput, tableFromRoutes } from "../../routing/routes-input.js";
import { buildRoutingTable } from "../../routing/table.js";
import { stackConfig } from "./fixtures.js";

const config = stackConfig("prod");
const { kubeconfig: _k, renderYamlToDirectory: _r, ...configInput } = config;
const dev = { "pr-12": ["batch", "ci"], "pr-14": [{ name: "web", stacks: [{ version: "blue", service: "web-blue", weight: 70 }, { version: "green", service: "web-green", weight: 30 }] }] };
const table = buildRoutingTable(config, dev);

function inputs(routes = routesInput(config, table, "gateway")): RoutesInputs {
  return { gateway: "gateway", namespace: "default", configMap: "gateway-xds", config: configInput, routes };
}

describe("routes input", () => {
  it("keys every route by <namespace>/<service> and spells out its match and clusters", () => {
    const routes = routesInput(config, table, "gateway");
    expect(routes["pr-12/batch"]).toEqual({
      match: "https://internal.hail.is/pr-12/batch",
      namespace: "pr-12",
      service: "batch",
      clusters: { "pr-12_batch": { upstream: "batch.pr-12.svc.cluster.local:443", weight: 100, version: "" } },
      rateLimit: 200,
      websocket: false,
    });
    expect(routes["pr-14/web"]!.clusters).toEqual({
      "pr-14_web_blue": { upstream: "web-blue.pr-14.svc.cluster.local:443", weight: 70, version: "blue" },
      "pr-14_web_green": { upstream: "web-green.pr-14.svc.cluster.local:443", weight: 30, version: "green" },
    });
    expect(routes["default/www"]).toMatchObject({ match: "https://www.hail.is/", aliases: ["hail.is"] });
  });

  it("converts back to the same routing table", () => {
    expect(tableFromRoutes(config, routesInput(config, table, "gateway"))).toEqual(table);
  });

  it("keeps only production routes for a gateway whose routes resource is deleted", () => {
    expect(Object.keys(productionOnly(config, routesInput(config, table, "gateway"))).every((id) => id.startsWith("default/"))).toBe(true);
  });
});

describe("check", () => {
  it("accepts the routes the program passes", () => {
    expect(checkRoutes(inputs())).toEqual([]);
  });

  it("refuses an id that is not <namespace>/<service> of its route", () => {
    const routes = routesInput(config, table, "gateway");
    routes["pr-12/batch-x"] = routes["pr-12/batch"]!;
    delete routes["pr-12/batch"];
    expect(checkRoutes(inputs(routes))).toEqual([{ key: 'routes["pr-12/batch-x"]', message: "the id must be <namespace>/<service> of its route", value: { namespace: "pr-12", service: "batch" } }]);
  });

  it("refuses weights that do not sum to 100, naming the route", () => {
    const routes = routesInput(config, table, "gateway");
    routes["pr-14/web"]!.clusters["pr-14_web_green"]!.weight = 20;
    expect(checkRoutes(inputs(routes)).map((p) => `${p.key}: ${p.message}`)).toEqual(["pr-14[0] (web).stacks: weights of its versions must sum to 100"]);
  });

  it("refuses a cluster that does not match its route", () => {
    const routes = routesInput(config, table, "gateway");
    routes["pr-12/ci"]!.clusters["pr-12_ci"]!.upstream = "ci.pr-13.svc.cluster.local:443";
    expect(checkRoutes(inputs(routes))[0]!.key).toBe('routes["pr-12/ci"]');
  });

  it("refuses routes that would not fit in a ConfigMap, before anything is written", () => {
    const many: Record<string, string[]> = {};
    for (let i = 0; i < 500; i++) many[`pr-${i}`] = ["batch", "batch-driver", "ci", "memory"];
    const problems = checkRoutes(inputs(routesInput(config, buildRoutingTable(config, many), "gateway")));
    expect(problems.map((p) => p.message).join("\n")).toMatch(/over the 1,048,576 bytes Kubernetes allows in a ConfigMap/);
  });

  it("reports check failures with the input property they concern", () => {
    const bad = { ...inputs(), config: { ...configInput, domain: "Hail.is" } };
    expect(checkFailures(bad)).toEqual([{ property: "config", reason: expect.stringMatching(/^envoy-gateways:domain: must be a lower-case DNS name.*\(got "Hail\.is"\)$/) }]);
    const routes = routesInput(config, table, "gateway");
    routes["pr-14/web"]!.clusters["pr-14_web_green"]!.weight = 20;
    expect(checkFailures(inputs(routes))).toEqual([{ property: "pr-14", reason: "pr-14[0] (web).stacks: weights of its versions must sum to 100 (got [70,20])" }]);
  });
});

describe("diff", () => {
  const written = (i: RoutesInputs): RoutesOutputs => ({ ...i, dataDigest: digest(render(i)) });

  it("reports no change for the same routes", () => {
    expect(diffRoutes(written(inputs()), inputs())).toEqual({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("reports a change when a namespace's routes come or go", () => {
    const fewer = routesInput(config, buildRoutingTable(config, { "pr-12": ["batch"] }), "gateway");
    expect(diffRoutes(written(inputs()), inputs(fewer)).changes).toBe(true);
  });

  it("reports a change after a refresh found the ConfigMap edited out of band, so `up` repairs it", () => {
    const state = { ...written(inputs()), dataDigest: "0".repeat(64), drift: "the ConfigMap was changed outside this program" };
    expect(diffRoutes(state, inputs()).changes).toBe(true);
  });

  it("reports no change for stack config that does not reach the xDS files, and a change for config that does", () => {
    const more = { ...configInput, services: configInput.services.map((s) => (s.name === "batch" ? { ...s, replicas: 9 } : s)) };
    expect(diffRoutes(written(inputs()), { ...inputs(), config: more }).changes).toBe(false);
    const slower = { ...configInput, upstream: { ...configInput.upstream, connectTimeout: "9s" } };
    expect(diffRoutes(written(inputs()), { ...inputs(), config: slower }).changes).toBe(true);
  });

  it("replaces the resource when it should own another ConfigMap", () => {
    expect(diffRoutes(written(inputs()), { ...inputs(), configMap: "other-xds" }).replaces).toEqual(["configMap"]);
  });
});

describe("read back", () => {
  it("recovers the routes a ConfigMap serves", () => {
    const data = render(inputs());
    expect(readRoutesFromXds(config, "gateway", data, inputs().routes)).toEqual({ routes: inputs().routes, problems: [] });
  });

  it("shows a route removed and a cluster edited out of band", () => {
    const data = render(inputs());
    const rds = data["rds.yaml"]!.split("\n").filter((l) => !l.includes('"/pr-12/ci"')).join("\n");
    const cds = data["cds.yaml"]!.replace("batch.pr-12.svc.cluster.local", "evil.example.org");
    const read = readRoutesFromXds(config, "gateway", { "cds.yaml": cds, "rds.yaml": rds }, inputs().routes);
    expect(read.routes["pr-12/ci"]).toBeUndefined();
    expect(read.routes["pr-12/batch"]!.clusters["pr-12_batch"]!.upstream).toBe("evil.example.org:443");
  });
});
