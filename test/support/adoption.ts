// Adopting a running cluster, the whole path under load (docs/adopting.md): the old
// world, then `dist/adopt headless`, `pulumi up` adopting with the gateway Service
// served by NGINX, the cutover, the way back and forward again, then this program
// rolled back to its previous release and forward again, while requests go through
// the gateway's node port and an in-cluster client calls `batch` directly.
// Shared by test/e2e/adoption.test.ts (which asserts on it) and bench/adoption.ts
// (which prints it): each phase's duration, the requests sent and failed during it,
// and Envoy's upstream connections at the end.
import { clusterName } from "../../routing/names.js";
import {
  describeFailures,
  describeRetries,
  GatewayClient,
  serverProduct,
  startLoad,
  type LoadResult,
} from "./gateway-client.js";
import { gatewayMetrics } from "./gateway-metrics.js";
import type { LocalCluster } from "./cluster.js";
import { LOCAL_NODE_ADDRESSES, parsedLocalStackConfig } from "./local-stack.js";
import { deployOldWorld, type OldWorld } from "./old-world.js";
import { ProgramStack } from "./program.js";
import { until, Workloads, type ClientTally } from "./workloads.js";

export const ADOPTION_HOSTS = ["www", "notebook"];
export const ADOPTION_SERVICES = [...ADOPTION_HOSTS, "batch", "auth"];
const SERVED_BY = "envoy-gateways:gateways.gateway.service.servedBy";
const NODE_DNS = "envoy-gateways:networkPolicy.clusterDns.cidrs[0]";

/**
 * The release a rollback goes back to (docs/adopting.md, "Rolling this program back"): main
 * before adoption existed. Its state is the same as this release's (same resources, same
 * URNs); it knows neither `adoptExisting` nor `servedBy`, so both are cleared first.
 */
export const PREVIOUS_RELEASE = { commit: "0b0e510ca9844e0c122b6015e8d1d404f7c3de09", name: "main@0b0e510" };

export interface PhaseFigures {
  phase: string;
  seconds: number;
  /** Requests through the gateway's node port sent during the phase, how many failed, and how many Envoy answered. */
  gateway: { sent: number; failed: number; envoy: number };
  /** The in-cluster client's requests to `batch` during the phase. */
  inCluster: { sent: number; failed: number };
  /** Which gateway answered through the node port when the phase ended (its Server header). */
  servedBy: string;
}

/** One gateway pod's pool towards one routed service, over a steady window of the load at the end. */
export interface UpstreamPool {
  pod: string;
  service: string;
  /** Addresses in the Envoy cluster (the service's pods) and the gateway's worker threads. */
  endpoints: number;
  workers: number;
  /** Upstream connections open at the end of the window, and opened during it. */
  open: number;
  opened: number;
  /** Requests Envoy sent to the service during the window. */
  requests: number;
}

/** How long the pools are watched at the end (after the replaced pods drained), and the window's requests per second. */
export const POOL_WINDOW_MS = 10_000;
const POOL_WINDOW_RATE = 40;

export interface AdoptionRun {
  namespace: string;
  world: OldWorld;
  stack: ProgramStack;
  phases: PhaseFigures[];
  load: LoadResult;
  tally: ClientTally;
  /** Each Envoy gateway pod's upstream pools to the routed hosts at the end, and the window's requests. */
  pools: UpstreamPool[];
  poolWindow: LoadResult;
  /** What each phase's commands printed (stdout and stderr), in the order of `phases`. */
  outputs: string[];
}

export interface AdoptionOptions {
  namespace: string;
  /** Requests per second through the gateway (default 60) and from the in-cluster client (default 40). */
  gatewayRate?: number;
  clientRate?: number;
  /** dist/adopt's --dns-grace (default 6s: CoreDNS's TTL here is 5 s). */
  dnsGrace?: string;
}

/** The local dev stack in `namespace`, with the old world's services. */
function oldWorldConfig(namespace: string) {
  return (raw: Record<string, unknown>): Record<string, unknown> => {
    const services = (raw.services as { name: string }[]).filter((s) => ADOPTION_SERVICES.includes(s.name));
    return { ...raw, namespace, services };
  };
}

/**
 * What the platform team writes to adopt it: no images nor their pods' resources (the
 * services' Deployments stay the old world's), the gateway Service served by the NGINX pods,
 * existing objects adopted.
 */
function adoptionConfig(namespace: string) {
  return (raw: Record<string, unknown>): Record<string, unknown> => {
    const old = oldWorldConfig(namespace)(raw);
    const services = (old.services as { image?: string; resources?: unknown }[]).map(
      ({ image: _image, resources: _resources, ...s }) => s,
    );
    const gateways = structuredClone(raw.gateways) as Record<string, { service: Record<string, unknown> }>;
    gateways.gateway!.service.servedBy = { app: "gateway-nginx" };
    return { ...old, services, gateways, adoptExisting: true };
  };
}

/** Runs the whole adoption under load. The caller disposes `stack` and deletes the namespace. */
export async function runAdoption(cluster: LocalCluster, o: AdoptionOptions): Promise<AdoptionRun> {
  const w = new Workloads(cluster);
  const world = await deployOldWorld(cluster, {
    config: parsedLocalStackConfig("dev", oldWorldConfig(o.namespace)),
    services: ADOPTION_SERVICES,
    gateway: "gateway",
  });
  const stack = await ProgramStack.create(cluster, { from: "dev", edit: adoptionConfig(o.namespace) });
  const client = await GatewayClient.viaNodePort(cluster, world.gatewayService, o.namespace);
  const domain = stack.config.domain;
  const servedBy = async () => {
    const r = await client.request(`www.${domain}`, "/", { keepAlive: false });
    return serverProduct(r) ?? "no Server header";
  };
  const batchUrl = `https://batch.${o.namespace}.svc.${stack.config.clusterDomain}/jobs`;
  await w.createClient(o.namespace, {
    name: "batch-client",
    url: batchUrl,
    rate: o.clientRate ?? 40,
    count: 100_000,
    keepAlive: true,
  });
  await until(
    "the in-cluster client to start",
    60_000,
    async () => (await w.clientTally(o.namespace, "batch-client")).ok > 0,
  );

  // Half the requests keep their connection open, as browsers and API clients do (it stays with the
  // gateway pod it reached until that end closes it); half open a new one each, so they follow the
  // gateway Service's selector as it moves.
  let i = 0;
  const load = startLoad(
    () => {
      const n = i++;
      return client.request(`${ADOPTION_HOSTS[n % ADOPTION_HOSTS.length]}.${domain}`, "/", {
        timeoutMs: 5000,
        keepAlive: Math.floor(n / ADOPTION_HOSTS.length) % 2 === 0,
      });
    },
    { rate: o.gatewayRate ?? 60, maxMs: 900_000, maxRequests: 100_000 },
  );
  const phases: PhaseFigures[] = [];
  const outputs: string[] = [];
  const grace = o.dnsGrace ?? "6s";
  const adopt = async () => {
    const run = await stack.runScript("adopt", ["headless", "--dns-grace", grace]);
    if (run.code !== 0) throw new Error(`dist/adopt exited with ${run.code}:\n${run.stdout}${run.stderr}`);
    return run.stdout + run.stderr;
  };
  const up = async (at = stack) => (await at.ws.ok(["up", "--yes", "--skip-preview"], 600_000)).stdout;
  let previous: ProgramStack | undefined;
  let pools: UpstreamPool[];
  let poolWindow: LoadResult;
  const steps: [string, () => Promise<string>][] = [
    ["1. Services headless (dist/adopt)", adopt],
    ["2. pulumi up: adopt, Envoy beside NGINX", up],
    ["3. cutover to Envoy", async () => (await stack.ws.ok(["config", "rm", "--path", SERVED_BY]), up())],
    [
      "4. back to NGINX",
      async () => (await stack.ws.ok(["config", "set", "--path", `${SERVED_BY}.app`, "gateway-nginx"]), up()),
    ],
    ["5. forward to Envoy again", async () => (await stack.ws.ok(["config", "rm", "--path", SERVED_BY]), up())],
    [
      `6. roll back to ${PREVIOUS_RELEASE.name}`,
      async () => {
        // The previous release knows neither key (docs/adopting.md): it declares no NetworkPolicy.
        await stack.ws.ok(["config", "rm", "adoptExisting"]);
        await stack.ws.ok(["config", "rm", "networkPolicy"]);
        previous = await stack.atRelease(PREVIOUS_RELEASE.commit);
        return up(previous);
      },
    ],
    [
      "7. forward to this release",
      async () => (await stack.ws.ok(["config", "set", "--path", NODE_DNS, LOCAL_NODE_ADDRESSES]), up()),
    ],
  ];
  try {
    let tallyBefore = await w.clientTally(o.namespace, "batch-client");
    for (const [phase, run] of steps) {
      const from = load.now();
      outputs.push(await run());
      const to = load.now();
      const tally = await w.clientTally(o.namespace, "batch-client");
      const sent = load.samples.filter((s) => s.sent >= from && s.sent < to);
      phases.push({
        phase,
        seconds: (to - from) / 1000,
        gateway: {
          sent: sent.length,
          failed: sent.filter((s) => s.status !== 200).length,
          envoy: sent.filter((s) => s.server === "envoy").length,
        },
        inCluster: { sent: tally.sent - tallyBefore.sent, failed: tally.failed - tallyBefore.failed },
        servedBy: await servedBy(),
      });
      tallyBefore = tally;
    }
    await new Promise((r) => setTimeout(r, 3000));
    ({ pools, window: poolWindow } = await upstreamPools(w, client, o.namespace, domain));
  } finally {
    load.stop();
    await previous?.ws.dispose();
  }
  const result = await load.result;
  const tally = await w.clientTally(o.namespace, "batch-client");
  await client.stop();
  return {
    namespace: o.namespace,
    world,
    stack,
    phases,
    load: result,
    tally,
    pools,
    poolWindow,
    outputs,
  };
}

/**
 * What each `gateway` pod's Envoy holds towards the routed hosts, read from its Prometheus
 * listener before and after POOL_WINDOW_MS of requests on a new connection each (so they
 * reach the pods the gateway Service selects now: the load's kept-alive connections stay
 * where they were opened, NGINX included, until that end closes them).
 */
async function upstreamPools(
  w: Workloads,
  client: GatewayClient,
  namespace: string,
  domain: string,
): Promise<{ pools: UpstreamPool[]; window: LoadResult }> {
  const pods = await until(
    "the gateway pods replaced by the last rollout to drain and go",
    180_000,
    async () => {
      const all = await w.pods(namespace, "gateway");
      return all.every((p) => !p.metadata?.deletionTimestamp && p.status?.podIP) && all.length > 0 && all;
    },
    async () => `gateway pods: ${(await w.pods(namespace, "gateway")).map((p) => p.metadata?.name).join(", ")}`,
  );
  const read = (pod: (typeof pods)[number]) => gatewayMetrics(pod.status!.podIP!);
  const before = await Promise.all(pods.map(read));
  let i = 0;
  const window = await startLoad(
    () =>
      client.request(`${ADOPTION_HOSTS[i++ % ADOPTION_HOSTS.length]}.${domain}`, "/", {
        keepAlive: false,
        timeoutMs: 5000,
      }),
    { rate: POOL_WINDOW_RATE, maxMs: POOL_WINDOW_MS, maxRequests: (POOL_WINDOW_RATE * POOL_WINDOW_MS) / 1000 },
  ).result;
  const after = await Promise.all(pods.map(read));
  // Envoy writes a stat without tags as name{}.
  const sample = (samples: Map<string, number>, name: string, labels = "") => samples.get(`${name}{${labels}}`) ?? NaN;
  const pools = pods.flatMap((pod, i) =>
    ADOPTION_HOSTS.map((service) => {
      const cluster = `envoy_cluster_name="${clusterName(namespace, service)}"`;
      const delta = (name: string) => sample(after[i]!, name, cluster) - sample(before[i]!, name, cluster);
      return {
        pod: pod.metadata!.name!,
        service,
        endpoints: sample(after[i]!, "envoy_cluster_membership_total", cluster),
        workers: sample(after[i]!, "envoy_server_concurrency"),
        open: sample(after[i]!, "envoy_cluster_upstream_cx_active", cluster),
        opened: delta("envoy_cluster_upstream_cx_total"),
        requests: delta("envoy_cluster_upstream_rq_total"),
      };
    }),
  );
  return { pools, window };
}

/** The figures as a table, one line per phase, and the totals. */
export function adoptionTable(run: Pick<AdoptionRun, "phases" | "load" | "tally" | "pools" | "poolWindow">): string[] {
  const n = (v: number, width = 6) => String(v).padStart(width);
  const rows = run.phases.map(
    (p) =>
      `${p.phase.padEnd(42)} ${p.seconds.toFixed(1).padStart(6)} s  ${n(p.gateway.sent)} ${n(p.gateway.failed)} ${n(p.gateway.envoy)}  ${n(p.inCluster.sent)} ${n(p.inCluster.failed)}  ${p.servedBy}`,
  );
  return [
    `${"phase".padEnd(42)} ${"took".padStart(8)}  gateway: sent failed  envoy  in-cluster: sent failed  new connections then to`,
    ...rows,
    `in all: through the gateway ${describeFailures(run.load)}${describeRetries(run.load)}; in-cluster client to batch: ${run.tally.sent} sent, ${run.tally.failed} failed`,
    `Envoy's upstream pools over ${POOL_WINDOW_MS / 1000} s more of requests, each on a new connection (${describeFailures(run.poolWindow)}):`,
    ...run.pools.map(
      (p) =>
        `  ${p.pod} -> ${p.service}: ${p.requests} requests, ${p.opened} connections opened, ${p.open} open (${p.endpoints} pods x ${p.workers} workers)`,
    ),
  ];
}
