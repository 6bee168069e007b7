// sync-routes --watch on its serial runners, with the informers, the live write and the
// engine's record stood in for: bursts coalesced, records one at a time with the latest
// write, failures retried with backoff, and stop() after the steps in progress.
// (test/e2e/routes.test.ts runs it against a real cluster and engine.)
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { WatchCallbacks } from "../../kube/watch.js";
import { InputError } from "../../routing/config/errors.js";
import type { ServiceObject } from "../../routing/discovery.js";
import { ROUTE_STATUS_ANNOTATION } from "../../routing/labels.js";
import type { SyncRecord } from "../../program/main.js";
import type { ProjectStack, RoutesResourceState } from "../../route-sync/stack.js";
import type { SyncConfig } from "../../route-sync/sync.js";
import { watchRoutes, type Watcher, type WatchOptions } from "../../route-sync/watch.js";
import { RoutesInputError } from "../../routes-provider/core.js";

const h = vi.hoisted(() => ({
  callbacks: undefined as WatchCallbacks | undefined,
  /** The digest the routes render to now (what the cluster's namespaces would give). */
  digest: "d0",
  /** The digest the state holds. */
  recordedDigest: "d0",
  writeError: undefined as Error | undefined,
  renderError: undefined as Error | undefined,
  writes: [] as string[],
  records: [] as { digest: string; resolve: () => void; reject: (e: Error) => void }[],
  watchStopped: false,
  /** The problems discovery reports. */
  problems: [] as { key: string; source: "namespaces"; message: string }[],
  /** What each route status write reports. */
  status: { annotated: 0, events: 0, failures: [] as string[] },
  /** When set, each route status write waits for it (a slow write of thousands of Services). */
  statusGate: undefined as Promise<void> | undefined,
  /** Route status writes started. */
  statusWrites: 0,
  /** The Services the informer cache holds now, and those each route status write compared with, as it started. */
  services: [] as ServiceObject[],
  statusCompared: [] as ServiceObject[][],
  /** What a route status write throws, if set. */
  statusError: undefined as Error | undefined,
  /** When set, each live write waits for it. */
  writeGate: undefined as Promise<void> | undefined,
  /** What shiftsMoving says, and the routes it was asked about each time. */
  shifting: false,
  shiftQuestions: [] as unknown[],
  /** The routes each plan gives (what the shift ticker asks about). */
  plannedRoutes: { "pr-1/web": { service: "web" } } as unknown,
  sync: undefined as unknown,
  /** The route lines the next live write reports. */
  changes: { added: ["a route"], removed: [] as string[], changed: [] as string[] },
  /** The route lines each plan gives, and what each routeChanges call compared. */
  plannedLines: { "pr-1/web": "https://dev.example.org/pr-1/web/" } as Record<string, string>,
  compared: [] as { before: unknown; after: unknown }[],
  /** The options each record was given. */
  recordOptions: [] as unknown[],
  /** The annotations the watch was told are not changes. */
  ignoredAnnotations: undefined as string[] | undefined,
  /** Whether the informers' lists are read, and what resolves once they are. */
  ready: true,
  synced: Promise.resolve(),
  /** The fence each live write was given. */
  fences: [] as unknown[],
}));

vi.mock("../../kube/client.js", () => ({ loadKubeConfig: () => ({}) }));
vi.mock("../../kube/watch.js", () => ({
  watchRoutedObjects: (_kc: unknown, _ns: string, _svc: string, callbacks: WatchCallbacks, ignored: string[]) => {
    h.callbacks = callbacks;
    h.ignoredAnnotations = ignored;
    return {
      synced: h.synced,
      ready: () => h.ready,
      namespaces: () => [],
      services: () => h.services,
      stop: async () => {
        h.watchStopped = true;
      },
    };
  },
}));
vi.mock("../../routing/capacity.js", () => ({
  // Discovery's problems as the test sets them; no namespace routed.
  routedDevNamespaces: () => ({ devNamespaces: {}, created: {}, problems: h.problems, warnings: [] }),
}));
vi.mock("../../route-sync/stack.js", () => ({
  stackConfigOf: async () => h.sync,
  engineErrorLines: (e: Error) => e.message,
}));
vi.mock("../../route-sync/sync.js", async (importOriginal) => ({
  // What a record is given, as the real one builds it.
  syncRecord: (await importOriginal<typeof import("../../route-sync/sync.js")>()).syncRecord,
  statusLines: (await importOriginal<typeof import("../../route-sync/sync.js")>()).statusLines,
  // The route status of an empty cluster: nothing to write (test/e2e/routes.test.ts writes it on a real one).
  writeStatus: async (_sync: unknown, listed: { services: ServiceObject[] }) => {
    h.statusWrites++;
    h.statusCompared.push(listed.services);
    await h.statusGate;
    if (h.statusError) throw h.statusError;
    return h.status;
  },
  syncedRoutes: () => ({}),
  shiftsMoving: (views: unknown) => {
    h.shiftQuestions.push(views);
    return h.shifting;
  },
  routeChanges: (before: unknown, after: unknown) => {
    h.compared.push({ before, after });
    return h.changes;
  },
  plan: () => {
    if (h.renderError) throw h.renderError;
    return [
      {
        state: { name: "gateway-routes" },
        facts: { gateway: "gateway" },
        routes: h.plannedRoutes,
        lines: h.plannedLines,
        digest: h.digest,
        // A quarter of the bytes Kubernetes allows in a ConfigMap.
        rendered: { files: { xds: { "cds.yaml": "x".repeat(262_136) } } },
      },
    ];
  },
  recorded: (p: { digest: string }) => p.digest === h.recordedDigest,
  writeLive: async (
    planned: { digest: string }[],
    _ns: unknown,
    _now: unknown,
    _written: unknown,
    fence: unknown,
  ): Promise<SyncRecord> => {
    h.fences.push(fence);
    await h.writeGate;
    if (h.writeError) throw h.writeError;
    h.writes.push(planned[0]!.digest);
    return { devNamespaces: {}, renderedAt: "", written: { gateway: planned[0]!.digest } };
  },
  record: (_stack: ProjectStack, state: RoutesResourceState[], wrote: SyncRecord, options: unknown) =>
    new Promise((resolve, reject) => {
      h.recordOptions.push(options);
      const digest = wrote.written.gateway!;
      h.records.push({
        digest,
        resolve: () => {
          h.recordedDigest = digest;
          resolve(state);
        },
        reject,
      });
    }),
}));

const sync = { config: { namespace: "default", devNamespaces: { selector: "envoy-gateways.io/routes=dev" } } };
const state = [{ name: "gateway-routes", outputs: { dataDigest: "d0" } }] as unknown as RoutesResourceState[];

describe("sync-routes --watch", () => {
  let lines: string[];
  let watcher: Watcher;
  let stopped: boolean;
  const out = () => lines.join("\n");
  /** A change the informers report, with the digest the routes render to after it. */
  const change = (what: string, digest: string) => {
    h.digest = digest;
    h.callbacks!.onChange(what);
  };
  const tick = (ms = 0) => vi.advanceTimersByTimeAsync(ms);
  const log = (l: string) => lines.push(l);
  /** Stops the watcher beforeEach started and starts one with these options instead. */
  const restart = async (options: Partial<WatchOptions> = {}) => {
    watcher.stop();
    await tick();
    lines = [];
    watcher = watchRoutes(
      {} as ProjectStack,
      { sync: sync as unknown as SyncConfig, state },
      { debounceMs: 300, log, ...options },
    );
    await tick();
  };
  /** The line each live write ends with. */
  const liveLines = () => lines.filter((l) => l.startsWith("routes live"));

  beforeEach(async () => {
    vi.useFakeTimers();
    Object.assign(h, {
      digest: "d0",
      recordedDigest: "d0",
      writeError: undefined,
      renderError: undefined,
      writes: [],
      records: [],
      watchStopped: false,
      problems: [],
      status: { annotated: 0, events: 0, failures: [] },
      statusGate: undefined,
      statusWrites: 0,
      services: [],
      statusCompared: [],
      statusError: undefined,
      writeGate: undefined,
      shifting: false,
      shiftQuestions: [],
      sync,
      changes: { added: ["a route"], removed: [], changed: [] },
      compared: [],
      recordOptions: [],
      ignoredAnnotations: undefined,
      ready: true,
      synced: Promise.resolve(),
      fences: [],
    });
    lines = [];
    stopped = false;
    watcher = watchRoutes({} as ProjectStack, { sync: sync as unknown as SyncConfig, state }, { debounceMs: 300, log });
    void watcher.done.then(() => (stopped = true));
    await tick();
  });

  afterEach(async () => {
    watcher.stop();
    for (const r of h.records) r.resolve();
    await tick();
    vi.useRealTimers();
  });

  it("re-renders on its ticker while a traffic shift of the routes it last planned still moves", async () => {
    await restart({ resyncMs: 10_000 });
    h.digest = "d1";
    await tick(10_000);
    // Not moving: the ticker asked about the routes the first step planned, and nothing ran.
    expect(h.shiftQuestions.at(-1)).toEqual([h.plannedRoutes]);
    expect(h.writes).toEqual([]);
    h.shifting = true;
    await tick(10_000);
    await tick(1000);
    expect(h.writes, out()).toEqual(["d1"]);
    expect(out()).toMatch(/routes live [\d.]+s after the change was seen \(traffic shift in progress;/);
  });

  it("says once that the routes are in step, and writes nothing", () => {
    expect(lines).toEqual(["routes in step: nothing to write (0 dev/PR namespaces routed)"]);
    expect(h.writes).toEqual([]);
    expect(h.records).toEqual([]);
  });

  it("says each problem once while it lasts, and again once it came back", async () => {
    const problem = (ns: string) => ({ key: `Namespace ${ns}`, source: "namespaces" as const, message: "left out" });
    h.problems = [problem("pr-1")];
    change("namespace pr-1 added", "d0");
    await tick(300);
    h.problems = [problem("pr-1"), problem("pr-2")];
    change("namespace pr-2 added", "d0");
    await tick(300);
    change("service pr-3/x added", "d0");
    await tick(300);
    h.problems = [];
    change("namespace pr-1 deleted", "d0");
    await tick(300);
    h.problems = [problem("pr-2")];
    change("namespace pr-2 changed", "d0");
    await tick(300);
    expect(lines.filter((l) => l.startsWith("Namespace"))).toEqual([
      "Namespace pr-1 left out",
      "Namespace pr-2 left out",
      "Namespace pr-2 left out",
    ]);
  });

  it("says a route status failure once while it lasts, and what was written each time", async () => {
    h.status = { annotated: 0, events: 0, failures: ["pr-1/batch: services is forbidden"] };
    change("namespace pr-1 added", "d0");
    await tick(300);
    h.status = { annotated: 1, events: 1, failures: ["pr-1/batch: services is forbidden"] };
    change("service pr-2/x added", "d0");
    await tick(300);
    h.status = { annotated: 1, events: 1, failures: [] };
    change("service pr-2/y added", "d0");
    await tick(300);
    h.status = { annotated: 0, events: 0, failures: ["pr-1/batch: services is forbidden"] };
    change("service pr-2/z added", "d0");
    await tick(300);
    expect(lines.filter((l) => l.startsWith("route status"))).toEqual([
      "route status not written: pr-1/batch: services is forbidden",
      "route status: 1 Service annotations written, 1 Events created",
      "route status: 1 Service annotations written, 1 Events created",
      "route status not written: pr-1/batch: services is forbidden",
    ]);
  });

  it("writes the routes of a change while a long route status write is still going, then the latest status", async () => {
    let release!: () => void;
    h.statusGate = new Promise((r) => (release = r));
    h.status = { annotated: 5000, events: 5000, failures: [] };
    const before = h.statusWrites; // the first step's, on what the watch read at its start
    change("namespace pr-1 added", "d1");
    await tick(300);
    expect(h.writes, out()).toEqual(["d1"]);
    expect(h.statusWrites).toBe(before + 1);
    change("namespace pr-2 added", "d2");
    await tick(300);
    change("namespace pr-3 added", "d3");
    await tick(300);
    // The routes follow; the status of pr-2's step is replaced by pr-3's, not written in between.
    expect(h.writes).toEqual(["d1", "d2", "d3"]);
    expect(h.statusWrites).toBe(before + 1);
    release();
    await tick();
    expect(h.statusWrites).toBe(before + 2);
    expect(lines.filter((l) => l.startsWith("route status"))).toEqual([
      "route status: 5000 Service annotations written, 5000 Events created",
      "route status: 5000 Service annotations written, 5000 Events created",
    ]);
  });

  it("compares the route status with the Services' annotations as they are when its write starts, not as its step listed them", async () => {
    const service = (status?: string): ServiceObject => ({
      metadata: { namespace: "pr-1", name: "web", annotations: status ? { [ROUTE_STATUS_ANNOTATION]: status } : {} },
    });
    let release!: () => void;
    h.statusGate = new Promise((r) => (release = r));
    h.services = [service()];
    change("namespace pr-1 added", "d1");
    await tick(300);
    change("namespace pr-2 added", "d2");
    await tick(300);
    // The first write (still going) annotated pr-1/web, and the cache has it; the second step listed it before.
    h.services = [service("served at https://dev.example.org/pr-1/web/")];
    release();
    await tick();
    expect(h.statusCompared.slice(-2)).toEqual([[service()], [service("served at https://dev.example.org/pr-1/web/")]]);
  });

  it("retries a route status write that threw, until it is written", async () => {
    h.statusError = new Error("the API server did not answer");
    change("namespace pr-1 added", "d1");
    await tick(300);
    const tried = h.statusWrites;
    expect(lines.at(-1)).toBe("route status not written: the API server did not answer; trying again in 2s");
    h.statusError = undefined;
    h.status = { annotated: 1, events: 1, failures: [] };
    await tick(1999);
    expect(h.statusWrites).toBe(tried);
    await tick(1);
    expect(h.statusWrites).toBe(tried + 1);
    expect(lines.at(-1)).toBe("route status: 1 Service annotations written, 1 Events created");
    // Written: nothing more to retry.
    await tick(600_000);
    expect(h.statusWrites).toBe(tried + 1);
  });

  it("says a route status write that threw while stopping is not written, and not tried again", async () => {
    let release!: () => void;
    h.statusGate = new Promise((r) => (release = r));
    change("namespace pr-1 added", "d1");
    await tick(300);
    h.records[0]!.resolve();
    await tick();
    watcher.stop();
    h.statusError = new Error("the API server did not answer");
    release();
    await tick();
    expect(stopped).toBe(true);
    expect(lines.slice(-2)).toEqual([
      "route status not written: the API server did not answer",
      "stopped before writing the route status of the last routes written: the next sync-routes writes it",
    ]);
    const tried = h.statusWrites;
    await tick(600_000);
    expect(h.statusWrites).toBe(tried);
  });

  it("says the route status of a write that finished while stopping is not written, and starts no status write", async () => {
    let release!: () => void;
    h.writeGate = new Promise((r) => (release = r));
    change("namespace pr-1 added", "d1");
    await tick(300);
    const before = h.statusWrites;
    watcher.stop();
    release();
    await tick();
    expect(stopped).toBe(true);
    expect(h.writes, out()).toEqual(["d1"]);
    expect(h.statusWrites).toBe(before);
    expect(lines.slice(-2)).toEqual([
      "stopped before recording the routes written since the last record: the ConfigMaps hold them; the next sync-routes or `pulumi up` records them",
      "stopped before writing the route status of the last routes written: the next sync-routes writes it",
    ]);
  });

  it("writes a burst of changes once, the debounce time after its first change, then records it", async () => {
    change("namespace pr-1 added", "d1");
    await tick(100);
    change("service pr-1/batch added", "d1");
    await tick(199);
    expect(h.writes).toEqual([]);
    await tick(1);
    expect(h.writes, out()).toEqual(["d1"]);
    expect(out()).toMatch(
      /\+ a route\nroutes live 0\.3s after the change was seen \(namespace pr-1 added, service pr-1\/batch added; render \d+ ms, write \d+ ms\): 1 added, 0 removed, 0 changed/,
    );
    expect(h.records.map((r) => r.digest)).toEqual(["d1"]);
    h.records[0]!.resolve();
    await tick();
    expect(out()).toMatch(/recorded in the stack's state \([\d.]+s\): every route written so far/);
  });

  it("writes a steady stream of changes as it goes, not once it stops", async () => {
    // A change every 100 ms for 1.2 s (a script creating namespaces one after another).
    for (let i = 1; i <= 12; i++) {
      change(`namespace pr-${i} added`, `d${i}`);
      await tick(100);
    }
    expect(h.writes).toEqual(["d3", "d6", "d9", "d12"]);
  });

  it("writes at once what must not wait (a moving traffic shift), even while a debounce is pending", async () => {
    await restart({ debounceMs: 60_000, resyncMs: 10_000 });
    h.shifting = true;
    change("service pr-1/web changed", "d1");
    await tick(9_999);
    expect(h.writes).toEqual([]);
    // The ticker, at 10 s, asks for a step at once (a timer of 0, which runs 1 ms later).
    await tick(2);
    expect(h.writes, out()).toEqual(["d1"]);
    // The 60 s timer it replaced is gone: nothing runs when it would have.
    h.shifting = false;
    h.digest = "d2";
    await tick(60_000);
    expect(h.writes).toEqual(["d1"]);
  });

  it("records routes the ConfigMaps already hold but the state does not, without writing them", async () => {
    // The state is behind (a record failed, say) while the ConfigMap holds d0 already.
    h.recordedDigest = "older";
    change("service pr-1/batch changed", "d0");
    await tick(300);
    expect(h.writes).toEqual([]);
    expect(h.records.map((r) => r.digest)).toEqual(["d0"]);
  });

  it("says each route added, removed and changed, and sums up more than five reasons", async () => {
    h.changes = { added: ["pr-1/web"], removed: ["pr-0/web"], changed: ["pr-2/web"] };
    for (const n of [1, 2, 3, 4, 5, 6]) change(`namespace pr-${n} added`, "d1");
    await tick(300);
    expect(lines.slice(1, 4)).toEqual(["+ pr-1/web", "- pr-0/web", "~ pr-2/web"]);
    expect(lines[4]).toMatch(
      /^routes live 0\.3s after the change was seen \(namespace pr-1 added, namespace pr-2 added, namespace pr-3 added, namespace pr-4 added, namespace pr-5 added and 1 more; render \d+ ms, write \d+ ms\): 1 added, 1 removed, 1 changed$/,
    );
  });

  it("says how long a record took, and writes again with the stack config changed meanwhile", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    await tick(2500);
    h.sync = { ...sync, config: { ...sync.config, namespace: "gateways" } };
    h.records[0]!.resolve();
    await tick();
    expect(out()).toContain("recorded in the stack's state (2.5s): every route written so far");
    h.digest = "d2";
    await tick(300);
    expect(out()).toMatch(/routes live [\d.]+s after the change was seen \(the stack config changed;/);
    expect(h.writes).toEqual(["d1", "d2"]);
  });

  it("writes nothing more when a record finds the stack config as it was", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    h.sync = { ...sync, config: { ...sync.config } };
    h.records[0]!.resolve();
    await tick(600_000);
    expect(out()).not.toContain("the stack config changed");
    expect(h.writes, out()).toEqual(["d1"]);
  });

  it("records one at a time, the latest write next, while the live writes go on", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    change("namespace pr-2 added", "d2");
    await tick(300);
    change("namespace pr-3 added", "d3");
    await tick(300);
    expect(h.writes).toEqual(["d1", "d2", "d3"]);
    expect(h.records.map((r) => r.digest)).toEqual(["d1"]);
    h.records[0]!.resolve();
    await tick();
    expect(out()).toContain("routes written meanwhile go in the next record");
    expect(h.records.map((r) => r.digest)).toEqual(["d1", "d3"]);
    h.records[1]!.resolve();
    await tick();
    expect(out()).toMatch(/every route written so far$/);
    expect(h.records).toHaveLength(2);
  });

  it("retries a failed record after 2 s, then 4 s, with the latest write", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    h.records[0]!.reject(new Error("error: the backend is unreachable"));
    await tick();
    expect(out()).toContain("error: the backend is unreachable\ntrying again in 2s");
    await tick(1999);
    expect(h.records).toHaveLength(1);
    await tick(1);
    expect(h.records.map((r) => r.digest)).toEqual(["d1", "d1"]);
    h.records[1]!.reject(new Error("error: the backend is unreachable"));
    await tick();
    expect(out()).toContain("trying again in 4s");
    change("namespace pr-2 added", "d2");
    await tick(300);
    // A newer write is recorded at once, in place of the retry.
    expect(h.records.map((r) => r.digest)).toEqual(["d1", "d1", "d2"]);
    h.records[2]!.resolve();
    await tick(600_000);
    expect(h.records).toHaveLength(3);
  });

  it("retries a failed live write after 2 s, saying why it runs", async () => {
    h.writeError = new Error("writing the routes of gateway failed; the API server did not answer");
    change("namespace pr-1 added", "d1");
    await tick(300);
    expect(out()).toContain("the API server did not answer; trying again in 2s");
    h.writeError = undefined;
    await tick(1999);
    expect(h.writes).toEqual([]);
    await tick(1);
    expect(h.writes, out()).toEqual(["d1"]);
    expect(out()).toMatch(/routes live 2\.0s after the change was seen \(retrying the failed write;/);
  });

  it("does not retry routes that would be refused; the next change is written", async () => {
    h.renderError = new InputError("stack config", [
      { key: "envoy-gateways:services[0].name", source: "config", value: "x", message: "is bad" },
    ]);
    change("namespace pr-1 added", "d1");
    await tick(300);
    expect(out()).toContain("not written, the ConfigMaps keep their content: the routes would be refused:\n  - ");
    h.renderError = undefined;
    await tick(600_000);
    expect(h.writes).toEqual([]);
    change("namespace pr-2 added", "d2");
    await tick(300);
    expect(h.writes).toEqual(["d2"]);
  });

  it("stops after the record in progress, starts no other, and names what is left unrecorded", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    change("namespace pr-2 added", "d2");
    await tick(300);
    watcher.stop();
    expect(h.watchStopped).toBe(true);
    // No change is acted on once stopping.
    change("namespace pr-3 added", "d3");
    await tick(600_000);
    expect(stopped).toBe(false);
    expect(h.writes).toEqual(["d1", "d2"]);
    h.records[0]!.resolve();
    await tick();
    expect(stopped).toBe(true);
    expect(h.records).toHaveLength(1);
    expect(lines.at(-1)).toBe(
      "stopped before recording the routes written since the last record: the ConfigMaps hold them; the next sync-routes or `pulumi up` records them",
    );
  });

  it("stops at once when no step runs, with nothing left to say", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    h.records[0]!.resolve();
    await tick();
    watcher.stop();
    await tick();
    expect(stopped).toBe(true);
    expect(lines.at(-1)).toMatch(/every route written so far$/);
    // A change the informers still report on the way out starts no timer that keeps the process up.
    change("namespace pr-2 added", "d2");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("drops a record retry that waits when stopped, and says the routes are not recorded", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    h.records[0]!.reject(new Error("error: the backend is unreachable"));
    await tick();
    watcher.stop();
    await tick();
    expect(stopped).toBe(true);
    await tick(600_000);
    expect(h.records).toHaveLength(1);
    expect(lines.at(-1)).toMatch(/^stopped before recording the routes written since the last record/);
  });

  it("writes on its first step what changed while nothing watched, says so, and says nothing is in step after", async () => {
    h.digest = "d1";
    await restart();
    expect(h.writes).toEqual(["d1"]);
    expect(liveLines()).toEqual([
      "routes live 0.0s after the change was seen (watch started; render 0 ms, write 0 ms): 1 added, 0 removed, 0 changed",
    ]);
    change("service pr-1/web changed", "d1");
    await tick(300);
    expect(lines.filter((l) => l.startsWith("routes in step"))).toEqual([]);
  });

  it("says the routes are in step on its first step only, not at each change that changes nothing", async () => {
    change("service pr-1/web changed", "d0");
    await tick(300);
    change("service pr-1/batch changed", "d0");
    await tick(300);
    expect(lines).toEqual(["routes in step: nothing to write (0 dev/PR namespaces routed)"]);
  });

  it("names a change reported twice once, and five reasons in full", async () => {
    change("service pr-1/web changed", "d1");
    change("service pr-1/web changed", "d1");
    await tick(300);
    for (const n of [1, 2, 3, 4, 5]) change(`namespace pr-${n} added`, "d2");
    await tick(300);
    expect(liveLines()).toEqual([
      expect.stringMatching(/\(service pr-1\/web changed; render/),
      expect.stringMatching(
        /\(namespace pr-1 added, namespace pr-2 added, namespace pr-3 added, namespace pr-4 added, namespace pr-5 added; render/,
      ),
    ]);
  });

  it("says how long its render and its write took", async () => {
    change("namespace pr-1 added", "d1");
    await tick(299);
    // The write starts 1 ms from now and waits 250 ms for the API server.
    h.writeGate = new Promise((r) => setTimeout(r, 251));
    await tick(251);
    expect(liveLines()).toEqual([
      "routes live 0.6s after the change was seen (namespace pr-1 added; render 0 ms, write 250 ms): 1 added, 0 removed, 0 changed",
    ]);
  });

  it("compares the routes each resource had with those it planned, and the next write with those", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    const first = { "gateway-routes": h.plannedLines };
    h.plannedLines = { "pr-2/web": "https://dev.example.org/pr-2/web/" };
    change("namespace pr-2 added", "d2");
    await tick(300);
    expect(h.compared).toEqual([
      { before: {}, after: first },
      { before: first, after: { "gateway-routes": h.plannedLines } },
    ]);
  });

  it("does not take the route status it writes on the Services for a change", () => {
    expect(h.ignoredAnnotations).toEqual([ROUTE_STATUS_ANNOTATION]);
  });

  it("records with its log and the stack lock's wait it is given, and with none when given none", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    expect(h.recordOptions).toEqual([{ log }]);
    h.records[0]!.resolve();
    await restart({ lock: { maxWaitMs: 900_000 } });
    change("namespace pr-2 added", "d2");
    await tick(300);
    expect(h.recordOptions.at(-1)).toEqual({ log, lock: { maxWaitMs: 900_000 } });
  });

  it("tells onEvent of each live write and each record, with how long each took", async () => {
    const events: unknown[] = [];
    await restart({ onEvent: (e) => events.push(e) });
    change("namespace pr-1 added", "d1");
    await tick(300);
    await tick(1500);
    h.records[0]!.resolve();
    await tick();
    expect(events).toEqual([
      // The first step, once the lists are read: the state holds what they give.
      { kind: "in-step", routed: 0, leftOut: 0, fill: { gateway: 0.25 } },
      { kind: "live", seconds: 0.3, routed: 0, leftOut: 0, fill: { gateway: 0.25 } },
      { kind: "recorded", seconds: 1.5 },
    ]);
  });

  it("counts the namespaces left out (a problem about a Namespace), not a Service's problem", async () => {
    const events: unknown[] = [];
    await restart({ onEvent: (e) => events.push(e) });
    h.problems = [
      {
        key: "Namespace pr-9",
        source: "namespaces",
        message: "left out",
        objects: [{ kind: "Namespace", name: "pr-9" }],
      },
      {
        key: "Service pr-1/web",
        source: "namespaces",
        message: "bad label",
        objects: [{ kind: "Service", name: "web" }],
      },
    ] as never;
    change("namespace pr-9 added", "d1");
    await tick(300);
    expect(events.at(-1)).toMatchObject({ kind: "live", leftOut: 1 });
  });

  it("tells onEvent of a step in step and of a failed live write", async () => {
    const events: unknown[] = [];
    await restart({ onEvent: (e) => events.push(e), retry: { firstMs: 1000, maxMs: 1000 } });
    change("namespace pr-1 changed", "d0");
    await tick(300);
    h.writeError = new Error("the API server did not answer");
    change("namespace pr-2 added", "d2");
    await tick(300);
    expect(events.slice(1)).toEqual([
      { kind: "in-step", routed: 0, leftOut: 0, fill: { gateway: 0.25 } },
      { kind: "failed", step: "live" },
    ]);
  });

  describe("in the cluster (no stack to record in)", () => {
    const inCluster = async (options: Partial<WatchOptions> = {}) => {
      watcher.stop();
      await tick();
      lines = [];
      watcher = watchRoutes(
        undefined,
        { sync: sync as unknown as SyncConfig, state },
        { debounceMs: 300, log, ...options },
      );
      await tick();
    };

    it("writes what the state says is in place (it knows nothing of the ConfigMap) and never records", async () => {
      await inCluster();
      // The state's digest d0 is the one planned: a stack's watcher writes nothing, this one writes.
      await tick(300);
      expect(h.writes).toEqual(["d0"]);
      change("namespace pr-1 added", "d1");
      await tick(300);
      expect(h.writes).toEqual(["d0", "d1"]);
      await tick(5000);
      expect(h.records).toEqual([]);
    });

    it("says the routes it first wrote as a count per gateway, then each change as a line", async () => {
      await inCluster();
      await tick(300);
      expect(liveLines()).toEqual([expect.stringMatching(/^routes live .*: 1 on gateway$/)]);
      expect(h.compared).toEqual([]);
      change("namespace pr-1 added", "d1");
      await tick(300);
      expect(h.compared).toEqual([
        { before: { "gateway-routes": h.plannedLines }, after: { "gateway-routes": h.plannedLines } },
      ]);
      expect(lines).toContain("+ a route");
    });

    it("gives every write the fence it is given, asked for at the write", async () => {
      let epoch = 3;
      await inCluster({ fence: () => ({ epoch: epoch++, leading: () => true, configDigest: "c1" }) });
      await tick(300);
      change("namespace pr-1 added", "d1");
      await tick(300);
      expect(h.fences).toMatchObject([{ epoch: 3 }, { epoch: 4 }]);
    });

    it("says whether its lists are read and when its live step last ran", async () => {
      h.ready = false;
      let listed!: () => void;
      h.synced = new Promise<void>((r) => (listed = r));
      await inCluster();
      expect(watcher.synced()).toBe(false);
      expect(watcher.lastStep()).toEqual({ startedMs: undefined, finishedMs: undefined });
      h.ready = true;
      listed();
      await tick(0);
      expect(watcher.synced()).toBe(true);
      const first = Date.now();
      expect(watcher.lastStep()).toEqual({ startedMs: first, finishedMs: first });
      h.writeGate = new Promise(() => {});
      change("namespace pr-1 added", "d1");
      await tick(300);
      // A step still running: started, not finished (what liveness looks at).
      expect(watcher.lastStep()).toEqual({ startedMs: first + 300, finishedMs: first });
    });
  });

  it("says when its watch of the cluster failed, and when it watches again", () => {
    h.callbacks!.onError("watching Services failed: connection refused", 4000);
    expect(lines.at(-1)).toBe("watching Services failed: connection refused; watching again in 4s");
  });

  it("retries its live writes, records and route status writes after the delay it is given", async () => {
    await restart({ retry: { firstMs: 3000, maxMs: 60_000 } });
    h.writeError = new Error("the API server did not answer");
    change("namespace pr-1 added", "d1");
    await tick(300);
    expect(lines.at(-1)).toBe("the API server did not answer; trying again in 3s");
    h.writeError = undefined;
    h.statusError = new Error("services is forbidden");
    await tick(3000);
    expect(h.writes).toEqual(["d1"]);
    h.records[0]!.reject(new Error("error: the backend is unreachable"));
    await tick();
    expect(lines.slice(-2)).toEqual([
      "route status not written: services is forbidden; trying again in 3s",
      "error: the backend is unreachable\ntrying again in 3s",
    ]);
  });

  it("says a live write or a record that failed while stopping is not tried again", async () => {
    let release!: () => void;
    h.writeGate = new Promise((r) => (release = r));
    change("namespace pr-1 added", "d1");
    await tick(300);
    watcher.stop();
    h.writeError = new Error("the API server did not answer");
    release();
    await tick();
    expect(lines.at(-1)).toBe("the API server did not answer; stopping, not trying again");

    h.writeGate = undefined;
    h.writeError = undefined;
    await restart();
    change("namespace pr-2 added", "d2");
    await tick(300);
    watcher.stop();
    h.records.at(-1)!.reject(new Error("error: the backend is unreachable"));
    await tick();
    expect(lines).toContain("error: the backend is unreachable\nstopping, not trying again");
    expect(out()).not.toContain("trying again in");
  });

  it("says every problem of routes the routes resource would refuse", async () => {
    const problem = (key: string) => ({ key, source: "config" as const, value: "x", message: "is bad" });
    h.renderError = new RoutesInputError([
      { property: "config", problem: problem("envoy-gateways:services[0].name") },
      { property: "config", problem: problem("envoy-gateways:services[1].name") },
    ]);
    change("namespace pr-1 added", "d1");
    await tick(300);
    expect(lines.at(-1)).toBe(
      "not written, the ConfigMaps keep their content: the routes would be refused:\n" +
        '  - envoy-gateways:services[0].name: is bad (got "x")\n' +
        '  - envoy-gateways:services[1].name: is bad (got "x")',
    );
  });

  it("waits for the informers' lists before a step plans from them", async () => {
    let listed!: () => void;
    h.ready = false;
    h.synced = new Promise((r) => (listed = r));
    await restart();
    change("namespace pr-1 added", "d1");
    await tick(300);
    expect(h.writes).toEqual([]);
    h.ready = true;
    listed();
    await tick();
    expect(h.writes).toEqual(["d1"]);
  });

  it("says what is left unrecorded once, however often it is stopped", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    watcher.stop();
    watcher.stop();
    h.records[0]!.reject(new Error("error: the backend is unreachable"));
    await tick();
    expect(lines.filter((l) => l.startsWith("stopped before recording"))).toHaveLength(1);
  });

  it("stops its traffic shift ticker when stopped", async () => {
    await restart({ resyncMs: 10_000 });
    h.shifting = true;
    await tick(10_000);
    const asked = h.shiftQuestions.length;
    expect(asked).toBeGreaterThan(0);
    watcher.stop();
    await tick(30_000);
    expect(h.shiftQuestions).toHaveLength(asked);
  });

  it("does not step again after a record that finds the stack config as it was", async () => {
    change("namespace pr-1 added", "d1");
    await tick(300);
    h.records[0]!.resolve();
    await tick(100);
    change("namespace pr-2 added", "d2");
    await tick(300);
    expect(liveLines().at(-1)).toMatch(/\(namespace pr-2 added; render/);
  });
});
