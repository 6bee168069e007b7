// Benchmark (not a test): a dev/PR namespace comes and goes, end to end on the
// local node. On a fresh local cluster with the dev stack deployed (real
// gateway pods) and `dist/sync-routes --stack <s> --watch` running as CI
// would run it, for each of N namespaces in turn:
//
//   add     label the namespace and create its routed Service (its pod is
//           already running and ready), then time until the first request
//           through the gateway pod succeeds (200 from that pod)
//   remove  delete the namespace, then time until the route answers 404
//
// Each time is split into "ConfigMap" (until the gateway's xDS ConfigMap holds,
// or no longer holds, the route: discovery and sync-routes) and the rest
// (the kubelet projecting the ConfigMap into the pod with its default
// settings, Envoy's reload, DNS). Prints each namespace and p50/max.
//
//   npx tsx bench/namespace.ts [--namespaces 5]
//
// Needs the real components and root (the local node). Takes a few minutes.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startLocalCluster, stopLocalCluster } from "../test/support/cluster.js";
import { repoRoot } from "../test/support/components.js";
import { GatewayClient } from "../test/support/gateway-client.js";
import { AUTH_TOKEN } from "../test/support/local-stack.js";
import { buildCli, ProgramStack } from "../test/support/program.js";
import { until, Workloads } from "../test/support/workloads.js";

const { values } = parseArgs({ options: { namespaces: { type: "string", default: "5" }, help: { type: "boolean" } } });
if (values.help) {
  console.log("usage: npx tsx bench/namespace.ts [--namespaces N]   (N >= 5)");
  process.exit(0);
}
const count = Number(values.namespaces);
if (!Number.isInteger(count) || count < 5 || count > 50)
  throw new Error(`--namespaces must be a whole number from 5 to 50 (got ${values.namespaces})`);

const POLL_MS = 200;
const LIMIT_MS = 300_000;

interface Timing {
  namespace: string;
  addConfigMap: number;
  add: number;
  removeConfigMap: number;
  remove: number;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

async function main(): Promise<void> {
  buildCli();
  const cluster = await startLocalCluster();
  let stack: ProgramStack | undefined;
  let gateway: GatewayClient | undefined;
  let watch: ReturnType<typeof spawn> | undefined;
  try {
    stack = await ProgramStack.create(cluster, { from: "dev", stack: "bench" });
    console.error("pulumi up of the dev stack (local) ...");
    await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    gateway = await GatewayClient.start(cluster, "gateway");
    const w = new Workloads(cluster);
    const core = stack.core();
    const devHost = `internal.${stack.config.domain}`;

    watch = spawn(
      join(repoRoot, "dist", "sync-routes"),
      ["--stack", stack.ws.stack, "--project-dir", stack.ws.programDir, "--watch"],
      { cwd: repoRoot, env: stack.ws.env, stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    let out = "";
    watch.stdout!.on("data", (d: Buffer) => (out += d));
    watch.stderr!.on("data", (d: Buffer) => (out += d));
    await until(
      "sync-routes --watch to finish its first sync",
      300_000,
      async () => /routes in step|routes live/.test(out) || undefined,
      async () => out,
    );

    const rds = async () =>
      (await core.readNamespacedConfigMap({ name: "gateway-xds", namespace: stack!.config.namespace })).data?.[
        "rds.yaml"
      ] ?? "";
    const status = async (path: string) =>
      (await gateway!.request(devHost, path, { headers: { authorization: `Bearer ${AUTH_TOKEN}` } })).status;
    const timings: Timing[] = [];
    for (let i = 0; i < count; i++) {
      const ns = `pr-bench-${i}`;
      const route = `"path_separated_prefix":"/${ns}/app"`;
      // The pod first, in a namespace not yet routed: what is timed is the route, not the pod's start.
      await w.createNamespace(ns, false);
      await w.createWorkload(ns, { name: "app" });
      await w.waitReady(ns, "app", 1);

      const added = performance.now();
      await w.labelNamespace(ns);
      await w.createRoutedService(ns, { name: "app" });
      await until(
        `${ns}'s route in the ConfigMap`,
        LIMIT_MS,
        async () => (await rds()).includes(route) || undefined,
        undefined,
        POLL_MS,
      );
      const addConfigMap = performance.now() - added;
      await until(
        `${ns}'s route to answer 200`,
        LIMIT_MS,
        async () => (await status(`/${ns}/app/`)) === 200 || undefined,
        undefined,
        POLL_MS,
      );
      const add = performance.now() - added;

      const removed = performance.now();
      await w.deleteNamespace(ns);
      await until(
        `${ns}'s route to leave the ConfigMap`,
        LIMIT_MS,
        async () => !(await rds()).includes(route) || undefined,
        undefined,
        POLL_MS,
      );
      const removeConfigMap = performance.now() - removed;
      await until(
        `${ns}'s route to answer 404`,
        LIMIT_MS,
        async () => (await status(`/${ns}/app/`)) === 404 || undefined,
        undefined,
        POLL_MS,
      );
      const remove = performance.now() - removed;
      timings.push({ namespace: ns, addConfigMap, add, removeConfigMap, remove });
      console.error(
        `${ns}: first 200 after ${seconds(add)} (ConfigMap ${seconds(addConfigMap)}), 404 after ${seconds(remove)} (ConfigMap ${seconds(removeConfigMap)})`,
      );
      await w.waitNamespaceGone(ns);
    }

    console.log(
      `\n${count} namespaces, one at a time (sync-routes --watch, its default debounce of 300ms; kubelet defaults; poll every ${POLL_MS} ms)\n`,
    );
    console.log("namespace      first 200  (ConfigMap)   404 after  (ConfigMap)");
    for (const t of timings) {
      console.log(
        `${t.namespace.padEnd(13)} ${seconds(t.add).padStart(9)}  ${seconds(t.addConfigMap).padStart(11)}   ${seconds(t.remove).padStart(9)}  ${seconds(t.removeConfigMap).padStart(11)}`,
      );
    }
    const col = (k: keyof Omit<Timing, "namespace">) => timings.map((t) => t[k]);
    console.log(
      `${"p50".padEnd(13)} ${seconds(p50(col("add"))).padStart(9)}  ${seconds(p50(col("addConfigMap"))).padStart(11)}   ${seconds(p50(col("remove"))).padStart(9)}  ${seconds(p50(col("removeConfigMap"))).padStart(11)}`,
    );
    console.log(
      `${"max".padEnd(13)} ${seconds(Math.max(...col("add"))).padStart(9)}  ${seconds(Math.max(...col("addConfigMap"))).padStart(11)}   ${seconds(Math.max(...col("remove"))).padStart(9)}  ${seconds(Math.max(...col("removeConfigMap"))).padStart(11)}`,
    );
  } finally {
    // npm does not pass SIGTERM on to the script: signal its whole process group (its own, detached).
    const group = (signal: NodeJS.Signals) => {
      try {
        process.kill(-watch!.pid!, signal);
      } catch {
        // already gone
      }
    };
    if (watch?.pid) {
      const alive = () => {
        try {
          process.kill(-watch!.pid!, 0);
          return true;
        } catch {
          return false;
        }
      };
      group("SIGTERM");
      for (let i = 0; i < 2400 && alive(); i++) await new Promise((r) => setTimeout(r, 100));
      group("SIGKILL");
    }
    await gateway?.stop();
    await stack?.dispose().catch((e: Error) => console.error(`destroy: ${e.message}`));
    await stopLocalCluster(cluster, true);
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
