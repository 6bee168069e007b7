// Traffic shifting through the real Envoy: two versions of a dev service,
// each behind its own headless Service, with the split a shift gives at a
// given instant, exactly as discovery computes it from the annotations on
// the new version's Service.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { discoverRoutes, type ServiceObject } from "../../routing/discovery.js";
import { routingLabels, SHIFT_ANNOTATION } from "../../routing/labels.js";
import { keepAliveAgent } from "../harness/client.js";
import { GatewayHarness } from "../harness/gateway.js";
import { waitFor } from "../harness/processes.js";
import { e2eHarnessOptions } from "../harness/stack.js";

const NS = "pr-77";
const T0 = new Date("2026-11-30T10:00:00Z");
const minutes = (m: number) => new Date(T0.getTime() + m * 60_000);
let h: GatewayHarness;

beforeAll(async () => {
  const options = e2eHarnessOptions();
  // Thousands of requests a second: lift the dev routes' rate limit (tested on its own elsewhere).
  h = await GatewayHarness.start({
    ...options,
    config: { ...options.config, devNamespaces: { ...options.config.devNamespaces, rateLimit: 1_000_000 } },
  });
});

afterAll(async () => {
  await h?.stop();
});

/** The Services of web's two versions; green carries the shift annotations. */
function services(shift: Record<string, string>): ServiceObject[] {
  const svc = (version: string, annotations: Record<string, string> = {}): ServiceObject => ({
    metadata: {
      namespace: NS,
      name: `web-${version}`,
      labels: routingLabels({ service: "web", version, weight: 100, replicas: 1, websocket: false }),
      annotations,
    },
    spec: { clusterIP: "None", ports: [{ name: "https", port: 443 }] },
  });
  return [
    svc("blue"),
    svc("green", {
      [SHIFT_ANNOTATION.from]: "blue",
      [SHIFT_ANNOTATION.start]: T0.toISOString(),
      [SHIFT_ANNOTATION.duration]: "100m",
      ...shift,
    }),
  ];
}

/** Routes web as discovery and the routing table would at `now`, waits until Envoy serves that split, and returns the weights routed. */
async function routeAt(shift: Record<string, string>, now: Date): Promise<Record<string, number>> {
  const found = discoverRoutes([{ metadata: { name: NS } }], services(shift), "default");
  expect(found.problems).toEqual([]);
  const rdsBefore = await h.envoy.stat("http.https.rds.https.update_success");
  await h.setDevNamespaces(found.devNamespaces, now);
  await waitFor(
    "Envoy to load the new routes",
    15_000,
    async () => (await h.envoy.stat("http.https.rds.https.update_success")) > rdsBefore,
  );
  for (const version of ["blue", "green"]) {
    await waitFor(
      `Envoy to resolve web-${version}`,
      15_000,
      async () => (await h.envoy.clusterHosts(`${NS}_web_${version}`)).length > 0,
    );
  }
  const web = h.table.dev.find((s) => s.namespace === NS && s.name === "web")!;
  return Object.fromEntries(web.versions.map((v) => [v.version, v.weight]));
}

/** Sends `total` requests to web and counts which version answered. */
async function versionsServing(total: number): Promise<Record<string, number>> {
  const agent = keepAliveAgent(h.https, 4);
  const counts: Record<string, number> = {};
  let next = 0;
  const failures: string[] = [];
  const worker = async () => {
    while (next < total && failures.length < 5) {
      next++;
      const res = await h.get(h.devHost, `/${NS}/web/`, { agent });
      if (res.status !== 200) failures.push(`${res.status} ${res.body.slice(0, 200)}`);
      else {
        // The pod's Service host: web-<version>.<namespace>.svc.<cluster domain>.
        const version = res.echo().service.split(".")[0]!;
        counts[version] = (counts[version] ?? 0) + 1;
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  agent.destroy();
  expect(failures, h.diagnostics()).toEqual([]);
  return counts;
}

const share = (counts: Record<string, number>, version: string) =>
  (counts[`web-${version}`] ?? 0) / Object.values(counts).reduce((a, b) => a + b, 0);

describe("traffic shifting on the real Envoy", () => {
  it("splits a linear shift at 10% of its way 90/10: 2,000 requests land within 3 points", async () => {
    expect(await routeAt({ [SHIFT_ANNOTATION.policy]: "linear" }, minutes(10))).toEqual({ blue: 90, green: 10 });
    const counts = await versionsServing(2000);
    expect(Math.abs(share(counts, "green") - 0.1), JSON.stringify(counts)).toBeLessThanOrEqual(0.03);
    expect(Math.abs(share(counts, "blue") - 0.9), JSON.stringify(counts)).toBeLessThanOrEqual(0.03);
  });

  it("keeps an atomic shift entirely on the old version until its end, then moves everything at once", async () => {
    expect(await routeAt({ [SHIFT_ANNOTATION.policy]: "atomic" }, minutes(99))).toEqual({ blue: 100, green: 0 });
    expect(await versionsServing(300)).toEqual({ "web-blue": 300 });
    expect(await routeAt({ [SHIFT_ANNOTATION.policy]: "atomic" }, minutes(100))).toEqual({ blue: 0, green: 100 });
    expect(await versionsServing(300)).toEqual({ "web-green": 300 });
  });

  it("returns all traffic to the old version when a shift is reversed", async () => {
    const reversed = { [SHIFT_ANNOTATION.policy]: "linear", [SHIFT_ANNOTATION.reversed]: minutes(40).toISOString() };
    expect(await routeAt(reversed, minutes(40))).toEqual({ blue: 60, green: 40 });
    const counts = await versionsServing(1000);
    expect(share(counts, "green")).toBeGreaterThan(0.3);
    expect(await routeAt(reversed, minutes(60))).toEqual({ blue: 80, green: 20 });
    expect(await routeAt(reversed, minutes(80))).toEqual({ blue: 100, green: 0 });
    expect(await versionsServing(300)).toEqual({ "web-blue": 300 });
  });
});
