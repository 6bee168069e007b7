// Runs the Envoy end-to-end harness by hand: the real Envoy with a stack's
// rendered gateway config, upstream pods, dnsmasq, ext_authz and ACME solver,
// all on loopback, so that a route change can be tried locally.
//
//   npx tsx scripts/envoy-harness.ts [--stack prod|dev|e2e] [--gateway gateway|internal-gateway]
//                                    [--namespaces <file.yaml>] [--auth allow|deny|down]
//                                    [--seconds <n>] [--check] [--quiet]
//
// It prints curl commands for every route. Edit the namespaces file (or
// Pulumi.<stack>.yaml's services) while it runs: the files are re-rendered,
// validated and swapped into the xDS directory as the kubelet does, and the
// script prints whether Envoy accepted them. Type allow / deny / down to switch
// the auth service, quit (or Ctrl-C) to stop; everything it started stops too.
// --check requests every route once, prints the statuses and exits (non-zero
// when a route does not answer as expected); --seconds bounds the run.
import { existsSync, statSync, watchFile, unwatchFile } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { InputError } from "../routing/config/errors.js";
import { loadStackFile } from "../routing/config/load.js";
import { GATEWAYS, type GatewayName, type StackConfig } from "../routing/config/schema.js";
import { readNamespacesFile } from "../routing/namespaces.js";
import type { DevNamespaces } from "../routing/table.js";
import { GatewayHarness, type AuthMode } from "../test/harness/gateway.js";
import { sleep } from "../test/harness/processes.js";
import { E2E_DEV_NAMESPACES, e2eHarnessOptions, e2eStackConfig } from "../test/harness/stack.js";

const USAGE =
  "usage: npx tsx scripts/envoy-harness.ts [--stack prod|dev|e2e] [--gateway gateway|internal-gateway] [--namespaces <file>] [--auth allow|deny|down] [--seconds <n>] [--check] [--quiet]";

const root = resolve(__dirname, "..");

function parse() {
  const { values } = parseArgs({
    options: {
      stack: { type: "string", default: "e2e" },
      gateway: { type: "string", default: "gateway" },
      namespaces: { type: "string" },
      auth: { type: "string", default: "allow" },
      seconds: { type: "string" },
      check: { type: "boolean", default: false },
      quiet: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  if (!GATEWAYS.includes(values.gateway as GatewayName))
    throw new Error(`--gateway must be one of ${GATEWAYS.join(", ")}\n${USAGE}`);
  if (!["allow", "deny", "down"].includes(values.auth!))
    throw new Error(`--auth must be allow, deny or down\n${USAGE}`);
  const seconds = values.seconds === undefined ? undefined : Number(values.seconds);
  if (seconds !== undefined && !(seconds > 0)) throw new Error(`--seconds must be a positive number\n${USAGE}`);
  return { ...values, seconds, gateway: values.gateway as GatewayName, auth: values.auth as AuthMode };
}

function stackFile(stack: string): string | undefined {
  return stack === "e2e" ? undefined : join(root, `Pulumi.${stack}.yaml`);
}

function loadConfig(stack: string): StackConfig {
  const file = stackFile(stack);
  if (!file) return e2eStackConfig();
  if (!existsSync(file)) throw new Error(`no stack file ${file}`);
  return loadStackFile(file);
}

function loadNamespaces(path: string | undefined, stack: string): DevNamespaces {
  if (path) return readNamespacesFile(path);
  return stack === "e2e" ? E2E_DEV_NAMESPACES : {};
}

/** Every route of the table as a curl command line, with the expected status. */
function routes(h: GatewayHarness): { label: string; host: string; path: string; curl: string }[] {
  const base = `curl -sS --cacert ${h.ca.certPath}`;
  const resolveArg = (host: string) => `--resolve ${host}:${h.ports.https}:${h.address}`;
  const list = [];
  for (const s of h.table.production) {
    const host = h.productionHost(s.name);
    list.push({
      label: `production ${s.namespace}/${s.name}`,
      host,
      path: "/",
      curl: `${base} ${resolveArg(host)} https://${host}:${h.ports.https}/`,
    });
  }
  for (const s of h.table.dev) {
    const path = `/${s.namespace}/${s.name}/`;
    list.push({
      label: `dev ${s.namespace}/${s.name}`,
      host: h.devHost,
      path,
      curl: `${base} ${resolveArg(h.devHost)} https://${h.devHost}:${h.ports.https}${path}`,
    });
  }
  return list;
}

function describe(h: GatewayHarness): string {
  const lines = [
    `Envoy (${h.gateway}) runs with the rendered config of this stack; work dir ${h.workDir}`,
    `  listeners on ${h.address}: https ${h.ports.https}, http ${h.ports.http}, health ${h.ports.health}, metrics ${h.ports.metrics}; admin http://127.0.0.1:${h.ports.admin}/`,
    `  DNS (dnsmasq) ${h.dns.address}:${h.dns.port}; test CA ${h.ca.certPath}; Envoy log ${join(h.workDir, "envoy.log")}`,
    `  xDS files ${h.paths.xdsDir} (kubelet-style ..data swaps)`,
    "routes:",
    ...routes(h).map((r) => `  ${r.label}\n    ${r.curl}`),
    `plain HTTP: curl -sSi --resolve www.${h.config.domain}:${h.ports.http}:${h.address} http://www.${h.config.domain}:${h.ports.http}/`,
    `metrics:    curl -sS http://${h.address}:${h.ports.metrics}/stats/prometheus`,
  ];
  return lines.join("\n");
}

async function xdsCounters(h: GatewayHarness): Promise<string> {
  const s = await h.envoy.stats("(cds|rds)\\.(https\\.)?update_(success|rejected|failure)$");
  return [...s]
    .filter(([k]) => /cluster_manager\.cds|rds\.https\./.test(k))
    .map(([k, v]) => `${k.replace(/^.*?(cds|rds)/, "$1")}=${v}`)
    .join(" ");
}

async function check(h: GatewayHarness): Promise<boolean> {
  let ok = true;
  for (const r of routes(h)) {
    const res = await h.get(r.host, r.path).catch((e: Error) => ({ status: 0, body: e.message }));
    const fine = res.status === 200 || (h.authMode !== "allow" && r.label.startsWith("dev"));
    if (!fine) ok = false;
    console.log(`${fine ? "ok  " : "FAIL"} ${res.status} ${r.label} https://${r.host}${r.path}`);
  }
  const redirect = await h.getPlain(`www.${h.config.domain}`, "/");
  console.log(`${redirect.status === 301 ? "ok  " : "FAIL"} ${redirect.status} plain HTTP redirect`);
  if (redirect.status !== 301) ok = false;
  return ok;
}

async function main(): Promise<number> {
  const args = parse();
  const config = loadConfig(args.stack!);
  let namespaces = loadNamespaces(args.namespaces, args.stack!);
  // The e2e stack without its deliberately broken pod certificates: every route should answer.
  const base = args.stack === "e2e" ? { ...e2eHarnessOptions(), podCertificate: undefined } : { config };
  const h = await GatewayHarness.start({ ...base, config, gateway: args.gateway, devNamespaces: namespaces });
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= h.stop().catch((e: Error) => console.error(`stopping: ${e.message}`)));
  process.on("SIGINT", () => void stop().then(() => process.exit(130)));
  process.on("SIGTERM", () => void stop().then(() => process.exit(143)));
  try {
    await h.setAuthMode(args.auth);
    console.log(describe(h));
    if (args.check) return (await check(h)) ? 0 : 1;

    // Re-render and swap on every change of the namespaces or stack file.
    const apply = async (what: string) => {
      try {
        namespaces = loadNamespaces(args.namespaces, args.stack!);
        const next = args.stack === "e2e" ? h.config : loadConfig(args.stack!);
        await h.setConfig(next, namespaces);
        console.log(`${what} changed: rendered, validated and swapped in (swap ${h.xdsSwaps})`);
        await sleep(2_000);
        console.log(`  Envoy xDS counters: ${await xdsCounters(h)}`);
        console.log(
          routes(h)
            .map((r) => `  ${r.label}: ${r.curl}`)
            .join("\n"),
        );
      } catch (e) {
        console.error(e instanceof InputError ? e.message : `${what}: ${(e as Error).message}`);
        console.error("  nothing was swapped in; Envoy keeps the last good files");
      }
    };
    const watched = [args.namespaces, stackFile(args.stack!)].filter((f): f is string => !!f && existsSync(f));
    for (const file of watched) {
      let mtime = statSync(file).mtimeMs;
      watchFile(file, { interval: 500 }, (cur) => {
        if (cur.mtimeMs === mtime) return;
        mtime = cur.mtimeMs;
        void apply(file);
      });
    }

    // Access log lines as they come (unless --quiet).
    let offset = 0;
    const tail = setInterval(() => {
      if (args.quiet) return;
      const log = h.envoy.log();
      for (const line of log.slice(offset).split("\n")) {
        if (!line.startsWith("{")) continue;
        try {
          const e = JSON.parse(line) as Record<string, unknown>;
          console.log(
            `  [access] ${e.status} ${e.method} ${e.host}${e.path} -> ${e.cluster ?? "-"} ${e.upstream ?? ""} ${e.flags !== "-" ? e.flags : ""} ${e.duration_ms}ms`,
          );
        } catch {
          // partial line: printed next time
        }
      }
      offset = log.lastIndexOf("\n") + 1;
    }, 500);

    console.log(
      `running${args.seconds ? ` for ${args.seconds}s` : ""}: type allow / deny / down to switch auth, quit to stop`,
    );
    await new Promise<void>((resolveDone) => {
      const timer = args.seconds ? setTimeout(resolveDone, args.seconds * 1000) : undefined;
      {
        const rl = createInterface({ input: process.stdin });
        rl.on("line", (line) => {
          const word = line.trim();
          if (word === "quit" || word === "exit") {
            rl.close();
            resolveDone();
          } else if (word === "allow" || word === "deny" || word === "down") {
            void h.setAuthMode(word).then(() => console.log(`auth service: ${word}`));
          } else if (word) console.log("commands: allow, deny, down, quit");
        });
        // Ctrl-D in a terminal stops; a closed non-terminal stdin (such as </dev/null) does not.
        rl.on("close", () => {
          if (process.stdin.isTTY) resolveDone();
        });
      }
      if (timer) timer.unref?.();
    });
    clearInterval(tail);
    for (const file of watched) unwatchFile(file);
    return 0;
  } finally {
    await stop();
  }
}

main().then(
  (code) => process.exit(code),
  (e: Error) => {
    console.error(e instanceof InputError ? e.message : (e.stack ?? e.message));
    process.exit(1);
  },
);
