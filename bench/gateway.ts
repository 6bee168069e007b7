// Benchmark (not a test): the same bounded HTTPS load through this project's
// Envoy and, side by side in the same run, through its peers, all in front of
// the same upstream pods, DNS and certificates, everything on loopback:
//
//   - nginx configured the way the gateways were before (regex server blocks,
//     proxy_pass to a variable with a resolver: a new upstream connection and
//     TLS handshake per request);
//   - nginx as a careful operator runs it (an upstream block with keepalive to
//     the pod addresses, bench/configs/nginx-tuned.conf.template);
//   - HAProxy from Debian configured with the same care
//     (bench/configs/haproxy.cfg.template).
//
// Like with like: the same TLS settings on both sides of every gateway (TLS
// 1.2+, the same ciphers and curves; upstream TLS with the client certificate,
// the CA and the Service name checked), the same balancing (least requests /
// connections), passive upstream checks, the same request headers, and the
// access log either a JSON line per request on every gateway or off on every
// gateway: two rows each. Envoy runs the generated config; "log off" is the
// same config with edge.accessLog: off.
//
//   npx tsx bench/gateway.ts [--seconds 10] [--connections 16] [--threads 2]
//                                    [--tool wrk|h2load] [--workers 2] [--rounds 1]
//                                    [--only envoy,nginx-tuned,...]
//
// Prints, for each gateway: requests/s, requests per gateway CPU-second, p50
// and p99 latency, upstream TLS handshakes per 1,000 requests (counted at the
// pods), gateway CPU-seconds per 10,000 requests (/proc/<pid>/stat of the
// gateway's processes), errors; then Envoy against the best tuned peer with
// the same access log. Needs: bash scripts/install-debian-packages.sh development and the
// Envoy binary (bash scripts/build-components.sh).
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { serviceHost } from "../routing/names.js";
import { GatewayHarness } from "../test/harness/gateway.js";
import { freeTcpPort } from "../test/harness/ports.js";
import { sleep, startProcess, waitFor, type ManagedProcess } from "../test/harness/processes.js";
import { e2eHarnessOptions } from "../test/harness/stack.js";
import { httpsGet } from "../test/harness/client.js";
import { fillTemplate } from "../test/harness/template.js";

const HOST = "www.hail.is";
const SERVICE = "www";

/** The gateways compared, in the order of the table. */
const GATEWAYS = [
  "envoy",
  "envoy-log-off",
  "nginx-old",
  "nginx-tuned",
  "nginx-tuned-log-off",
  "haproxy",
  "haproxy-log-off",
] as const;
type GatewayId = (typeof GATEWAYS)[number];
const LABEL: Record<GatewayId, string> = {
  envoy: "Envoy",
  "envoy-log-off": "Envoy, log off",
  "nginx-old": "nginx (old)",
  "nginx-tuned": "nginx tuned",
  "nginx-tuned-log-off": "nginx tuned, log off",
  haproxy: "HAProxy",
  "haproxy-log-off": "HAProxy, log off",
};
/** Which gateways log a JSON line per request (the others log nothing; the old nginx never did). */
const LOGS: Record<GatewayId, boolean> = {
  envoy: true,
  "envoy-log-off": false,
  "nginx-old": false,
  "nginx-tuned": true,
  "nginx-tuned-log-off": false,
  haproxy: true,
  "haproxy-log-off": false,
};

interface Options {
  seconds: number;
  warmupSeconds: number;
  connections: number;
  threads: number;
  tool: "wrk" | "h2load";
  workers: number;
  rounds: number;
  only: GatewayId[];
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
      only: { type: "string", default: GATEWAYS.join(",") },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    console.log(
      `usage: npx tsx bench/gateway.ts [--seconds 10] [--warmup 2] [--connections 16] [--threads 2] [--tool wrk|h2load] [--workers 2] [--rounds 1] [--only ${GATEWAYS.join(",")}]`,
    );
    process.exit(0);
  }
  const num = (name: string, v: string | undefined, max: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max)
      throw new Error(`--${name} must be a whole number from 1 to ${max} (got ${v})`);
    return n;
  };
  if (values.tool !== "wrk" && values.tool !== "h2load")
    throw new Error(`--tool must be wrk or h2load (got ${values.tool})`);
  const only = values.only.split(",").filter(Boolean);
  for (const g of only)
    if (!(GATEWAYS as readonly string[]).includes(g))
      throw new Error(`--only: ${g} is not one of ${GATEWAYS.join(", ")}`);
  return {
    seconds: num("seconds", values.seconds, 300),
    warmupSeconds: num("warmup", values.warmup, 60),
    connections: num("connections", values.connections, 1000),
    threads: num("threads", values.threads, 16),
    tool: values.tool,
    workers: num("workers", values.workers, 16),
    rounds: num("rounds", values.rounds, 10),
    only: GATEWAYS.filter((g) => only.includes(g)),
  };
}

function which(command: string): string {
  for (const dir of ["/usr/sbin", "/usr/bin", "/sbin", "/bin"])
    if (existsSync(join(dir, command))) return join(dir, command);
  try {
    return execFileSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" }).trim();
  } catch {
    throw new Error(`${command} not found: run bash scripts/install-debian-packages.sh development`);
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
async function runLoad(
  o: Options,
  address: string,
  port: number,
  seconds: number,
  dir: string,
  label: string,
): Promise<LoadResult> {
  if (o.tool === "wrk") {
    const out = await run(
      which("wrk"),
      [
        "-t",
        String(o.threads),
        "-c",
        String(o.connections),
        "-d",
        `${seconds}s`,
        "--timeout",
        "10s",
        "--latency",
        "-H",
        `Host: ${HOST}`,
        `https://${address}:${port}/bench`,
      ],
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
    [
      "-t",
      String(o.threads),
      "-c",
      String(o.connections),
      "-m",
      "1",
      "-D",
      String(seconds),
      `--connect-to=${address}:${port}`,
      "--log-file",
      log,
      `https://${HOST}:${port}/bench`,
    ],
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
  return {
    requests: done,
    seconds: elapsed,
    rps: done / elapsed,
    p50Ms: percentile(durations, 0.5),
    p99Ms: percentile(durations, 0.99),
    errors: done - status2xx + Number(m?.[3] ?? 0) + Number(m?.[4] ?? 0),
  };
}

/** One gateway under test: where it listens and which processes' CPU is its own. */
interface Contender {
  id: GatewayId;
  address: string;
  port: number;
  pid: number;
  /** Count the whole process group (nginx's master and workers). */
  group: boolean;
  stop(): Promise<void>;
}

interface Row extends LoadResult {
  gateway: GatewayId;
  handshakesPer1k: number;
  cpuSeconds: number;
  requestsPerCpuSecond: number;
  cpuPer10k: number;
  podCpuPer10k: number;
  podRequests: number;
}

/** Waits until a gateway answers GET https://www.hail.is/ with 200 through to a pod. */
async function waitServing(
  h: GatewayHarness,
  name: string,
  p: ManagedProcess,
  address: string,
  port: number,
  extraLog = () => "",
): Promise<void> {
  await waitFor(`${name} to serve`, 15_000, async () => {
    if (p.exited()) throw new Error(`${name} exited: ${p.log()}${extraLog()}`);
    const res = await httpsGet({ address, port, ca: h.ca.cert }, { host: HOST, path: "/" });
    return res.status === 200;
  });
}

function commonVars(h: GatewayHarness): Record<string, string> {
  const upstream = h.paths.upstreamTlsDir;
  return {
    SERVER_CERT: join(h.paths.serverTlsDir, "tls.crt"),
    SERVER_KEY: join(h.paths.serverTlsDir, "tls.key"),
    CLIENT_CERT: join(upstream, "tls.crt"),
    CLIENT_KEY: join(upstream, "tls.key"),
    CA: join(upstream, "ca.crt"),
    HOST,
    CLUSTER: `${h.config.namespace}_${SERVICE}`,
    UPSTREAM_HOST: serviceHost(SERVICE, h.config.namespace, h.config.clusterDomain),
  };
}

async function startNginxOld(h: GatewayHarness, o: Options, address: string): Promise<Contender> {
  const dir = join(h.workDir, "nginx-old");
  mkdirSync(dir, { recursive: true });
  const port = await freeTcpPort(address);
  const c = h.config;
  const conf = fillTemplate("nginx-old-gateway.conf.template", {
    ...commonVars(h),
    WORKERS: String(o.workers),
    DIR: dir,
    DNS: `${h.dns.address}:${h.dns.port}`,
    LISTEN: `${address}:${port}`,
    DOMAIN: c.domain,
    DOMAIN_RE: c.domain.replaceAll(".", "\\."),
    NAMESPACE: c.namespace,
    CLUSTER_DOMAIN: c.clusterDomain,
  });
  return startNginx(h, "nginx-old", dir, conf, address, port);
}

async function startNginxTuned(
  h: GatewayHarness,
  o: Options,
  id: "nginx-tuned" | "nginx-tuned-log-off",
  address: string,
): Promise<Contender> {
  const dir = join(h.workDir, id);
  mkdirSync(dir, { recursive: true });
  const port = await freeTcpPort(address);
  const pods = h.productionPods(SERVICE);
  const conf = fillTemplate("nginx-tuned.conf.template", {
    ...commonVars(h),
    WORKERS: String(o.workers),
    DIR: dir,
    LISTEN: `${address}:${port}`,
    ACCESS_LOG: LOGS[id] ? `access_log ${dir}/access.log json buffer=64k flush=1s;` : "access_log off;",
    SERVERS: pods.map((p) => `    server ${p.address}:443 max_fails=5 fail_timeout=30s;`).join("\n"),
  });
  return startNginx(h, id, dir, conf, address, port);
}

async function startNginx(
  h: GatewayHarness,
  id: GatewayId,
  dir: string,
  conf: string,
  address: string,
  port: number,
): Promise<Contender> {
  const confPath = join(dir, "nginx.conf");
  writeFileSync(confPath, conf);
  const nginx = which("nginx");
  try {
    execFileSync(nginx, ["-t", "-q", "-p", dir, "-c", confPath], { stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    throw new Error(`nginx -t refused the config ${confPath}: ${(e as { stderr?: Buffer }).stderr?.toString()}`, {
      cause: e,
    });
  }
  const p = startProcess(id, nginx, ["-p", dir, "-c", confPath], join(dir, "nginx-stdout.log"));
  await waitServing(h, id, p, address, port, () => readFileSync(join(dir, "nginx-error.log"), "utf8"));
  return { id, address, port, pid: p.pid, group: true, stop: () => p.stop() };
}

async function startHaproxy(
  h: GatewayHarness,
  o: Options,
  id: "haproxy" | "haproxy-log-off",
  address: string,
): Promise<Contender> {
  const dir = join(h.workDir, id);
  mkdirSync(dir, { recursive: true });
  const port = await freeTcpPort(address);
  const vars = commonVars(h);
  // HAProxy takes a certificate and its key in one PEM file.
  const serverPem = join(dir, "server.pem");
  const clientPem = join(dir, "client.pem");
  writeFileSync(serverPem, readFileSync(vars.SERVER_CERT!, "utf8") + readFileSync(vars.SERVER_KEY!, "utf8"), {
    mode: 0o600,
  });
  writeFileSync(clientPem, readFileSync(vars.CLIENT_CERT!, "utf8") + readFileSync(vars.CLIENT_KEY!, "utf8"), {
    mode: 0o600,
  });
  const json =
    `'{"time":"%tr","status":"%ST","flags":"%tsc","duration_ms":"%Ta","method":"%HM","host":%{+Q,+E}[capture.req.hdr(0)],"path":%{+Q,+E}HU,` +
    `"protocol":"%HV","client":"%ci","upstream":"%si:%sp","cluster":"%b","bytes_received":"%U","bytes_sent":"%B","user_agent":%{+Q,+E}[capture.req.hdr(1)],"request_id":"%ID"}'`;
  const pods = h.productionPods(SERVICE);
  const conf = fillTemplate("haproxy.cfg.template", {
    ...vars,
    WORKERS: String(o.workers),
    MAXCONN: String(Math.min(h.config.edge.maxConnections, Math.floor((openFilesLimit() - 200) / 2))),
    DIR: dir,
    LISTEN: `${address}:${port}`,
    SERVER_PEM: serverPem,
    CLIENT_PEM: clientPem,
    LOG: LOGS[id] ? "on" : "off",
    GLOBAL_LOG: LOGS[id] ? "log stdout format raw local0" : "",
    DEFAULTS_LOG: LOGS[id] ? `log global\n  log-format ${json}` : "no log",
    SERVERS: pods.map((p, i) => `  server ${SERVICE}-${i} ${p.address}:443`).join("\n"),
  });
  const confPath = join(dir, "haproxy.cfg");
  writeFileSync(confPath, conf);
  const haproxy = which("haproxy");
  try {
    execFileSync(haproxy, ["-c", "-q", "-f", confPath], { stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    const err = e as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`haproxy -c refused the config ${confPath}: ${err.stdout?.toString()}${err.stderr?.toString()}`, {
      cause: e,
    });
  }
  // -db: stay in the foreground; the access log goes to stdout, into the log file.
  const p = startProcess(id, haproxy, ["-db", "-f", confPath], join(dir, "haproxy.log"));
  await waitServing(h, id, p, address, port);
  return { id, address, port, pid: p.pid, group: true, stop: () => p.stop() };
}

/** This process's open-files limit (its children inherit it). */
function openFilesLimit(): number {
  const limit = Number(execFileSync("sh", ["-c", "ulimit -n"], { encoding: "utf8" }).trim());
  return Number.isFinite(limit) && limit > 0 ? limit : 1024;
}

async function startContender(h: GatewayHarness, o: Options, id: GatewayId): Promise<Contender> {
  const address = `${h.subnet}.${3 + GATEWAYS.indexOf(id)}`;
  switch (id) {
    case "envoy":
      return { id, address: h.address, port: h.ports.https, pid: h.envoy.pid!, group: false, stop: async () => {} };
    case "envoy-log-off": {
      const peer = await h.startVariantEnvoy(
        { ...h.config, edge: { ...h.config.edge, accessLog: "off" } },
        address,
        id,
      );
      return { id, address, port: peer.https.port, pid: peer.envoy.pid!, group: false, stop: () => peer.envoy.stop() };
    }
    case "nginx-old":
      return startNginxOld(h, o, address);
    case "nginx-tuned":
    case "nginx-tuned-log-off":
      return startNginxTuned(h, o, id, address);
    case "haproxy":
    case "haproxy-log-off":
      return startHaproxy(h, o, id, address);
  }
}

async function measure(h: GatewayHarness, o: Options, c: Contender): Promise<Row> {
  // Warm-up (connections, pools, caches), not measured.
  await runLoad(o, c.address, c.port, o.warmupSeconds, h.workDir, `${c.id}-warmup`);
  await sleep(500);
  const pods = h.productionPods(SERVICE);
  for (const p of pods) p.resetCounters();
  const cpuBefore = cpuSeconds(c.pid, c.group);
  const podCpuBefore = process.cpuUsage();
  const load = await runLoad(o, c.address, c.port, o.seconds, h.workDir, c.id);
  const cpu = cpuSeconds(c.pid, c.group) - cpuBefore;
  const podCpu = process.cpuUsage(podCpuBefore);
  const podRequests = pods.reduce((n, p) => n + p.requests, 0);
  const handshakes = pods.reduce((n, p) => n + p.handshakes, 0);
  return {
    gateway: c.id,
    ...load,
    podRequests,
    handshakesPer1k: (handshakes / Math.max(1, podRequests)) * 1000,
    cpuSeconds: cpu,
    requestsPerCpuSecond: load.requests / Math.max(0.01, cpu),
    cpuPer10k: (cpu / Math.max(1, load.requests)) * 10_000,
    podCpuPer10k: ((podCpu.user + podCpu.system) / 1e6 / Math.max(1, podRequests)) * 10_000,
  };
}

const mean = (rs: Row[], f: (r: Row) => number) => rs.reduce((n, r) => n + f(r), 0) / rs.length;

function table(rows: Row[], ids: GatewayId[]): string {
  const cols: [string, (r: Row) => number, number][] = [
    ["requests/s", (r) => r.rps, 0],
    ["requests per gateway CPU-s", (r) => r.requestsPerCpuSecond, 0],
    ["p50 ms", (r) => r.p50Ms, 2],
    ["p99 ms", (r) => r.p99Ms, 2],
    ["upstream TLS handshakes /1k req", (r) => r.handshakesPer1k, 1],
    ["gateway CPU-s /10k req", (r) => r.cpuPer10k, 2],
    ["pods CPU-s /10k req", (r) => r.podCpuPer10k, 2],
    ["requests", (r) => r.requests, 0],
    ["errors", (r) => r.errors, 0],
  ];
  const lines = [
    `| metric | ${ids.map((id) => LABEL[id]).join(" | ")} |`,
    `| --- | ${ids.map(() => "---:").join(" | ")} |`,
  ];
  for (const [name, f, digits] of cols)
    lines.push(
      `| ${name} | ${ids
        .map((id) =>
          mean(
            rows.filter((r) => r.gateway === id),
            f,
          ).toFixed(digits),
        )
        .join(" | ")} |`,
    );
  return lines.join("\n");
}

/** Envoy against the best tuned peer with the same access log: the goals are >= 0.9x the requests per CPU-second and <= 1.1x the p99. */
function comparison(rows: Row[], ids: GatewayId[]): string {
  const out: string[] = [];
  for (const logs of [true, false]) {
    const envoy: GatewayId = logs ? "envoy" : "envoy-log-off";
    const peers = ids.filter(
      (id) => id !== envoy && id !== "nginx-old" && LOGS[id] === logs && !id.startsWith("envoy"),
    );
    if (!ids.includes(envoy) || peers.length === 0) continue;
    const of = (id: GatewayId) => rows.filter((r) => r.gateway === id);
    const best = peers.reduce((a, b) =>
      mean(of(b), (r) => r.requestsPerCpuSecond) > mean(of(a), (r) => r.requestsPerCpuSecond) ? b : a,
    );
    const efficiency = mean(of(envoy), (r) => r.requestsPerCpuSecond) / mean(of(best), (r) => r.requestsPerCpuSecond);
    const p99 = mean(of(envoy), (r) => r.p99Ms) / mean(of(best), (r) => r.p99Ms);
    const rps = mean(of(envoy), (r) => r.rps) / mean(of(best), (r) => r.rps);
    out.push(
      `access log ${logs ? "JSON" : "off"}: ${LABEL[envoy]} / ${LABEL[best]} (the tuned peer with the most requests per CPU-second): ` +
        `requests per CPU-second ${efficiency.toFixed(2)}x (goal >= 0.9), p99 ${p99.toFixed(2)}x (goal <= 1.1), requests/s ${rps.toFixed(2)}x`,
    );
  }
  return out.join("\n");
}

async function main(): Promise<void> {
  const o = options();
  for (const tool of [
    o.tool,
    ...(o.only.some((g) => g.startsWith("nginx")) ? ["nginx"] : []),
    ...(o.only.some((g) => g.startsWith("haproxy")) ? ["haproxy"] : []),
  ])
    which(tool);
  const h = await GatewayHarness.start({
    ...e2eHarnessOptions(),
    podCertificate: undefined,
    concurrency: o.workers,
    logLevel: "warning",
  });
  const contenders: Contender[] = [];
  try {
    for (const id of o.only) contenders.push(await startContender(h, o, id));
    console.log(
      `load: ${o.tool}, ${o.connections} keep-alive HTTPS connections, ${o.threads} threads, ${o.seconds}s per gateway (+${o.warmupSeconds}s warm-up), ` +
        `GET https://${HOST}/bench -> ${h.productionPods(SERVICE).length} pods; Envoy --concurrency ${o.workers}, nginx worker_processes ${o.workers}, HAProxy nbthread ${o.workers}; ${o.rounds} round(s), gateways in a rotating order`,
    );
    const rows: Row[] = [];
    for (let round = 1; round <= o.rounds; round++) {
      // Rotate the order so that no gateway always runs first or last (the machine's load drifts).
      const order = contenders.map((_, i) => contenders[(i + round - 1) % contenders.length]!);
      const these: Row[] = [];
      for (const c of order) these.push(await measure(h, o, c));
      rows.push(...these);
      console.log(
        `round ${round}:\n${these.map((r) => `  ${LABEL[r.gateway].padEnd(22)} ${r.rps.toFixed(0).padStart(5)} req/s, ${r.requestsPerCpuSecond.toFixed(0).padStart(5)} req/CPU-s, p99 ${r.p99Ms.toFixed(1).padStart(6)} ms, ${r.handshakesPer1k.toFixed(1).padStart(6)} handshakes/1k, ${r.errors} errors`).join("\n")}`,
      );
    }
    console.log(`\n${table(rows, o.only)}\n`);
    console.log(comparison(rows, o.only));
    console.log(
      `\nmachine: ${execFileSync("nproc", { encoding: "utf8" }).trim()} cores, load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}; pods and the load generator share the machine`,
    );
  } finally {
    for (const c of contenders) await c.stop().catch(() => undefined);
    await h.stop();
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
