// Adopting a running cluster (docs/adopting.md), the whole path under load, through the
// real engine (test/support/adoption.ts): the old world (NGINX behind the gateway's
// NodePort Service, ClusterIP Services, an in-cluster client calling `batch` directly)
// serves throughout while `dist/adopt headless` turns the Services headless in place,
// `pulumi up` adopts them with the gateway still served by NGINX, the cutover moves the
// gateway Service to Envoy, the way back to NGINX, forward again, then this program rolled
// back to its previous release and forward. No request may fail in any phase; the figures
// are printed.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  ADOPTION_HOSTS,
  ADOPTION_SERVICES,
  adoptionTable,
  runAdoption,
  type AdoptionRun,
} from "../support/adoption.js";
import { describeFailures } from "../support/gateway-client.js";
import { Workloads } from "../support/workloads.js";

const cluster = inject("cluster");
const NAMESPACE = `adoption-${process.pid}`;

let run: AdoptionRun;
let w: Workloads;
let uids: Record<string, string | undefined>;

beforeAll(() => {
  w = new Workloads(cluster);
});

afterAll(async () => {
  await run?.stack.dispose();
  await w?.deleteNamespace(NAMESPACE);
});

describe("adopting a running cluster", () => {
  beforeAll(async () => {
    run = await runAdoption(cluster, { namespace: NAMESPACE });
    console.log(adoptionTable(run).join("\n"));
    uids = Object.fromEntries(
      await Promise.all(
        ADOPTION_SERVICES.map(async (name) => [
          name,
          (await w.core.readNamespacedService({ name, namespace: NAMESPACE })).metadata?.uid,
        ]),
      ),
    );
  }, 900_000);

  it("fails no request in any phase, through the gateway or from the in-cluster client", () => {
    expect(run.phases.map((p) => [p.phase, p.gateway.failed, p.inCluster.failed])).toEqual(
      run.phases.map((p) => [p.phase, 0, 0]),
    );
    expect(run.phases.every((p) => p.gateway.sent > 0 && p.inCluster.sent > 0)).toBe(true);
    expect(run.load.failures).toEqual([]);
    expect({ failed: run.tally.failed, failures: run.tally.failures }).toEqual({ failed: 0, failures: [] });
  });

  it("sends every request to NGINX until the cutover, and many to Envoy while the release is rolled back and forward", () => {
    const [headless, adopting, , , , rollback, forward] = run.phases;
    expect([headless!.gateway.envoy, adopting!.gateway.envoy]).toEqual([0, 0]);
    // At least the half of the requests that open a new connection each (the kept-alive half stays
    // where its connection was opened, NGINX or Envoy, until that end closes it).
    for (const p of [rollback!, forward!])
      expect(p.gateway.envoy, p.phase).toBeGreaterThanOrEqual(Math.floor(0.45 * p.gateway.sent));
  });

  it("moves the traffic to Envoy at the cutover, back to NGINX and forward again; the release rollback keeps Envoy", () => {
    expect(run.phases.map((p) => p.servedBy)).toEqual(["nginx", "nginx", "envoy", "nginx", "envoy", "envoy", "envoy"]);
  });

  it("pools Envoy's upstream connections: a few kept to every pod, not one per request", () => {
    const { config } = run.stack;
    const replicas = (name: string) => config.services.find((s) => s.name === name)!.replicas;
    expect(run.pools.length).toBe(config.gateways.gateway.replicas * ADOPTION_HOSTS.length);
    expect(describeFailures(run.poolWindow)).toBe(`0 of ${run.poolWindow.samples.length} failed`);
    for (const p of run.pools) {
      expect({ pod: p.pod, service: p.service, endpoints: p.endpoints }).toEqual({
        pod: p.pod,
        service: p.service,
        endpoints: replicas(p.service),
      });
      // A connection to every pod, kept: the window's requests, each on a new downstream connection,
      // ride a few (HTTP/1.1 upstream: one per request in flight to a pod, so pods x workers when
      // requests do not overlap, a few more when they do); a connection per request would fail both.
      const where = `${p.pod} -> ${p.service}`;
      expect(p.requests, where).toBeGreaterThanOrEqual(100);
      expect(p.open, where).toBeGreaterThanOrEqual(p.endpoints);
      expect(p.requests, where).toBeGreaterThanOrEqual(20 * p.open);
      expect(p.requests, where).toBeGreaterThanOrEqual(20 * p.opened);
    }
  });

  it("says in the update's output what it adopts and which pods serve the gateway Service, until the cutover", () => {
    const [, adopting, cutover] = run.outputs.map((o) => o.replace(/\s+/g, " "));
    for (const name of [...ADOPTION_SERVICES, "gateway"])
      expect(adopting).toContain(`Service ${NAMESPACE}/${name} is adopted if it runs already (adoptExisting)`);
    expect(adopting).toContain(
      `Service ${NAMESPACE}/gateway sends its traffic to the pods app=gateway-nginx (servedBy)`,
    );
    expect(cutover).toContain(`Service ${NAMESPACE}/gateway is adopted if it runs already`);
    expect(cutover).not.toContain("(servedBy)");
  });

  it("turned the Services headless in place, the plan naming each cluster IP first", async () => {
    for (const name of ADOPTION_SERVICES) {
      const s = await w.core.readNamespacedService({ name, namespace: NAMESPACE });
      expect({ name, clusterIP: s.spec?.clusterIP, uid: s.metadata?.uid }).toEqual({
        name,
        clusterIP: "None",
        uid: uids[name],
      });
      expect(run.outputs[0]).toContain(
        `Service ${NAMESPACE}/${name}: ClusterIP ${run.world.clusterIps[name]} -> headless, in place`,
      );
    }
  });

  it("adopted the gateway Service with its node port", async () => {
    const s = await w.core.readNamespacedService({ name: "gateway", namespace: NAMESPACE });
    expect(s.spec?.ports?.find((p) => p.port === 443)?.nodePort).toBe(run.world.nodePort);
    // The program's Service now: its labels applied over the old one, selecting the Envoy pods; the
    // adoption's annotation went with adoptExisting, cleared before the release rollback.
    expect(s.metadata?.annotations?.["pulumi.com/patchForce"]).toBeUndefined();
    expect(s.metadata?.labels?.["app.kubernetes.io/managed-by"]).toBe("envoy-gateways");
    expect(s.spec?.selector).toEqual({ "app.kubernetes.io/name": "gateway", "app.kubernetes.io/component": "gateway" });
  });

  it("is done: a second dist/adopt and a preview change nothing", async () => {
    const again = await run.stack.runScript("adopt", ["headless", "--dns-grace", "6s"]);
    expect(again.stdout).toContain(`Service ${NAMESPACE}/www: already headless, nothing to do`);
    const preview = await run.stack.ws.ok(["preview", "--expect-no-changes", "--diff"], 300_000);
    expect(preview.stdout).not.toMatch(/[~+-]\s+kubernetes:/);
  });
});
