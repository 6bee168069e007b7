// The route controller's loop (route-sync/controller.ts) with the election,
// its ConfigMap's watch and the watcher stood in: a watcher only while
// leading with a good config, a new one per config (never two at once),
// fenced writes, a refused config kept out, probes and metrics.
// (test/e2e/route-controller.test.ts runs it as pods on the local node.)
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { KubeConfig } from "@kubernetes/client-node";
import type { ElectionCallbacks } from "../../kube/leader.js";
import { controllerConfigData } from "../../routes-provider/controller-config.js";
import type { WriteFence } from "../../routes-provider/core.js";
import { runRouteController, type RouteController } from "../../route-sync/controller.js";
import type { WatchOptions } from "../../route-sync/watch.js";
import { minimalRaw } from "./fixtures.js";

const h = vi.hoisted(() => ({
  election: undefined as ElectionCallbacks | undefined,
  leading: undefined as { epoch: number; sinceMs: number } | undefined,
  lastRoundMs: 0,
  electionStopped: false,
  onData: undefined as ((data: Record<string, string> | undefined) => void) | undefined,
  configStopped: false,
  watchers: [] as {
    sync: unknown;
    state: { name: string; outputs: { configMap: string; devNamespaces: unknown } }[];
    options: WatchOptions;
    stopped: boolean;
    synced: boolean;
    step: { startedMs?: number; finishedMs?: number };
    finish: () => void;
  }[],
}));

vi.mock("../../kube/leader.js", () => ({
  electLeader: (_kc: unknown, _lease: unknown, _id: string, _t: unknown, callbacks: ElectionCallbacks) => {
    h.election = callbacks;
    return {
      leading: () => h.leading,
      holder: () => "",
      lastReadMs: () => h.lastRoundMs,
      lastRoundMs: () => h.lastRoundMs,
      stop: async () => {
        h.electionStopped = true;
      },
    };
  },
}));
vi.mock("../../kube/watch.js", () => ({
  watchConfigMap: (_kc: unknown, _ns: string, _name: string, callbacks: { onData: typeof h.onData }) => {
    h.onData = callbacks.onData;
    return {
      stop: async () => {
        h.configStopped = true;
      },
    };
  },
}));
vi.mock("../../route-sync/watch.js", () => ({
  watchRoutes: (_record: unknown, start: { sync: unknown; state: never[] }, options: WatchOptions) => {
    let finish!: () => void;
    const done = new Promise<void>((r) => (finish = r));
    const w = { sync: start.sync, state: start.state, options, stopped: false, synced: false, step: {}, finish };
    h.watchers.push(w);
    return {
      done,
      stop: () => {
        w.stopped = true;
      },
      synced: () => w.synced,
      lastStep: () => w.step,
    };
  },
}));

const TARGETS = [
  { name: "gateway-routes", gateway: "gateway" as const, namespace: "default", configMap: "gateway-xds" },
];
const data = (raw: Record<string, unknown> = minimalRaw()) => controllerConfigData(raw, TARGETS);
const tick = () => new Promise((r) => setTimeout(r, 0));
const now = 1_000_000;
let lines: string[];
let controller: RouteController;

function lead(epoch: number) {
  h.leading = { epoch, sinceMs: now };
  h.election!.onStartedLeading(h.leading, new AbortController().signal);
}
function lose(why = "Lease default/route-controller is held by b now") {
  h.leading = undefined;
  h.election!.onStoppedLeading(why);
}
const live = () => h.watchers.filter((w) => !w.stopped);
const fence = (i = h.watchers.length - 1): WriteFence => h.watchers[i]!.options.fence!();

beforeEach(() => {
  h.leading = undefined;
  h.lastRoundMs = now;
  h.watchers = [];
  h.electionStopped = false;
  h.configStopped = false;
  lines = [];
  controller = runRouteController({} as KubeConfig, {
    namespace: "default",
    identity: "a",
    timing: { leaseDurationMs: 10_000, renewDeadlineMs: 7_000, retryPeriodMs: 2_000 },
    resyncMs: 10_000,
    stuckAfterMs: 300_000,
    log: (l) => lines.push(l),
    clock: () => now,
  });
});

afterEach(async () => {
  for (const w of h.watchers) w.finish();
  await controller.stop();
});

describe("the route controller", () => {
  it("watches only while it leads with a config, from a fresh watcher each time it takes the Lease", async () => {
    lead(4);
    await tick();
    expect(h.watchers).toHaveLength(0);
    h.onData!(data());
    await tick();
    expect(live()).toHaveLength(1);
    expect(h.watchers[0]!.state.map((s) => s.outputs.configMap)).toEqual(["gateway-xds"]);
    expect(h.watchers[0]!.state[0]!.outputs.devNamespaces).toEqual({});
    lose();
    expect(live()).toHaveLength(0);
    h.watchers[0]!.finish();
    lead(6);
    await tick();
    expect(live()).toHaveLength(1);
    expect(fence().epoch).toBe(6);
    expect(lines).toContain("no longer leading: Lease default/route-controller is held by b now; writes stop");
  });

  it("starts no watcher for a config read while another replica leads, and takes the config's debounce", async () => {
    h.onData!(data({ ...minimalRaw(), routeSync: { inCluster: { image: "rc:0.1.0", debounceMs: 700 } } }));
    await tick();
    expect(h.watchers).toHaveLength(0);
    h.election!.onNewHolder!("b_0123abcd");
    h.election!.onNewHolder!("a");
    h.election!.onNewHolder!("");
    expect(lines.filter((l) => l.startsWith("Lease "))).toEqual([
      "Lease default/route-controller held by b_0123abcd",
      "Lease default/route-controller held by nobody",
    ]);
    lead(2);
    await tick();
    expect(h.watchers[0]!.options.debounceMs).toBe(700);
    expect(h.watchers[0]!.options.resyncMs).toBe(10_000);
  });

  it("keeps an old watcher's fence shut after leadership is lost and taken again, even at the same epoch", async () => {
    h.onData!(data());
    lead(5);
    await tick();
    const old = fence(0);
    lose();
    h.watchers[0]!.finish();
    lead(5);
    await tick();
    expect(old.leading()).toBe(false);
    expect(fence(1).leading()).toBe(true);
  });

  it("fences each write: the epoch it leads with, its config's digest, and no write once it lost the Lease", async () => {
    h.onData!(data());
    lead(7);
    await tick();
    const f = fence();
    expect(f.epoch).toBe(7);
    expect(f.leading()).toBe(true);
    expect(f.configDigest).toMatch(/^[0-9a-f]{64}$/);
    // The renew deadline passed: the election says not leading before it calls back.
    h.leading = undefined;
    expect(f.leading()).toBe(false);
    // Leading again with a later epoch: the old watcher's fence stays shut.
    h.leading = { epoch: 8, sinceMs: now };
    expect(f.leading()).toBe(false);
  });

  it("starts a new watcher for a new config only once the last one stopped, with the new digest", async () => {
    h.onData!(data());
    lead(1);
    await tick();
    const first = fence().configDigest;
    h.onData!(data({ ...minimalRaw(), namespace: "edge" }));
    await tick();
    expect(h.watchers[0]!.stopped).toBe(true);
    expect(h.watchers).toHaveLength(1);
    h.watchers[0]!.finish();
    await tick();
    expect(h.watchers).toHaveLength(2);
    expect(fence(1).configDigest).not.toBe(first);
    expect((h.watchers[1]!.sync as { config: { namespace: string } }).config.namespace).toBe("edge");
    // The same data again is no change.
    h.onData!(data({ ...minimalRaw(), namespace: "edge" }));
    await tick();
    expect(h.watchers).toHaveLength(2);
  });

  it("keeps the last good config when the ConfigMap turns bad or goes, and says so", async () => {
    h.onData!(data());
    lead(1);
    await tick();
    h.onData!({ ...data(), "routes.json": "[" });
    await tick();
    expect(live()).toHaveLength(1);
    expect(lines.at(-1)).toMatch(/routes\.json: is not JSON.*\nkeeping the last good config$/s);
    expect(
      await controller.metrics.registry.getSingleMetricAsString("envoy_gateways_route_controller_config_refused"),
    ).toMatch(/ 1$/);
    h.onData!(undefined);
    expect(live()).toHaveLength(1);
    expect(lines.at(-1)).toMatch(/does not exist.*; keeping the last config read$/);
    expect(
      await controller.metrics.registry.getSingleMetricAsString("envoy_gateways_route_controller_config_refused"),
    ).toMatch(/ 1$/);
    // The same good config back: no longer refused, and no new watcher for what it already runs.
    const logged = lines.length;
    h.onData!(data());
    await tick();
    expect(
      await controller.metrics.registry.getSingleMetricAsString("envoy_gateways_route_controller_config_refused"),
    ).toMatch(/ 0$/);
    expect(h.watchers).toHaveLength(1);
    expect(lines.slice(logged).filter((l) => l.includes("read from ConfigMap"))).toEqual([]);
  });

  it("says it waits for a config while none good was read yet", async () => {
    h.onData!(undefined);
    expect(lines.at(-1)).toMatch(/does not exist.*; waiting for it$/);
    h.onData!({ ...data(), "routes.json": "[" });
    expect(lines.at(-1)).toMatch(/routes\.json: is not JSON.*\nwaiting for a good one$/s);
  });

  it("is ready with a good config, and, leading, once its watcher's lists are read", async () => {
    expect(controller.ready()).toEqual({ ok: false, why: ["ConfigMap default/route-controller not read yet"] });
    h.onData!(undefined);
    expect(controller.ready().why[0]).toContain("does not exist");
    h.onData!(data());
    expect(controller.ready()).toEqual({ ok: true, why: [] });
    lead(1);
    await tick();
    expect(controller.ready()).toEqual({
      ok: false,
      why: ["leading, but the namespaces and Services are not listed yet"],
    });
    h.watchers[0]!.synced = true;
    expect(controller.ready().ok).toBe(true);
  });

  it("is live unless the election loop stalls or a live step runs past the limit", async () => {
    h.onData!(data());
    lead(1);
    await tick();
    expect(controller.live()).toEqual({ ok: true, why: [] });
    h.watchers[0]!.step = { startedMs: now - 300_001, finishedMs: now - 400_000 };
    expect(controller.live()).toEqual({ ok: false, why: ["a live step has run for 300 s"] });
    h.watchers[0]!.step = { startedMs: now - 300_001, finishedMs: now - 1 };
    expect(controller.live().ok).toBe(true);
    h.lastRoundMs = now - 61_000;
    expect(controller.live()).toEqual({ ok: false, why: ["the election loop has not run for 61 s"] });
  });

  it("counts leadership, writes, failures, routed namespaces and ConfigMap fill in its metrics", async () => {
    h.onData!(data());
    lead(3);
    await tick();
    const events = h.watchers[0]!.options.onEvent!;
    events({ kind: "live", seconds: 0.4, routed: 12, leftOut: 2, fill: { gateway: 0.5 } });
    events({ kind: "failed", step: "live" });
    const text = await controller.metrics.registry.metrics();
    expect(text).toMatch(/^envoy_gateways_route_controller_leader 1$/m);
    expect(text).toMatch(/^envoy_gateways_route_controller_leader_epoch 3$/m);
    expect(text).toMatch(/^envoy_gateways_route_controller_write_seconds_bucket\{le="0.5"\} 1$/m);
    expect(text).toMatch(/^envoy_gateways_route_controller_write_seconds_bucket\{le="0.25"\} 0$/m);
    expect(text).toMatch(/^envoy_gateways_route_controller_step_failures_total\{step="live"\} 1$/m);
    expect(text).toMatch(/^envoy_gateways_route_controller_step_failures_total\{step="status"\} 0$/m);
    expect(text).toMatch(/^envoy_gateways_route_controller_routed_namespaces 12$/m);
    expect(text).toMatch(/^envoy_gateways_route_controller_left_out_namespaces 2$/m);
    expect(text).toMatch(/^envoy_gateways_route_controller_configmap_fill_ratio\{gateway="gateway"\} 0.5$/m);
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    lose();
    expect(await controller.metrics.registry.metrics()).toMatch(/^envoy_gateways_route_controller_leader 0$/m);
  });

  it("stops its watcher before it releases the Lease", async () => {
    h.onData!(data());
    lead(1);
    await tick();
    const stopping = controller.stop();
    await tick();
    expect(h.watchers[0]!.stopped).toBe(true);
    expect(h.electionStopped).toBe(false);
    h.watchers[0]!.finish();
    await stopping;
    expect(h.electionStopped).toBe(true);
    expect(h.configStopped).toBe(true);
    expect(fence(0).leading()).toBe(false);
  });
});
