// Benchmark (not a test): dev/PR routes at 100, 1,000 and 5,000 pairs on the
// prod stack's gateway, with a cluster per Service (devNamespaces.clusters:
// per-service, the layout before) and on demand (the prod stack's), side by
// side in one run. For each:
//
//   xDS bytes        cds.yaml + rds.yaml as the ConfigMap holds them, and
//                    whether they fit (Kubernetes allows 1,048,576 bytes)
//   pairs/ConfigMap  how many pairs of this size fit, from the bytes per pair
//   render ms        translate, validate against Envoy's API and write both
//                    files (renderXds, what a sync does), median of 3
//   Envoy heap       the real Envoy (the pod's worker count) with the files
//                    loaded (even those past 1 MiB, for the comparison):
//                    allocated heap once idle, and after one request to every
//                    route (on demand: every sub-cluster made), admin /memory
//   load ms          from swapping in rds.yaml (and cds.yaml) with one more
//                    namespace to Envoy counting the update
//
// DNS answers every Service name with one address where nothing listens, so
// a request makes its sub-cluster and gets a 503 (upstream connect failure):
// the memory is that of the clusters, not of traffic. The dev routes' auth
// check is off for the requests (nothing answers for the auth service).
//
// With --parts, it measures instead, at the first --pairs, where an on-demand
// sub-cluster's heap goes: the same files with one part of the on-demand
// cluster taken out at a time (its TLS, its outlier detection, every stat),
// and with one worker instead of the pod's, side by side with them as
// rendered (heap after one request to every route, less the heap idle, per
// sub-cluster).
//
// --memory sets the gateway's memory limit (the prod stack's: 2Gi), which
// bounds how many sub-clusters Envoy keeps on demand (routing/envoy/heap.ts);
// requests past the bound get a 503 and make none.
//
// --one-cluster adds a third row per --pairs, a layout tried and not kept: the
// on-demand files with the on-demand cluster replaced by one DNS cluster that
// lists every dev/PR Service as an endpoint, each with a load-balancing subset
// of its own that its route selects (no sub-cluster is ever made, so the heap
// idle is the heap in use).
//
//   npx tsx bench/dev-routes.ts [--pairs 100,1000,5000] [--settle 3] [--parts] [--memory 512Mi] [--one-cluster]
import { request, Agent } from "node:https";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadStackFile } from "../routing/config/load.js";
import { routingConfig } from "../routing/config/routing-config.js";
import type { StackConfig } from "../routing/config/schema.js";
import { translateGateway, type GatewayDocuments } from "../routing/envoy/gateway.js";
import { BOOTSTRAP_FILE, XDS_FILES, type Json } from "../routing/envoy/types.js";
import { ON_DEMAND_CLUSTER, serviceHost } from "../routing/names.js";
import { toReadableYaml, toXdsYaml } from "../routing/envoy/xds.js";
import { configMapBytes, CONFIGMAP_LIMIT_BYTES, renderXds } from "../routing/render.js";
import { buildRoutingTable, type DevNamespaces, type RoutingTable } from "../routing/table.js";
import { parseQuantity } from "../routing/units.js";
import { memoryQuantity } from "../routing/config/primitives.js";
import { maxOnDemandSubClusters } from "../routing/envoy/heap.js";
import { envoyApi } from "../routing/validation/descriptors.js";
import { withGatewayMemory } from "../test/fixtures/gateway-memory.js";
import { syntheticNamespaces } from "../test/fixtures/namespaces.js";
import { LoadCheck, type LoadedEnvoy } from "../test/harness/load-check.js";
import { sleep, waitFor } from "../test/harness/processes.js";

type Layout = StackConfig["devNamespaces"]["clusters"];
const PER_NAMESPACE = 10;

/** What a row measures: a layout of the stack, or (with `edit`) its files changed into one tried and not kept. */
interface Variant {
  name: string;
  layout: Layout;
  edit?: (docs: GatewayDocuments, table: RoutingTable) => void;
  /** Waits until Envoy has taken in the files, before the heap idle (default: --settle alone). */
  loaded?: (envoy: LoadedEnvoy, table: RoutingTable) => Promise<void>;
}

/** The cluster that stands in for the on-demand one in the one-cluster variant. */
const ONE_CLUSTER = "dev-one-cluster";

/**
 * The on-demand files with one DNS cluster for every dev/PR Service instead:
 * each Service an endpoint whose metadata names its host, a subset per host,
 * and each dev/PR route selecting its Service's subset and taking its host
 * (for SNI and the SAN check, as on demand). Services of one version only, as
 * the synthetic namespaces have. Its names are resolved again every 60 s, not
 * every 5 s as a sub-cluster's: with 5 s, two runs of three (at 1,000 to 5,000
 * pairs) stopped when Envoy's admin interface left a request unanswered for 5 s.
 */
function oneCluster(clusterDomain: string): Variant["edit"] {
  return (docs, table) => {
    const hostOf = new Map(
      table.dev.map((s) => {
        if (s.versions.length !== 1) throw new Error(`${s.id}: the one-cluster variant takes one version per Service`);
        return [s.id, serviceHost(s.versions[0]!.service, s.namespace, clusterDomain)];
      }),
    );
    const clusters = docs.cds.resources as Json[];
    const index = clusters.findIndex((c) => c.name === ON_DEMAND_CLUSTER);
    const { cluster_type: _, ...onDemand } = clusters[index]!;
    const lbEndpoints = [...hostOf.values()].map((host) => ({
      endpoint: { address: { socket_address: { address: host, port_value: 443 } } },
      metadata: { filter_metadata: { "envoy.lb": { host } } },
    }));
    clusters[index] = {
      ...onDemand,
      name: ONE_CLUSTER,
      type: "STRICT_DNS",
      lb_policy: "LEAST_REQUEST",
      dns_lookup_family: "V4_ONLY",
      dns_refresh_rate: "60s",
      load_assignment: { cluster_name: ONE_CLUSTER, endpoints: [{ lb_endpoints: lbEndpoints }] },
      lb_subset_config: { fallback_policy: "NO_FALLBACK", subset_selectors: [{ keys: ["host"] }] },
    };
    for (const routes of docs.rds.resources as Json[])
      for (const virtualHost of routes.virtual_hosts as Json[])
        for (const route of (virtualHost.routes as Json[] | undefined) ?? []) {
          const action = route.route as Json | undefined;
          if (action?.cluster !== ON_DEMAND_CLUSTER) continue;
          const host = hostOf.get(route.name as string)!;
          action.cluster = ONE_CLUSTER;
          action.metadata_match = { filter_metadata: { "envoy.lb": { host } } };
          action.host_rewrite_literal = host;
        }
  };
}

/**
 * Until the one cluster has resolved every dev/PR Service's name, which it
 * does before it serves (meanwhile Envoy's admin interface may not answer);
 * says how long that took.
 */
async function oneClusterResolved(envoy: LoadedEnvoy, table: RoutingTable): Promise<void> {
  const started = performance.now();
  const members = `cluster.${ONE_CLUSTER}.membership_total`;
  await waitFor(`${ONE_CLUSTER} to resolve ${table.dev.length} names`, 600_000, async () => {
    return ((await envoy.stats(`^${members.replaceAll(".", "\\.")}$`)).get(members) ?? 0) >= table.dev.length;
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `one-cluster, ${table.dev.length.toLocaleString("en-US")} pairs: every name resolved ${seconds} s after Envoy started`,
  );
}

function options(): {
  pairs: number[];
  settleSeconds: number;
  parts: boolean;
  memory: string | undefined;
  oneCluster: boolean;
} {
  const { values } = parseArgs({
    options: {
      pairs: { type: "string", default: "100,1000,5000" },
      settle: { type: "string", default: "3" },
      parts: { type: "boolean", default: false },
      memory: { type: "string" },
      "one-cluster": { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  const usage =
    "usage: npx tsx bench/dev-routes.ts [--pairs 100,1000,5000] [--settle 3] [--parts] [--memory 512Mi] [--one-cluster]";
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const pairs = values.pairs.split(",").map(Number);
  if (pairs.length < 1 || pairs.some((n) => !Number.isInteger(n) || n < 1 || n > 10_000))
    throw new Error(`--pairs must list whole numbers from 1 to 10000 (got ${values.pairs})\n${usage}`);
  const settleSeconds = Number(values.settle);
  if (!(settleSeconds >= 0 && settleSeconds <= 60))
    throw new Error(`--settle must be 0 to 60 seconds (got ${values.settle})\n${usage}`);
  if (values.memory !== undefined && !memoryQuantity.safeParse(values.memory).success)
    throw new Error(
      `--memory must be a memory quantity Kubernetes accepts, such as 256Mi, 1Gi or 1.5G (got ${values.memory})\n${usage}`,
    );
  return { pairs, settleSeconds, parts: values.parts, memory: values.memory, oneCluster: values["one-cluster"] };
}

/** The prod stack with dev/PR routes laid out so, their auth check off. */
function stack(base: StackConfig, clusters: Layout): StackConfig {
  const gateways = Object.fromEntries(
    Object.entries(base.gateways).map(([name, g]) => [name, { ...g, authenticateDevRoutes: false }]),
  ) as StackConfig["gateways"];
  return { ...base, gateways, devNamespaces: { ...base.devNamespaces, clusters } };
}

/** Every file of the gateway, written as render writes them, whether or not the xDS ones fit a ConfigMap; `edit` changes the documents first. */
function gatewayFiles(
  config: StackConfig,
  table: RoutingTable,
  edit: (docs: GatewayDocuments) => void = () => {},
): Record<string, string> {
  const docs = translateGateway(config, table, "gateway");
  edit(docs);
  const files: Record<string, string> = {
    [BOOTSTRAP_FILE]: toReadableYaml(docs.bootstrap),
    [XDS_FILES.cds]: toXdsYaml(docs.cds),
    [XDS_FILES.rds]: toXdsYaml(docs.rds),
  };
  for (const [file, doc] of Object.entries(docs.sds)) files[file] = toReadableYaml(doc);
  return files;
}

/** The bytes of a gateway's cds.yaml and rds.yaml as their ConfigMap holds them. */
function xdsBytes(files: Record<string, string>): number {
  return configMapBytes({ [XDS_FILES.cds]: files[XDS_FILES.cds]!, [XDS_FILES.rds]: files[XDS_FILES.rds]! });
}

interface Measured {
  bytes: number;
  renderMs: number;
  idleMiB: number;
  activeMiB: number;
  clusters: number;
  loadMs: number;
  failed: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function heapMiB(envoy: LoadedEnvoy): Promise<number> {
  return (await envoy.envoy.heapBytes()) / 2 ** 20;
}

/** One GET to every dev route (32 at a time, each bounded to 10 s); returns how many got no response. */
async function requestEvery(port: number, host: string, dev: DevNamespaces): Promise<number> {
  const paths = Object.entries(dev).flatMap(([ns, services]) => services.map((s) => `/${ns}/${String(s)}/`));
  const agent = new Agent({ keepAlive: true, maxSockets: 32, rejectUnauthorized: false });
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < paths.length) {
      const path = paths[next++]!;
      await new Promise<void>((resolve) => {
        const req = request(
          { host: "127.0.0.1", port, path, servername: host, headers: { host }, agent, timeout: 10_000 },
          (res) => {
            res.resume();
            res.on("end", resolve);
          },
        );
        req.on("timeout", () => req.destroy(new Error("timeout")));
        req.on("error", () => {
          failed++;
          resolve();
        });
        req.end();
      });
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  agent.destroy();
  return failed;
}

async function measure(
  check: LoadCheck,
  config: StackConfig,
  pairs: number,
  workers: number,
  settleSeconds: number,
  { edit, loaded }: Variant,
): Promise<Measured> {
  const dev = syntheticNamespaces(pairs, PER_NAMESPACE);
  const table = buildRoutingTable(config, dev);
  const routing = routingConfig(config);
  const times: number[] = [];
  // A variant's files are not what render writes: it has no render time.
  for (let i = 0; i < (edit ? 0 : 3); i++) {
    const t = performance.now();
    try {
      renderXds(routing, table, "gateway");
    } catch {
      // Past 1 MiB the render refuses the files: it has translated and validated them all by then.
    }
    times.push(performance.now() - t);
  }
  const files = gatewayFiles(config, table, (docs) => edit?.(docs, table));
  const bytes = xdsBytes(files);
  const envoy = await check.start(files, undefined, workers);
  try {
    await loaded?.(envoy, table);
    await sleep(settleSeconds * 1000);
    const idleMiB = await heapMiB(envoy);
    const failed = await requestEvery(await envoy.envoy.listenerPort("https"), config.gateways.gateway.devHost, dev);
    await sleep(settleSeconds * 1000);
    const activeMiB = await heapMiB(envoy);
    const clusters = (await envoy.stats("^cluster_manager\\.active_clusters$")).get("cluster_manager.active_clusters")!;
    // One more namespace: what Envoy takes to load the new files.
    const moreTable = buildRoutingTable(config, { ...dev, "pr-new": ["batch"] });
    const more = gatewayFiles(config, moreTable, (docs) => edit?.(docs, moreTable));
    const counter = "http.https.rds.https.update_success";
    const before = (await envoy.stats(`^${counter}$`)).get(counter) ?? 0;
    const t = performance.now();
    await envoy.swap({ [XDS_FILES.cds]: more[XDS_FILES.cds]!, [XDS_FILES.rds]: more[XDS_FILES.rds]! });
    await waitFor("Envoy to take the new rds.yaml", 60_000, async () => {
      return ((await envoy.stats(`^${counter}$`)).get(counter) ?? 0) > before;
    });
    const loadMs = performance.now() - t;
    return { bytes, renderMs: edit ? NaN : median(times), idleMiB, activeMiB, clusters, loadMs, failed };
  } finally {
    await envoy.envoy.stop();
  }
}

/** The on-demand cluster of a gateway's documents (a static cluster of its bootstrap). */
function onDemandCluster(docs: GatewayDocuments): Json {
  return ((docs.bootstrap.static_resources as Json).clusters as Json[]).find((c) => c.name === ON_DEMAND_CLUSTER)!;
}

/** The on-demand cluster with one part taken out at a time, and with one worker: what each costs a sub-cluster. */
const PARTS: { part: string; edit?: (docs: GatewayDocuments) => void; workers?: number }[] = [
  { part: "as rendered" },
  {
    part: "without TLS",
    edit: (docs) => {
      const cluster = onDemandCluster(docs);
      delete cluster.transport_socket;
      delete ((cluster.cluster_type as Json).typed_config as Json).allow_insecure_cluster_options;
    },
  },
  { part: "without outlier detection", edit: (docs) => delete onDemandCluster(docs).outlier_detection },
  {
    part: "without any stat",
    edit: (docs) => (docs.bootstrap.stats_config = { stats_matcher: { reject_all: true } }),
  },
  { part: "one worker", workers: 1 },
];

/** Heap per sub-cluster with each of PARTS, side by side, at `pairs` on demand. */
async function measureParts(check: LoadCheck, prod: StackConfig, pairs: number, workers: number, settle: number) {
  const config = stack(prod, "on-demand");
  const dev = syntheticNamespaces(pairs, PER_NAMESPACE);
  const table = buildRoutingTable(config, dev);
  const rows: { part: string; idleMiB: number; activeMiB: number; perSubClusterKiB: number }[] = [];
  for (const p of PARTS) {
    const envoy = await check.start(gatewayFiles(config, table, p.edit), undefined, p.workers ?? workers);
    try {
      await sleep(settle * 1000);
      const idleMiB = await heapMiB(envoy);
      const failed = await requestEvery(await envoy.envoy.listenerPort("https"), config.gateways.gateway.devHost, dev);
      if (failed) throw new Error(`${p.part}: ${failed} requests got no response`);
      await sleep(settle * 1000);
      const activeMiB = await heapMiB(envoy);
      // Past the bound of the gateway's memory limit, requests make no sub-cluster.
      const made = Math.min(pairs, maxOnDemandSubClusters(config.gateways.gateway.resources.limits.memory));
      rows.push({ part: p.part, idleMiB, activeMiB, perSubClusterKiB: ((activeMiB - idleMiB) * 1024) / made });
    } finally {
      await envoy.envoy.stop();
    }
  }
  const pad = (s: string, n: number) => s.padStart(n);
  console.log(
    `prod stack gateway, ${pairs.toLocaleString("en-US")} pairs on demand, every route requested once; Envoy --concurrency ${workers} (the pod's) unless said; heap after ${settle}s`,
  );
  console.log(
    [
      pad("on-demand cluster", 25),
      pad("heap idle MiB", 13),
      pad("heap all requested MiB", 22),
      pad("KiB per sub-cluster", 19),
      pad("vs as rendered", 14),
    ].join("  "),
  );
  const base = rows[0]!.perSubClusterKiB;
  for (const r of rows)
    console.log(
      [
        pad(r.part, 25),
        pad(r.idleMiB.toFixed(1), 13),
        pad(r.activeMiB.toFixed(1), 22),
        pad(r.perSubClusterKiB.toFixed(1), 19),
        pad(`${(r.perSubClusterKiB / base).toFixed(2)}x`, 14),
      ].join("  "),
    );
}

async function main(): Promise<void> {
  const o = options();
  const prod = withGatewayMemory(loadStackFile(join(__dirname, "..", "Pulumi.prod.yaml")), { gateway: o.memory });
  const workers = Math.max(1, Math.ceil(parseQuantity(prod.gateways.gateway.resources.limits.cpu) ?? 1));
  const memory = prod.gateways.gateway.resources.limits.memory;
  envoyApi();
  if (o.parts) {
    const check = await LoadCheck.create(prod.clusterDomain, false, "127.0.0.2");
    try {
      await measureParts(check, prod, o.pairs[0]!, workers, o.settleSeconds);
    } finally {
      await check.stop();
    }
    return;
  }
  const variants: Variant[] = [
    { name: "per-service", layout: "per-service" },
    { name: "on-demand", layout: "on-demand" },
    ...(o.oneCluster
      ? [
          {
            name: "one-cluster",
            layout: "on-demand" as const,
            edit: oneCluster(prod.clusterDomain),
            loaded: oneClusterResolved,
          },
        ]
      : []),
  ];
  /** The ConfigMap bytes of each variant with no dev/PR route, which the bytes per pair leave out. */
  const baseBytes = new Map(
    variants.map((v) => {
      const config = stack(prod, v.layout);
      const table = buildRoutingTable(config);
      return [v.name, xdsBytes(gatewayFiles(config, table, (docs) => v.edit?.(docs, table)))];
    }),
  );
  const base = (v: Variant) => baseBytes.get(v.name)!;
  const check = await LoadCheck.create(prod.clusterDomain, false, "127.0.0.2");
  const results = new Map<string, Measured>();
  try {
    for (const pairs of o.pairs)
      for (const v of variants)
        results.set(
          `${pairs} ${v.name}`,
          await measure(check, stack(prod, v.layout), pairs, workers, o.settleSeconds, v),
        );
  } finally {
    await check.stop();
  }
  const pad = (s: string, n: number) => s.padStart(n);
  console.log(
    `prod stack gateway, ${PER_NAMESPACE} Services per namespace; Envoy --concurrency ${workers} (the pod's), heap after ${o.settleSeconds}s; memory limit ${memory}: on demand, at most ${maxOnDemandSubClusters(memory).toLocaleString("en-US")} sub-clusters`,
  );
  console.log(
    [
      pad("pairs", 5),
      pad("layout", 11),
      pad("xDS bytes", 11),
      pad("fits", 4),
      pad("bytes/pair", 10),
      pad("pairs/ConfigMap", 15),
      pad("render ms", 9),
      pad("heap idle MiB", 13),
      pad("heap all requested MiB", 22),
      pad("clusters", 8),
      pad("load ms", 7),
    ].join("  "),
  );
  for (const pairs of o.pairs)
    for (const v of variants) {
      const m = results.get(`${pairs} ${v.name}`)!;
      const perPair = (m.bytes - base(v)) / pairs;
      console.log(
        [
          pad(pairs.toLocaleString("en-US"), 5),
          pad(v.name, 11),
          pad(m.bytes.toLocaleString("en-US"), 11),
          pad(m.bytes <= CONFIGMAP_LIMIT_BYTES ? "yes" : "no", 4),
          pad(perPair.toFixed(0), 10),
          pad(Math.floor((CONFIGMAP_LIMIT_BYTES - base(v)) / perPair).toLocaleString("en-US"), 15),
          pad(v.edit ? "-" : m.renderMs.toFixed(0), 9),
          pad(m.idleMiB.toFixed(1), 13),
          pad(`${m.activeMiB.toFixed(1)}${m.failed ? ` (${m.failed} no answer)` : ""}`, 22),
          pad(m.clusters.toLocaleString("en-US"), 8),
          pad(m.loadMs.toFixed(0), 7),
        ].join("  "),
      );
    }
  /** One variant against the one before it, figure by figure. */
  const ratios = (pairs: number, [a, b]: Variant[]) => {
    const [x, y] = [a!, b!].map((v) => results.get(`${pairs} ${v.name}`)!);
    const r = (f: (m: Measured) => number) => `${(f(y!) / f(x!)).toFixed(2)}x`;
    const render = b!.edit ? "" : `, render ${r((m) => m.renderMs)}`;
    return `${pairs.toLocaleString("en-US")} pairs, ${b!.name} vs ${a!.name}: bytes ${r((m) => m.bytes)}${render}, heap idle ${r((m) => m.idleMiB)}, heap all requested ${r((m) => m.activeMiB)}, load ${r((m) => m.loadMs)}`;
  };
  for (const pairs of o.pairs)
    for (let i = 1; i < variants.length; i++) console.log(ratios(pairs, [variants[i - 1]!, variants[i]!]));
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
