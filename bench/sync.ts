// Benchmark (not a test): how fast routes follow dev/PR namespaces, and what
// it costs as their number grows. On a fresh local cluster (with the API
// server's audit log on) and the dev stack deployed through the real engine,
// for each size N it labels N namespaces with one routed Service each, then
// measures:
//
//   discovery        the two list requests the program makes, in this process
//   sync: +1 ns      sync-routes after CI added one namespace to N-1: until the
//                    ConfigMaps hold the route (live) and until the state does
//   sync: no change  sync-routes again with nothing changed (no engine run)
//   watch: +1 ns     sync-routes --watch running, 10 namespaces created one
//                    after another (1.5 s apart): from each creation until both
//                    xDS ConfigMaps hold its route, p50 and max, and the API
//                    requests per namespace (the live writes and the records)
//
// with the API requests each made, counted in the audit log (every request of
// the admin user the stack uses, whoever sent it: sync-routes, the program,
// the routes provider, the Kubernetes provider; this script watches the
// ConfigMaps as another user), and the size of the gateway's xDS ConfigMap.
//
//   npx tsx bench/sync.ts [--sizes 10,100,500]
//
// Needs the real components (bash scripts/build-components.sh). Takes a few
// minutes: each sync runs the engine and the program.
import * as k8s from "@kubernetes/client-node";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ProjectStack } from "../route-sync/stack.js";
import { syncRoutes, type SyncResult } from "../route-sync/sync.js";
import { listRoutedObjects, loadKubeConfig } from "../kube/client.js";
import { discoverRoutes, ROUTED_SERVICE_SELECTOR } from "../routing/discovery.js";
import { routingLabels } from "../routing/labels.js";
import { startLocalCluster, stopLocalCluster, type LocalCluster } from "../test/support/cluster.js";
import { buildCli, ProgramStack } from "../test/support/program.js";

const LABEL_SELECTOR = "envoy-gateways.io/routes=dev";
const USER = "admin";

interface AuditEvent {
  user?: { username?: string };
  verb?: string;
  objectRef?: { resource?: string };
  requestURI?: string;
}

/** Reads the audit events written since the last call, counting the admin user's requests by verb and resource. */
class AuditCounter {
  private offset: number;
  constructor(private readonly path: string) {
    this.offset = statSync(path).size;
  }

  take(): { total: number; byKind: Map<string, number> } {
    const text = readFileSync(this.path).subarray(this.offset);
    this.offset += text.length;
    const byKind = new Map<string, number>();
    let total = 0;
    for (const line of text.toString("utf8").split("\n")) {
      if (!line) continue;
      const e = JSON.parse(line) as AuditEvent;
      if (e.user?.username !== USER) continue;
      total++;
      const kind = `${e.verb} ${e.objectRef?.resource ?? e.requestURI?.split("?")[0]}`;
      byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
    }
    return { total, byKind };
  }
}

function sizesOption(): number[] {
  const { values } = parseArgs({
    options: { sizes: { type: "string", default: "10,100,500" }, help: { type: "boolean" } },
  });
  if (values.help) {
    console.log("usage: npx tsx bench/sync.ts [--sizes 10,100,500]");
    process.exit(0);
  }
  const sizes = values.sizes!.split(",").map((s) => Number(s.trim()));
  const bad = sizes.find((n) => !Number.isInteger(n) || n < 1 || n > 2000);
  if (bad !== undefined)
    throw new Error(`--sizes ${values.sizes}: each size must be a whole number from 1 to 2000 (got ${bad})`);
  return [...new Set(sizes)].sort((a, b) => a - b);
}

/** A routed namespace with one routed Service, web. */
async function addNamespace(core: k8s.CoreV1Api, namespace: string): Promise<void> {
  await core.createNamespace({
    body: { metadata: { name: namespace, labels: { "envoy-gateways.io/routes": "dev" } } },
  });
  await core.createNamespacedService({
    namespace,
    body: {
      metadata: {
        name: "web",
        labels: routingLabels({ service: "web", version: "main", weight: 100, replicas: 2, websocket: false }),
      },
      spec: { clusterIP: "None", selector: { app: "web" }, ports: [{ name: "https", port: 443, targetPort: 443 }] },
    },
  });
}

/** Creates namespaces pr-bench-<from>..pr-bench-<to - 1>, a few at a time. */
async function addNamespaces(core: k8s.CoreV1Api, from: number, to: number): Promise<void> {
  const indexes = Array.from({ length: to - from }, (_, i) => from + i);
  const inFlight = 16;
  for (let i = 0; i < indexes.length; i += inFlight)
    await Promise.all(indexes.slice(i, i + inFlight).map((n) => addNamespace(core, `pr-bench-${n}`)));
}

interface Row {
  namespaces: number;
  step: string;
  /** What the time column says. */
  time: string;
  requests: number;
  top: string;
  configMapBytes: number;
}

const seconds = (ms: number) => (ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(1)} s`);

function top(byKind: Map<string, number>): string {
  return [...byKind]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 4)
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
}

async function configMapBytes(core: k8s.CoreV1Api): Promise<number> {
  const cm = await core.readNamespacedConfigMap({ name: "gateway-xds", namespace: "default" });
  return Object.values(cm.data ?? {}).reduce((n, v) => n + Buffer.byteLength(v), 0);
}

/** One measured sync; `added` is the namespace whose routes it must add (none: it must change nothing). */
async function measureSync(
  stack: ProjectStack,
  audit: AuditCounter,
  core: k8s.CoreV1Api,
  namespaces: number,
  step: string,
  added?: string,
): Promise<Row> {
  audit.take();
  const start = performance.now();
  const result: SyncResult = await syncRoutes(stack, { log: (line) => console.error(line) });
  const ms = performance.now() - start;
  const counted = audit.take();
  const changes = [...result.added, ...result.removed, ...result.changed];
  if (!added !== result.unchanged)
    throw new Error(
      `${step} at ${namespaces} namespaces: expected ${added ? "a write and a record" : "no engine run"}, got the other`,
    );
  const expected = added
    ? result.added.length > 0 && changes.every((line) => line.startsWith(`${added}/`))
    : changes.length === 0;
  if (!expected)
    throw new Error(
      `${step} at ${namespaces} namespaces: expected ${added ? `only ${added}'s routes added` : "no change"}, the sync reported:\n${changes.join("\n")}`,
    );
  const time = result.unchanged
    ? `${seconds(ms)} (no engine run)`
    : `live ${seconds(result.liveSeconds * 1000)}, state ${seconds(result.recordedSeconds! * 1000)}`;
  const breakdown = Object.entries(result.steps)
    .map(([k, v]) => `${k} ${seconds(v!)}`)
    .join(", ");
  return {
    namespaces,
    step,
    time,
    requests: counted.total,
    top: `${breakdown}; ${top(counted.byKind)}`,
    configMapBytes: await configMapBytes(core),
  };
}

/**
 * Watches both xDS ConfigMaps as restricted-user (granted get/list/watch on
 * ConfigMaps of the namespace, so its requests are not counted) and calls
 * `onChange` with their data whenever either changes.
 */
async function watchConfigMaps(
  cluster: LocalCluster,
  admin: k8s.KubeConfig,
  onChange: (data: Record<string, string>) => void,
): Promise<() => void> {
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  const rule = { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] };
  await rbac
    .createNamespacedRole({
      namespace: "default",
      body: { metadata: { name: "bench-configmap-reader" }, rules: [rule] },
    })
    .catch(() => undefined);
  await rbac
    .createNamespacedRoleBinding({
      namespace: "default",
      body: {
        metadata: { name: "bench-configmap-reader" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "bench-configmap-reader" },
        subjects: [{ kind: "User", name: "restricted-user", apiGroup: "rbac.authorization.k8s.io" }],
      },
    })
    .catch(() => undefined);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cluster.restrictedKubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const informer = new k8s.ListWatch<k8s.V1ConfigMap>(
    "/api/v1/namespaces/default/configmaps",
    new k8s.Watch(kc),
    () => core.listNamespacedConfigMap({ namespace: "default" }),
    false,
  );
  const all = () =>
    Object.assign(
      {},
      ...["gateway-xds", "internal-gateway-xds"].map((name) =>
        Object.fromEntries(
          Object.entries(informer.get(name, "default")?.data ?? {}).map(([k, v]) => [`${name}/${k}`, v]),
        ),
      ),
    ) as Record<string, string>;
  informer.on(k8s.CHANGE, () => onChange(all()));
  await informer.start();
  return () => void informer.stop();
}

/** sync-routes --watch, and 10 namespaces one after another: each one's time until both ConfigMaps route it. */
async function measureWatch(
  program: ProgramStack,
  cluster: LocalCluster,
  audit: AuditCounter,
  core: k8s.CoreV1Api,
  admin: k8s.KubeConfig,
  n: number,
): Promise<Row> {
  const child = program.spawnScript("sync-routes", ["--watch"]);
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d));
  child.stderr.on("data", (d: Buffer) => (out += d));
  const exited = new Promise((resolve) => child.on("close", resolve));
  const waitFor = async (what: string, test: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!test()) {
      if (Date.now() > deadline)
        throw new Error(`watch at ${n} namespaces: no ${what} within ${ms} ms; sync-routes printed:\n${out}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  let data: Record<string, string> = {};
  const stop = await watchConfigMaps(cluster, admin, (d) => (data = d));
  const latencies: number[] = [];
  try {
    await waitFor("start", () => /watching namespaces/.test(out), 120_000);
    // What the watch does first (what changed while nothing watched) is not measured: wait until it has been quiet for 3 s.
    for (let seen = out.length, since = Date.now(); Date.now() - since < 3000;) {
      await new Promise((r) => setTimeout(r, 100));
      if (out.length !== seen) [seen, since] = [out.length, Date.now()];
    }
    audit.take();
    const from = out.length;
    for (let i = 0; i < 10; i++) {
      const namespace = `pr-watch-${n}-${i}`;
      const route = `"path_separated_prefix":"/${namespace}/web"`;
      const start = performance.now();
      await addNamespace(core, namespace);
      await waitFor(
        `route of ${namespace}`,
        () =>
          (data["gateway-xds/rds.yaml"] ?? "").includes(route) &&
          (data["internal-gateway-xds/rds.yaml"] ?? "").includes(route),
        30_000,
      );
      latencies.push(performance.now() - start);
      await new Promise((r) => setTimeout(r, 1500));
    }
    // Until the state records the last of them: every request the events cost.
    await waitFor(
      "the last record",
      () => new RegExp(`pr-watch-${n}-9/web[\\s\\S]*recorded in the stack's state`).test(out.slice(from)),
      300_000,
    );
  } finally {
    stop();
    child.kill("SIGTERM");
    await exited;
  }
  const counted = audit.take();
  const sorted = [...latencies].sort((a, b) => a - b);
  const p50 = (sorted[4]! + sorted[5]!) / 2;
  return {
    namespaces: n,
    step: "watch: +1 ns (10)",
    time: `p50 ${seconds(p50)}, max ${seconds(sorted[9]!)}`,
    requests: Math.round(counted.total / 10),
    top: `per namespace; ${top(new Map([...counted.byKind].map(([k, v]) => [k, Math.round(v / 10)])))}`,
    configMapBytes: await configMapBytes(core),
  };
}

async function bench(cluster: LocalCluster, sizes: number[]): Promise<Row[]> {
  const audit = new AuditCounter(join(cluster.stateDir, "logs", "audit.log"));
  const program = await ProgramStack.create(cluster, { from: "dev", stack: "bench" });
  const rows: Row[] = [];
  try {
    console.error("pulumi up of the dev stack ...");
    await program.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    // The Automation API runs in this process: give it the workspace's engine environment.
    Object.assign(process.env, program.ws.env);
    const stack = new ProjectStack(program.ws.stack, program.ws.programDir);
    const core = program.core();
    const kc = loadKubeConfig(readFileSync(cluster.kubeconfig, "utf8"));
    let have = 0;
    for (const n of sizes) {
      console.error(`${n} namespaces: creating ${n - have} ...`);
      await addNamespaces(core, have, n - 1);
      if (n - 1 > have) await syncRoutes(stack, { log: (line) => console.error(line) }); // catch up, not measured
      await addNamespaces(core, n - 1, n);
      have = n;

      audit.take();
      const start = performance.now();
      const listed = await listRoutedObjects(kc, LABEL_SELECTOR, ROUTED_SERVICE_SELECTOR);
      const found = discoverRoutes(listed.namespaces, listed.services, "default");
      const ms = performance.now() - start;
      const counted = audit.take();
      const discovered = Object.keys(found.devNamespaces).filter((ns) => ns.startsWith("pr-bench-")).length;
      if (discovered !== n) throw new Error(`discovery at ${n} namespaces found ${discovered}`);
      rows.push({
        namespaces: n,
        step: "discovery",
        time: seconds(ms),
        requests: counted.total,
        top: top(counted.byKind),
        configMapBytes: await configMapBytes(core),
      });

      console.error(`${n} namespaces: sync after adding one ...`);
      rows.push(await measureSync(stack, audit, core, n, "sync: +1 ns", `pr-bench-${n - 1}`));
      console.error(`${n} namespaces: sync with nothing changed ...`);
      rows.push(await measureSync(stack, audit, core, n, "sync: no change"));
      console.error(`${n} namespaces: sync-routes --watch, 10 namespaces one after another ...`);
      rows.push(await measureWatch(program, cluster, audit, core, kc, n));
    }
  } finally {
    await program.dispose();
  }
  return rows;
}

function print(rows: Row[]): void {
  const header = ["namespaces", "step", "time", "API requests", "ConfigMap bytes", "steps; requests by kind (top 4)"];
  const table = rows.map((r) => [
    String(r.namespaces),
    r.step,
    r.time,
    String(r.requests),
    r.configMapBytes.toLocaleString("en-US"),
    r.top,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : i <= 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ");
  console.log(line(header));
  for (const row of table) console.log(line(row));
  const ratio = (step: string) => {
    const r = rows.filter((x) => x.step === step);
    return r.length > 1 ? `${(r[r.length - 1]!.requests / r[0]!.requests).toFixed(2)}x` : "-";
  };
  const sizes = [...new Set(rows.map((r) => r.namespaces))];
  if (sizes.length > 1) {
    console.log(
      `\n${sizes[sizes.length - 1]} vs ${sizes[0]} namespaces: API requests per sync ${ratio("sync: +1 ns")}, per no-change sync ${ratio("sync: no change")}, ` +
        `per watched namespace ${ratio("watch: +1 ns (10)")}; discovery requests ${rows
          .filter((r) => r.step === "discovery")
          .map((r) => r.requests)
          .join(" / ")}`,
    );
  }
}

async function main(): Promise<void> {
  buildCli();
  const sizes = sizesOption();
  console.error("starting a local cluster with the audit log ...");
  const cluster = await startLocalCluster({ audit: true });
  try {
    print(await bench(cluster, sizes));
  } finally {
    await stopLocalCluster(cluster, true);
  }
}

main().catch((e: unknown) => {
  console.error(`bench-sync: ${(e as Error).stack ?? String(e)}`);
  process.exit(1);
});
