// One sync-routes run as CI runs it (syncRoutes), with the cluster, the ConfigMap
// writes and the engine stood in for: what it lists, in which order it writes the
// routes, the route status and the record, and when it does none of them.
// (test/e2e/routes.test.ts runs it against a real cluster and engine.)
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Discovered, NamespaceObject, ServiceObject } from "../../routing/discovery.js";
import { ROUTED_SERVICE_SELECTOR } from "../../routing/discovery.js";
import { LABEL, ROUTE_STATUS_ANNOTATION } from "../../routing/labels.js";
import { renderRoutes } from "../../routes-provider/core.js";
import type { ProjectStack, RoutesResourceState } from "../../route-sync/stack.js";
import { syncRoutes } from "../../route-sync/sync.js";
import { routingConfig } from "../../routing/config/schema.js";
import { routeLines } from "../../routing/routes-view.js";
import type { DevNamespaces } from "../../routing/table.js";
import { dataDigest } from "../../routing/units.js";
import { stackConfig } from "./fixtures.js";

const h = vi.hoisted(() => ({
  /** What happened, in order: "list", "write <gateway>", "status", "record". */
  steps: [] as string[],
  listed: { namespaces: [] as unknown[], services: [] as unknown[] },
  listArgs: [] as unknown[][],
  found: undefined as unknown,
  foundArgs: [] as unknown[][],
  state: [] as unknown[],
  sync: undefined as unknown,
  statusChanges: [] as unknown[],
  /** How long each ConfigMap write takes. */
  writeMs: 0,
}));

vi.mock("../../kube/client.js", () => ({
  loadKubeConfig: (kubeconfig: string) => ({ kubeconfig }),
  listRoutedObjects: async (...args: unknown[]) => {
    h.steps.push("list");
    h.listArgs.push(args);
    return h.listed;
  },
}));
vi.mock("../../routing/capacity.js", () => ({
  routedDevNamespaces: (...args: unknown[]) => {
    h.foundArgs.push(args);
    return h.found;
  },
}));
vi.mock("../../kube/route-status.js", () => ({
  writeRouteStatus: async (_kc: unknown, changes: unknown[]) => {
    h.steps.push("status");
    h.statusChanges.push(...changes);
    return { annotated: changes.length, events: changes.length, failures: [] };
  },
}));
vi.mock("../../routes-provider/core.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../routes-provider/core.js")>()),
  writeRoutes: async (facts: { gateway: string }) => {
    h.steps.push(`write ${facts.gateway}`);
    vi.setSystemTime(Date.now() + h.writeMs);
  },
}));
vi.mock("../../route-sync/stack.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../route-sync/stack.js")>()),
  stackConfigOf: async () => h.sync,
  routesInState: async () => h.state,
}));
vi.mock("../../program/main.js", () => ({ runProgram: async () => ({}) }));

const config = stackConfig("dev");
const AT = new Date("2026-12-01T12:00:00Z");

/** A gateway's routes resource as a sync recorded these namespaces (`digest`: a write it does not know of since). */
function recordedState(
  dev: DevNamespaces,
  digest?: string,
  gateway: "gateway" | "internal-gateway" = "gateway",
): RoutesResourceState[] {
  const facts = {
    gateway,
    namespace: "default",
    configMap: `${gateway}-xds`,
    config: routingConfig(config),
    devNamespaces: dev,
  };
  const r = renderRoutes(facts, AT);
  return [
    {
      urn: `urn:pulumi:dev::envoy-gateways::pulumi-nodejs:dynamic/envoy-gateways:Routes::${gateway}-routes`,
      name: `${gateway}-routes`,
      outputs: {
        ...facts,
        routes: routeLines(r.routes),
        dataDigest: digest ?? dataDigest(r.files.xds),
        renderedAt: AT.toISOString(),
      },
    } as unknown as RoutesResourceState,
  ];
}

const namespace = (name: string): NamespaceObject => ({ metadata: { name, uid: `uid-${name}` } });
const service = (ns: string, name: string): ServiceObject => ({
  metadata: { namespace: ns, name, uid: `uid-${ns}-${name}`, labels: { [LABEL.service]: name } },
});
const found = (dev: DevNamespaces, problems: Discovered["problems"] = []): Discovered => ({
  devNamespaces: dev,
  created: {},
  problems,
  warnings: [],
});

/** A project stack whose engine run notes itself in the order of steps, and takes `recordMs`. */
function projectStack(recordMs = 0): ProjectStack {
  const engine = {
    up: async () => {
      h.steps.push("record");
      vi.setSystemTime(Date.now() + recordMs);
      return {};
    },
  };
  return { name: "dev", workDir: "/project", automation: async () => engine } as unknown as ProjectStack;
}

describe("one sync-routes run", () => {
  let lines: string[];
  const log = (l: string) => lines.push(l);

  beforeEach(() => {
    lines = [];
    Object.assign(h, {
      steps: [],
      listArgs: [],
      foundArgs: [],
      statusChanges: [],
      writeMs: 0,
      sync: { config, kubeconfig: "the stack's kubeconfig" },
      state: recordedState({ "pr-1": ["batch"] }),
      listed: { namespaces: [namespace("pr-1")], services: [service("pr-1", "batch")] },
      found: found({ "pr-1": ["batch"] }),
    });
  });

  it("refuses to run on a stack without routes resources, before it lists anything", async () => {
    h.state = [];
    await expect(syncRoutes(projectStack(), { log })).rejects.toThrow(
      "stack dev has no routes resources yet: run a full `pulumi up` first",
    );
    expect(h.steps).toEqual([]);
  });

  it("lists the routed namespaces and Services with the stack's kubeconfig, and admits them at one instant", async () => {
    await syncRoutes(projectStack(), { log });
    expect(h.listArgs).toEqual([
      [{ kubeconfig: "the stack's kubeconfig" }, config.devNamespaces.selector, ROUTED_SERVICE_SELECTOR],
    ]);
    expect(h.foundArgs).toEqual([[config, h.listed.namespaces, h.listed.services, expect.any(Date)]]);
  });

  it("with nothing to change, writes no routes and runs no engine, but still writes the route status", async () => {
    const result = await syncRoutes(projectStack(), { log });
    expect(h.steps).toEqual(["list", "status"]);
    expect(result).toMatchObject({ added: [], removed: [], changed: [], unchanged: true });
    expect(result.recordedSeconds).toBeUndefined();
    expect(Object.keys(result.steps).sort()).toEqual(["discovery", "render", "stack", "status"]);
    expect(result.status).toEqual({ annotated: 1, events: 1, failures: [] });
    // The Service's URL, as the route status says it.
    expect(h.statusChanges).toEqual([
      expect.objectContaining({
        object: { kind: "Service", namespace: "pr-1", name: "batch", uid: "uid-pr-1-batch" },
        annotation: expect.stringContaining("/pr-1/batch"),
      }),
    ]);
    expect(lines).toEqual([]);
  });

  it("writes a new namespace's routes, then says so on its Services, then records them", async () => {
    h.found = found({ "pr-1": ["batch"], "pr-2": ["ci"] });
    h.listed.services.push(service("pr-2", "ci"));
    const result = await syncRoutes(projectStack(), { log });
    expect(h.steps).toEqual(["list", "write gateway", "status", "record"]);
    expect(result.unchanged).toBe(false);
    expect(result.added).toEqual([expect.stringMatching(/^pr-2\/ci on gateway: /)]);
    expect(result.removed).toEqual([]);
    expect(Object.keys(result.steps).sort()).toEqual(["discovery", "record", "render", "stack", "status", "write"]);
    expect(result.recordedSeconds).toBeGreaterThanOrEqual(result.liveSeconds);
    // Nothing to explain: the routes added are the reason.
    expect(lines).toEqual([]);
  });

  it("writes and records routes the state holds but not as rendered now, saying why", async () => {
    h.state = recordedState({ "pr-1": ["batch"] }, "0".repeat(64));
    const result = await syncRoutes(projectStack(), { log });
    expect(h.steps).toEqual(["list", "write gateway", "status", "record"]);
    expect(result).toMatchObject({ added: [], removed: [], changed: [], unchanged: false });
    expect(lines).toEqual([expect.stringMatching(/^recording, because gateway-routes: /)]);
  });

  it("says every namespace discovery left out, and routes the rest", async () => {
    h.found = found({ "pr-1": ["batch"] }, [
      {
        key: "Namespace pr-9",
        source: "namespaces",
        message: "is not routed: over capacity",
        objects: [{ kind: "Namespace", name: "pr-9" }],
      },
    ]);
    h.listed.namespaces.push(namespace("pr-9"));
    await syncRoutes(projectStack(), { log });
    expect(lines).toEqual(["Namespace pr-9 is not routed: over capacity"]);
    // Its Warning Event, on the namespace.
    expect(h.statusChanges).toContainEqual(
      expect.objectContaining({ object: { kind: "Namespace", name: "pr-9", uid: "uid-pr-9" } }),
    );
  });

  it("writes no route status when the Services already say it", async () => {
    await syncRoutes(projectStack(), { log });
    const { annotation } = h.statusChanges[0] as { annotation: string };
    const batch = service("pr-1", "batch");
    h.listed.services = [{ metadata: { ...batch.metadata, annotations: { [ROUTE_STATUS_ANNOTATION]: annotation } } }];
    h.steps = [];
    const result = await syncRoutes(projectStack(), { log });
    expect(h.steps).toEqual(["list"]);
    expect(result.status).toEqual({ annotated: 0, events: 0, failures: [] });
  });

  it("times the write and the record, and the routes live before they are recorded", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      h.found = found({ "pr-2": ["ci"] });
      h.writeMs = 300;
      const result = await syncRoutes(projectStack(5000), { log });
      expect(result.steps).toMatchObject({ write: 300, record: 5000 });
      expect(result.liveSeconds).toBe(0.3);
      expect(result.recordedSeconds).toBe(5.3);
    } finally {
      vi.useRealTimers();
    }
  });

  it("says nothing of why it records when routes were added and removed", async () => {
    h.found = found({ "pr-2": ["ci"] });
    const result = await syncRoutes(projectStack(), { log });
    expect([result.added.length, result.removed.length]).toEqual([1, 1]);
    expect(lines).toEqual([]);
  });

  it("writes only the ConfigMaps whose files the state does not hold, and says each reason to record", async () => {
    h.state = [
      ...recordedState({ "pr-1": ["batch"] }, "0".repeat(64)),
      ...recordedState({ "pr-1": ["batch"] }, undefined, "internal-gateway"),
    ];
    await syncRoutes(projectStack(), { log });
    expect(h.steps).toEqual(["list", "write gateway", "status", "record"]);
    h.state = [
      ...recordedState({ "pr-1": ["batch"] }, "0".repeat(64)),
      ...recordedState({ "pr-1": ["batch"] }, "1".repeat(64), "internal-gateway"),
    ];
    await syncRoutes(projectStack(), { log });
    expect(lines.at(-1)).toMatch(/^recording, because gateway-routes: .*; internal-gateway-routes: /);
  });
});
