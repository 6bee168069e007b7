// The routes previews and the stack outputs show: one entry per route with
// its match, clusters and weights, and one line per host.
import { describe, expect, it } from "vitest";
import { parseStackConfig } from "../../routing/config/load.js";
import { routingConfig } from "../../routing/config/schema.js";
import { gatewayPodLabels, routingLabels } from "../../routing/labels.js";
import { clusterName, isDnsLabel, routeId, serviceHost, versionServiceName } from "../../routing/names.js";
import {
  describeRoutes,
  routeLine,
  routeLines,
  routesView,
  routeTarget,
  type RouteEntry,
} from "../../routing/routes-view.js";
import { buildRoutingTable } from "../../routing/table.js";
import { minimalRaw, minutesIntoShift, shiftedService, withValue } from "./fixtures.js";

describe("the routes view", () => {
  const config = routingConfig(
    parseStackConfig(withValue(withValue(minimalRaw(), "clusterDomain", "corp.local"), "namespace", "apps")),
  );
  const table = buildRoutingTable(
    config,
    { "pr-1": ["ci", shiftedService("web")] },
    "dev namespaces",
    minutesIntoShift(25),
  );

  it("keys each route by its id, with its match, clusters, rate limit, websocket and aliases as the gateway serves them", () => {
    const view = routesView(config, table, "gateway");
    expect(Object.keys(view)).toEqual(["apps/www", "apps/batch", "apps/notebook", "pr-1/ci", "pr-1/web"]);
    expect(view["apps/www"]).toEqual({
      match: "https://www.example.org/",
      namespace: "apps",
      service: "www",
      clusters: { apps_www: { upstream: "www.apps.svc.corp.local:443", weight: 100, version: "" } },
      rateLimit: 300,
      websocket: false,
      aliases: ["example.org"],
    });
    expect(view["apps/notebook"]).toEqual({
      match: "https://notebook.example.org/",
      namespace: "apps",
      service: "notebook",
      clusters: { apps_notebook: { upstream: "notebook.apps.svc.corp.local:443", weight: 100, version: "" } },
      websocket: true,
    });
    expect(view["pr-1/web"]).toEqual({
      match: "https://internal.example.org/pr-1/web",
      namespace: "pr-1",
      service: "web",
      clusters: {
        "pr-1_web_blue": { upstream: "web-blue.pr-1.svc.corp.local:443", weight: 75, version: "blue" },
        "pr-1_web_green": { upstream: "web-green.pr-1.svc.corp.local:443", weight: 25, version: "green" },
      },
      rateLimit: 200,
      websocket: false,
      shift: { from: "blue", to: "green", policy: "linear", start: "2026-11-30T10:00:00.000Z", duration: "100m" },
    });
    const internal = routesView(config, table, "internal-gateway");
    expect(internal["apps/www"]).not.toHaveProperty("aliases");
    expect(internal["pr-1/ci"]!.match).toBe("https://internal.example.internal/pr-1/ci");
  });

  it("are copies: changing a view changes neither the table nor another view", () => {
    const view = routesView(config, table, "gateway");
    view["apps/www"]!.aliases!.push("x.example.org");
    view["pr-1/web"]!.shift!.from = "red";
    expect(routesView(config, table, "gateway")["apps/www"]!.aliases).toEqual(["example.org"]);
    expect(table.dev[1]!.shift!.from).toBe("blue");
  });

  it("lists each route and alias with where it goes, weights only for several versions", () => {
    const view = routesView(config, table, "gateway");
    expect(describeRoutes(view)).toEqual([
      "https://www.example.org/ -> www.apps.svc.corp.local:443 (apps_www)",
      "https://example.org/ -> www.apps.svc.corp.local:443 (apps_www)",
      "https://batch.example.org/ -> batch.apps.svc.corp.local:443 (apps_batch)",
      "https://notebook.example.org/ -> notebook.apps.svc.corp.local:443 (apps_notebook)",
      "https://internal.example.org/pr-1/ci -> ci.pr-1.svc.corp.local:443 (pr-1_ci)",
      "https://internal.example.org/pr-1/web -> web-blue.pr-1.svc.corp.local:443 (pr-1_web_blue, version blue, 75%) + web-green.pr-1.svc.corp.local:443 (pr-1_web_green, version green, 25%)",
    ]);
    expect(routeTarget(view["pr-1/ci"]!)).toBe("ci.pr-1.svc.corp.local:443 (pr-1_ci)");
  });
  it("records each route as one line with everything it has: target, aliases, websocket, rate limit and shift", () => {
    const view = routesView(config, table, "gateway");
    expect(routeLines(view)).toEqual({
      "apps/www":
        "https://www.example.org/ -> www.apps.svc.corp.local:443 (apps_www); aliases example.org; rate limit 300/s",
      "apps/batch": "https://batch.example.org/ -> batch.apps.svc.corp.local:443 (apps_batch); rate limit 100/s",
      "apps/notebook": "https://notebook.example.org/ -> notebook.apps.svc.corp.local:443 (apps_notebook); websocket",
      "pr-1/ci": "https://internal.example.org/pr-1/ci -> ci.pr-1.svc.corp.local:443 (pr-1_ci); rate limit 200/s",
      "pr-1/web":
        "https://internal.example.org/pr-1/web -> web-blue.pr-1.svc.corp.local:443 (pr-1_web_blue, version blue, 75%) + web-green.pr-1.svc.corp.local:443 (pr-1_web_green, version green, 25%); rate limit 200/s; linear shift blue -> green from 2026-11-30T10:00:00.000Z over 100m",
    });
  });

  it("gives a route a different line when anything of it changes (the record misses no change)", () => {
    const web = routesView(config, table, "gateway")["pr-1/web"]!;
    const edits: ((r: RouteEntry) => void)[] = [
      (r) => (r.match = "https://internal.example.org/pr-2/web"),
      (r) => (r.clusters["pr-1_web_blue"]!.upstream = "web-red.pr-1.svc.corp.local:443"),
      (r) => (r.clusters["pr-1_web_blue"]!.weight = 80),
      (r) => (r.clusters["pr-1_web_blue"]!.version = "red"),
      (r) => delete r.clusters["pr-1_web_green"],
      (r) => (r.rateLimit = 201),
      (r) => delete r.rateLimit,
      (r) => (r.websocket = true),
      (r) => (r.aliases = ["web.example.org", "w.example.org"]),
      (r) => (r.shift!.policy = "atomic"),
      (r) => (r.shift!.from = "green"),
      (r) => (r.shift!.to = "blue"),
      (r) => (r.shift!.start = "2026-11-30T11:00:00.000Z"),
      (r) => (r.shift!.duration = "10m"),
      (r) => (r.shift!.reversed = "2026-11-30T10:30:00.000Z"),
      (r) => delete r.shift,
    ];
    const lines = edits.map((edit) => {
      const r = structuredClone(web);
      edit(r);
      return routeLine(r);
    });
    expect(new Set([routeLine(web), ...lines]).size).toBe(edits.length + 1);
    expect(lines[14]).toMatch(/over 100m, reversed at 2026-11-30T10:30:00.000Z$/);
    expect(lines[8]).toContain("; aliases web.example.org w.example.org;");
  });
});

describe("names", () => {
  it("of clusters, Services, hosts and routes", () => {
    expect(clusterName("pr-1", "web")).toBe("pr-1_web");
    expect(clusterName("pr-1", "web", "")).toBe("pr-1_web");
    expect(clusterName("pr-1", "web", "v2")).toBe("pr-1_web_v2");
    expect(versionServiceName("web", "v2")).toBe("web-v2");
    expect(serviceHost("web", "pr-1", "cluster.local")).toBe("web.pr-1.svc.cluster.local");
    expect(routeId("pr-1", "web")).toBe("pr-1/web");
  });

  it("that are DNS labels: lower-case letters, digits and -, inside letters or digits, at most 63", () => {
    for (const ok of ["a", "web-1", "1a", "a".repeat(63)]) expect(isDnsLabel(ok), ok).toBe(true);
    for (const bad of ["", "-a", "a-", "A", "a_b", "a.b", "a".repeat(64)]) expect(isDnsLabel(bad), bad).toBe(false);
  });
});

describe("labels", () => {
  it("of a gateway's pods", () => {
    expect(gatewayPodLabels("internal-gateway")).toEqual({
      "app.kubernetes.io/name": "internal-gateway",
      "app.kubernetes.io/component": "gateway",
    });
  });

  it("of a routed Service: the routing facts, the version only when there is one", () => {
    expect(routingLabels({ service: "web", weight: 30, replicas: 4, websocket: true, version: "green" })).toEqual({
      "envoy-gateways.io/service": "web",
      "envoy-gateways.io/port-name": "https",
      "envoy-gateways.io/port": "443",
      "envoy-gateways.io/protocol": "websocket",
      "envoy-gateways.io/weight": "30",
      "envoy-gateways.io/replicas": "4",
      "envoy-gateways.io/version": "green",
    });
    expect(
      routingLabels({ service: "web", weight: 100, replicas: 1, websocket: false, version: "" }),
    ).not.toHaveProperty(["envoy-gateways.io/version"]);
    expect(
      routingLabels({ service: "web", weight: 100, replicas: 1, websocket: false })["envoy-gateways.io/protocol"],
    ).toBe("http");
  });
});
