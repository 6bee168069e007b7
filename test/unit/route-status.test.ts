// Route status on the cluster: what each dev/PR Service's annotation says
// (its URLs, or why it is not routed), which Events a sync creates, and that
// nothing is written where it already says the same.
import { describe, expect, it } from "vitest";
import { eventObject } from "../../kube/route-status.js";
import { admitDevNamespaces } from "../../routing/capacity.js";
import { routingConfig } from "../../routing/config/schema.js";
import { discoverRoutes, type NamespaceObject, type ServiceObject } from "../../routing/discovery.js";
import { ROUTE_STATUS_ANNOTATION, routingLabels } from "../../routing/labels.js";
import { configMapBytes, translateXdsFiles } from "../../routing/render.js";
import { routeStatusChanges, withLatestStatus, type StatusFacts } from "../../routing/route-status.js";
import { routesView } from "../../routing/routes-view.js";
import { buildRoutingTable } from "../../routing/table.js";
import { stackConfig } from "./fixtures.js";

const stack = stackConfig("dev");
const config = routingConfig(stack);
const AT = new Date("2026-12-01T12:00:00Z");

const ns = (name: string, minute = 0): NamespaceObject => ({
  metadata: { name, uid: `uid-${name}`, creationTimestamp: new Date(Date.UTC(2026, 10, 1, 0, minute)) },
});
const svc = (
  namespace: string,
  name: string,
  labels: Record<string, string>,
  annotations: Record<string, string> = {},
): ServiceObject => ({
  metadata: { namespace, name, uid: `uid-${namespace}-${name}`, labels, annotations },
  spec: { clusterIP: "None", ports: [{ name: "https", port: 443 }] },
});
const routed = (service: string, extra: Partial<Parameters<typeof routingLabels>[0]> = {}) =>
  routingLabels({ service, weight: 100, replicas: 2, websocket: false, ...extra });

/** What a sync has for these objects: discovery (with a capacity `limit`) and each gateway's routes. */
function facts(namespaces: NamespaceObject[], services: ServiceObject[], limit?: number): StatusFacts {
  const found = admitDevNamespaces(
    config,
    discoverRoutes(namespaces, services, stack.namespace, stack.devNamespaces.protected),
    AT,
    limit,
  );
  const table = buildRoutingTable(config, found.devNamespaces, "dev", AT);
  return {
    productionNamespace: stack.namespace,
    protectedNamespaces: stack.devNamespaces.protected,
    namespaces,
    services,
    found,
    routes: {
      gateway: routesView(config, table, "gateway"),
      "internal-gateway": routesView(config, table, "internal-gateway"),
    },
  };
}

const gatewayHost = config.gateways.gateway.devHost;
const internalHost = config.gateways["internal-gateway"].devHost;

describe("route status", () => {
  it("says where a routed Service is served, one URL per gateway, with a Normal Routed Event", () => {
    const changes = routeStatusChanges(facts([ns("pr-1")], [svc("pr-1", "batch", routed("batch"))]));
    const served = `https://${gatewayHost}/pr-1/batch (gateway), https://${internalHost}/pr-1/batch (internal-gateway)`;
    expect(changes).toEqual([
      {
        object: { kind: "Service", namespace: "pr-1", name: "batch", uid: "uid-pr-1-batch" },
        annotation: served,
        events: [{ type: "Normal", reason: "Routed", message: `served at ${served}` }],
      },
    ]);
  });

  it("names the gateways in their own order, whatever order the routes come in", () => {
    const f = facts([ns("pr-1")], [svc("pr-1", "batch", routed("batch"))]);
    const reversed = { ...f, routes: { "internal-gateway": f.routes["internal-gateway"], gateway: f.routes.gateway } };
    expect(routeStatusChanges(reversed)[0]!.annotation).toBe(routeStatusChanges(f)[0]!.annotation);
    expect(routeStatusChanges(reversed)[0]!.annotation).toMatch(/^https:\/\/\S+ \(gateway\), /);
  });

  it("writes nothing where the annotation already says it", () => {
    const first = routeStatusChanges(facts([ns("pr-1")], [svc("pr-1", "batch", routed("batch"))]));
    const annotated = svc("pr-1", "batch", routed("batch"), { [ROUTE_STATUS_ANNOTATION]: first[0]!.annotation! });
    expect(routeStatusChanges(facts([ns("pr-1")], [annotated]))).toEqual([]);
  });

  it("names each version of a service with several", () => {
    const shift = {
      "envoy-gateways.io/shift-from": "blue",
      "envoy-gateways.io/shift-policy": "atomic",
      "envoy-gateways.io/shift-start": "2026-12-01T11:00:00Z",
      "envoy-gateways.io/shift-duration": "10m",
    };
    const changes = routeStatusChanges(
      facts(
        [ns("pr-1")],
        [
          svc("pr-1", "web-blue", routed("web", { version: "blue" })),
          svc("pr-1", "web-green", routed("web", { version: "green" }), shift),
        ],
      ),
    );
    expect(changes.map((c) => c.annotation)).toEqual([
      `https://${gatewayHost}/pr-1/web (gateway, version blue), https://${internalHost}/pr-1/web (internal-gateway, version blue)`,
      `https://${gatewayHost}/pr-1/web (gateway, version green), https://${internalHost}/pr-1/web (internal-gateway, version green)`,
    ]);
  });

  it("says why a Service with a bad label is not routed, with a Warning, and still routes its neighbour", () => {
    const changes = routeStatusChanges(
      facts(
        [ns("pr-1")],
        [
          svc("pr-1", "bad", { ...routed("bad"), "envoy-gateways.io/port": "444" }),
          svc("pr-1", "good", routed("good")),
        ],
      ),
    );
    expect(changes.map((c) => c.object.name)).toEqual(["bad", "good"]);
    const bad = changes.find((c) => c.object.name === "bad")!;
    const why =
      'not routed: Service pr-1/bad left out: label envoy-gateways.io/port="444" must be "443" (the gateways speak TLS to every pod on 443)';
    expect(bad).toEqual({
      object: { kind: "Service", namespace: "pr-1", name: "bad", uid: "uid-pr-1-bad" },
      annotation: why,
      events: [{ type: "Warning", reason: "NotRouted", message: why }],
    });
    expect(changes.find((c) => c.object.name === "good")!.annotation).toMatch(/^https:\/\/.*\/pr-1\/good \(gateway\)/);
  });

  it("says why the Services of a namespace left out for capacity are not routed, and warns on the namespace itself", () => {
    const all = facts(
      [ns("pr-1", 1), ns("pr-2", 2)],
      [svc("pr-1", "batch", routed("batch")), svc("pr-2", "batch", routed("batch"))],
    );
    const firstOnly = facts(all.namespaces as NamespaceObject[], all.services as ServiceObject[], sizeWithOne());
    const changes = routeStatusChanges(firstOnly);
    expect(changes.find((c) => c.object.namespace === "pr-1")!.events[0]!.reason).toBe("Routed");
    const left = changes.find((c) => c.object.namespace === "pr-2")!;
    expect(left.annotation).toMatch(
      /^not routed: Namespace pr-2 left out: its routes do not fit in the xDS ConfigMap of /,
    );
    expect(left.events).toEqual([{ type: "Warning", reason: "NotRouted", message: left.annotation }]);
    const onNamespace = changes.find((c) => c.object.kind === "Namespace")!;
    expect(onNamespace.object).toEqual({ kind: "Namespace", name: "pr-2", uid: "uid-pr-2" });
    expect(onNamespace.events).toEqual([
      { type: "Warning", reason: "NotRouted", message: left.annotation!.replace(/^not routed: /, "") },
    ]);
    expect(onNamespace.annotation).toBeUndefined();
  });

  it("warns about a routed Service that is not headless, on every sync (the Event's name makes it one)", () => {
    const notHeadless = {
      ...svc("pr-1", "batch", routed("batch")),
      spec: { clusterIP: "10.0.0.9", ports: [{ name: "https", port: 443 }] },
    };
    const first = routeStatusChanges(facts([ns("pr-1")], [notHeadless]));
    expect(first[0]!.events.map((e) => e.reason)).toEqual(["Routed", "RouteWarning"]);
    const annotated = {
      ...notHeadless,
      metadata: { ...notHeadless.metadata, annotations: { [ROUTE_STATUS_ANNOTATION]: first[0]!.annotation! } },
    };
    const again = routeStatusChanges(facts([ns("pr-1")], [annotated]));
    expect(again).toEqual([
      {
        object: first[0]!.object,
        events: [
          {
            type: "Warning",
            reason: "RouteWarning",
            message: expect.stringMatching(/^Service pr-1\/batch is not headless \(clusterIP 10\.0\.0\.9\)/),
          },
        ],
      },
    ]);
  });

  it("says a Service once routed is no more when its namespace loses the label; never-routed Services are left alone", () => {
    const was = svc("pr-1", "batch", routed("batch"), { [ROUTE_STATUS_ANNOTATION]: "https://x/pr-1/batch (gateway)" });
    const never = svc("pr-1", "other", routed("other"));
    const changes = routeStatusChanges(facts([], [was, never]));
    const why = "not routed: its namespace is not a routed dev/PR namespace (devNamespaces.selector)";
    expect(changes).toEqual([
      {
        object: { kind: "Service", namespace: "pr-1", name: "batch", uid: "uid-pr-1-batch" },
        annotation: why,
        events: [{ type: "Normal", reason: "NotRouted", message: why }],
      },
    ]);
  });

  it("never writes on Services of the gateways' own or a protected namespace; the protected namespace gets the Warning", () => {
    const kubeSystem = stack.devNamespaces.protected[0]!;
    const changes = routeStatusChanges(
      facts(
        [ns(kubeSystem), ns(stack.namespace)],
        [
          svc(kubeSystem, "dns", routed("dns")),
          svc(stack.namespace, "www", routed("www"), { [ROUTE_STATUS_ANNOTATION]: "x" }),
        ],
      ),
    );
    expect(changes.map((c) => [c.object.kind, c.object.name, c.annotation])).toEqual([
      // Discovery reports refused namespaces by name.
      ["Namespace", stack.namespace, undefined],
      ["Namespace", kubeSystem, undefined],
    ]);
    expect(changes[1]!.events[0]!.message).toBe(
      `Namespace ${kubeSystem} carries the dev routing label but is not routed: it is protected (devNamespaces.protected)`,
    );
  });
});

describe("route status: what discovery lists", () => {
  it("skips Services without a namespace or a name, and takes objects without annotations or metadata", () => {
    const bare: ServiceObject = {
      metadata: { namespace: "pr-1", name: "batch", labels: routed("batch") },
      spec: { clusterIP: "None", ports: [{ name: "https", port: 443 }] },
    };
    const f = facts([ns("pr-1")], [bare]);
    const nameless = { ...bare, metadata: { ...bare.metadata, name: undefined } } as ServiceObject;
    const homeless = { ...bare, metadata: { ...bare.metadata, namespace: undefined } } as ServiceObject;
    const changes = routeStatusChanges({
      ...f,
      namespaces: [...f.namespaces, {}],
      services: [nameless, bare, homeless, {}],
    });
    expect(changes.map((c) => [c.object.name, c.object.uid])).toEqual([["batch", undefined]]);
    expect(changes[0]!.annotation).toMatch(/^https:/);
  });
});

describe("route status: the Services as a watcher's status write finds them", () => {
  it("take the route status annotation the latest read holds, set or gone, and keep everything else as listed", () => {
    const listed = [
      svc("pr-1", "batch", routed("batch"), { keep: "x" }),
      svc("pr-1", "api", routed("api"), { [ROUTE_STATUS_ANNOTATION]: "old", keep: "y" }),
      svc("pr-2", "web", routed("web"), { [ROUTE_STATUS_ANNOTATION]: "same" }),
      svc("pr-3", "gone", routed("gone"), { [ROUTE_STATUS_ANNOTATION]: "as listed" }),
      { metadata: { namespace: "pr-4", name: "bare" } },
      {},
    ];
    const latest = [
      svc("pr-1", "batch", { changed: "labels" }, { [ROUTE_STATUS_ANNOTATION]: "served at A" }),
      svc("pr-1", "api", routed("api"), {}),
      svc("pr-2", "web", routed("web"), { [ROUTE_STATUS_ANNOTATION]: "same" }),
      { metadata: { namespace: "pr-4", name: "bare" } },
      {},
    ];
    const found = withLatestStatus(listed, latest);
    expect(found.map((s) => s.metadata?.annotations)).toStrictEqual([
      { keep: "x", [ROUTE_STATUS_ANNOTATION]: "served at A" },
      { keep: "y" },
      { [ROUTE_STATUS_ANNOTATION]: "same" },
      { [ROUTE_STATUS_ANNOTATION]: "as listed" },
      undefined,
      undefined,
    ]);
    // Only the annotation comes from the latest read: the labels are what the step routed.
    expect(found[0]!.metadata?.labels).toEqual(routed("batch"));
    // Unchanged Services are the listed objects themselves.
    expect(found[2]).toBe(listed[2]);
    expect(found[3]).toBe(listed[3]);
    // A status write over the listed Services then leaves alone what the latest read already says.
    const f = facts([ns("pr-1")], [listed[0]!]);
    const wanted = routeStatusChanges(f)[0]!.annotation!;
    expect(wanted).toMatch(/^https:/);
    const written = withLatestStatus(
      [listed[0]!],
      [svc("pr-1", "batch", routed("batch"), { [ROUTE_STATUS_ANNOTATION]: wanted })],
    );
    expect(routeStatusChanges({ ...f, services: written })).toEqual([]);
  });
});

describe("route status Events", () => {
  const service = { kind: "Service" as const, namespace: "pr-1", name: "batch", uid: "u1" };
  const event = { type: "Warning" as const, reason: "NotRouted" as const, message: "not routed: x" };

  it("are about their object, in its namespace, named after the object and what they say", () => {
    const e = eventObject(service, event, AT);
    expect(e).toMatchObject({
      metadata: { namespace: "pr-1", name: expect.stringMatching(/^batch\.[0-9a-f]{16}$/) },
      involvedObject: { apiVersion: "v1", kind: "Service", namespace: "pr-1", name: "batch", uid: "u1" },
      type: "Warning",
      reason: "NotRouted",
      message: "not routed: x",
      source: { component: "envoy-gateways-route-sync" },
      count: 1,
      firstTimestamp: AT,
      lastTimestamp: AT,
    });
    // The same again: the same name (the API server refuses it as already there).
    expect(eventObject(service, event, new Date()).metadata!.name).toBe(e.metadata!.name);
    // Another message, reason, or object (a Service created again has another uid): another Event.
    const names = [
      eventObject(service, { ...event, message: "not routed: y" }, AT),
      eventObject(service, { ...event, reason: "Routed" }, AT),
      eventObject({ ...service, uid: "u2" }, event, AT),
      eventObject({ ...service, namespace: "pr-2" }, event, AT),
    ].map((x) => x.metadata!.name);
    expect(new Set([e.metadata!.name, ...names]).size).toBe(5);
  });

  it("about a namespace live in default, as the API server wants for a cluster-scoped object", () => {
    const e = eventObject({ kind: "Namespace", name: "pr-9", uid: "u9" }, event, AT);
    expect(e.metadata!.namespace).toBe("default");
    expect(e.involvedObject).toEqual({ apiVersion: "v1", kind: "Namespace", name: "pr-9", uid: "u9" });
  });
});

/** A capacity limit that fits production and one namespace with one Service, not two. */
function sizeWithOne(): number {
  const size = (dev: Record<string, string[]>) =>
    Math.max(
      ...(["gateway", "internal-gateway"] as const).map((g) =>
        configMapBytes(translateXdsFiles(config, buildRoutingTable(config, dev, "dev", AT), g).xds),
      ),
    );
  return size({ "pr-1": ["batch"] }) + 100;
}
