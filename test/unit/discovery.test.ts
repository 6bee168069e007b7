// Discovery from the lists the API server returns.
import { describe, expect, it } from "vitest";
import { discoverRoutes, type NamespaceObject, type ServiceObject } from "../../routing/discovery.js";
import { routingLabels } from "../../routing/labels.js";
import { buildRoutingTable } from "../../routing/table.js";
import { stackConfig } from "./fixtures.js";

const ns = (name: string, phase = "Active", deleting = false): NamespaceObject => ({
  metadata: { name, ...(deleting ? { deletionTimestamp: "2026-11-30T10:00:00Z" } : {}) },
  status: { phase },
});
const svc = (namespace: string, name: string, labels: Record<string, string>, clusterIP = "None"): ServiceObject => ({
  metadata: { namespace, name, labels },
  spec: { clusterIP, ports: [{ name: "https", port: 443 }] },
});
const routed = (service: string, extra: Partial<Parameters<typeof routingLabels>[0]> = {}) =>
  routingLabels({ service, weight: 100, replicas: 2, websocket: false, ...extra });

describe("discovery", () => {
  it("routes the labelled Services of routed namespaces, grouped by logical service", () => {
    const found = discoverRoutes(
      [ns("pr-1"), ns("pr-2")],
      [
        svc("pr-1", "batch", routed("batch")),
        svc("pr-1", "batch-driver", routed("batch-driver")),
        svc("pr-2", "ws", routed("ws", { websocket: true })),
        svc("other", "x", routed("x")),
      ],
      "default",
    );
    expect(found.devNamespaces).toEqual({
      "pr-1": [
        { name: "batch", versions: [{ version: "", service: "batch" }], websocket: false },
        { name: "batch-driver", versions: [{ version: "", service: "batch-driver" }], websocket: false },
      ],
      "pr-2": [{ name: "ws", versions: [{ version: "", service: "ws" }], websocket: true }],
    });
    expect(found.problems).toEqual([]);
  });

  it("leaves out namespaces that are terminating, being deleted, or the production namespace", () => {
    const found = discoverRoutes(
      [ns("pr-1", "Terminating"), ns("pr-2", "Active", true), ns("default"), ns("pr-3")],
      ["pr-1", "pr-2", "default", "pr-3"].map((n) => svc(n, "batch", routed("batch"))),
      "default",
    );
    expect(Object.keys(found.devNamespaces)).toEqual(["pr-3"]);
  });

  it("splits a service with several versions by the shift annotated on the new version's Service", () => {
    const shift = {
      "envoy-gateways.io/shift-from": "blue",
      "envoy-gateways.io/shift-policy": "linear",
      "envoy-gateways.io/shift-start": "2026-11-30T10:00:00Z",
      "envoy-gateways.io/shift-duration": "10m",
    };
    const green = svc("pr-1", "web-green", routed("web", { version: "green" }));
    green.metadata!.annotations = shift;
    const found = discoverRoutes(
      [ns("pr-1")],
      [green, svc("pr-1", "web-blue", routed("web", { version: "blue" }))],
      "default",
    );
    expect(found.problems).toEqual([]);
    expect(found.devNamespaces["pr-1"]).toEqual([
      {
        name: "web",
        versions: [
          { version: "blue", service: "web-blue" },
          { version: "green", service: "web-green" },
        ],
        websocket: false,
        shifts: [{ from: "blue", to: "green", policy: "linear", start: "2026-11-30T10:00:00Z", duration: "10m" }],
      },
    ]);
    // The facts carry no weights: the routing table takes them from the shift, at the instant it is built.
    const web = buildRoutingTable(
      stackConfig("dev"),
      found.devNamespaces,
      "discovered",
      new Date("2026-11-30T10:01:00Z"),
    ).dev[0]!;
    expect(web.versions.map((v) => [v.cluster, v.weight])).toEqual([
      ["pr-1_web_blue", 90],
      ["pr-1_web_green", 10],
    ]);
  });

  it("leaves out a shifted service whose annotations are wrong, naming its Services", () => {
    const green = svc("pr-1", "web-green", routed("web", { version: "green" }));
    green.metadata!.annotations = {
      "envoy-gateways.io/shift-from": "blue",
      "envoy-gateways.io/shift-policy": "canary",
      "envoy-gateways.io/shift-start": "2026-11-30T10:00:00Z",
      "envoy-gateways.io/shift-duration": "10m",
    };
    const found = discoverRoutes(
      [ns("pr-1")],
      [green, svc("pr-1", "web-blue", routed("web", { version: "blue" }))],
      "default",
    );
    expect(found.devNamespaces).toEqual({});
    expect(found.problems[0]!.message).toBe(
      'left out: annotation envoy-gateways.io/shift-policy="canary" must be linear or atomic',
    );
  });

  it("leaves out a shift reversed when it was not in progress, and one naming an unknown version", () => {
    const shifted = (from: string, reversed?: string) => {
      const green = svc("pr-1", "web-green", routed("web", { version: "green" }));
      green.metadata!.annotations = {
        "envoy-gateways.io/shift-from": from,
        "envoy-gateways.io/shift-policy": "linear",
        "envoy-gateways.io/shift-start": "2026-11-30T10:00:00Z",
        "envoy-gateways.io/shift-duration": "10m",
        ...(reversed ? { "envoy-gateways.io/shift-reversed": reversed } : {}),
      };
      return discoverRoutes(
        [ns("pr-1")],
        [green, svc("pr-1", "web-blue", routed("web", { version: "blue" }))],
        "default",
      ).problems[0]!.message;
    };
    expect(shifted("blue", "2026-11-30T11:00:00Z")).toBe(
      'left out: annotation envoy-gateways.io/shift-reversed="2026-11-30T11:00:00Z" is not while the shift was in progress (2026-11-30T10:00:00.000Z to 2026-11-30T10:10:00.000Z); only a shift in progress can be reversed',
    );
    expect(shifted("red")).toBe(
      'left out: annotation envoy-gateways.io/shift-from="red" must be a version of web (versions: blue, green)',
    );
  });

  it("reports a Service with malformed labels by name, with what is wrong, and keeps the other routes", () => {
    const bad = { ...routed("Batch_1"), "envoy-gateways.io/port": "8443", "envoy-gateways.io/weight": "half" };
    const found = discoverRoutes([ns("pr-1")], [svc("pr-1", "batch", bad), svc("pr-1", "ci", routed("ci"))], "default");
    expect(found.devNamespaces).toEqual({
      "pr-1": [{ name: "ci", versions: [{ version: "", service: "ci" }], websocket: false }],
    });
    expect(found.problems).toHaveLength(1);
    expect(found.problems[0]!.key).toBe("Service pr-1/batch");
    expect(found.problems[0]!.message).toBe(
      'left out: label envoy-gateways.io/service="Batch_1" must be a DNS label (lower-case letters, digits and \'-\', at most 63 characters); label envoy-gateways.io/port="8443" must be "443" (the gateways speak TLS to every pod on 443); label envoy-gateways.io/weight="half" must be a whole percentage from 0 to 100',
    );
  });

  it("reports a port name that names no port 443, and an unknown protocol", () => {
    const s = svc("pr-1", "batch", {
      ...routed("batch"),
      "envoy-gateways.io/port-name": "web",
      "envoy-gateways.io/protocol": "grpc",
    });
    expect(discoverRoutes([ns("pr-1")], [s], "default").problems[0]!.message).toMatch(
      /port-name="web" names no port 443 of the Service; label envoy-gateways\.io\/protocol="grpc" must be http or websocket/,
    );
  });

  it("leaves out a service with weight labels but no shift, naming its Services", () => {
    const found = discoverRoutes(
      [ns("pr-1")],
      [
        svc("pr-1", "web-a", routed("web", { version: "a", weight: 60 })),
        svc("pr-1", "web-b", routed("web", { version: "b", weight: 30 })),
        svc("pr-1", "api", routed("api")),
      ],
      "default",
    );
    expect(found.devNamespaces["pr-1"]).toEqual([
      { name: "api", versions: [{ version: "", service: "api" }], websocket: false },
    ]);
    expect(found.problems).toEqual([
      {
        key: "service web in namespace pr-1 (Service pr-1/web-a, Service pr-1/web-b)",
        source: "namespaces",
        message:
          "left out: it has weight labels (a=60, b=30) but no traffic shift; annotate the new version's Service with envoy-gateways.io/shift-from, envoy-gateways.io/shift-policy, envoy-gateways.io/shift-start and envoy-gateways.io/shift-duration",
        objects: [
          { kind: "Service", namespace: "pr-1", name: "web-a" },
          { kind: "Service", namespace: "pr-1", name: "web-b" },
        ],
      },
    ]);
  });

  it("needs a version label on each of several Services", () => {
    const found = discoverRoutes(
      [ns("pr-1")],
      [svc("pr-1", "web-a", routed("web")), svc("pr-1", "web-b", routed("web"))],
      "default",
    );
    expect(found.problems[0]!.message).toMatch(
      /several Services route it, so each needs a envoy-gateways\.io\/version label/,
    );
  });

  it("warns about a routed Service that is not headless, and still routes it", () => {
    const found = discoverRoutes([ns("pr-1")], [svc("pr-1", "batch", routed("batch"), "10.0.0.12")], "default");
    expect(found.devNamespaces["pr-1"]).toHaveLength(1);
    expect(found.warnings[0]!.message).toMatch(/is not headless \(clusterIP 10\.0\.0\.12\)/);
  });
});
