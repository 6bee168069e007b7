// What sync-routes prints: the routes added, removed and changed between two states.
import { describe, expect, it, vi } from "vitest";
import { engineErrorLines, routesOf } from "../../route-sync/stack.js";
import type { ProjectStack, RoutesResourceState } from "../../route-sync/stack.js";
import {
  notRecorded,
  plan,
  record,
  recorded,
  report,
  routeChanges,
  shiftsMoving,
  syncedRoutes,
  writeLive,
} from "../../route-sync/sync.js";
import { renderRoutes, routesInputs } from "../../routes-provider/core.js";
import { routingConfig, type RoutingConfig } from "../../routing/config/schema.js";
import { dataDigest } from "../../routing/units.js";
import { minutesIntoShift, SHIFT_START, shiftedService } from "./fixtures.js";
import { routeLines, routesView } from "../../routing/routes-view.js";
import { buildRoutingTable } from "../../routing/table.js";
import { eachTest } from "./each-test.js";
import { stackConfig } from "./fixtures.js";
import { withGatewayMemory } from "../fixtures/gateway-memory.js";

/** The program the record step runs inline, and the state it reads after: stand-ins, to see what they are given. */
const engine = vi.hoisted(() => ({
  programRuns: [] as unknown[],
  inState: [] as unknown[],
}));
vi.mock("../../program/main.js", () => ({
  runProgram: async (sync: unknown) => {
    engine.programRuns.push(sync);
    return { gateways: {}, routes: {} };
  },
}));
vi.mock("../../route-sync/stack.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../route-sync/stack.js")>()),
  routesInState: async () => engine.inState,
}));

const config = eachTest(() => stackConfig("dev"));
const state = (dev: Record<string, string[]>) => ({
  "gateway-routes": routeLines(routesView(config(), buildRoutingTable(config(), dev), "gateway")),
});

describe("sync-routes report", () => {
  it("lists routes added and removed, by id, with where they go", () => {
    const changes = routeChanges(state({ "pr-1": ["batch"] }), state({ "pr-2": ["batch", "ci"] }));
    expect(changes).toEqual({
      added: [
        "pr-2/batch on gateway: https://internal.dev.example.org/pr-2/batch -> batch.pr-2.svc.cluster.local:443 (pr-2_batch); rate limit 200/s",
        "pr-2/ci on gateway: https://internal.dev.example.org/pr-2/ci -> ci.pr-2.svc.cluster.local:443 (pr-2_ci); rate limit 200/s",
      ],
      removed: [
        "pr-1/batch on gateway: https://internal.dev.example.org/pr-1/batch -> batch.pr-1.svc.cluster.local:443 (pr-1_batch); rate limit 200/s",
      ],
      changed: [],
    });
    const status = { annotated: 0, events: 0, failures: [] };
    expect(
      report({ ...changes, unchanged: false, steps: {}, liveSeconds: 0.44, recordedSeconds: 9.81, status }).at(-1),
    ).toBe("routes live in 0.4s, recorded in the state in 9.8s: 2 added, 1 removed, 0 changed");
    expect(
      report({ added: [], removed: [], changed: [], unchanged: true, steps: {}, liveSeconds: 0.63, status }),
    ).toEqual(["nothing to change (0.6s): the ConfigMaps and the state hold these routes; no engine run"]);
  });

  it("reports nothing for an unchanged state", () => {
    expect(routeChanges(state({ "pr-1": ["batch"] }), state({ "pr-1": ["batch"] }))).toEqual({
      added: [],
      removed: [],
      changed: [],
    });
  });

  it("keeps the engine's error lines of a failed run", () => {
    const stderr =
      "Updating (dev):\n  pulumi:pulumi:Stack dev running\n  error: discovering dev/PR namespaces failed; nothing was changed: listing namespaces labelled a=b: cannot reach the Kubernetes API at https://127.0.0.1:6443 (ECONNREFUSED)\n";
    expect(engineErrorLines({ stderr })).toBe(
      "error: discovering dev/PR namespaces failed; nothing was changed: listing namespaces labelled a=b: cannot reach the Kubernetes API at https://127.0.0.1:6443 (ECONNREFUSED)",
    );
  });
});

describe("sync-routes: what needs an engine run", () => {
  /** A routes resource's state as a sync recorded it: these namespaces, rendered at `at` (with this routing config). */
  function stateOf(
    dev: Record<string, unknown>,
    at: Date,
    routing: RoutingConfig = routingConfig(config()),
  ): RoutesResourceState[] {
    const facts = {
      gateway: "gateway" as const,
      namespace: "default",
      configMap: "gateway-xds",
      config: routing,
      devNamespaces: dev as never,
    };
    const r = renderRoutes(facts, at);
    return [
      {
        urn: "urn:pulumi:dev::envoy-gateways::pulumi-nodejs:dynamic/envoy-gateways:Routes::gateway-routes",
        name: "gateway-routes",
        outputs: {
          ...facts,
          routes: routeLines(r.routes),
          dataDigest: dataDigest(r.files.xds),
          renderedAt: at.toISOString(),
        },
      },
    ];
  }
  const dev = { "pr-1": ["batch"], "pr-2": [shiftedService("web")] };
  const at = minutesIntoShift(100); // the shift has ended: weights stay put

  it("nothing, when the state holds the discovered namespaces at the same weights", () => {
    expect(plan(stateOf(dev, at), { config: config() }, dev, minutesIntoShift(120)).every(recorded)).toBe(true);
  });
  it("a write and a record for a new namespace, a removed one, or weights a shift moved", () => {
    expect(plan(stateOf(dev, at), { config: config() }, { ...dev, "pr-3": ["ci"] }, at).every(recorded)).toBe(false);
    expect(plan(stateOf(dev, at), { config: config() }, { "pr-1": ["batch"] }, at).every(recorded)).toBe(false);
    expect(
      plan(stateOf(dev, minutesIntoShift(30)), { config: config() }, dev, minutesIntoShift(31)).every(recorded),
    ).toBe(false);
  });
  it("a record for state written before the inputs were facts, or that a refresh found drifted", () => {
    const [r] = stateOf(dev, at);
    const { devNamespaces: _, ...old } = r!.outputs;
    expect(recorded(plan([{ ...r!, outputs: old as never }], { config: config() }, dev, at)[0]!)).toBe(false);
    expect(
      recorded(
        plan(
          [{ ...r!, outputs: { ...r!.outputs, drift: { "pr-1/batch": "cluster pr-1_batch changed" } } }],
          { config: config() },
          dev,
          at,
        )[0]!,
      ),
    ).toBe(false);
  });
  it("says why a record is needed: which part of the state differs, by its path, never its value", () => {
    const [r] = stateOf(dev, at);
    const why = (outputs: object, devNamespaces: Record<string, unknown> = dev, kubeconfig?: string) =>
      notRecorded(
        plan(
          [{ ...r!, outputs: outputs as never }],
          { config: config(), ...(kubeconfig ? { kubeconfig } : {}) },
          devNamespaces as never,
          at,
        )[0]!,
      );
    expect(why(r!.outputs)).toBeUndefined();
    const { devNamespaces: _, ...old } = r!.outputs;
    expect(why(old)).toBe("its state predates the routes resource's facts");
    expect(why(r!.outputs, { ...dev, "pr-3": ["ci"] })).toBe("its state's devNamespaces.pr-3 differs");
    // As the engine stores it (JSON): nothing differs.
    expect(why(JSON.parse(JSON.stringify(r!.outputs)) as object)).toBeUndefined();
    // Down to the differing value: an element added to a list, a string (not its characters).
    expect(why(r!.outputs, { ...dev, "pr-1": ["batch", "ci"] })).toBe("its state's devNamespaces.pr-1.1 differs");
    expect(why(r!.outputs, { ...dev, "pr-1": ["ci"] })).toBe("its state's devNamespaces.pr-1.0 differs");
    // A service given by name where the other has it with versions, either way round.
    expect(why(r!.outputs, { ...dev, "pr-2": ["web"] })).toBe("its state's devNamespaces.pr-2.0 differs");
    expect(why({ ...r!.outputs, devNamespaces: { ...dev, "pr-2": ["web"] } })).toBe(
      "its state's devNamespaces.pr-2.0 differs",
    );
    const replicas = {
      ...r!.outputs,
      config: {
        ...r!.outputs.config,
        gateways: { ...r!.outputs.config.gateways, gateway: { ...r!.outputs.config.gateways.gateway, replicas: 7 } },
      },
    };
    expect(why(replicas)).toBe("its state's config.gateways.gateway.replicas differs");
    expect(why({ ...r!.outputs, routes: {} })).toBe("its state's routes differ");
    expect(why({ ...r!.outputs, dataDigest: "0".repeat(64) })).toBe("its state's files differ");
    expect(why({ ...r!.outputs, drift: { "pr-1/batch": "cluster pr-1_batch changed" } })).toBe(
      "its ConfigMap was edited out of band",
    );
  });

  describe("the gateways' memory limits: the bootstrap's, so no fact of the routes a sync writes", () => {
    const onDemand = (memory: string) => withGatewayMemory(stackConfig("prod", "on-demand"), { gateway: memory });

    it("renders the same files whatever limit the stack config says, and needs no record for a changed one", () => {
      const [recordedAt512] = stateOf(dev, at, routingConfig(onDemand("512Mi")));
      const [small] = plan([recordedAt512!], { config: onDemand("512Mi") }, dev, at);
      const [large] = plan([recordedAt512!], { config: onDemand("2Gi") }, dev, at);
      expect(large!.digest).toBe(small!.digest);
      expect(large!.rendered.files.xds["cds.yaml"]).not.toContain("max_sub_clusters");
      expect(recorded(large!)).toBe(true);
    });

    it("records once over state of a release that kept the limit in the routes' config", () => {
      const routing = routingConfig(onDemand("512Mi"));
      const older = {
        ...routing,
        gateways: {
          ...routing.gateways,
          gateway: { ...routing.gateways.gateway, resources: { limits: { memory: "512Mi" } } },
        },
      };
      const [p] = plan(stateOf(dev, at, older), { config: onDemand("512Mi") }, dev, at);
      expect(notRecorded(p!)).toBe("its state's config.gateways.gateway.resources differs");
    });
  });

  it("no record for a changed kubeconfig alone: the state is read without its secrets; the next write or `pulumi up` records it", () => {
    expect(
      plan(stateOf(dev, at), { config: config(), kubeconfig: "apiVersion: v1 # rotated" }, dev, at).every(recorded),
    ).toBe(true);
    // With a route to write, the planned facts carry the stack config's kubeconfig, which the record step stores.
    const [p] = plan(
      stateOf(dev, at),
      { config: config(), kubeconfig: "apiVersion: v1 # rotated" },
      { ...dev, "pr-3": ["ci"] },
      at,
    );
    expect(recorded(p!)).toBe(false);
    expect(p!.facts.kubeconfig).toBe("apiVersion: v1 # rotated");
  });

  it("reads the routes resources of an exported stack without their secrets", () => {
    const secret = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "v1:abc" };
    const [r] = stateOf(dev, at);
    const exported = {
      deployment: {
        resources: [
          {
            urn: "urn:pulumi:dev::envoy-gateways::pulumi:pulumi:Stack::envoy-gateways-dev",
            type: "pulumi:pulumi:Stack",
            outputs: { routes: {} },
          },
          {
            urn: r!.urn,
            type: "pulumi-nodejs:dynamic/envoy-gateways:Routes",
            outputs: { ...r!.outputs, kubeconfig: secret },
          },
          {
            urn: "urn:pulumi:dev::envoy-gateways::pulumi:providers:kubernetes::kubernetes",
            type: "pulumi:providers:kubernetes",
            outputs: { kubeconfig: secret },
          },
        ],
      },
    };
    expect(routesOf(exported)).toEqual([{ urn: r!.urn, name: "gateway-routes", outputs: r!.outputs }]);
    expect(routesOf({ deployment: {} })).toEqual([]);
    // Nowhere in the outputs, nested or in a list.
    const nested = {
      urn: r!.urn,
      type: "pulumi-nodejs:dynamic/envoy-gateways:Routes",
      outputs: { ...r!.outputs, drift: { a: secret, b: "kept" }, extra: [secret, 1] },
    };
    expect(routesOf({ deployment: { resources: [nested] } })[0]!.outputs).toEqual({
      ...r!.outputs,
      drift: { b: "kept" },
      extra: [1],
    });
    // What it read is what the sync compares: nothing to record.
    expect(plan(routesOf(exported), { config: config(), kubeconfig: "apiVersion: v1" }, dev, at).every(recorded)).toBe(
      true,
    );
  });

  it("validates every gateway's files before it writes any: too many routes for a ConfigMap write nothing", async () => {
    const many: Record<string, string[]> = {};
    for (let i = 0; i < 500; i++) many[`pr-${i}`] = ["batch", "batch-driver", "ci", "memory"];
    // Were anything written, it would go to this API server, which does not exist: the error would say so.
    const kubeconfig =
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n";
    const planned = plan(stateOf(dev, at), { config: config(), kubeconfig }, many, at);
    await expect(writeLive(planned, many, at)).rejects.toThrow(
      /over the 1,048,576 bytes Kubernetes allows in a ConfigMap/,
    );
  });
});

describe("sync-routes: what it reports and plans", () => {
  const views = (dev: Record<string, unknown>, at: Date) => {
    const table = buildRoutingTable(config(), dev as never, "dev namespaces", at);
    return {
      "gateway-routes": routesView(config(), table, "gateway"),
      "internal-gateway-routes": routesView(config(), table, "internal-gateway"),
    };
  };
  /** What a state recording those routes holds, a line each. */
  const lines = (dev: Record<string, unknown>, at: Date) =>
    Object.fromEntries(Object.entries(views(dev, at)).map(([resource, view]) => [resource, routeLines(view)]));

  it("lists routes whose weights moved as changed, on each gateway, in id order, with where they go now", () => {
    const dev = { "pr-2": [shiftedService("web")], "pr-1": ["batch"] };
    const changes = routeChanges(
      lines(dev, minutesIntoShift(10)),
      lines({ ...dev, "pr-0": ["ci"] }, minutesIntoShift(20)),
    );
    expect(changes).toEqual({
      added: [
        "pr-0/ci on gateway: https://internal.dev.example.org/pr-0/ci -> ci.pr-0.svc.cluster.local:443 (pr-0_ci); rate limit 200/s",
        "pr-0/ci on internal-gateway: https://internal.dev.hail/pr-0/ci -> ci.pr-0.svc.cluster.local:443 (pr-0_ci); rate limit 200/s",
      ],
      removed: [],
      changed: [
        "pr-2/web on gateway: https://internal.dev.example.org/pr-2/web -> web-blue.pr-2.svc.cluster.local:443 (pr-2_web_blue, version blue, 80%) + web-green.pr-2.svc.cluster.local:443 (pr-2_web_green, version green, 20%); rate limit 200/s; linear shift blue -> green from 2026-11-30T10:00:00.000Z over 100m",
        "pr-2/web on internal-gateway: https://internal.dev.hail/pr-2/web -> web-blue.pr-2.svc.cluster.local:443 (pr-2_web_blue, version blue, 80%) + web-green.pr-2.svc.cluster.local:443 (pr-2_web_green, version green, 20%); rate limit 200/s; linear shift blue -> green from 2026-11-30T10:00:00.000Z over 100m",
      ],
    });
    // Each list in id order, whatever order the lines were recorded in.
    expect(routeChanges({ r: { b: "1", a: "2" } }, { r: { d: "3", c: "4" } })).toEqual({
      added: ["c on r: 4", "d on r: 3"],
      removed: ["a on r: 2", "b on r: 1"],
      changed: [],
    });
    // A resource the state did not have yet: all its routes are added; one gone: all removed.
    expect(
      routeChanges({}, { "gateway-routes": lines({ "pr-1": ["batch"] }, SHIFT_START)["gateway-routes"]! }).added.filter(
        (l) => l.startsWith("pr-1/"),
      ),
    ).toEqual([
      "pr-1/batch on gateway: https://internal.dev.example.org/pr-1/batch -> batch.pr-1.svc.cluster.local:443 (pr-1_batch); rate limit 200/s",
    ]);
    expect(
      routeChanges({ "gateway-routes": lines({ "pr-1": ["batch"] }, SHIFT_START)["gateway-routes"]! }, {}).removed,
    ).toContain(
      "pr-1/batch on gateway: https://internal.dev.example.org/pr-1/batch -> batch.pr-1.svc.cluster.local:443 (pr-1_batch); rate limit 200/s",
    );
  });

  it("reports each change on a line of its own, then what happened", () => {
    const r = {
      added: ["a on gateway: x"],
      removed: ["b on gateway: y"],
      changed: ["c on gateway: z"],
      unchanged: false,
      steps: {},
      liveSeconds: 1.26,
      status: {
        annotated: 3,
        events: 4,
        failures: ["annotating Service pr-1/a: u is not allowed to (403 Forbidden: no)"],
      },
    };
    expect(report(r)).toEqual([
      "+ a on gateway: x",
      "- b on gateway: y",
      "~ c on gateway: z",
      "route status not written: annotating Service pr-1/a: u is not allowed to (403 Forbidden: no)",
      "route status: 3 Service annotations written, 4 Events created",
      "routes live in 1.3s: 1 added, 1 removed, 1 changed",
    ]);
    expect(report({ ...r, recordedSeconds: 12.04 }).at(-1)).toBe(
      "routes live in 1.3s, recorded in the state in 12.0s: 1 added, 1 removed, 1 changed",
    );
  });

  it("reads the routes each resource's state holds, none when it holds none", () => {
    const outputs = { routes: { "pr-1/batch": "https://d/pr-1/batch -> b (c)" } };
    expect(
      syncedRoutes([
        { urn: "u1", name: "gateway-routes", outputs } as never,
        { urn: "u2", name: "internal-gateway-routes", outputs: {} } as never,
      ]),
    ).toEqual({
      "gateway-routes": { "pr-1/batch": "https://d/pr-1/batch -> b (c)" },
      "internal-gateway-routes": {},
    });
  });

  it("reads a state recorded before routes were lines (an object per route) as the lines those routes are", () => {
    const dev = { "pr-2": [shiftedService("web")], "pr-1": ["batch"] };
    const old = views(dev, minutesIntoShift(10))["gateway-routes"];
    const state = [{ urn: "u1", name: "gateway-routes", outputs: { routes: old } } as never];
    expect(syncedRoutes(state)).toEqual({ "gateway-routes": lines(dev, minutesIntoShift(10))["gateway-routes"] });
    // So the first sync after an upgrade reports only what really changed.
    expect(
      routeChanges(syncedRoutes(state), { "gateway-routes": lines(dev, minutesIntoShift(10))["gateway-routes"]! }),
    ).toEqual({
      added: [],
      removed: [],
      changed: [],
    });
  });

  it("knows while a shift still moves weights (the watcher re-syncs then), and after it does not", () => {
    const dev = { "pr-2": [shiftedService("web")], "pr-1": ["batch"] };
    expect(shiftsMoving(Object.values(views(dev, minutesIntoShift(10))), minutesIntoShift(10))).toBe(true);
    expect(shiftsMoving(Object.values(views(dev, minutesIntoShift(10))), minutesIntoShift(100))).toBe(false);
    expect(shiftsMoving(Object.values(views(dev, minutesIntoShift(10))), minutesIntoShift(-1))).toBe(false);
    expect(shiftsMoving(Object.values(views({ "pr-1": ["batch"] }, minutesIntoShift(10))), minutesIntoShift(10))).toBe(
      false,
    );
    // One gateway's routes with a moving shift is enough.
    const moving = views(dev, minutesIntoShift(10))["gateway-routes"];
    const still = views({ "pr-1": ["batch"] }, minutesIntoShift(10))["gateway-routes"];
    expect(shiftsMoving([still, moving], minutesIntoShift(10))).toBe(true);
  });

  it("plans each resource from its wiring in state and the current stack config, rendered at the instant, not validated yet", () => {
    const facts = {
      gateway: "internal-gateway" as const,
      namespace: "edge",
      configMap: "internal-xds",
      config: routingConfig(config()),
      devNamespaces: {},
    };
    const state = [
      { urn: "u", name: "internal-gateway-routes", outputs: { ...facts, routes: {}, dataDigest: "", renderedAt: "" } },
    ];
    const now = minutesIntoShift(20);
    const [p] = plan(
      state,
      { config: config(), kubeconfig: "apiVersion: v1" },
      { "pr-2": [shiftedService("web")] },
      now,
    );
    expect(p!.facts).toEqual({
      ...facts,
      devNamespaces: { "pr-2": [shiftedService("web")] },
      kubeconfig: "apiVersion: v1",
    });
    expect(p!.state).toBe(state[0]);
    expect(p!.rendered.validated).toBe(false);
    expect(p!.routes).toEqual(renderRoutes(p!.facts, now).routes);
    expect(p!.routes["pr-2/web"]!.clusters["pr-2_web_green"]!.weight).toBe(20);
    expect(p!.digest).toBe(dataDigest(renderRoutes(p!.facts, now).files.xds));
    expect(plan(state, { config: config() }, {}, now)[0]!.facts).not.toHaveProperty("kubeconfig");
    // The same builder as the program's (program/stack.ts): the wiring from state, not the rest of its outputs.
    expect(p!.facts).toEqual(
      routesInputs(state[0]!.outputs, config(), { "pr-2": [shiftedService("web")] }, { kubeconfig: "apiVersion: v1" }),
    );
  });
});

describe("sync-routes: the record step", () => {
  const sync = {
    devNamespaces: { "pr-2": ["batch"] },
    renderedAt: "2026-11-30T10:20:00.000Z",
    written: { gateway: "a".repeat(64), "internal-gateway": "b".repeat(64) },
  };
  const state = [
    { urn: "urn:pulumi:dev::envoy-gateways::t::gateway-routes", name: "gateway-routes" },
    { urn: "urn:pulumi:dev::envoy-gateways::t::internal-gateway-routes", name: "internal-gateway-routes" },
  ] as RoutesResourceState[];
  /** A stack whose update runs the inline program it is given, as the engine would, noting the environment it ran in. */
  function stackRunning(fails?: { message: string; stderr: string }) {
    const ups: { opts: Record<string, unknown>; env: Record<string, string | undefined> }[] = [];
    const envVars: Record<string, string> = { PULUMI_CONFIG_PASSPHRASE: "p" };
    const engineStack = {
      name: "dev",
      workspace: { envVars },
      up: async (opts: { program?: () => Promise<unknown> }) => {
        ups.push({ opts, env: { ...process.env, ...envVars } });
        if (fails) throw Object.assign(new Error(fails.message), { stderr: fails.stderr });
        await opts.program!();
        return {};
      },
    };
    // The project's stack, whose Automation API stack is loaded only for an engine run.
    const stack = { name: "dev", workDir: "/project", automation: async () => engineStack };
    return { stack: stack as unknown as ProjectStack, ups, envVars };
  }

  it("updates only the routes resources, running the program inline given what the sync discovered and wrote", async () => {
    engine.programRuns.length = 0;
    engine.inState = [{ urn: "after", name: "gateway-routes", outputs: {} }];
    const { stack, ups, envVars } = stackRunning();
    const after = await record(stack, state, sync, { log: () => {} });
    expect(ups).toHaveLength(1);
    // Without secrets in the run's summary, which a record does not read.
    expect(ups[0]!.opts).toEqual({
      target: state.map((r) => r.urn),
      color: "never",
      program: expect.any(Function),
      showSecrets: false,
    });
    expect(engine.programRuns).toEqual([sync]);
    expect(engine.programRuns[0]).toBe(sync);
    // Nothing handed through the environment: the workspace's variables are as they were.
    expect(envVars).toEqual({ PULUMI_CONFIG_PASSPHRASE: "p" });
    expect(Object.keys(ups[0]!.env).filter((k) => k.startsWith("ENVOY_GATEWAYS"))).toEqual([]);
    expect(after).toBe(engine.inState);
    // The engine's events go to whoever asked for them.
    const onEvent = () => {};
    await record(stack, state, sync, { log: () => {}, onEvent });
    expect(ups[1]!.opts.onEvent).toBe(onEvent);
  });

  it("waits while another update holds the stack's lock, as the options say, and says who holds it", async () => {
    engine.programRuns.length = 0;
    engine.inState = [];
    let refusals = 1;
    const up = vi.fn(async (opts: { program?: () => Promise<unknown> }) => {
      if (refusals-- > 0)
        throw Object.assign(new Error("exit code 255"), {
          name: "ConcurrentUpdateError",
          stderr:
            "error: the stack is currently locked by 1 lock(s): created by ci@runner-3 (pid 4242) at 2026-12-05T10:00:00Z",
        });
      await opts.program!();
      return {};
    });
    const stack = { name: "dev", workDir: "/project", automation: async () => ({ name: "dev", up }) };
    const lines: string[] = [];
    const slept: number[] = [];
    await record(stack as unknown as ProjectStack, state, sync, {
      log: (l) => lines.push(l),
      lock: { firstDelayMs: 3000, sleep: async (ms) => void slept.push(ms) },
    });
    expect(up).toHaveBeenCalledTimes(2);
    expect(slept).toEqual([3000]);
    expect(lines).toEqual([
      "the stack is locked by ci@runner-3 (pid 4242) since 2026-12-05T10:00:00Z: waiting 3s, then trying again",
    ]);
    expect(engine.programRuns).toEqual([sync]);
  });

  it("says that only the record failed, keeping the engine's error output", async () => {
    engine.programRuns.length = 0;
    const { stack } = stackRunning({ message: "exit code 255", stderr: "error: the update failed" });
    const failed = record(stack, state, sync, { log: () => {} });
    await expect(failed).rejects.toThrow(
      "the ConfigMaps hold the new routes, but recording them in the stack's state failed (the next sync or `pulumi up` records them): exit code 255",
    );
    await expect(failed).rejects.toMatchObject({ stderr: "error: the update failed" });
    expect(engine.programRuns).toEqual([]);
  });

  it("is given, by the live write, the namespaces, the instant and the digest of every gateway's files", async () => {
    const dev = { "pr-2": [shiftedService("web")] };
    const at = minutesIntoShift(20);
    const resources = [
      { gateway: "gateway" as const, configMap: "gateway-xds" },
      { gateway: "internal-gateway" as const, configMap: "internal-gateway-xds" },
    ].map(({ gateway, configMap }) => ({
      urn: `u-${gateway}`,
      name: `${gateway}-routes`,
      outputs: {
        ...routesInputs({ gateway, namespace: "default", configMap }, config(), {}),
        routes: {},
        dataDigest: "",
        renderedAt: "",
      },
    }));
    const planned = plan(resources, { config: config() }, dev, at);
    expect(planned[0]!.digest).not.toBe(planned[1]!.digest);
    // Both in place already: nothing is written, and the record is still told what is there.
    const inPlace = Object.fromEntries(planned.map((p) => [p.state.name, p.digest]));
    expect(await writeLive(planned, dev, at, inPlace)).toEqual({
      devNamespaces: dev,
      renderedAt: "2026-11-30T10:20:00.000Z",
      written: { gateway: planned[0]!.digest, "internal-gateway": planned[1]!.digest },
    });
  });
});
