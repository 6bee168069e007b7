// Adopting a running cluster (docs/adopting.md), the whole path under load, through the
// real engine: the old world (NGINX behind the gateway's NodePort Service, ClusterIP
// Services, an in-cluster client calling `batch` directly) serves throughout while
//   1. `dist/adopt --stack <s> headless` turns the production Services headless in place;
//   2. `pulumi up` with adoptExisting and the gateway Service servedBy the NGINX pods
//      takes the Services over and brings up the Envoy gateways beside NGINX;
//   3. `pulumi up` without servedBy moves the gateway Service to the Envoy pods (cutover);
//   4. servedBy set again moves it back to NGINX (the way back), and 5. forward again.
// No request may fail in any phase; the time each phase took and the requests sent and
// failed during it are printed.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { describeFailures, GatewayClient, startLoad, type Load, type Sample } from "../support/gateway-client.js";
import { parsedLocalStackConfig } from "../support/local-stack.js";
import { deployOldWorld, type OldWorld } from "../support/old-world.js";
import { ProgramStack } from "../support/program.js";
import { until, Workloads } from "../support/workloads.js";

const cluster = inject("cluster");
const NAMESPACE = `adoption-${process.pid}`;
const HOSTS = ["www", "notebook"];
const SERVICES = [...HOSTS, "batch", "auth"];
const SERVED_BY = "envoy-gateways:gateways.gateway.service.servedBy";

let stack: ProgramStack;
let world: OldWorld;
let w: Workloads;
let client: GatewayClient;
let load: Load;
const phases: { phase: string; from: number; to: number }[] = [];

/** The local dev stack in its own namespace, with the old world's services. */
function oldWorldConfig(raw: Record<string, unknown>): Record<string, unknown> {
  const services = (raw.services as { name: string }[]).filter((s) => SERVICES.includes(s.name));
  return { ...raw, namespace: NAMESPACE, services };
}

/**
 * What the platform team writes to adopt it: no images (the services' Deployments stay the
 * old world's), the gateway Service served by the NGINX pods, existing objects adopted.
 */
function adoptionConfig(raw: Record<string, unknown>): Record<string, unknown> {
  const old = oldWorldConfig(raw);
  const services = (old.services as { image?: string }[]).map(({ image: _image, ...s }) => s);
  const gateways = structuredClone(raw.gateways) as Record<string, { service: Record<string, unknown> }>;
  gateways.gateway!.service.servedBy = { app: "gateway-nginx" };
  return { ...old, services, gateways, adoptExisting: true };
}

async function phase(name: string, run: () => Promise<void>): Promise<void> {
  const from = load.now();
  await run();
  phases.push({ phase: name, from, to: load.now() });
}

/** Which gateway answers through the node port: its Server header. */
async function servedBy(): Promise<string> {
  const r = await client.request(`www.${stack.config.domain}`, "/", { keepAlive: false });
  return String(r.headers.server).split("/")[0]!;
}

beforeAll(async () => {
  w = new Workloads(cluster);
  world = await deployOldWorld(cluster, {
    config: parsedLocalStackConfig("dev", oldWorldConfig),
    services: SERVICES,
    gateway: "gateway",
  });
  stack = await ProgramStack.create(cluster, { from: "dev", edit: adoptionConfig });
  client = await GatewayClient.viaNodePort(cluster, world.gatewayService, NAMESPACE);
}, 600_000);

afterAll(async () => {
  load?.stop();
  await client?.stop();
  await stack?.dispose();
  await w?.deleteNamespace(NAMESPACE);
});

describe("adopting a running cluster", () => {
  it("goes from NGINX and ClusterIP Services to Envoy and headless Services, and back and forth, without a failed request", async () => {
    const batchUrl = `https://batch.${NAMESPACE}.svc.${stack.config.clusterDomain}/jobs`;
    await w.createClient(NAMESPACE, { name: "batch-client", url: batchUrl, rate: 40, count: 20_000, keepAlive: true });
    await until(
      "the in-cluster client to start",
      60_000,
      async () => (await w.clientTally(NAMESPACE, "batch-client")).ok > 0,
    );
    expect(await servedBy()).toBe("nginx");
    let i = 0;
    load = startLoad(
      () => client.request(`${HOSTS[i++ % HOSTS.length]}.${stack.config.domain}`, "/", { timeoutMs: 5000 }),
      { rate: 60, maxMs: 480_000, maxRequests: 28_000 },
    );

    await phase("1. Services headless (dist/adopt)", async () => {
      const run = await stack.runScript("adopt", ["headless", "--dns-grace", "6s"]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`Service ${NAMESPACE}/www: ClusterIP ${world.clusterIps.www} -> headless, in place`);
    });
    for (const name of SERVICES)
      expect((await w.core.readNamespacedService({ name, namespace: NAMESPACE })).spec?.clusterIP).toBe("None");

    await phase("2. pulumi up: adopt, Envoy beside NGINX", async () => {
      await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    });
    const gatewayService = await w.core.readNamespacedService({ name: "gateway", namespace: NAMESPACE });
    expect(gatewayService.spec?.selector).toEqual({ app: "gateway-nginx" });
    expect(gatewayService.spec?.ports?.find((p) => p.port === 443)?.nodePort).toBe(world.nodePort);
    expect(await servedBy()).toBe("nginx");

    await phase("3. cutover to Envoy", async () => {
      await stack.ws.ok(["config", "rm", "--path", SERVED_BY]);
      await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    });
    expect(await servedBy()).toBe("envoy");

    await phase("4. back to NGINX", async () => {
      await stack.ws.ok(["config", "set", "--path", `${SERVED_BY}.app`, "gateway-nginx"]);
      await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    });
    expect(await servedBy()).toBe("nginx");

    await phase("5. forward to Envoy again", async () => {
      await stack.ws.ok(["config", "rm", "--path", SERVED_BY]);
      await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
    });
    expect(await servedBy()).toBe("envoy");
    await new Promise((r) => setTimeout(r, 3000));
    load.stop();
    const result = await load.result;
    const tally = await w.clientTally(NAMESPACE, "batch-client");

    const during = (p: { from: number; to: number }) => (s: Sample) => s.sent >= p.from && s.sent < p.to;
    for (const p of phases) {
      const sent = result.samples.filter(during(p));
      console.log(
        `${p.phase}: ${((p.to - p.from) / 1000).toFixed(1)} s, ${sent.length} requests through the gateway, ${sent.filter((s) => s.status !== 200).length} failed`,
      );
    }
    console.log(
      `in all: ${describeFailures(result)}; in-cluster client to batch: ${tally.sent} sent, ${tally.failed} failed`,
    );
    expect(describeFailures(result)).toBe(`0 of ${result.samples.length} failed`);
    expect({ failed: tally.failed, failures: tally.failures }).toEqual({ failed: 0, failures: [] });

    // Done: a second run of either changes nothing.
    const again = await stack.runScript("adopt", ["headless", "--dns-grace", "6s"]);
    expect(again.stdout).toContain(`Service ${NAMESPACE}/www: already headless, nothing to do`);
    const preview = await stack.ws.ok(["preview", "--expect-no-changes", "--diff"], 300_000);
    expect(preview.stdout).not.toMatch(/[~+-]\s+kubernetes:/);
  }, 900_000);
});
