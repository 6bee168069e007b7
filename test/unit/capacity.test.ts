// Capacity: which dev/PR namespaces are routed when not all fit in a
// gateway's xDS ConfigMap. The limit is lowered so that a few namespaces
// fill it (the same rule as at 1 MiB, on small tables); every check of
// "fits" is on the real rendered files.
import { describe, expect, it } from "vitest";
import {
  admissionOrder,
  admit,
  admitDevNamespaces,
  routedDevNamespaces,
  type Measures,
} from "../../routing/capacity.js";
import { GATEWAYS, routingConfig, type GatewayName } from "../../routing/config/schema.js";
import { discoverRoutes, type Discovered, type NamespaceObject } from "../../routing/discovery.js";
import { routingLabels } from "../../routing/labels.js";
import { configMapBytes, CONFIGMAP_LIMIT_BYTES, translateXdsFiles } from "../../routing/render.js";
import { buildRoutingTable, type DevNamespaces } from "../../routing/table.js";
import { stackConfig } from "./fixtures.js";

const config = routingConfig(stackConfig("prod"));
const AT = new Date("2026-12-01T12:00:00Z");
const SERVICES = ["batch", "batch-driver", "ci", "memory", "query", "notebook", "workshop", "blog"];

/** Bytes of one gateway's xDS files for these dev namespaces (production included). */
const bytes = (dev: DevNamespaces, gateway: (typeof GATEWAYS)[number]) =>
  configMapBytes(translateXdsFiles(config, buildRoutingTable(config, dev, "dev", AT), gateway).xds);
const largest = (dev: DevNamespaces) => Math.max(...GATEWAYS.map((g) => bytes(dev, g)));

/** Namespace name -> [services, minutes after a base instant it was created]. */
function found(spec: Record<string, [number, number]>): Discovered {
  const devNamespaces: DevNamespaces = {};
  const created: Record<string, string> = {};
  for (const [ns, [count, minute]] of Object.entries(spec)) {
    devNamespaces[ns] = SERVICES.slice(0, count);
    created[ns] = new Date(Date.UTC(2026, 10, 1, 0, minute)).toISOString();
  }
  return { devNamespaces, created, problems: [], warnings: [] };
}

const PRODUCTION = largest({});
const four = SERVICES.slice(0, 4);
/** The first dev/PR namespace of four Services also brings what every dev route shares; each further one adds its own. */
const firstNamespace = largest({ "pr-a": four }) - PRODUCTION;
const perNamespace = largest({ "pr-a": four, "pr-b": four }) - largest({ "pr-a": four });
/** Room for `n` namespaces of four Services above production, and half of one more. */
const roomFor = (n: number) => PRODUCTION + firstNamespace + Math.round((n - 0.5) * perNamespace);

const routed = (d: Discovered) => Object.keys(d.devNamespaces).sort();
const leftOut = (d: Discovered) => d.problems.map((p) => p.key.replace(/^Namespace /, ""));

describe("capacity: dev/PR namespaces past what a ConfigMap holds", () => {
  it("routes everything, unchanged, when everything fits", () => {
    const all = found({ "pr-1": [4, 1], "pr-2": [4, 2] });
    expect(admitDevNamespaces(config, all, AT)).toBe(all);
    // Up to the last byte.
    const exactly = largest(all.devNamespaces);
    expect(admitDevNamespaces(config, all, AT, exactly)).toBe(all);
    expect(routed(admitDevNamespaces(config, all, AT, exactly - 1))).toEqual(["pr-1"]);
  });

  it("routes the oldest first, and reports each namespace left out on its own, naming the gateway and the rule", () => {
    const all = found({ "pr-1": [4, 5], "pr-2": [4, 1], "pr-3": [4, 3], "pr-4": [4, 2], "pr-5": [4, 4] });
    const limit = roomFor(3);
    const d = admitDevNamespaces(config, all, AT, limit);
    // Created at minutes 1..5: pr-2, pr-4, pr-3 are the oldest three; the names' order plays no part.
    expect(routed(d)).toEqual(["pr-2", "pr-3", "pr-4"]);
    expect(leftOut(d)).toEqual(["pr-5", "pr-1"]);
    expect(d.problems[0]!.message).toMatch(
      /^left out: its routes do not fit in the xDS ConfigMap of (internal-)?gateway, which holds [\d,]+ bytes with production and the 3 older dev\/PR namespaces routed \(devNamespaces.maxXdsBytes: [\d,]+; Kubernetes allows 1,048,576\); dev\/PR namespaces are routed oldest first, so it is routed once older ones are deleted or it routes fewer Services$/,
    );
    expect(d.problems[0]).toMatchObject({
      key: "Namespace pr-5",
      source: "namespaces",
      objects: [{ kind: "Namespace", name: "pr-5" }],
    });
    expect(d.devNamespaces["pr-2"]).toEqual(all.devNamespaces["pr-2"]);
    // The real files fit on both gateways, and none of the left-out namespaces would have.
    expect(largest(d.devNamespaces)).toBeLessThanOrEqual(limit);
    for (const ns of leftOut(d))
      expect(largest({ ...d.devNamespaces, [ns]: all.devNamespaces[ns]! })).toBeGreaterThan(limit);
  });

  it("keeps discovery's problems and warnings, its own reports after them", () => {
    const all = found({ "pr-1": [4, 1], "pr-2": [4, 2], "pr-3": [4, 3], "pr-4": [4, 4] });
    const problem = { key: "Service pr-1/x", source: "namespaces" as const, message: "left out: bad label" };
    const warning = { key: "Service pr-1/y", source: "namespaces" as const, message: "is not headless" };
    const d = admitDevNamespaces(config, { ...all, problems: [problem], warnings: [warning] }, AT, roomFor(2));
    expect(d.problems[0]).toBe(problem);
    expect(d.warnings).toEqual([warning]);
    expect(leftOut(d).slice(1)).toEqual(["pr-3", "pr-4"]);
    expect(d.created).toBe(all.created);
  });

  it("skips a namespace too large to fit and still routes the younger ones that do: one namespace never freezes the others", () => {
    const all = found({ "pr-old": [4, 1], "pr-huge": [8, 2], "pr-new": [2, 3], "pr-newer": [2, 4] });
    const d = admitDevNamespaces(config, all, AT, roomFor(2));
    expect(routed(d)).toEqual(["pr-new", "pr-newer", "pr-old"]);
    expect(leftOut(d)).toEqual(["pr-huge"]);
    expect(d.problems[0]!.message).toMatch(/with production and the 1 older dev\/PR namespaces routed/);
  });

  it("never pushes out a routed namespace for a new one; a deleted one makes room for the next in line", () => {
    const limit = roomFor(3);
    const before = admitDevNamespaces(config, found({ "pr-1": [4, 1], "pr-2": [4, 2], "pr-3": [4, 3] }), AT, limit);
    expect(routed(before)).toEqual(["pr-1", "pr-2", "pr-3"]);
    // A new namespace, first by name: it waits.
    const grown = found({ "pr-1": [4, 1], "pr-2": [4, 2], "pr-3": [4, 3], "pr-0": [4, 4], "pr-9": [4, 5] });
    const after = admitDevNamespaces(config, grown, AT, limit);
    expect(routed(after)).toEqual(["pr-1", "pr-2", "pr-3"]);
    expect(leftOut(after)).toEqual(["pr-0", "pr-9"]);
    // pr-2 is deleted: the oldest waiting one (pr-0) takes its place, pr-9 still waits.
    const { "pr-2": _, ...rest } = grown.devNamespaces;
    const deleted = admitDevNamespaces(config, { ...grown, devNamespaces: rest }, AT, limit);
    expect(routed(deleted)).toEqual(["pr-0", "pr-1", "pr-3"]);
    expect(leftOut(deleted)).toEqual(["pr-9"]);
  });

  it("routes production alone when no dev/PR namespace fits", () => {
    const d = admitDevNamespaces(config, found({ "pr-1": [4, 1], "pr-2": [2, 2] }), AT, PRODUCTION + 100);
    expect(d.devNamespaces).toEqual({});
    expect(leftOut(d)).toEqual(["pr-1", "pr-2"]);
    expect(d.problems[1]!.message).toMatch(/which holds [\d,]+ bytes with production and the 0 older/);
  });

  it("fills a 1 MiB ConfigMap by default, keeping headroom, on the real prod stack", () => {
    const spec: Record<string, [number, number]> = {};
    for (let i = 0; i < 1000; i++) spec[`pr-${1000 + i}`] = [8, i];
    const all = found(spec);
    const d = admitDevNamespaces(config, all, AT);
    const size = largest(d.devNamespaces);
    expect(size).toBeLessThanOrEqual(CONFIGMAP_LIMIT_BYTES - 8 * 1024);
    // Nearly full: the next namespace in line would not have fitted under the headroom.
    const next = leftOut(d)[0]!;
    expect(next).toBe(`pr-${1000 + routed(d).length}`);
    expect(largest({ ...d.devNamespaces, [next]: all.devNamespaces[next]! })).toBeGreaterThan(
      CONFIGMAP_LIMIT_BYTES - 8 * 1024,
    );
  }, 60_000); // 8,000 pairs offered (on demand about 6,300 fit), each namespace measured once: seconds of rendering

  it("orders by creation time, then by name; a namespace without one comes first, as the API server always gives one", () => {
    expect(
      admissionOrder({
        devNamespaces: { b: [], a: [], c: [], d: [] },
        created: { a: "2026-11-01T00:02:00.000Z", b: "2026-11-01T00:01:00.000Z", c: "2026-11-01T00:01:00.000Z" },
      }),
    ).toEqual(["d", "b", "c", "a"]);
    // Created in the same second: by name, whatever order they are listed in.
    const same = "2026-11-01T00:00:00.000Z";
    const names = ["pr-7", "pr-2", "pr-9", "pr-1", "pr-5", "pr-3"];
    expect(
      admissionOrder({
        devNamespaces: Object.fromEntries(names.map((n) => [n, []])),
        created: Object.fromEntries(names.map((n) => [n, same])),
      }),
    ).toEqual(["pr-1", "pr-2", "pr-3", "pr-5", "pr-7", "pr-9"]);
  });
});

describe("capacity: discovery's creation times", () => {
  const ns = (name: string, creationTimestamp?: Date | string): NamespaceObject => ({
    metadata: { name, ...(creationTimestamp !== undefined ? { creationTimestamp } : {}) },
  });
  const svc = (namespace: string) => ({
    metadata: {
      namespace,
      name: "batch",
      labels: routingLabels({ service: "batch", weight: 100, replicas: 2, websocket: false }),
    },
    spec: { clusterIP: "None", ports: [{ name: "https", port: 443 }] },
  });

  it("records when each routed namespace was created, from a Date (client-node) or a string (JSON)", () => {
    const d = discoverRoutes(
      [
        ns("pr-1", new Date("2026-11-01T10:00:00Z")),
        ns("pr-2", "2026-11-02T10:00:00Z"),
        ns("pr-3", "not a time"),
        ns("pr-4"),
      ],
      ["pr-1", "pr-2", "pr-3", "pr-4"].map(svc),
      "default",
    );
    expect(d.created).toEqual({ "pr-1": "2026-11-01T10:00:00.000Z", "pr-2": "2026-11-02T10:00:00.000Z" });
  });

  it("leaves out namespaces with nothing routed", () => {
    const d = discoverRoutes(
      [ns("pr-1", "2026-11-01T10:00:00Z"), ns("pr-2", "2026-11-01T10:00:00Z")],
      [svc("pr-1")],
      "default",
    );
    expect(d.created).toEqual({ "pr-1": "2026-11-01T10:00:00.000Z" });
  });

  it("fills a gateway's ConfigMap up to devNamespaces.maxXdsBytes", () => {
    const stack = stackConfig("prod");
    const small = { ...stack, devNamespaces: { ...stack.devNamespaces, maxXdsBytes: 65_536 } };
    const names = Array.from({ length: 400 }, (_, i) => `pr-${10 + i}`);
    const d = routedDevNamespaces(
      small,
      names.map((n, i) => ns(n, new Date(Date.UTC(2026, 10, 1, 0, i)))),
      names.map(svc),
      AT,
    );
    const routedCount = Object.keys(d.devNamespaces).length;
    expect(routedCount).toBeGreaterThan(0);
    expect(routedCount).toBeLessThan(names.length);
    expect(Object.keys(d.devNamespaces)).toEqual(names.slice(0, routedCount));
    expect(largest(d.devNamespaces)).toBeLessThanOrEqual(65_536);
    expect(largest({ ...d.devNamespaces, [names[routedCount]!]: ["batch"] })).toBeGreaterThan(65_536);
    expect(d.problems[0]!.message).toContain("(devNamespaces.maxXdsBytes: 65,536; Kubernetes allows 1,048,576)");
  });

  it("discovers and admits in one step, as sync-routes, its watch and the program do", () => {
    const stack = stackConfig("prod");
    const d = routedDevNamespaces(
      stack,
      [ns("pr-1", "2026-11-01T10:00:00Z"), ns(stack.namespace, "2026-11-01T10:00:00Z")],
      [svc("pr-1"), svc(stack.namespace)],
      AT,
    );
    expect(d.devNamespaces).toEqual({
      "pr-1": [{ name: "batch", versions: [{ version: "", service: "batch" }], websocket: false }],
    });
    expect(d.problems.map((p) => p.key)).toEqual([`Namespace ${stack.namespace}`]);
  });
});

describe("capacity: admission on measures", () => {
  /** Namespaces of these sizes on two gateways (internal-gateway's a tenth smaller); `extra`: bytes the real files add past `after` namespaces (what anchors make differ). */
  function measures(sizes: Record<string, number>, { extra = 0, after = Infinity } = {}): Measures {
    const real = (names: readonly string[], gateway: GatewayName) => {
      const scale = gateway === "gateway" ? 1 : 0.9;
      const sum = names.reduce((n, ns) => n + sizes[ns]!, 1_000);
      return Math.round(scale * sum) + (names.length > after ? extra : 0);
    };
    return {
      bytes: (names) => GATEWAYS.map((gateway) => ({ gateway, bytes: real(names, gateway) })),
      estimates: GATEWAYS.map((gateway) => ({
        gateway,
        production: real([], gateway),
        cost: (ns) => real([ns], gateway) - real([], gateway),
      })),
    };
  }

  it("admits in order each namespace that fits, and says why each other one does not", () => {
    const sizes = { a: 400, b: 700, c: 300, d: 200 };
    const { admitted, leftOut } = admit(["a", "b", "c", "d"], 1_950, measures(sizes));
    expect(admitted).toEqual(["a", "c", "d"]);
    expect(leftOut).toEqual(new Map([["b", { gateway: "gateway", used: 1_400, older: 1 }]]));
  });

  it("checks the real files: when the estimates fall short, leaves out the youngest and puts back what still fits", () => {
    const sizes = { a: 300, b: 300, c: 300, d: 100, e: 100 };
    // Estimates: 1,000 + 1,100 = 2,100 fits all five; the real files add 250 past three namespaces.
    const { admitted, leftOut } = admit(["a", "b", "c", "d", "e"], 2_200, measures(sizes, { extra: 250, after: 3 }));
    // Real: a+b+c = 1,900 (no extra); +d = 2,250 over; so d and e cannot both join, and neither alone: 2,250 and 2,250.
    expect(admitted).toEqual(["a", "b", "c"]);
    expect([...leftOut.keys()]).toEqual(["d", "e"]);
    expect(leftOut.get("d")).toEqual({ gateway: "gateway", used: 1_900, older: 3 });
    const more = admit(["a", "b", "c", "d", "e"], 2_260, measures(sizes, { extra: 250, after: 3 }));
    // 2,260: d fits (2,250), then e does not (2,350): the youngest left out, the next put back.
    expect(more.admitted).toEqual(["a", "b", "c", "d"]);
    expect(more.leftOut).toEqual(new Map([["e", { gateway: "gateway", used: 2_250, older: 4 }]]));
  });

  it("admits a namespace that fills the limit to the last byte", () => {
    expect(admit(["a", "b"], 1_700, measures({ a: 400, b: 300 })).admitted).toEqual(["a", "b"]);
    expect(admit(["a", "b"], 1_699, measures({ a: 400, b: 300 })).admitted).toEqual(["a"]);
  });

  it("leaves out every namespace when production alone fills the limit", () => {
    const { admitted, leftOut } = admit(["a"], 1_000, measures({ a: 1 }));
    expect(admitted).toEqual([]);
    expect(leftOut.get("a")).toEqual({ gateway: "gateway", used: 1_000, older: 0 });
  });

  it("names the gateway that is full, whichever it is", () => {
    const m = measures({ a: 500 });
    const internalBigger: Measures = {
      bytes: (names) =>
        m.bytes(names).map((b) => ({ ...b, bytes: b.gateway === "internal-gateway" ? b.bytes * 2 : b.bytes })),
      estimates: m.estimates.map((e) =>
        e.gateway === "internal-gateway"
          ? { ...e, production: e.production * 2, cost: (ns: string) => e.cost(ns) * 2 }
          : e,
      ),
    };
    expect(admit(["a"], 2_000, internalBigger).leftOut.get("a")).toEqual({
      gateway: "internal-gateway",
      used: 1_800,
      older: 0,
    });
  });
});
