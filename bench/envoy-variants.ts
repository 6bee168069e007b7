// Diagnosis (not a test, not configurations the project renders): where the
// generated Envoy config spends CPU per request. The prod-based e2e stack's
// gateway files, each variant changed in one respect, run side by side in
// front of the same pods under the same wrk load (bench/gateway.ts's
// harness), in interleaved rounds; printed: requests per CPU-second, user and
// system CPU per request, p99, and each against the generated config.
//
//   npx tsx bench/envoy-variants.ts [--seconds 6] [--rounds 3] [--only generated,log-off,...]
//
// "bare Envoy" is a hand-written bootstrap with only what the job needs
// (downstream TLS, the router, a static cluster of the pods with upstream TLS
// and the client certificate): Envoy's own floor for this request, against
// which the generated config's cost is read.
//
// Each variant is a running Envoy, which takes about 8 inotify instances:
// with many variants raise fs.inotify.max_user_instances (the script says so).
//
// "direct response" answers from Envoy without going upstream (what TLS, HTTP
// and the filters cost on the client side alone); "plain upstream" sends www
// to the ACME solver's plain-HTTP pod (what upstream TLS costs).
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { stringify, parse } from "yaml";
import { renderGateway } from "../routing/render.js";
import { parseEnvoyYaml } from "../routing/envoy/xds.js";
import type { Json } from "../routing/envoy/types.js";
import { serviceHost } from "../routing/names.js";
import { GatewayHarness } from "../test/harness/gateway.js";
import { ConfigMapVolume } from "../test/harness/configmap-volume.js";
import { EnvoyProcess } from "../test/harness/envoy.js";
import { freeTcpPort } from "../test/harness/ports.js";
import { e2eHarnessOptions } from "../test/harness/stack.js";

const run = promisify(execFile);
const HOST = "www.hail.is";
type J = Json;

/** The parsed files are walked by hand here: each step checks the shape it expects and says where it differs. */
function obj(v: unknown, where: string): J {
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error(`${where}: expected a mapping`);
  return v as J;
}
function list(v: unknown, where: string): J[] {
  if (!Array.isArray(v)) throw new Error(`${where}: expected a list`);
  return v.map((x, i) => obj(x, `${where}[${i}]`));
}
function named(items: J[], name: string, where: string): J {
  const found = items.find((i) => i.name === name);
  if (!found) throw new Error(`${where}: no entry named ${name}`);
  return found;
}

interface Variant {
  name: string;
  workers?: number;
  /** A bootstrap written by hand instead of the generated files: the least Envoy needs to do the same job. */
  bare?: boolean;
  change?: (files: { bootstrap: J; cds: J; rds: J }) => void;
}

/** The https listener's connection manager. */
const https = (b: J): J => {
  const listener = named(
    list(obj(b.static_resources, "static_resources").listeners, "listeners"),
    "https",
    "listeners",
  );
  const filters = list(
    list(listener.filter_chains, "https.filter_chains")[0]?.filters,
    "https.filter_chains[0].filters",
  );
  return obj(
    named(filters, "envoy.filters.network.http_connection_manager", "https filters").typed_config,
    "http_connection_manager.typed_config",
  );
};
const keepFilters =
  (keep: (name: unknown) => boolean) =>
  ({ bootstrap }: { bootstrap: J }) => {
    const hcm = https(bootstrap);
    hcm.http_filters = list(hcm.http_filters, "http_filters").filter((f) => keep(f.name));
  };
const withoutFilter = (name: string) => keepFilters((n) => n !== name);
const resources = (doc: J, file: string): J[] => list(doc.resources, `${file} resources`);
const www = (rds: J): J =>
  named(list(resources(rds, "rds")[0]?.virtual_hosts, "virtual_hosts"), "www", "virtual_hosts");

const VARIANTS: Variant[] = [
  { name: "generated" },
  { name: "log off", change: ({ bootstrap }) => delete https(bootstrap).access_log },
  {
    name: "router only (no ext_authz, rate limit filters)",
    change: keepFilters((n) => n === "envoy.filters.http.router"),
  },
  { name: "no header_mutation (CEL login redirect)", change: withoutFilter("envoy.filters.http.header_mutation") },
  { name: "no ext_authz filter", change: withoutFilter("envoy.filters.http.ext_authz") },
  { name: "no local_ratelimit filter", change: withoutFilter("envoy.filters.http.local_ratelimit") },
  {
    name: "no route retries, timeouts, headers",
    change: ({ rds }) =>
      resources(rds, "rds").forEach((rc) => {
        delete rc.response_headers_to_add;
        delete rc.request_headers_to_add;
        list(rc.virtual_hosts, "virtual_hosts").forEach((v) => {
          delete v.retry_policy;
          delete v.response_headers_to_add;
          delete v.request_headers_to_add;
          list(v.routes, "routes").forEach((r) => {
            delete r.response_headers_to_add;
            delete r.request_headers_to_add;
            delete r.typed_per_filter_config;
            if (r.route) {
              const route = obj(r.route, "route");
              delete route.retry_policy;
              delete route.timeout;
            }
          });
        });
      }),
  },
  { name: "round robin", change: ({ cds }) => resources(cds, "cds").forEach((c) => delete c.lb_policy) },
  {
    name: "no stats (reject_all)",
    change: ({ bootstrap }) => void (bootstrap.stats_config = { stats_matcher: { reject_all: true } }),
  },
  { name: "no request id", change: ({ bootstrap }) => void (https(bootstrap).generate_request_id = false) },
  { name: "no overload manager", change: ({ bootstrap }) => delete bootstrap.overload_manager },
  {
    name: "no path normalisation",
    change: ({ bootstrap }) =>
      ["normalize_path", "merge_slashes", "path_with_escaped_slashes_action"].forEach(
        (k) => delete https(bootstrap)[k],
      ),
  },
  {
    name: "no outlier detection, no remaining gauges",
    change: ({ cds }) =>
      resources(cds, "cds").forEach((c) => {
        delete c.outlier_detection;
        c.circuit_breakers = {
          thresholds: [
            {
              ...list(obj(c.circuit_breakers, "circuit_breakers").thresholds, "thresholds")[0],
              track_remaining: false,
            },
          ],
        };
      }),
  },
  { name: "1 worker", workers: 1 },
  {
    name: "all of the above but 1 worker",
    change: (f) =>
      VARIANTS.slice(
        1,
        VARIANTS.findIndex((v) => v.workers === 1),
      ).forEach((v) => v.change!(f)),
  },
  { name: "bare Envoy (hand-written: TLS both sides, router, static cluster)", bare: true },
  {
    name: "plain upstream (no upstream TLS)",
    change: ({ rds }) => void (obj(list(www(rds).routes, "www routes")[0]?.route, "www route").cluster = "acme-solver"),
  },
  {
    name: "direct response (no upstream)",
    change: ({ rds }) =>
      void (www(rds).routes = [
        { match: { prefix: "/" }, direct_response: { status: 200, body: { inline_string: "x".repeat(600) } } },
      ]),
  },
];

/** The least config that does the generated config's job for www: downstream TLS, the router, upstream TLS with the client certificate to the pods. */
function bareBootstrap(h: GatewayHarness, address: string, port: number, admin: number): J {
  const file = (dir: string, name: string) => ({ filename: join(dir, name) });
  const upstreamHost = serviceHost("www", h.config.namespace, h.config.clusterDomain);
  return {
    admin: { address: { socket_address: { address: "127.0.0.1", port_value: admin } } },
    static_resources: {
      listeners: [
        {
          name: "https",
          address: { socket_address: { address, port_value: port } },
          filter_chains: [
            {
              filters: [
                {
                  name: "hcm",
                  typed_config: {
                    "@type":
                      "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                    stat_prefix: "https",
                    route_config: {
                      virtual_hosts: [
                        {
                          name: "www",
                          domains: ["*"],
                          routes: [
                            { match: { prefix: "/" }, route: { cluster: "www", host_rewrite_literal: upstreamHost } },
                          ],
                        },
                      ],
                    },
                    http_filters: [
                      {
                        name: "router",
                        typed_config: { "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router" },
                      },
                    ],
                  },
                },
              ],
              transport_socket: {
                name: "tls",
                typed_config: {
                  "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
                  common_tls_context: {
                    tls_certificates: [
                      {
                        certificate_chain: file(h.paths.serverTlsDir, "tls.crt"),
                        private_key: file(h.paths.serverTlsDir, "tls.key"),
                      },
                    ],
                    alpn_protocols: ["h2", "http/1.1"],
                  },
                },
              },
            },
          ],
        },
      ],
      clusters: [
        {
          name: "www",
          type: "STATIC",
          lb_policy: "LEAST_REQUEST",
          load_assignment: {
            cluster_name: "www",
            endpoints: [
              {
                lb_endpoints: h
                  .productionPods("www")
                  .map((p) => ({ endpoint: { address: { socket_address: { address: p.address, port_value: 443 } } } })),
              },
            ],
          },
          transport_socket: {
            name: "tls",
            typed_config: {
              "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
              sni: upstreamHost,
              common_tls_context: {
                tls_certificates: [
                  {
                    certificate_chain: file(h.paths.upstreamTlsDir, "tls.crt"),
                    private_key: file(h.paths.upstreamTlsDir, "tls.key"),
                  },
                ],
                validation_context: {
                  trusted_ca: file(h.paths.upstreamTlsDir, "ca.crt"),
                  match_typed_subject_alt_names: [{ san_type: "DNS", matcher: { exact: upstreamHost } }],
                },
              },
            },
          },
        },
      ],
    },
  };
}

function cpu(pid: number): { user: number; system: number } {
  let user = 0;
  let system = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const s = readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    user += Number(f[11]) / 100;
    system += Number(f[12]) / 100;
  }
  return { user, system };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string", default: "6" },
      rounds: { type: "string", default: "3" },
      only: { type: "string" },
    },
  });
  const seconds = Number(values.seconds);
  const rounds = Number(values.rounds);
  if (!(seconds >= 1 && seconds <= 120) || !Number.isInteger(rounds) || rounds < 1 || rounds > 20)
    throw new Error("--seconds 1..120, --rounds 1..20");
  const only = values.only?.split(",");
  const variants = only ? VARIANTS.filter((v) => only.some((o) => v.name.startsWith(o))) : VARIANTS;
  const inotify = Number(readFileSync("/proc/sys/fs/inotify/max_user_instances", "utf8"));
  if (inotify < variants.length * 8 + 32) {
    throw new Error(
      `${variants.length} Envoys need about ${variants.length * 8 + 32} inotify instances, fs.inotify.max_user_instances is ${inotify}: run \`sysctl -w fs.inotify.max_user_instances=1024\` or pick fewer with --only`,
    );
  }
  const h = await GatewayHarness.start({
    ...e2eHarnessOptions(),
    podCertificate: undefined,
    concurrency: 2,
    logLevel: "warning",
  });
  const started: { v: Variant; envoy: EnvoyProcess; address: string }[] = [];
  try {
    for (const [i, v] of variants.entries()) {
      const address = `${h.subnet}.${100 + i}`;
      const dir = join(h.workDir, `variant-${i}`);
      const xdsDir = join(dir, "xds");
      const ports = { ...h.ports, admin: await freeTcpPort("127.0.0.1") };
      const files = renderGateway(h.config, h.table, h.gateway, {
        ...h.renderOptions(),
        listenAddress: address,
        ports,
        paths: { ...h.paths, xdsDir },
      });
      const docs = {
        bootstrap: obj(parse(files.bootstrap["envoy.yaml"]!), "envoy.yaml"),
        cds: obj(parseEnvoyYaml(files.xds["cds.yaml"]!), "cds.yaml"),
        rds: obj(parseEnvoyYaml(files.xds["rds.yaml"]!), "rds.yaml"),
      };
      v.change?.(docs);
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, "envoy.yaml"),
        stringify(v.bare ? bareBootstrap(h, address, ports.https, ports.admin) : docs.bootstrap),
      );
      new ConfigMapVolume(xdsDir).write({ "cds.yaml": JSON.stringify(docs.cds), "rds.yaml": JSON.stringify(docs.rds) });
      const envoy = new EnvoyProcess({
        bootstrapPath: join(dir, "envoy.yaml"),
        adminUrl: `http://127.0.0.1:${ports.admin}`,
        concurrency: v.workers ?? 2,
        logDir: dir,
        logLevel: "warning",
      });
      await envoy.start();
      started.push({ v, envoy, address });
    }
    const results = new Map<Variant, { requests: number; user: number; system: number; p99: number[] }>();
    for (let r = 0; r < rounds; r++) {
      for (const s of started) {
        const url = `https://${s.address}:${h.ports.https}/bench`;
        await run("wrk", ["-t", "2", "-c", "16", "-d", "2s", "-H", `Host: ${HOST}`, url], { timeout: 60_000 });
        const before = cpu(s.envoy.pid!);
        const { stdout } = await run(
          "wrk",
          ["-t", "2", "-c", "16", "-d", `${seconds}s`, "--latency", "-H", `Host: ${HOST}`, url],
          { timeout: (seconds + 60) * 1000 },
        );
        const after = cpu(s.envoy.pid!);
        const requests = Number(/(\d+) requests in/.exec(stdout)![1]);
        const m = /^\s+99%\s+([\d.]+)(us|ms|s)/m.exec(stdout)!;
        const p99 = Number(m[1]) * (m[2] === "us" ? 0.001 : m[2] === "s" ? 1000 : 1);
        const acc = results.get(s.v) ?? { requests: 0, user: 0, system: 0, p99: [] };
        acc.requests += requests;
        acc.user += after.user - before.user;
        acc.system += after.system - before.system;
        acc.p99.push(p99);
        results.set(s.v, acc);
      }
    }
    const base = results.get(started[0]!.v)!;
    const bare = started.find((s) => s.v.bare);
    const perCpu = (a: { requests: number; user: number; system: number }) => a.requests / (a.user + a.system);
    console.log(
      `wrk, 16 connections, ${seconds}s x ${rounds} rounds per variant, interleaved; Envoy --concurrency 2 unless said\n`,
    );
    console.log(
      `| variant | requests/s | requests per CPU-s | vs ${started[0]!.v.name} |${bare ? " vs bare Envoy |" : ""} user µs/req | system µs/req | p99 ms (mean) |`,
    );
    console.log(`| --- | ---: | ---: | ---: |${bare ? " ---: |" : ""} ---: | ---: | ---: |`);
    for (const s of started) {
      const a = results.get(s.v)!;
      const vsBare = bare ? ` ${(perCpu(a) / perCpu(results.get(bare.v)!)).toFixed(2)}x |` : "";
      console.log(
        `| ${s.v.name} | ${(a.requests / (seconds * rounds)).toFixed(0)} | ${perCpu(a).toFixed(0)} | ${(perCpu(a) / perCpu(base)).toFixed(2)}x |${vsBare} ${((a.user / a.requests) * 1e6).toFixed(0)} | ${((a.system / a.requests) * 1e6).toFixed(0)} | ${(a.p99.reduce((x, y) => x + y) / a.p99.length).toFixed(1)} |`,
      );
    }
    console.log(`\nmachine: load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
  } finally {
    for (const s of started) await s.envoy.stop();
    await h.stop();
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
