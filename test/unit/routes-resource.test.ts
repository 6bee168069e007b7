// The routes resource: its inputs are facts (the routing part of stack config
// and the discovered dev/PR namespaces), check adds the routes they give,
// diff compares what matters, and drift names the routes a ConfigMap edit
// changed.
import { describe, expect, it } from "vitest";
import {
  checkFailures,
  checkRoutes,
  diffRoutes,
  renderInstant,
  renderRoutes,
  routesInputs,
  writeOptionsOf,
  type RoutesFacts,
  type RoutesOutputs,
} from "../../routes-provider/core.js";
import { routingConfig } from "../../routing/config/schema.js";
import { xdsDrift } from "../../routing/envoy/drift.js";
import { DEV_VIRTUAL_HOST, type Json } from "../../routing/envoy/types.js";
import { parseEnvoyYaml } from "../../routing/envoy/xds.js";
import { routeLines } from "../../routing/routes-view.js";
import { dataDigest } from "../../routing/units.js";
import { eachTest } from "./each-test.js";
import { minutesIntoShift, shiftedService, stackConfig } from "./fixtures.js";

// A cluster per dev/PR Service: the most each namespace adds to the files.
const config = eachTest(() => stackConfig("prod", "per-service"));
const dev = { "pr-12": ["batch", "ci"], "pr-14": [shiftedService("web")] };
const at = minutesIntoShift(30);

function facts(change: Partial<RoutesFacts> = {}): RoutesFacts {
  return {
    gateway: "gateway",
    namespace: "default",
    configMap: "gateway-xds",
    config: routingConfig(config()),
    devNamespaces: dev,
    ...change,
  };
}

/** State as create() leaves it: the facts rendered at `when`. */
function written(f: RoutesFacts, when = at): RoutesOutputs {
  const r = renderRoutes(f, when);
  return { ...f, routes: routeLines(r.routes), dataDigest: dataDigest(r.files.xds), renderedAt: when.toISOString() };
}

describe("the routing config the routes resources are given", () => {
  it("is an allow-list: nothing of the image, resources, TLS secrets, auth, ACME or render settings", () => {
    const routing = routingConfig(config());
    expect(Object.keys(routing).sort()).toEqual([
      "clusterDomain",
      "devNamespaces",
      "edge",
      "gateways",
      "namespace",
      "services",
      "shifts",
      "upstream",
    ]);
    expect(Object.keys(routing.gateways.gateway).sort()).toEqual([
      "authenticateDevRoutes",
      "authenticateMetrics",
      "devHost",
      "domain",
      "replicas",
      "securityHeaders",
      "serveAliases",
    ]);
    // With dev/PR routes on demand too: the memory limit sizes the on-demand cluster in the bootstrap.
    expect(routingConfig(stackConfig("prod", "on-demand")).gateways.gateway.resources).toBeUndefined();
    expect(Object.keys(routing.services[0]!).sort()).toEqual(["aliases", "name", "rateLimit", "websocket"]);
    // A service's own routing choices are facts too, when it makes them.
    const own = routingConfig({
      ...config(),
      services: [
        {
          ...config().services[0]!,
          routeTimeout: "0s",
          retries: 0,
          retryResetMethods: ["GET"],
          authenticateMetrics: false,
          securityHeaders: { "x-frame-options": { value: "DENY", replace: false } },
        },
      ],
    });
    expect(Object.keys(own.services[0]!).sort()).toEqual([
      "aliases",
      "authenticateMetrics",
      "name",
      "rateLimit",
      "retries",
      "retryResetMethods",
      "routeTimeout",
      "securityHeaders",
      "websocket",
    ]);
    expect(Object.keys(routing.upstream).sort()).toEqual(Object.keys(config().upstream).sort());
    const text = JSON.stringify(routing);
    for (const leaked of [
      config().envoyImage,
      config().gateways.gateway.tls.serverSecret,
      config().gateways.gateway.resources.requests.memory,
      '"cpu"',
      '"requests"',
      config().auth.pathPrefix,
    ]) {
      expect(text).not.toContain(leaked);
    }
  });

  it("does not change when only a Deployment's settings change, with dev/PR routes per Service or on demand", () => {
    const bigger = {
      ...config(),
      services: config().services.map((s) => ({ ...s, replicas: s.replicas + 5 })),
      gateways: {
        ...config().gateways,
        gateway: {
          ...config().gateways.gateway,
          maxReplicas: 50,
          resources: { ...config().gateways.gateway.resources, limits: { cpu: "4", memory: "8Gi" } },
        },
      },
    };
    expect(routingConfig(bigger)).toEqual(routingConfig(config()));
    const onDemand = { ...bigger, devNamespaces: { ...bigger.devNamespaces, clusters: "on-demand" as const } };
    const onDemandBefore = {
      ...config(),
      devNamespaces: { ...config().devNamespaces, clusters: "on-demand" as const },
    };
    expect(routingConfig(onDemand)).toEqual(routingConfig(onDemandBefore));
  });
});

describe("the inputs of a routes resource (one builder for the program and sync-routes)", () => {
  // As sync-routes has it: a resource's outputs in state, more than the wiring.
  const inState = { ...written(facts()), gateway: "internal-gateway" as const, configMap: "internal-gateway-xds" };

  it("takes only the wiring of its target, the routing part of the stack config, and the namespaces", () => {
    const given = routesInputs(inState, config(), dev);
    expect(given).toEqual({
      gateway: "internal-gateway",
      namespace: "default",
      configMap: "internal-gateway-xds",
      config: routingConfig(config()),
      devNamespaces: dev,
    });
    expect(Object.keys(given)).toEqual(["gateway", "namespace", "configMap", "config", "devNamespaces"]);
    // The allow-list, not the whole stack config: nothing of the Deployments or secrets.
    expect(given.config).not.toHaveProperty("envoyImage");
  });

  it("gives the kubeconfig only when there is one", () => {
    expect(routesInputs(inState, config(), dev, { kubeconfig: "apiVersion: v1" }).kubeconfig).toBe("apiVersion: v1");
    expect(routesInputs(inState, config(), dev, { kubeconfig: undefined })).not.toHaveProperty("kubeconfig");
  });

  it("gives each gateway what a recorded sync wrote into its own ConfigMap, and nothing outside a record", () => {
    const sync = {
      renderedAt: "2026-11-30T10:45:00.000Z",
      written: { gateway: "a".repeat(64), "internal-gateway": "b".repeat(64) },
    };
    expect(routesInputs(inState, config(), dev, { sync }).syncWrite).toEqual({
      renderedAt: "2026-11-30T10:45:00.000Z",
      digest: "b".repeat(64),
    });
    expect(routesInputs({ ...inState, gateway: "gateway" }, config(), dev, { sync }).syncWrite!.digest).toBe(
      "a".repeat(64),
    );
    // A gateway the sync did not write gets no syncWrite (so no write guard and no instant of another gateway's).
    expect(
      routesInputs(inState, config(), dev, { sync: { ...sync, written: { gateway: "a".repeat(64) } } }),
    ).not.toHaveProperty("syncWrite");
    expect(routesInputs(inState, config(), dev)).not.toHaveProperty("syncWrite");
  });
});

describe("what a recorded sync wrote (syncWrite)", () => {
  const syncWrite = { renderedAt: minutesIntoShift(45).toISOString(), digest: "c".repeat(64) };

  it("sets the instant check, diff and write render at; without it, now", () => {
    expect(renderInstant({ syncWrite })).toEqual(minutesIntoShift(45));
    const before = Date.now();
    const now = renderInstant({}).getTime();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });

  it("makes the write go only over the digest the sync left", () => {
    expect(writeOptionsOf({ syncWrite })).toEqual({ onlyOver: "c".repeat(64) });
    expect(writeOptionsOf({})).toEqual({});
  });

  it("check renders at the sync's instant and keeps it in the inputs; without it, renders now and adds none", () => {
    const { inputs } = checkRoutes({ ...facts(), syncWrite });
    expect(inputs!.syncWrite).toEqual(syncWrite);
    expect(inputs!.routes["pr-14/web"]).toContain("(pr-14_web_green, version green, 45%)");
    // Now is after the shift's end: all of it on green.
    const plain = checkRoutes(facts()).inputs!;
    expect(plain).not.toHaveProperty("syncWrite");
    expect(plain.routes["pr-14/web"]).toContain("(pr-14_web_green, version green, 100%)");
  });

  it("diff renders at the sync's instant, and what a sync wrote is no change by itself", () => {
    const state = written(facts(), minutesIntoShift(45));
    const at45 = checkRoutes({ ...facts(), syncWrite }).inputs!;
    expect(diffRoutes(state, at45).changes).toBe(false);
    // The same inputs rendered now (the shift has ended) are not what was written.
    expect(diffRoutes(state, { ...at45, syncWrite: undefined }).changes).toBe(true);
    expect(diffRoutes(state, { ...at45, syncWrite: { ...syncWrite, digest: "d".repeat(64) } }).changes).toBe(false);
  });
});

describe("check", () => {
  it("adds the routes the facts give, keyed by <namespace>/<service>, a line each with its match and clusters", () => {
    const { inputs, problems } = checkRoutes(facts(), at);
    expect(problems).toEqual([]);
    expect(inputs!.devNamespaces).toEqual(dev);
    expect(inputs!.routes["pr-12/batch"]).toBe(
      "https://internal.hail.is/pr-12/batch -> batch.pr-12.svc.cluster.local:443 (pr-12_batch); rate limit 200/s",
    );
    expect(inputs!.routes["pr-14/web"]).toMatch(
      /^https:\/\/internal\.hail\.is\/pr-14\/web -> web-blue\.pr-14\.svc\.cluster\.local:443 \(pr-14_web_blue, version blue, 70%\) \+ web-green\.pr-14\.svc\.cluster\.local:443 \(pr-14_web_green, version green, 30%\); rate limit 200\/s; linear shift blue -> green from /,
    );
    expect(inputs!.routes["default/www"]).toMatch(/^https:\/\/www\.hail\.is\/ -> .*; aliases hail\.is(;|$)/);
  });

  it("gives aliases only to a gateway that serves them", () => {
    const { inputs } = checkRoutes(facts({ gateway: "internal-gateway", configMap: "internal-gateway-xds" }), at);
    expect(inputs!.routes["default/www"]).toMatch(/^https:\/\/www\.hail\/ -> /);
    expect(inputs!.routes["default/www"]).not.toContain("aliases");
  });

  it("refuses a dev service the routing table refuses, on devNamespaces, naming it", () => {
    const { problems } = checkRoutes(
      facts({
        devNamespaces: {
          "pr-12": [
            {
              name: "web",
              versions: [
                { version: "blue", service: "web-blue" },
                { version: "green", service: "web-green" },
              ],
            },
          ],
        },
      }),
      at,
    );
    expect(checkFailures(problems)).toEqual([
      {
        property: "devNamespaces",
        reason:
          "pr-12[0] (web).versions: web has 2 versions (blue, green) but no traffic shift says how to split traffic between them",
      },
    ]);
  });

  it("refuses bad routing config on config, with the key and the value", () => {
    const { problems } = checkRoutes(
      facts({ config: { ...routingConfig(config()), clusterDomain: "Cluster.Local" } }),
      at,
    );
    expect(checkFailures(problems)).toEqual([
      {
        property: "config",
        reason: expect.stringMatching(
          /^envoy-gateways:clusterDomain: must be a lower-case DNS name.*\(got "Cluster\.Local"\)$/,
        ),
      },
    ]);
  });

  it("puts each problem of the table on the input it is in by its source, not by how its key reads", () => {
    // A namespace whose name reads like a config key is still a namespace.
    const { problems } = checkRoutes(
      facts({ devNamespaces: { "envoy-gateways:services": ["web"], "pr-1": ["Web"] } }),
      at,
    );
    expect(problems.map((p) => [p.property, p.problem.source, p.problem.key])).toEqual([
      ["devNamespaces", "namespaces", "envoy-gateways:services"],
      ["devNamespaces", "namespaces", "pr-1[0]"],
    ]);
  });

  it("refuses routes that would not fit in a ConfigMap, before anything is written", () => {
    const many: Record<string, string[]> = {};
    for (let i = 0; i < 500; i++) many[`pr-${i}`] = ["batch", "batch-driver", "ci", "memory"];
    const { problems } = checkRoutes(facts({ devNamespaces: many }), at);
    expect(problems.map((p) => p.problem.message).join("\n")).toMatch(
      /over the 1,048,576 bytes Kubernetes allows in a ConfigMap/,
    );
    expect(problems.map((p) => [p.property, p.problem.source, p.problem.place])).toEqual([
      ["config", "documents", { gateway: "gateway" }],
    ]);
  });
});

describe("diff", () => {
  const news = (f = facts(), when = at) => checkRoutes(f, when).inputs!;

  it("reports no change for the facts as the engine hands state back: every mapping's keys sorted", () => {
    // Security headers are a mapping whose defaults are not in name order: the files must not follow the keys' order.
    const sorted = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sorted)
        : v && typeof v === "object"
          ? Object.fromEntries(
              Object.keys(v)
                .sort()
                .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
            )
          : v;
    const f = facts({ devNamespaces: { "pr-12": ["batch"] } });
    expect(Object.keys(f.config.gateways.gateway.securityHeaders)).not.toEqual(
      Object.keys(f.config.gateways.gateway.securityHeaders).sort(),
    );
    const state = sorted(written(f)) as RoutesOutputs;
    expect(diffRoutes(state, { ...f, routes: state.routes }, at).changes).toBe(false);
    expect(dataDigest(renderRoutes(state, at).files.xds)).toBe(state.dataDigest);
  });

  it("reports no change for the same facts at the same weights", () => {
    expect(diffRoutes(written(facts()), news(), at)).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
  });

  it("reports a change when a namespace's routes come or go", () => {
    expect(diffRoutes(written(facts()), news(facts({ devNamespaces: { "pr-12": ["batch"] } })), at).changes).toBe(true);
  });

  it("reports a change when a shift has moved the weights since they were written", () => {
    expect(
      diffRoutes(written(facts(), minutesIntoShift(30)), news(facts(), minutesIntoShift(31)), minutesIntoShift(31))
        .changes,
    ).toBe(true);
  });

  it("reports a change for routing config that reaches the xDS files", () => {
    const slower = {
      ...routingConfig(config()),
      upstream: { ...routingConfig(config()).upstream, connectTimeout: "9s" },
    };
    expect(diffRoutes(written(facts()), news(facts({ config: slower })), at).changes).toBe(true);
  });

  it("reports a change when what the facts render is not what was written (a new version of the translation)", () => {
    expect(diffRoutes({ ...written(facts()), dataDigest: "0".repeat(64) }, news(), at).changes).toBe(true);
  });

  it("reports a change after a refresh found the ConfigMap edited out of band, so `up` repairs it", () => {
    expect(
      diffRoutes({ ...written(facts()), drift: { "pr-12/ci": "route missing or changed" } }, news(), at).changes,
    ).toBe(true);
  });

  it("updates state written before the inputs were facts, without replacing the resource", () => {
    const { devNamespaces: _, ...old } = written(facts());
    expect(diffRoutes(old, news(), at)).toEqual({ changes: true, replaces: [], deleteBeforeReplace: false });
  });

  it("replaces the resource when it should own another ConfigMap", () => {
    expect(diffRoutes(written(facts()), news(facts({ configMap: "other-xds" })), at).replaces).toEqual(["configMap"]);
  });
});

describe("drift", () => {
  const rendered = eachTest(() => renderRoutes(facts(), at));
  const parsed = (data: Record<string, string>) => ({
    cds: parseEnvoyYaml(data["cds.yaml"]!),
    rds: parseEnvoyYaml(data["rds.yaml"]!),
  });

  it("finds none in what was written", () => {
    expect(xdsDrift(rendered().table, rendered().files.documents, parsed(rendered().files.xds))).toEqual({});
  });

  it("finds none with on-demand routes, whose cluster is the bootstrap's, and names one in cds.yaml as not written", () => {
    const onDemand = renderRoutes(facts({ config: routingConfig(stackConfig("prod", "on-demand")) }), at);
    const { xds } = onDemand.files;
    expect(onDemand.table.dev.filter((s) => s.versions[0]!.cluster === "dev-on-demand").length).toBeGreaterThan(1);
    expect(xdsDrift(onDemand.table, onDemand.files.documents, parsed(xds))).toEqual({});
    // As a release that kept the on-demand cluster in cds.yaml wrote it.
    const found = parsed(xds) as { cds: { resources: Json[] }; rds: unknown };
    found.cds.resources.push({ "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", name: "dev-on-demand" });
    expect(xdsDrift(onDemand.table, onDemand.files.documents, found)).toEqual({
      "(not written)": "cluster dev-on-demand",
    });
  });

  it("names every dev route when what their virtual host gives them all is edited, and none when only the order of routes changed", () => {
    const onDemand = renderRoutes(facts({ config: routingConfig(stackConfig("prod", "on-demand")) }), at);
    const found = parsed(onDemand.files.xds) as { cds: unknown; rds: { resources: Json[] } };
    const hosts = found.rds.resources[0]!.virtual_hosts as Json[];
    const dev = hosts.find((h) => h.name === DEV_VIRTUAL_HOST)!;
    (dev.routes as Json[]).reverse();
    expect(xdsDrift(onDemand.table, onDemand.files.documents, found)).toEqual({});
    // Out of band, the dev routes lose the per-filter config that sets their upstream host.
    delete dev.typed_per_filter_config;
    const drift = xdsDrift(onDemand.table, onDemand.files.documents, found);
    expect(onDemand.table.dev.length).toBeGreaterThan(1);
    expect(drift).toEqual(
      Object.fromEntries(onDemand.table.dev.map((s) => [s.id, `virtual host ${DEV_VIRTUAL_HOST} changed`])),
    );
  });

  it("finds a route written among copies of it under its name, and names only the edited copy", () => {
    const found = parsed(rendered().files.xds) as { cds: unknown; rds: { resources: Json[] } };
    const dev = (found.rds.resources[0]!.virtual_hosts as Json[]).find((h) => h.name === DEV_VIRTUAL_HOST)!;
    const routes = dev.routes as Json[];
    const first = routes[0]!;
    // An exact copy before the route and an edited copy last, both under its name:
    // the route is still found although the last copy under its name differs.
    routes.unshift(structuredClone(first));
    routes.push({ ...first, match: { path_separated_prefix: "/edited" } });
    expect(xdsDrift(rendered().table, rendered().files.documents, found)).toEqual({
      "(not written)": 'route {"path_separated_prefix":"/edited"}',
    });
  });

  it("names the routes a removed route and an edited cluster change, and what was never written", () => {
    const data = rendered().files.xds;
    const rds = data["rds.yaml"]!.split("\n")
      .filter((l) => !l.includes('"/pr-12/ci"'))
      .join("\n");
    const cds = data["cds.yaml"]!.replace("batch.pr-12.svc.cluster.local", "evil.example.org").replace(
      '"name":"pr-14_web_green"',
      '"name":"pr-14_web_red"',
    );
    expect(
      xdsDrift(rendered().table, rendered().files.documents, parsed({ "cds.yaml": cds, "rds.yaml": rds })),
    ).toEqual({
      "pr-12/batch": "cluster pr-12_batch changed",
      "pr-12/ci": "route missing or changed",
      "pr-14/web": "cluster pr-14_web_green missing",
      "(not written)": "cluster pr-14_web_red",
    });
  });

  it("compares only the files it could read", () => {
    const data = rendered().files.xds;
    const cds = data["cds.yaml"]!.replace("batch.pr-12.svc.cluster.local", "evil.example.org");
    expect(
      xdsDrift(rendered().table, rendered().files.documents, { cds: parseEnvoyYaml(cds), rds: undefined }),
    ).toEqual({ "pr-12/batch": "cluster pr-12_batch changed" });
  });
});
