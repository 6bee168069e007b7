// Benchmark (not a test): the DNS queries a gateway pod sends, under its real
// resolv.conf (the kubelet's: the cluster DNS, search domains, ndots:5). On a
// fresh local cluster with the dev stack deployed, it reads CoreDNS's query log
// (every query is logged) for --seconds, keeps the gateway pod's queries, and
// groups them by the Service name Envoy resolves (each STRICT_DNS cluster
// re-resolves its name every refresh cycle: the DNS TTL, 5 s from CoreDNS's
// kubernetes plugin). Prints the pod's resolv.conf and, per cluster, the
// queries of one refresh cycle by type, name and answer.
//
//   npx tsx bench/dns.ts [--seconds 30]
//
// Needs the real components and root (the local node).
import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parseEnvoyYaml } from "../routing/envoy/xds.js";
import { startLocalCluster, stopLocalCluster, type LocalCluster } from "../test/support/cluster.js";
import { ProgramStack } from "../test/support/program.js";
import { Workloads } from "../test/support/workloads.js";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "30" }, help: { type: "boolean" } } });
if (values.help) {
  console.log("usage: npx tsx bench/dns.ts [--seconds 30]");
  process.exit(0);
}
const seconds = Number(values.seconds);
if (!Number.isInteger(seconds) || seconds < 10 || seconds > 600)
  throw new Error(`--seconds must be a whole number from 10 to 600 (got ${values.seconds})`);

interface Query {
  type: string;
  name: string;
  rcode: string;
}

/** `[INFO] 10.200.7.12:41234 - 5523 "AAAA IN www.default.svc.cluster.local.default.svc.cluster.local. udp 74 false 512" NXDOMAIN qr,aa,rd 167 0.0001s` */
function parseLog(text: string, client: string): Query[] {
  const queries: Query[] = [];
  for (const line of text.split("\n")) {
    const m = /^\[INFO\] ([0-9.]+):\d+ - \d+ "(\S+) IN (\S+) \S+ \d+ \S+ \d+" (\S+)/.exec(line);
    if (m && m[1] === client) queries.push({ type: m[2]!, name: m[3]!.replace(/\.$/, ""), rcode: m[4]! });
  }
  return queries;
}

/** The resolv.conf containerd wrote for a pod's sandbox. */
function podResolvConf(cluster: LocalCluster, pod: string): string {
  const ctr = (args: string[]) =>
    execFileSync("ctr", ["--address", cluster.node.containerdSocket, "--namespace", "k8s.io", ...args], {
      encoding: "utf8",
    });
  const ids = ctr([
    "containers",
    "ls",
    "-q",
    `labels."io.kubernetes.pod.name"==${pod},labels."io.cri-containerd.kind"==sandbox`,
  ])
    .trim()
    .split("\n")
    .filter(Boolean);
  if (ids.length === 0) throw new Error(`no sandbox of pod ${pod} in containerd`);
  return readFileSync(
    join(cluster.stateDir, "node/containerd/root/io.containerd.grpc.v1.cri/sandboxes", ids[0]!, "resolv.conf"),
    "utf8",
  );
}

async function main(): Promise<void> {
  const cluster = await startLocalCluster();
  let stack: ProgramStack | undefined;
  try {
    stack = await ProgramStack.create(cluster, { from: "dev", stack: "bench-dns" });
    console.error("pulumi up of the dev stack (local) ...");
    await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    const w = new Workloads(cluster);
    const [pod] = await w.waitReady(stack.config.namespace, "gateway", 1);
    const podName = pod!.metadata!.name!;
    const ip = pod!.status!.podIP!;
    const resolvConf = podResolvConf(cluster, podName);

    // The names the gateway resolves: every cluster of its xDS ConfigMap and of the bootstrap.
    const core = stack.core();
    const names = new Set<string>();
    const deployment = await w.apps.readNamespacedDeployment({ name: "gateway", namespace: stack.config.namespace });
    const bootstrap = deployment.spec!.template.spec!.volumes!.find((v) => v.name === "bootstrap")!.configMap!.name!;
    for (const cm of ["gateway-xds", bootstrap]) {
      const data = (await core.readNamespacedConfigMap({ name: cm, namespace: stack.config.namespace })).data ?? {};
      for (const text of Object.values(data)) {
        const doc = JSON.stringify(parseEnvoyYaml(text));
        for (const m of doc.matchAll(/"address":"([a-z0-9.-]+\.svc\.[a-z0-9.-]+)"/g)) names.add(m[1]!);
      }
    }

    // Past the start-up burst; then a window of whole refresh cycles.
    await new Promise((r) => setTimeout(r, 10_000));
    const offset = statSync(cluster.node.corednsLog).size;
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const queries = parseLog(readFileSync(cluster.node.corednsLog).subarray(offset).toString("utf8"), ip);

    console.log(`gateway pod ${podName} (${ip}), ${queries.length} DNS queries in ${seconds} s; its /etc/resolv.conf:`);
    for (const line of resolvConf.trim().split("\n")) console.log(`  ${line}`);
    console.log("");
    console.log("cluster name                                   cycles  queries/cycle  one cycle: type name (answer)");
    const perCycle: number[] = [];
    for (const name of [...names].sort()) {
      const mine = queries.filter((q) => q.name === name || q.name.startsWith(`${name}.`));
      // A cycle ends with the query for the name itself (the last of the search list with ndots:5).
      const cycles = mine.filter((q) => q.name === name && q.type === "A").length;
      if (cycles === 0) {
        console.log(`${name.padEnd(46)} ${"0".padStart(6)}  ${String(mine.length).padStart(13)}`);
        continue;
      }
      const rate = mine.length / cycles;
      perCycle.push(rate);
      const one: string[] = [];
      const seen = new Set<string>();
      for (const q of mine) {
        const key = `${q.type} ${q.name === name ? "<name>" : `<name>.${q.name.slice(name.length + 1)}`} (${q.rcode})`;
        if (!seen.has(key)) {
          one.push(key);
          seen.add(key);
        }
      }
      console.log(
        `${name.padEnd(46)} ${String(cycles).padStart(6)}  ${rate.toFixed(1).padStart(13)}  ${one.join(", ")}`,
      );
    }
    const mean = perCycle.reduce((a, b) => a + b, 0) / Math.max(1, perCycle.length);
    console.log(`\nDNS queries per cluster per refresh cycle: ${mean.toFixed(1)}`);
  } finally {
    await stack?.dispose().catch((e: Error) => console.error(`destroy: ${e.message}`));
    await stopLocalCluster(cluster, true);
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
