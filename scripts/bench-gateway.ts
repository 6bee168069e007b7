// Benchmark (not a test): the same bounded HTTPS load through this project's
// Envoy and, side by side in the same run, through nginx configured the way
// the gateways were before (regex server blocks, proxy_pass to a variable with
// a resolver: a new upstream connection and TLS handshake per request). Same
// upstream pods, DNS, certificates; everything on loopback.
//
//   npx tsx scripts/bench-gateway.ts [--seconds 10] [--connections 16] [--threads 2]
//                                    [--tool wrk|h2load] [--workers 2] [--rounds 1]
//
// Prints, for each gateway: requests/s, p50/p99 latency, upstream TLS
// handshakes per 1,000 requests (counted at the pods), gateway CPU-seconds per
// 10,000 requests (/proc/<pid>/stat of Envoy, of nginx's master and workers),
// and the Envoy/nginx ratios. Needs: bash scripts/install-test-tools.sh and the
// Envoy binary (bash scripts/build-components.sh).
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { GatewayHarness } from "../test/harness/gateway.js";
import { freeTcpPort } from "../test/harness/ports.js";
import { sleep, startProcess, waitFor, type ManagedProcess } from "../test/harness/processes.js";
import { e2eHarnessOptions } from "../test/harness/stack.js";
import { httpsGet } from "../test/harness/client.js";

const root = resolve(__dirname, "..");
const HOST = "www.hail.is";

interface Options {
  seconds: number;
  warmupSeconds: number;
  connections: number;
  threads: number;
  tool: "wrk" | "h2load";
  workers: number;
  rounds: number;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string", default: "10" },
      warmup: { type: "string", default: "2" },
      connections: { type: "string", default: "16" },
      threads: { type: "string", default: "2" },
      tool: { type: "string", default: "wrk" },
      workers: { type: "string", default: "2" },
      rounds: { type: "string", default: "1" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    console.log("usage: npx tsx scripts/bench-gateway.ts [--seconds 10] [--warmup 2] [--connections 16] [--threads 2] [--tool wrk|h2load] [--workers 2] [--rounds 1]");
    process.exit(0);
  }
  const num = (name: string, v: string | undefined, max: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`--${name} must be a whole number from 1 to ${max} (got ${v})`);
    return n;
  };
  if (values.tool !== "wrk" && values.tool !== "h2load") throw new Error(`--tool must be wrk or h2load (got ${values.tool})`);
  return {
    seconds: num("seconds", values.seconds, 300),
    warmupSeconds: num("warmup", values.warmup, 60),
    connections: num("connections", values.connections, 1000),
    threads: num("threads", values.threads, 16),
    tool: values.tool,
    workers: num("workers", values.workers, 16),
    rounds: num("rounds", values.rounds, 10),
  };
}

function which(command: string): string {
  for (const dir of ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]) if (existsSync(join(dir, command))) return join(dir, command);
  try {
    return execFileSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" }).trim();
  } catch {
    throw new Error(`${command} not found: run bash scripts/install-test-tools.sh`);
  }
}

/** CPU seconds (user + system) of a process and, with `group`, every process in its process group. */
function cpuSeconds(pid: number, group: boolean): number {
  const ticks = 100; // USER_HZ on Linux
  const read = (p: string): { pgrp: number; cpu: number } | undefined => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // fields[0] is state (field 3); pgrp is field 5, utime 14, stime 15.
      return { pgrp: Number(fields[2]), cpu: (Number(fields[11]) + Number(fields[12])) / ticks };
    } catch {
      return undefined;
    }
  };
  if (!group) return read(String(pid))?.cpu ?? 0;
  let total = 0;
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    const s = read(p);
    if (s && s.pgrp === pid) total += s.cpu;
  }
  return total;
}

interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

function parseDuration(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!m) throw new Error(`cannot read duration ${text}`);
  const v = Number(m[1]);
  return m[2] === "us" ? v / 1000 : m[2] === "ms" ? v : m[2] === "s" ? v * 1000 : v * 60_000;
}

function percentile(sorted: number[], q: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

const execFileAsync = promisify(execFile);

/** Runs a load generator without blocking the event loop (the pods live in this process). */
async function run(command: string, args: string[], timeoutMs: number): Promise<string> {
  const { stdout } = await execFileAsync(command, args, { encoding: "utf8", timeout: timeoutMs, maxBuffer: 16 << 20 });
  return stdout;
}

/** Runs the load generator against https://address:port with Host/SNI www.hail.is. */
async function runLoad(o: Options, address: string, port: number, seconds: number, dir: string, label: string): Promise<LoadResult> {
  if (o.tool === "wrk") {
    const out = await run(
      which("wrk"),
      ["-t", String(o.threads), "-c", String(o.connections), "-d", `${seconds}s`, "--timeout", "10s", "--latency", "-H", `Host: ${HOST}`, `https://${address}:${port}/bench`],
      (seconds + 60) * 1000,
    );
    const requests = Number(/(\d+) requests in ([\d.]+)(\w+)/.exec(out)?.[1]);
    const elapsed = parseDuration(/\d+ requests in ([\d.]+\w+)/.exec(out)![1]!) / 1000;
    const p50 = parseDuration(/^\s+50%\s+(\S+)/m.exec(out)![1]!);
    const p99 = parseDuration(/^\s+99%\s+(\S+)/m.exec(out)![1]!);
    const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
    const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
    const errors = non2xx + (socket ? socket.slice(1).reduce((n, x) => n + Number(x), 0) : 0);
    return { requests, seconds: elapsed, rps: requests / elapsed, p50Ms: p50, p99Ms: p99, errors };
  }
  // h2load: HTTP/2 over TLS with SNI www.hail.is, per-request log for exact percentiles.
  const log = join(dir, `h2load-${label}.log`);
  const out = await run(
    which("h2load"),
    ["-t", String(o.threads), "-c", String(o.connections), "-m", "1", "-D", String(seconds), `--connect-to=${address}:${port}`, "--log-file", log, `https://${HOST}:${port}/bench`],
    (seconds + 60) * 1000,
  );
  const durations = readFileSync(log, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => Number(l.split("\t")[2]) / 1000)
    .sort((a, b) => a - b);
  const m = /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(out);
  const finished = /finished in ([\d.]+\w+)/.exec(out)![1]!;
  const elapsed = parseDuration(finished) / 1000;
  const status2xx = Number(/status codes: (\d+) 2xx/.exec(out)?.[1] ?? 0);
  const done = Number(m?.[1] ?? 0);
  return { requests: done, seconds: elapsed, rps: done / elapsed, p50Ms: percentile(durations, 0.5), p99Ms: percentile(durations, 0.99), errors: done - status2xx + Number(m?.[3] ?? 0) + Number(m?.[4] ?? 0) };
}

interface Row extends LoadResult {
  gateway: string;
  handshakesPer1k: number;
  cpuPer10k: number;
  podCpuPer10k: number;
  podRequests: number;
}

async function startNginx(h: GatewayHarness, o: Options): Promise<{ process: ManagedProcess; address: string; port: number }> {
  const dir = join(h.workDir, "nginx");
  mkdirSync(dir, { recursive: true });
  const address = `${h.subnet}.3`;
  const port = await freeTcpPort(address);
  const c = h.config;
  const upstream = h.paths.upstreamTlsDir;
  const vars: Record<string, string> = {
    WORKERS: String(o.workers),
    DIR: dir,
    DNS: `${h.dns.address}:${h.dns.port}`,
    LISTEN: `${address}:${port}`,
    SERVER_CERT: join(h.paths.serverTlsDir, "tls.crt"),
    SERVER_KEY: join(h.paths.serverTlsDir, "tls.key"),
    CLIENT_CERT: join(upstream, "tls.crt"),
    CLIENT_KEY: join(upstream, "tls.key"),
    CA: join(upstream, "ca.crt"),
    DOMAIN: c.domain,
    DOMAIN_RE: c.domain.replaceAll(".", "\\."),
    NAMESPACE: c.namespace,
    CLUSTER_DOMAIN: c.clusterDomain,
  };
  const template = readFileSync(join(root, "scripts/bench/nginx-old-gateway.conf.template"), "utf8");
  const conf = template.replace(/\{\{([A-Z_]+)\}\}/g, (_, k: string) => {
    if (!(k in vars)) throw new Error(`nginx template: no value for {{${k}}}`);
    return vars[k]!;
  });
  const confPath = join(dir, "nginx.conf");
  writeFileSync(confPath, conf);
  const nginx = which("nginx");
  try {
    execFileSync(nginx, ["-t", "-q", "-p", dir, "-c", confPath], { stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    throw new Error(`nginx -t refused the config ${confPath}: ${(e as { stderr?: Buffer }).stderr?.toString()}`);
  }
  const process = startProcess("nginx", nginx, ["-p", dir, "-c", confPath], join(dir, "nginx-stdout.log"));
  await waitFor("nginx to serve", 15_000, async () => {
    if (process.exited()) throw new Error(`nginx exited: ${process.log()}${readFileSync(join(dir, "nginx-error.log"), "utf8")}`);
    const res = await httpsGet({ address, port, ca: h.ca.cert }, { host: HOST, path: "/" });
    return res.status === 200;
  });
  return { process, address, port };
}

async function measure(h: GatewayHarness, o: Options, gateway: string, pid: number, group: boolean, address: string, port: number): Promise<Row> {
  // Warm-up (connections, pools, caches), not measured.
  await runLoad(o, address, port, o.warmupSeconds, h.workDir, `${gateway}-warmup`);
  await sleep(500);
  const pods = h.productionPods("www");
  for (const p of pods) p.resetCounters();
  const cpuBefore = cpuSeconds(pid, group);
  const podCpuBefore = process.cpuUsage();
  const load = await runLoad(o, address, port, o.seconds, h.workDir, gateway);
  const cpu = cpuSeconds(pid, group) - cpuBefore;
  const podCpu = process.cpuUsage(podCpuBefore);
  const podRequests = pods.reduce((n, p) => n + p.requests, 0);
  const handshakes = pods.reduce((n, p) => n + p.handshakes, 0);
  return {
    gateway,
    ...load,
    podRequests,
    handshakesPer1k: (handshakes / Math.max(1, podRequests)) * 1000,
    cpuPer10k: (cpu / Math.max(1, load.requests)) * 10_000,
    podCpuPer10k: ((podCpu.user + podCpu.system) / 1e6 / Math.max(1, podRequests)) * 10_000,
  };
}

function table(rows: Row[]): string {
  const envoy = rows.filter((r) => r.gateway === "envoy");
  const nginx = rows.filter((r) => r.gateway === "nginx");
  const mean = (rs: Row[], f: (r: Row) => number) => rs.reduce((n, r) => n + f(r), 0) / rs.length;
  const cols: [string, (r: Row) => number, number][] = [
    ["requests/s", (r) => r.rps, 0],
    ["p50 ms", (r) => r.p50Ms, 2],
    ["p99 ms", (r) => r.p99Ms, 2],
    ["upstream TLS handshakes /1k req", (r) => r.handshakesPer1k, 1],
    ["gateway CPU-s /10k req", (r) => r.cpuPer10k, 2],
    ["pods CPU-s /10k req", (r) => r.podCpuPer10k, 2],
    ["requests", (r) => r.requests, 0],
    ["errors", (r) => r.errors, 0],
  ];
  const lines = [`| metric | Envoy | nginx (old) | Envoy/nginx |`, `| --- | ---: | ---: | ---: |`];
  for (const [name, f, digits] of cols) {
    const e = mean(envoy, f);
    const n = mean(nginx, f);
    const r = e / n;
    const ratio = n === 0 ? (e === 0 ? "-" : "inf") : r !== 0 && r < 0.01 ? r.toPrecision(2) : r.toFixed(2);
    lines.push(`| ${name} | ${e.toFixed(digits)} | ${n.toFixed(digits)} | ${ratio} |`);
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const o = options();
  for (const tool of ["nginx", o.tool]) which(tool);
  const h = await GatewayHarness.start({ ...e2eHarnessOptions(), podCertificate: undefined, concurrency: o.workers, logLevel: "warning" });
  let nginx: ManagedProcess | undefined;
  try {
    const n = await startNginx(h, o);
    nginx = n.process;
    console.log(
      `load: ${o.tool}, ${o.connections} keep-alive HTTPS connections, ${o.threads} threads, ${o.seconds}s per gateway (+${o.warmupSeconds}s warm-up), ` +
        `GET https://${HOST}/ -> 3 pods; Envoy --concurrency ${o.workers}, nginx worker_processes ${o.workers}; ${o.rounds} round(s)`,
    );
    const rows: Row[] = [];
    for (let round = 1; round <= o.rounds; round++) {
      rows.push(await measure(h, o, "envoy", h.envoy.pid!, false, h.address, h.ports.https));
      rows.push(await measure(h, o, "nginx", n.process.pid, true, n.address, n.port));
      const last = rows.slice(-2);
      console.log(`round ${round}: ${last.map((r) => `${r.gateway} ${r.rps.toFixed(0)} req/s, p99 ${r.p99Ms.toFixed(1)} ms, ${r.handshakesPer1k.toFixed(1)} handshakes/1k, ${r.cpuPer10k.toFixed(2)} CPU-s/10k, ${r.errors} errors`).join("; ")}`);
    }
    console.log(`\n${table(rows)}\n`);
    console.log(`machine: ${execFileSync("nproc", { encoding: "utf8" }).trim()} cores, load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}; pods and the load generator share the machine`);
  } finally {
    await nginx?.stop();
    await h.stop();
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
