// Routes follow namespaces, on the local cluster through the real engine:
// sync-routes adds and removes a dev/PR namespace's routes, the preview diff
// shows them, a plain `pulumi up` keeps them, a refresh sees an out-of-band
// edit and `up` repairs it, failures change nothing, and --watch follows
// namespaces as they come.
import { readFileSync } from "node:fs";
import { ApiException, CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LABEL, ROUTE_STATUS_ANNOTATION } from "../../routing/labels.js";
import { writeRouteStatus } from "../../kube/route-status.js";
import { serviceAccountKubeConfig, withApiServerStopped } from "../support/cluster.js";
import { ProgramStack, routedServiceBody, type ScriptRun } from "../support/program.js";

const cluster = inject("cluster");
let stack: ProgramStack;
const DEV = "envoy-gateways.io/routes";

beforeAll(async () => {
  stack = await ProgramStack.create(cluster, { from: "dev", stack: "routes" });
  await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
});

afterAll(async () => {
  await stack?.dispose();
});

/** `npm run sync-routes -- --stack routes` in the workspace (the same engine environment as `pulumi up`). */
function syncRoutes(args: string[] = []): Promise<ScriptRun> {
  return stack.runScript("sync-routes", args);
}

async function devNamespace(name: string, services: string[], labelled = true): Promise<void> {
  const core = stack.core();
  await stack.createNamespace(name, labelled ? { [DEV]: "dev" } : {});
  for (const service of services) {
    await core.createNamespacedService({ namespace: name, body: routedServiceBody(service) });
  }
}

async function xds(gateway = "gateway"): Promise<Record<string, string>> {
  return (await stack.core().readNamespacedConfigMap({ name: `${gateway}-xds`, namespace: "default" })).data ?? {};
}

const routeOf = (ns: string, svc: string) => `"path_separated_prefix":"/${ns}/${svc}"`;

/** The route status annotation of a Service. */
async function statusOf(namespace: string, name: string): Promise<string | undefined> {
  return (await stack.core().readNamespacedService({ name, namespace })).metadata?.annotations?.[
    ROUTE_STATUS_ANNOTATION
  ];
}

/** The Events about an object, as [type, reason, message]. */
async function eventsAbout(namespace: string, kind: string, name: string): Promise<string[][]> {
  const events = await stack
    .core()
    .listNamespacedEvent({ namespace, fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}` });
  return events.items.map((e) => [e.type!, e.reason!, e.message!]);
}

/** The production routes' names in an rds.yaml (their namespace is the gateways'). */
function productionRoutes(rds: string): string[] {
  return [...rds.matchAll(/"name":"(default\/[a-z0-9-]+)"/g)].map((m) => m[1]!).sort();
}

/** Bytes of a ConfigMap's data as Kubernetes counts them. */
function bytesOf(data: Record<string, string>): number {
  return Object.entries(data).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
}

describe("sync-routes", () => {
  it("adds a labelled namespace's routes and clusters to both gateways, printing them", async () => {
    await devNamespace("pr-e2e-1", ["batch"]);
    const r = await syncRoutes();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      "+ pr-e2e-1/batch on gateway: https://internal.dev.example.org/pr-e2e-1/batch -> batch.pr-e2e-1.svc.cluster.local:443 (pr-e2e-1_batch)",
    );
    expect(r.stdout).toContain(
      "+ pr-e2e-1/batch on internal-gateway: https://internal.dev.hail/pr-e2e-1/batch -> batch.pr-e2e-1.svc.cluster.local:443 (pr-e2e-1_batch)",
    );
    expect(r.stdout).toMatch(/routes live in [\d.]+s, recorded in the state in [\d.]+s: 2 added, 0 removed, 0 changed/);
    for (const gateway of ["gateway", "internal-gateway"]) {
      const data = await xds(gateway);
      expect(data["rds.yaml"]).toContain(routeOf("pr-e2e-1", "batch"));
      expect(data["cds.yaml"]).toContain('"name":"pr-e2e-1_batch"');
    }
  });

  it("refuses the protected and the gateways' own namespaces by name when they carry the dev label, and routes the others", async () => {
    const core = stack.core();
    const label = (name: string, value: string | null) =>
      core.patchNamespace(
        { name, body: { metadata: { labels: { [DEV]: value } } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    const probe = routedServiceBody("e2e-protected");
    try {
      for (const ns of ["kube-system", "default"]) {
        await label(ns, "dev");
        await core.createNamespacedService({ namespace: ns, body: probe });
      }
      await devNamespace("pr-e2e-p", ["notes"]);
      const r = await syncRoutes();
      expect(r.code, r.stderr).toBe(0);
      const out = r.stdout + r.stderr;
      expect(out).toContain(
        "Namespace default carries the dev routing label but is not routed: it is the gateways' own namespace, whose Services are production routes",
      );
      expect(out).toContain(
        "Namespace kube-system carries the dev routing label but is not routed: it is protected (devNamespaces.protected)",
      );
      expect(r.stdout).toContain("+ pr-e2e-p/notes on gateway: https://internal.dev.example.org/pr-e2e-p/notes");
      for (const gateway of ["gateway", "internal-gateway"]) {
        const data = await xds(gateway);
        expect(data["rds.yaml"]).toContain(routeOf("pr-e2e-p", "notes"));
        expect(data["rds.yaml"]).not.toContain("e2e-protected");
        expect(data["cds.yaml"]).not.toContain("e2e-protected");
      }
    } finally {
      for (const ns of ["kube-system", "default"]) {
        await label(ns, null);
        await core.deleteNamespacedService({ name: "e2e-protected", namespace: ns }).catch(() => undefined);
      }
    }
  });

  it("says on each Service where it is served, or why not, with one Event each; a bad label leaves its neighbour routed", async () => {
    const core = stack.core();
    const namespace = "pr-e2e-status";
    await stack.createNamespace(namespace, { [DEV]: "dev" });
    await core.createNamespacedService({ namespace, body: routedServiceBody("good") });
    const bad = routedServiceBody("bad");
    bad.metadata!.labels![LABEL.port] = "444";
    await core.createNamespacedService({ namespace, body: bad });
    const r = await syncRoutes();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/route status: [1-9]\d* Service annotations written, [1-9]\d* Events created/);
    const served =
      "https://internal.dev.example.org/pr-e2e-status/good (gateway), https://internal.dev.hail/pr-e2e-status/good (internal-gateway)";
    const why =
      'not routed: Service pr-e2e-status/bad left out: label envoy-gateways.io/port="444" must be "443" (the gateways speak TLS to every pod on 443)';
    expect(await statusOf(namespace, "good")).toBe(served);
    expect(await statusOf(namespace, "bad")).toBe(why);
    expect(await eventsAbout(namespace, "Service", "good")).toEqual([["Normal", "Routed", `served at ${served}`]]);
    expect(await eventsAbout(namespace, "Service", "bad")).toEqual([["Warning", "NotRouted", why]]);
    for (const gateway of ["gateway", "internal-gateway"]) {
      expect((await xds(gateway))["rds.yaml"]).toContain(routeOf(namespace, "good"));
      expect((await xds(gateway))["rds.yaml"]).not.toContain(`/${namespace}/bad`);
    }
    // Again: nothing new to say, so nothing written and no second Event.
    const again = await syncRoutes();
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).not.toContain("route status:");
    expect(await eventsAbout(namespace, "Service", "bad")).toHaveLength(1);
    expect(await eventsAbout(namespace, "Service", "good")).toHaveLength(1);
  });

  it("past devNamespaces.maxXdsBytes routes the oldest namespaces that fit, says so on the others, and recovers as one is deleted", async () => {
    const services = ["s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"];
    // Created first, last by name: the order is by creation time.
    const [oldest, younger, youngest] = ["pr-e2e-cap-z", "pr-e2e-cap-a", "pr-e2e-cap-0"];
    await devNamespace(oldest, services);
    await new Promise((r) => setTimeout(r, 1_100)); // creation times have whole seconds
    await devNamespace(younger, services);
    const both = await syncRoutes();
    expect(both.code, both.stderr).toBe(0);
    const full = Math.max(
      ...(await Promise.all(["gateway", "internal-gateway"].map(async (g) => bytesOf(await xds(g))))),
    );
    const production = productionRoutes((await xds())["rds.yaml"]!);
    expect(production.length).toBeGreaterThan(0);
    const MAX = "envoy-gateways:devNamespaces.maxXdsBytes";
    await stack.ws.ok(["config", "set", "--stack", stack.ws.stack, "--path", MAX, String(full - 1)]);
    try {
      const cut = await syncRoutes();
      expect(cut.code, cut.stderr).toBe(0);
      const out = cut.stdout + cut.stderr;
      expect(out).toMatch(
        new RegExp(
          `Namespace ${younger} left out: its routes do not fit in the xDS ConfigMap of (internal-)?gateway, which holds [\\d,]+ bytes with production and the \\d+ older dev/PR namespaces routed \\(devNamespaces.maxXdsBytes: ${(full - 1).toLocaleString("en-US")};`,
        ),
      );
      expect(out).toContain(`- ${younger}/s1 on gateway`);
      expect(out).not.toContain(`- ${oldest}/`);
      const cutRds = (await xds())["rds.yaml"]!;
      expect(cutRds).toContain(routeOf(oldest, "s8"));
      expect(cutRds).not.toContain(`/${younger}/`);
      expect(productionRoutes(cutRds)).toEqual(production);
      expect(await statusOf(younger, "s1")).toMatch(
        new RegExp(`^not routed: Namespace ${younger} left out: its routes do not fit`),
      );
      const onNamespace = await eventsAbout("default", "Namespace", younger);
      expect(onNamespace.map(([type, reason]) => [type, reason])).toEqual([["Warning", "NotRouted"]]);

      // A newer namespace waits too, and never pushes out a routed one.
      await devNamespace(youngest, services);
      const newer = await syncRoutes();
      expect(newer.code, newer.stderr).toBe(0);
      expect(newer.stdout + newer.stderr).toContain(`Namespace ${youngest} left out:`);
      expect((await xds())["rds.yaml"]).toContain(routeOf(oldest, "s1"));

      // The oldest goes: the next in line by age takes its place, the youngest still waits.
      await stack.core().deleteNamespace({ name: oldest });
      const recovered = await syncRoutes();
      expect(recovered.code, recovered.stderr).toBe(0);
      expect(recovered.stdout).toContain(`+ ${younger}/s1 on gateway`);
      expect(recovered.stdout + recovered.stderr).toContain(`Namespace ${youngest} left out:`);
      const rds = (await xds())["rds.yaml"]!;
      expect(rds).toContain(routeOf(younger, "s1"));
      expect(rds).not.toContain(`/${oldest}/`);
      expect(rds).not.toContain(`/${youngest}/`);
      expect(productionRoutes(rds)).toEqual(production);
      expect(await statusOf(younger, "s1")).toBe(
        `https://internal.dev.example.org/${younger}/s1 (gateway), https://internal.dev.hail/${younger}/s1 (internal-gateway)`,
      );
    } finally {
      await stack.ws.ok(["config", "rm", "--stack", stack.ws.stack, "--path", MAX]);
    }
    // The limit lifted: the youngest is routed too.
    const lifted = await syncRoutes();
    expect(lifted.code, lifted.stderr).toBe(0);
    expect(lifted.stdout).toContain(`+ ${youngest}/s1 on gateway`);
    expect(await statusOf(youngest, "s1")).toMatch(/^https:\/\//);
  });

  it("ignores a namespace without the routing label: nothing to change, and no engine run (no lock, no history entry)", async () => {
    await devNamespace("plain-e2e", ["batch"], false);
    const history = async () =>
      (JSON.parse((await stack.ws.ok(["stack", "history", "--json"])).stdout) as unknown[]).length;
    const before = await history();
    const r = await syncRoutes();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /nothing to change \([\d.]+s\): the ConfigMaps and the state hold these routes; no engine run/,
    );
    expect(await history()).toBe(before);
    expect((await xds())["rds.yaml"]).not.toContain("/plain-e2e/");
  });

  it("shows a new namespace's routes in `pulumi preview --diff`, keyed by id, a line each", async () => {
    await devNamespace("pr-e2e-2", ["ci"]);
    const preview = await stack.ws.ok(["preview", "--diff"], 300_000);
    // Each route is one line: where it goes, and what else it has.
    expect(preview.stdout).toMatch(
      /\+ pr-e2e-2\/ci\s*: "https:\/\/internal\.dev\.example\.org\/pr-e2e-2\/ci -> ci\.pr-e2e-2\.svc\.cluster\.local:443 \(pr-e2e-2_ci\); rate limit \d+\/s"/,
    );
    expect(preview.stdout).toMatch(/Resources:\s+~ 2 to update/);
    const r = await syncRoutes();
    expect(r.stdout).toMatch(/2 added, 0 removed/);
  });

  it("tells the gateway's pods the new files' digest (their kubelets then project them at once)", async () => {
    // A pod labelled like the gateway's that no node will run (its node selector matches none).
    const core = stack.core();
    await core.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: {
          name: "gateway-e2e-annotated",
          labels: { "app.kubernetes.io/name": "gateway", "app.kubernetes.io/component": "gateway" },
        },
        spec: {
          nodeSelector: { "envoy-gateways.io/no-such-node": "true" },
          containers: [{ name: "envoy", image: "envoyproxy/envoy:v1.40.0" }],
        },
      },
    });
    try {
      await devNamespace("pr-e2e-5", ["memory"]);
      const r = await syncRoutes();
      expect(r.stdout).toContain("+ pr-e2e-5/memory on gateway");
      const cm = await core.readNamespacedConfigMap({ name: "gateway-xds", namespace: "default" });
      const pod = await core.readNamespacedPod({ name: "gateway-e2e-annotated", namespace: "default" });
      expect(pod.metadata?.annotations?.["envoy-gateways.io/xds-digest"]).toBe(
        cm.metadata?.annotations?.["envoy-gateways.io/routes-digest"],
      );
    } finally {
      await core.deleteNamespacedPod({ name: "gateway-e2e-annotated", namespace: "default", gracePeriodSeconds: 0 });
    }
  });

  it("removes the routes of a deleted namespace", async () => {
    await stack.core().deleteNamespace({ name: "pr-e2e-1" });
    const r = await syncRoutes();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("- pr-e2e-1/batch on gateway");
    expect((await xds())["rds.yaml"]).not.toContain(routeOf("pr-e2e-1", "batch"));
    expect((await xds())["cds.yaml"]).not.toContain("pr-e2e-1_batch");
  });

  it("a plain `pulumi up` keeps the dev routes, and a second one changes nothing", async () => {
    await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    expect((await xds())["rds.yaml"]).toContain(routeOf("pr-e2e-2", "ci"));
    const again = await stack.ws.run(["preview", "--expect-no-changes"], 300_000);
    expect(again.code, again.stdout + again.stderr).toBe(0);
  });

  it("`pulumi refresh` reports an out-of-band edit of the ConfigMap by the routes it changes, and `pulumi up` repairs it", async () => {
    const good = await xds();
    const edited = good["cds.yaml"]!.replace("ci.pr-e2e-2.svc.cluster.local", "ci.elsewhere.example.org");
    expect(edited).not.toBe(good["cds.yaml"]);
    await stack
      .core()
      .patchNamespacedConfigMap(
        { name: "gateway-xds", namespace: "default", body: { data: { "cds.yaml": edited } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    const refresh = await stack.ws.ok(["refresh", "--yes", "--skip-preview", "--diff"], 300_000);
    expect(refresh.stdout).toMatch(/~ pulumi-nodejs:dynamic\/envoy-gateways:Routes: \(update\)[\s\S]*gateway-routes/);
    expect(refresh.stdout).toMatch(/\+ drift\s*: \{\s*\+ pr-e2e-2\/ci: "cluster pr-e2e-2_ci changed"\s*\}/);
    const preview = await stack.ws.ok(["preview", "--diff"], 300_000);
    expect(preview.stdout).toMatch(/Resources:\s+~ 1 to update/);
    await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    expect(await xds()).toEqual(good);
    const again = await stack.ws.run(["preview", "--expect-no-changes"], 300_000);
    expect(again.code, again.stdout + again.stderr).toBe(0);
  });

  it("fails with a clear error and changes nothing for a user without the rights", async () => {
    const before = await xds();
    await devNamespace("pr-e2e-4", ["memory"]);
    await stack.ws.setConfig("envoy-gateways:kubeconfig", readFileSync(cluster.restrictedKubeconfig, "utf8"), true);
    try {
      const r = await syncRoutes();
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/failed; the xDS ConfigMaps keep their content/);
      expect(r.stderr).toMatch(
        /listing namespaces labelled envoy-gateways\.io\/routes=dev: restricted-user is not allowed to \(403 Forbidden/,
      );
    } finally {
      await stack.ws.setConfig("envoy-gateways:kubeconfig", readFileSync(cluster.kubeconfig, "utf8"), true);
    }
    expect(await xds()).toEqual(before);
  });

  it("fails with a clear error and changes nothing with the API server stopped", async () => {
    const before = await xds();
    const r = await withApiServerStopped(cluster, () => syncRoutes());
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot reach the Kubernetes API at https:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    expect(await xds()).toEqual(before);
  });
});

describe("the route-sync identity's route status writes on the real API server", () => {
  const namespace = "pr-e2e-identity";
  const POLICY = "ValidatingAdmissionPolicy 'envoy-gateways-route-sync-status-default'";
  const only = `the route-sync identity may only set the ${ROUTE_STATUS_ANNOTATION} annotation on routed dev/PR Services`;
  let as: KubeConfig;
  let core: CoreV1Api;

  beforeAll(async () => {
    await devNamespace(namespace, ["api"]);
    await stack
      .core()
      .createNamespacedService({ namespace, body: { metadata: { name: "plain" }, spec: { ports: [{ port: 80 }] } } });
    as = await serviceAccountKubeConfig(cluster, "default", "envoy-gateways-route-sync");
    core = as.makeApiClient(CoreV1Api);
  });

  /** What the API server answers the identity's merge patch of a Service: "allowed", or the status and message of the refusal. */
  async function patched(ns: string, name: string, body: object): Promise<string> {
    try {
      await core.patchNamespacedService(
        { name, namespace: ns, body },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      return "allowed";
    } catch (e) {
      if (!(e instanceof ApiException)) throw e;
      return `${e.code} ${(JSON.parse(String(e.body)) as { message: string }).message}`;
    }
  }

  it("writes the status annotation and route status Events through the same code sync-routes runs", async () => {
    const api = await stack.core().readNamespacedService({ name: "api", namespace });
    const wrote = await writeRouteStatus(
      as,
      [
        {
          object: { kind: "Service", namespace, name: "api", uid: api.metadata!.uid! },
          annotation: "e2e-check",
          events: [{ type: "Normal", reason: "Routed", message: "e2e-check" }],
        },
        {
          object: { kind: "Namespace", name: namespace },
          events: [{ type: "Warning", reason: "NotRouted", message: "e2e-check" }],
        },
      ],
      new Date(),
    );
    expect(wrote).toEqual({ annotated: 1, events: 2, failures: [] });
    expect(await statusOf(namespace, "api")).toBe("e2e-check");
    expect(await eventsAbout(namespace, "Service", "api")).toContainEqual(["Normal", "Routed", "e2e-check"]);
    expect(await eventsAbout("default", "Namespace", namespace)).toContainEqual(["Warning", "NotRouted", "e2e-check"]);
  });

  it("is refused a Service's labels, spec or another annotation, production's and unlabelled Services, and other Events", async () => {
    expect(await patched(namespace, "api", { metadata: { labels: { "e2e-check": "x" } } })).toBe(
      `403 services "api" is forbidden: ${POLICY} with binding 'envoy-gateways-route-sync-status-default' denied request: ${only}; its spec, labels, owners and finalizers stay as they are`,
    );
    expect(await patched(namespace, "api", { spec: { selector: { app: "evil" } } })).toContain(
      `${only}; its spec, labels, owners and finalizers stay as they are`,
    );
    expect(await patched(namespace, "api", { metadata: { annotations: { "e2e-check/other": "x" } } })).toContain(
      `${only}; no other annotation changes`,
    );
    const status = { metadata: { annotations: { [ROUTE_STATUS_ANNOTATION]: "x" } } };
    expect(await patched(namespace, "plain", status)).toContain(`${only}; ${namespace}/plain is not one`);
    const [production] = (
      await stack.core().listNamespacedService({ namespace: "default", labelSelector: LABEL.service })
    ).items;
    expect(await patched("default", production!.metadata!.name!, status)).toContain(
      `${only}; default/${production!.metadata!.name!} is not one`,
    );
    const event = (reason: string, kind = "Service") => ({
      metadata: { name: `e2e-${reason.toLowerCase()}-${kind.toLowerCase()}`, namespace },
      involvedObject: { apiVersion: "v1", kind, name: "api", namespace },
      type: "Normal",
      reason,
      message: "x",
      source: { component: "envoy-gateways-route-sync" },
    });
    for (const body of [event("Killing"), event("Routed", "Pod")])
      await expect(core.createNamespacedEvent({ namespace, body })).rejects.toMatchObject({ code: 403 });
    // RBAC: no Service delete, no Secret.
    await expect(core.deleteNamespacedService({ name: "api", namespace })).rejects.toMatchObject({ code: 403 });
    await expect(core.listNamespacedSecret({ namespace })).rejects.toMatchObject({ code: 403 });
    // Nothing of it reached the Services.
    const api = await stack.core().readNamespacedService({ name: "api", namespace });
    expect(api.metadata?.labels?.["e2e-check"]).toBeUndefined();
    expect(api.metadata?.annotations?.["e2e-check/other"]).toBeUndefined();
    expect(api.spec?.selector).toEqual({ app: "api" });
    expect(await statusOf(namespace, "plain")).toBeUndefined();
  });
});

describe("sync-routes --watch", () => {
  let child: ReturnType<ProgramStack["spawnScript"]>;
  let out = "";
  let exited: Promise<number | null>;
  /** Waits until the output after `from` matches `pattern`; returns the index after the match. */
  const until = async (what: string, pattern: RegExp, ms: number, from = 0): Promise<number> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const m = pattern.exec(out.slice(from));
      if (m) return from + m.index + m[0].length;
      if (Date.now() > deadline) throw new Error(`no ${what} within ${ms} ms; output:\n${out.slice(from)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const count = (pattern: RegExp, from: number) =>
    (out.slice(from).match(new RegExp(pattern.source, "g")) ?? []).length;

  beforeAll(async () => {
    child = stack.spawnScript("sync-routes", ["--watch", "--debounce", "1s"]);
    child.stdout.on("data", (d: Buffer) => (out += d));
    child.stderr.on("data", (d: Buffer) => (out += d));
    exited = new Promise((resolve) => child.on("close", resolve));
    await until("the watch to start", /watching namespaces labelled envoy-gateways\.io\/routes=dev/, 120_000);
  });

  afterAll(async () => {
    // Stop it the clean way (a step in flight finishes and unlocks the stack), then make sure.
    if (child && child.exitCode === null) {
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 240_000))]);
      child.kill("SIGKILL");
    }
  });

  it("writes a new namespace's routes within seconds, then records them in the state", async () => {
    const from = out.length;
    await devNamespace("pr-e2e-3", ["query"]);
    const live = await until(
      "the new route",
      /\+ pr-e2e-3\/query on gateway[\s\S]*?routes live ([\d.]+)s after the change was seen/,
      60_000,
      from,
    );
    expect(Number(/routes live ([\d.]+)s/.exec(out.slice(from, live))![1])).toBeLessThan(10);
    expect((await xds())["rds.yaml"]).toContain(routeOf("pr-e2e-3", "query"));
    await until("the record", /recorded in the stack's state \([\d.]+s\): every route written so far/, 300_000, live);
    const again = await stack.ws.run(["preview", "--expect-no-changes"], 300_000);
    expect(again.code, again.stdout + again.stderr).toBe(0);
  });

  it("routes a burst of 20 namespaces created at once in one or two writes", async () => {
    const from = out.length;
    const names = Array.from({ length: 20 }, (_, i) => `pr-e2e-burst-${i}`);
    await Promise.all(names.map((n) => devNamespace(n, ["batch"])));
    await until("all 20 routes", new RegExp(`(\\+ pr-e2e-burst-\\d+/batch on gateway[\\s\\S]*?){20}`), 120_000, from);
    const data = (await xds())["rds.yaml"]!;
    for (const n of names) expect(data).toContain(routeOf(n, "batch"));
    expect(count(/routes live [\d.]+s after the change was seen/, from)).toBeLessThanOrEqual(2);
    await until("the record", /recorded in the stack's state/, 300_000, from);
  });

  it("writes nothing for a namespace created and deleted within the debounce time", async () => {
    const before = (await stack.core().readNamespacedConfigMap({ name: "gateway-xds", namespace: "default" })).metadata
      ?.resourceVersion;
    const from = out.length;
    await devNamespace("pr-e2e-flash", ["batch"]);
    await stack.core().deleteNamespace({ name: "pr-e2e-flash" });
    // Well past the debounce time and a render: had anything been written, it would show.
    await new Promise((r) => setTimeout(r, 6000));
    expect(out.slice(from)).not.toContain("pr-e2e-flash/batch");
    expect(
      (await stack.core().readNamespacedConfigMap({ name: "gateway-xds", namespace: "default" })).metadata
        ?.resourceVersion,
    ).toBe(before);
  });

  it("keeps watching through an API server restart, and routes what came meanwhile", async () => {
    const from = out.length;
    await withApiServerStopped(cluster, async () => {
      await until(
        "the watch failure",
        /watching (namespace|Service)s labelled [^\n]*(cannot reach|did not answer)[^\n]*; watching again in \d+s/,
        60_000,
        from,
      );
    });
    await devNamespace("pr-e2e-after-restart", ["ci"]);
    await until("the route after the restart", /\+ pr-e2e-after-restart\/ci on gateway/, 120_000, from);
    expect((await xds())["rds.yaml"]).toContain(routeOf("pr-e2e-after-restart", "ci"));
  });

  it("stops cleanly on SIGTERM", async () => {
    await until("the last record", /recorded in the stack's state/, 300_000, out.lastIndexOf("routes live"));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(out).toMatch(/SIGTERM: stopping after any sync in progress[\s\S]*stopped/);
  });
});

describe("deleting the routes resource", () => {
  it("leaves the gateway its production routes when the routes resource is deleted", async () => {
    const state = JSON.parse((await stack.ws.ok(["stack", "export"])).stdout) as {
      deployment: { resources: { urn: string; type: string }[] };
    };
    const urn = state.deployment.resources.find(
      (r) => r.type.endsWith(":Routes") && r.urn.endsWith("::gateway-routes"),
    )!.urn;
    await stack.ws.ok(["destroy", "--yes", "--skip-preview", "--target", urn], 300_000);
    const data = await xds();
    expect(data["rds.yaml"]).toContain('"name":"www"');
    // Production routes only: no dev/PR route (all the e2e namespaces are named pr-e2e-*) is left.
    expect(data["rds.yaml"]).not.toContain("pr-e2e-");
    expect(data["cds.yaml"]).toContain('"name":"default_batch"');
  });
});
