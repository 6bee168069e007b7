// Adopting a running cluster, the whole path under load (docs/adopting.md): the old
// world, then `dist/adopt headless`, `pulumi up` adopting with the gateway Service
// served by NGINX, the cutover, the way back and forward again, while requests go
// through the gateway's node port and an in-cluster client calls `batch` directly.
// Shared by test/e2e/adoption.test.ts (which asserts on it) and bench/adoption.ts
// (which prints it): each phase's duration, and the requests sent and failed during it.
import { describeFailures, GatewayClient, startLoad, type LoadResult } from "./gateway-client.js";
import type { LocalCluster } from "./cluster.js";
import { parsedLocalStackConfig } from "./local-stack.js";
import { deployOldWorld, type OldWorld } from "./old-world.js";
import { ProgramStack } from "./program.js";
import { until, Workloads, type ClientTally } from "./workloads.js";

export const ADOPTION_HOSTS = ["www", "notebook"];
export const ADOPTION_SERVICES = [...ADOPTION_HOSTS, "batch", "auth"];
const SERVED_BY = "envoy-gateways:gateways.gateway.service.servedBy";

export interface PhaseFigures {
  phase: string;
  seconds: number;
  /** Requests through the gateway's node port sent during the phase, and how many failed. */
  gateway: { sent: number; failed: number };
  /** The in-cluster client's requests to `batch` during the phase. */
  inCluster: { sent: number; failed: number };
  /** Which gateway answered through the node port when the phase ended (its Server header). */
  servedBy: string;
}

export interface AdoptionRun {
  namespace: string;
  world: OldWorld;
  stack: ProgramStack;
  phases: PhaseFigures[];
  load: LoadResult;
  tally: ClientTally;
  /** Output of each `dist/adopt` run. */
  adoptOutput: string;
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
 * What the platform team writes to adopt it: no images (the services' Deployments stay the
 * old world's), the gateway Service served by the NGINX pods, existing objects adopted.
 */
function adoptionConfig(namespace: string) {
  return (raw: Record<string, unknown>): Record<string, unknown> => {
    const old = oldWorldConfig(namespace)(raw);
    const services = (old.services as { image?: string }[]).map(({ image: _image, ...s }) => s);
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
    return String(r.headers.server).split("/")[0]!;
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

  let i = 0;
  const load = startLoad(
    () => client.request(`${ADOPTION_HOSTS[i++ % ADOPTION_HOSTS.length]}.${domain}`, "/", { timeoutMs: 5000 }),
    { rate: o.gatewayRate ?? 60, maxMs: 900_000, maxRequests: 100_000 },
  );
  const phases: PhaseFigures[] = [];
  const adoptRuns: string[] = [];
  const grace = o.dnsGrace ?? "6s";
  const adopt = async () => {
    const run = await stack.runScript("adopt", ["headless", "--dns-grace", grace]);
    adoptRuns.push(run.stdout + run.stderr);
    if (run.code !== 0) throw new Error(`dist/adopt exited with ${run.code}:\n${run.stdout}${run.stderr}`);
  };
  const up = () => stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
  const steps: [string, () => Promise<unknown>][] = [
    ["1. Services headless (dist/adopt)", adopt],
    ["2. pulumi up: adopt, Envoy beside NGINX", up],
    ["3. cutover to Envoy", async () => (await stack.ws.ok(["config", "rm", "--path", SERVED_BY]), await up())],
    [
      "4. back to NGINX",
      async () => (await stack.ws.ok(["config", "set", "--path", `${SERVED_BY}.app`, "gateway-nginx"]), await up()),
    ],
    ["5. forward to Envoy again", async () => (await stack.ws.ok(["config", "rm", "--path", SERVED_BY]), await up())],
  ];
  try {
    let tallyBefore = await w.clientTally(o.namespace, "batch-client");
    for (const [phase, run] of steps) {
      const from = load.now();
      await run();
      const to = load.now();
      const tally = await w.clientTally(o.namespace, "batch-client");
      const sent = load.samples.filter((s) => s.sent >= from && s.sent < to);
      phases.push({
        phase,
        seconds: (to - from) / 1000,
        gateway: { sent: sent.length, failed: sent.filter((s) => s.status !== 200).length },
        inCluster: { sent: tally.sent - tallyBefore.sent, failed: tally.failed - tallyBefore.failed },
        servedBy: await servedBy(),
      });
      tallyBefore = tally;
    }
    await new Promise((r) => setTimeout(r, 3000));
  } finally {
    load.stop();
  }
  const result = await load.result;
  const tally = await w.clientTally(o.namespace, "batch-client");
  await client.stop();
  return { namespace: o.namespace, world, stack, phases, load: result, tally, adoptOutput: adoptRuns.join("\n") };
}

/** The figures as a table, one line per phase, and the totals. */
export function adoptionTable(run: Pick<AdoptionRun, "phases" | "load" | "tally">): string[] {
  const rows = run.phases.map(
    (p) =>
      `${p.phase.padEnd(42)} ${p.seconds.toFixed(1).padStart(6)} s  ${String(p.gateway.sent).padStart(6)} ${String(p.gateway.failed).padStart(6)}  ${String(p.inCluster.sent).padStart(6)} ${String(p.inCluster.failed).padStart(6)}  ${p.servedBy}`,
  );
  return [
    `${"phase".padEnd(42)} ${"took".padStart(8)}  ${"gateway sent/failed".padStart(13)}  ${"in-cluster sent/failed".padStart(13)}  then served by`,
    ...rows,
    `in all: through the gateway ${describeFailures(run.load)}; in-cluster client to batch: ${run.tally.sent} sent, ${run.tally.failed} failed`,
  ];
}
