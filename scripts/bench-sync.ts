// Benchmark (not a test): what keeping routes in step costs as the number of
// dev/PR namespaces grows. On a fresh local cluster (with the API server's
// audit log on) and the dev stack deployed through the real engine, for each
// size N it labels N namespaces with one routed Service each, then measures:
//
//   discovery        the two list requests the program makes, in this process
//   sync: +1 ns      sync-routes after CI added one namespace to N-1
//   sync: no change  sync-routes again with nothing changed
//
// with wall time and the API requests each made, counted in the audit log
// (every request of the admin user the stack and this script use, whoever
// sent it: this process, the program, the routes provider, the Kubernetes
// provider), and the size of the gateway's xDS ConfigMap.
//
//   npx tsx scripts/bench-sync.ts [--sizes 10,100,500]
//
// Needs the real components (bash scripts/build-components.sh). Takes a few
// minutes: each sync runs the engine and the program.
import * as k8s from "@kubernetes/client-node";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openStack } from "../route-sync/stack.js";
import { syncRoutes, type SyncResult } from "../route-sync/sync.js";
import { listRoutedObjects, loadKubeConfig } from "../kube/client.js";
import { discoverRoutes, ROUTED_SERVICE_SELECTOR } from "../routing/discovery.js";
import { routingLabels } from "../routing/labels.js";
import { startLocalCluster, stopLocalCluster, type LocalCluster } from "../test/support/cluster.js";
import { ProgramStack } from "../test/support/program.js";

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
  const { values } = parseArgs({ options: { sizes: { type: "string", default: "10,100,500" }, help: { type: "boolean" } } });
  if (values.help) {
    console.log("usage: npx tsx scripts/bench-sync.ts [--sizes 10,100,500]");
    process.exit(0);
  }
  const sizes = values.sizes!.split(",").map((s) => Number(s.trim()));
  const bad = sizes.find((n) => !Number.isInteger(n) || n < 1 || n > 2000);
  if (bad !== undefined) throw new Error(`--sizes ${values.sizes}: each size must be a whole number from 1 to 2000 (got ${bad})`);
  return [...new Set(sizes)].sort((a, b) => a - b);
}

/** Creates namespaces pr-bench-<from>..pr-bench-<to - 1>, each with one routed Service, a few at a time. */
async function addNamespaces(core: k8s.CoreV1Api, from: number, to: number): Promise<void> {
  const indexes = Array.from({ length: to - from }, (_, i) => from + i);
  const inFlight = 16;
  for (let i = 0; i < indexes.length; i += inFlight) {
    await Promise.all(
      indexes.slice(i, i + inFlight).map(async (n) => {
        const namespace = `pr-bench-${n}`;
        await core.createNamespace({ body: { metadata: { name: namespace, labels: { "envoy-gateways.io/routes": "dev" } } } });
        await core.createNamespacedService({
          namespace,
          body: {
            metadata: { name: "web", labels: routingLabels({ service: "web", version: "main", weight: 100, replicas: 2, websocket: false }) },
            spec: { clusterIP: "None", selector: { app: "web" }, ports: [{ name: "https", port: 443, targetPort: 443 }] },
          },
        });
      }),
    );
  }
}

interface Row {
  namespaces: number;
  step: string;
  ms: number;
  requests: number;
  top: string;
  configMapBytes: number;
}

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
async function measureSync(stack: Awaited<ReturnType<typeof openStack>>, audit: AuditCounter, core: k8s.CoreV1Api, namespaces: number, step: string, added?: string): Promise<Row> {
  audit.take();
  const start = performance.now();
  const result: SyncResult = await syncRoutes(stack, { log: (line) => console.error(line) });
  const ms = performance.now() - start;
  const counted = audit.take();
  const changes = [...result.added, ...result.removed, ...result.changed];
  const expected = added ? result.added.length > 0 && changes.every((line) => line.startsWith(`${added}/`)) : changes.length === 0;
  if (!expected) throw new Error(`${step} at ${namespaces} namespaces: expected ${added ? `only ${added}'s routes added` : "no change"}, the sync reported:\n${changes.join("\n")}`);
  return { namespaces, step, ms, requests: counted.total, top: top(counted.byKind), configMapBytes: await configMapBytes(core) };
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
    const stack = await openStack(program.ws.stack, program.ws.programDir);
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
      rows.push({ namespaces: n, step: "discovery", ms, requests: counted.total, top: top(counted.byKind), configMapBytes: await configMapBytes(core) });

      console.error(`${n} namespaces: sync after adding one ...`);
      rows.push(await measureSync(stack, audit, core, n, "sync: +1 ns", `pr-bench-${n - 1}`));
      console.error(`${n} namespaces: sync with nothing changed ...`);
      rows.push(await measureSync(stack, audit, core, n, "sync: no change"));
    }
  } finally {
    await program.dispose();
  }
  return rows;
}

function print(rows: Row[]): void {
  const header = ["namespaces", "step", "time", "API requests", "ConfigMap bytes", "requests by kind (top 4)"];
  const table = rows.map((r) => [
    String(r.namespaces),
    r.step,
    r.ms < 1000 ? `${r.ms.toFixed(0)} ms` : `${(r.ms / 1000).toFixed(1)} s`,
    String(r.requests),
    r.configMapBytes.toLocaleString("en-US"),
    r.top,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : i === 1 || i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  console.log(line(header));
  for (const row of table) console.log(line(row));
  const syncs = rows.filter((r) => r.step === "sync: +1 ns");
  if (syncs.length > 1) {
    const [first, last] = [syncs[0]!, syncs[syncs.length - 1]!];
    console.log(
      `\n${last.namespaces} vs ${first.namespaces} namespaces (${(last.namespaces / first.namespaces).toFixed(0)}x): ` +
        `sync time ${(last.ms / first.ms).toFixed(2)}x, API requests per sync ${(last.requests / first.requests).toFixed(2)}x, ` +
        `discovery requests ${rows.filter((r) => r.step === "discovery").map((r) => r.requests).join(" / ")}`,
    );
  }
}

async function main(): Promise<void> {
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
