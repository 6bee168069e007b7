// Rendering refuses, before anything is written, documents Envoy would not
// load (each problem once, with the config key behind it) and files that
// would not fit in a ConfigMap; drift names what an edit of a ConfigMap changed.
import { describe, expect, it } from "vitest";
import { InputError } from "../../routing/config/errors.js";
import { parseStackConfig } from "../../routing/config/load.js";
import { routingConfig, type StackConfig } from "../../routing/config/schema.js";
import { xdsDrift } from "../../routing/envoy/drift.js";
import { explainDocumentProblems } from "../../routing/envoy/explain.js";
import { translateXds } from "../../routing/envoy/gateway.js";
import { DEV_VIRTUAL_HOST, type Json } from "../../routing/envoy/types.js";
import { parseEnvoyYaml, toXdsYaml } from "../../routing/envoy/xds.js";
import { configMapBytes, renderGateway, renderGateways, renderXds, translateXdsFiles } from "../../routing/render.js";
import { buildRoutingTable } from "../../routing/table.js";
import { documentProblem } from "../../routing/validation/index.js";
import { minimalRaw, minutesIntoShift, shiftedService } from "./fixtures.js";

/** A stack config as parsed, with a value the config checks would have refused (the validator is the net under them). */
function unchecked(change: (c: StackConfig) => StackConfig): StackConfig {
  return change(parseStackConfig(minimalRaw()));
}
const zeroConnectTimeout = () => unchecked((c) => ({ ...c, upstream: { ...c.upstream, connectTimeout: "0s" } }));
function problems(f: () => unknown): { subject: string; lines: string[] } {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return {
      subject: (e as InputError).subject,
      lines: (e as InputError).problems.map((p) => `${p.key}: ${p.message}`),
    };
  }
  throw new Error("rendered");
}

describe("rendering", () => {
  it("refuses documents Envoy would not load, each problem once, with the config key that set the field", () => {
    const config = zeroConnectTimeout();
    const table = buildRoutingTable(config, { "pr-1": ["ci"] });
    const expected = [
      'gateway/cds.yaml cluster "default_www" (resources[0]): connect_timeout: must be greater than 0s (got 0s) [set by envoy-gateways:upstream.connectTimeout] (the same in 3 more: default_batch, default_notebook, pr-1_ci)',
    ];
    expect(problems(() => renderXds(routingConfig(config), table, "gateway"))).toEqual({
      subject: "Envoy documents of gateway",
      lines: expected,
    });
    const gateway = problems(() => renderGateway(config, table, "gateway"));
    expect(gateway.subject).toBe("Envoy documents of gateway");
    expect(gateway.lines).toContain(expected[0]);
    expect(
      gateway.lines.some(
        (l) => l.startsWith("gateway/envoy.yaml static cluster") || l.startsWith("gateway/envoy.yaml:"),
      ),
    ).toBe(true);
    const both = problems(() => renderGateways(config, table));
    expect(both.subject).toBe("Envoy documents");
    expect(both.lines.filter((l) => l.includes("cds.yaml")).map((l) => l.slice(0, l.indexOf("/")))).toEqual([
      "gateway",
      "internal-gateway",
    ]);
  });

  it("translates without validating, for a digest, and validates what it renders for writing", () => {
    const config = routingConfig(zeroConnectTimeout());
    const table = buildRoutingTable(config);
    const files = translateXdsFiles(config, table, "internal-gateway");
    expect(files.gateway).toBe("internal-gateway");
    expect(Object.keys(files.xds)).toEqual(["cds.yaml", "rds.yaml"]);
    expect(files.xds["cds.yaml"]).toBe(toXdsYaml(files.documents.cds));
    expect(files.documents).toEqual(translateXds(config, table, "internal-gateway"));
    const good = routingConfig(parseStackConfig(minimalRaw()));
    expect(renderXds(good, buildRoutingTable(good), "gateway").xds).toEqual(
      translateXdsFiles(good, buildRoutingTable(good), "gateway").xds,
    );
  });

  it("gives each gateway its bootstrap and SDS files next to the xDS files", () => {
    const config = parseStackConfig(minimalRaw());
    const [g] = renderGateways(config, buildRoutingTable(config));
    expect(Object.keys(g!.bootstrap).sort()).toEqual([
      "envoy.yaml",
      "sds-server-cert.yaml",
      "sds-upstream-ca.yaml",
      "sds-upstream-client-cert.yaml",
    ]);
    expect(parseEnvoyYaml(g!.bootstrap["envoy.yaml"]!)).toEqual(JSON.parse(JSON.stringify(g!.documents.bootstrap)));
    expect(parseEnvoyYaml(g!.bootstrap["sds-upstream-ca.yaml"]!)).toEqual(g!.documents.sds["sds-upstream-ca.yaml"]);
  });

  it("counts a ConfigMap's bytes as Kubernetes does: every key and value, in UTF-8", () => {
    expect(configMapBytes({})).toBe(0);
    expect(configMapBytes({ "a.yaml": "héllo", b: "" })).toBe(6 + 6 + 1);
  });
});

describe("the validator's problems, explained", () => {
  const table = buildRoutingTable(parseStackConfig(minimalRaw()), { "pr-1": ["ci"] });
  /** A problem of a cluster's field, as the validator makes it. */
  const problem = (
    field: string,
    cluster: string,
    index = 0,
    gateway = "gateway",
    file = "cds.yaml",
    kind = "cluster",
  ) => documentProblem({ gateway, file, resource: { kind, name: cluster, index }, field }, `${field}: x`);
  const one = (field: string, cluster = "default_www") =>
    explainDocumentProblems([problem(field, cluster)], table)[0]!.message;

  it("name the config key behind each field the translation sets from it", () => {
    expect(one("connect_timeout")).toBe(
      "connect_timeout: x [set by envoy-gateways:upstream.connectTimeout, the service www (envoy-gateways:services)]",
    );
    expect(one("cluster_type.<DnsCluster>.dns_refresh_rate")).toContain(
      "[set by envoy-gateways:upstream.dnsRefreshRate,",
    );
    expect(one("cluster_type.<DnsCluster>.dns_lookup_family")).toContain(
      "[set by envoy-gateways:upstream.dnsLookupFamily,",
    );
    expect(one("circuit_breakers.thresholds[0].max_requests")).toContain(
      "[set by envoy-gateways:upstream.maxConnections, maxPendingRequests, maxRequests,",
    );
    expect(one("per_connection_buffer_limit_bytes")).toContain("[set by envoy-gateways:edge.bufferLimitBytes,");
    expect(one('typed_extension_protocol_options["x"].common_http_protocol_options.idle_timeout')).toContain(
      "[set by envoy-gateways:upstream.idleTimeout,",
    );
    expect(one('typed_extension_protocol_options["x"].explicit_http_config')).toContain(
      "[set by envoy-gateways:upstream.protocol,",
    );
    expect(one("virtual_hosts[0].routes[0].route.timeout")).toContain("[set by envoy-gateways:upstream.routeTimeout,");
    expect(one("virtual_hosts[0].routes[0].route.idle_timeout")).toContain(
      "[set by envoy-gateways:edge.websocketIdleTimeout,",
    );
    expect(one("name", "pr-1_ci")).toBe("name: x [set by the dev/PR service pr-1/ci]");
    expect(one("name", "unknown")).toBe("name: x");
  });

  it("say a problem shared by many resources once, naming up to three more", () => {
    const keyed = (names: string[]) => names.map((n, i) => problem("lb_policy", n, i));
    expect(explainDocumentProblems(keyed(["a", "b"]), table)[0]!.message).toBe("lb_policy: x (the same in 1 more: b)");
    expect(explainDocumentProblems(keyed(["a", "b", "c", "d"]), table)[0]!.message).toBe(
      "lb_policy: x (the same in 3 more: b, c, d)",
    );
    expect(explainDocumentProblems(keyed(["a", "b", "c", "d", "e"]), table)[0]!.message).toBe(
      "lb_policy: x (the same in 4 more: b, c, d, ...)",
    );
    // Other messages, other files and kinds of resource are separate problems.
    const mixed = [
      ...keyed(["a"]),
      problem("other", "b", 1),
      problem("lb_policy", "a", 0, "gateway", "rds.yaml", "route configuration"),
      problem("lb_policy", "a", 0, "internal-gateway"),
      problem("lb_policy", "a", 0, "gateway", "cds.yaml", "secret"),
      problem("lb_policy", "a", 0, "gateway", "sds.yaml"),
    ];
    expect(explainDocumentProblems(mixed, table)).toHaveLength(6);
    // Problems without a resource are grouped by their key.
    expect(
      explainDocumentProblems(
        [
          documentProblem({ gateway: "gateway", file: "envoy.yaml" }, "m"),
          documentProblem({ gateway: "gateway", file: "envoy.yaml" }, "m"),
          documentProblem({ gateway: "gateway", file: "other.yaml" }, "m"),
        ],
        table,
      ),
    ).toEqual([
      {
        key: "gateway/envoy.yaml",
        source: "documents",
        place: { gateway: "gateway", file: "envoy.yaml" },
        message: "m",
      },
      {
        key: "gateway/other.yaml",
        source: "documents",
        place: { gateway: "gateway", file: "other.yaml" },
        message: "m",
      },
    ]);
  });
});

describe("drift, in detail", () => {
  const config = routingConfig(parseStackConfig(minimalRaw()));
  const table = buildRoutingTable(
    config,
    { "pr-1": ["ci", shiftedService("web")] },
    "dev namespaces",
    minutesIntoShift(10),
  );
  const docs = translateXds(config, table, "gateway");
  const copy = () => ({ cds: JSON.parse(JSON.stringify(docs.cds)), rds: JSON.parse(JSON.stringify(docs.rds)) });

  it("names production virtual hosts removed or edited, and those never written", () => {
    const found = copy();
    const hosts = found.rds.resources[0].virtual_hosts as { name: string; domains: string[] }[];
    found.rds.resources[0].virtual_hosts = hosts
      .filter((h) => h.name !== "batch")
      .map((h) => (h.name === "www" ? { ...h, domains: ["evil.example.org"] } : h));
    found.rds.resources[0].virtual_hosts.push({ name: "extra", domains: ["x"] });
    expect(xdsDrift(table, docs, found)).toEqual({
      "default/www": "virtual host www changed",
      "default/batch": "virtual host batch missing",
      "(not written)": "virtual host extra",
    });
  });

  it("names dev routes removed or edited, and routes never written", () => {
    const found = copy();
    const dev = found.rds.resources[0].virtual_hosts.find((h: { name: string }) => h.name === DEV_VIRTUAL_HOST);
    dev.routes[1].route.weighted_clusters.clusters[0].weight = 50;
    dev.routes.push({ match: { path_separated_prefix: "/pr-9/x" }, route: { cluster: "pr-9_x" } });
    // The edited route is not what was written either.
    expect(xdsDrift(table, docs, found)).toEqual({
      "pr-1/web": "route missing or changed",
      "(not written)": 'route {"path_separated_prefix":"/pr-1/web"}; route {"path_separated_prefix":"/pr-9/x"}',
    });
    found.rds.resources[0].virtual_hosts = found.rds.resources[0].virtual_hosts.filter(
      (h: { name: string }) => h.name !== DEV_VIRTUAL_HOST,
    );
    expect(xdsDrift(table, docs, found)).toEqual({
      "pr-1/ci": "route missing or changed",
      "pr-1/web": "route missing or changed",
    });
  });

  it("knows the dev virtual host by the name the translation gives it, with dev routes or without", () => {
    expect(docs.rds.resources[0]!.virtual_hosts as Json[]).toContainEqual(
      expect.objectContaining({ name: DEV_VIRTUAL_HOST, domains: [config.gateways.gateway.devHost] }),
    );
    // Without dev routes nothing is written there: a dev virtual host found is named, and each of its routes.
    const productionOnly = buildRoutingTable(config, {}, "dev namespaces", minutesIntoShift(10));
    const expected = translateXds(config, productionOnly, "gateway");
    const found = copy();
    const dev = found.rds.resources[0].virtual_hosts.find((h: { name: string }) => h.name === DEV_VIRTUAL_HOST);
    found.rds.resources[0].virtual_hosts = [
      ...(expected.rds.resources[0]!.virtual_hosts as Json[]),
      { ...dev, routes: dev.routes.slice(0, 1) },
    ];
    expect(xdsDrift(productionOnly, expected, { cds: expected.cds, rds: found.rds })).toEqual({
      "(not written)": `route {"path_separated_prefix":"/pr-1/ci"}; virtual host ${DEV_VIRTUAL_HOST}`,
    });
  });

  it("puts every difference of one route on one line, and reads files that are not xDS documents as empty", () => {
    const found = copy();
    found.cds.resources = found.cds.resources.filter(
      (c: { name: string }) => c.name !== "pr-1_web_blue" && c.name !== "pr-1_web_green",
    );
    expect(xdsDrift(table, docs, { cds: found.cds, rds: found.rds })).toEqual({
      "pr-1/web": "cluster pr-1_web_blue missing; cluster pr-1_web_green missing",
    });
    const everything = Object.keys(xdsDrift(table, docs, { cds: null, rds: { resources: "x" } }));
    expect(everything).toEqual(["default/www", "default/batch", "default/notebook", "pr-1/ci", "pr-1/web"]);
    expect(
      xdsDrift(table, docs, { cds: { resources: [null, 3, { name: 7 }, ...found.cds.resources] }, rds: undefined }),
    ).toEqual({ "pr-1/web": "cluster pr-1_web_blue missing; cluster pr-1_web_green missing" });
    expect(xdsDrift(table, docs, { cds: undefined, rds: undefined })).toEqual({});
  });
});
