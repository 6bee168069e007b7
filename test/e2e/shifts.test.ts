// Traffic shifting on the local cluster through the real engine: two
// labelled versions of a dev service, a linear shift annotated on the new
// one; sync-routes at two instants moves the ConfigMap's weights as the
// policy says, `npm run shifts` shows it, and reversing sends traffic back.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parseEnvoyYaml } from "../../routing/envoy/xds.js";
import { routingLabels, SHIFT_ANNOTATION } from "../../routing/labels.js";
import { shiftWeights, type Shift } from "../../routing/shifts.js";
import { ProgramStack, type ScriptRun } from "../support/program.js";

const cluster = inject("cluster");
const NS = "pr-shift";
let stack: ProgramStack;
let shift: Shift;

beforeAll(async () => {
  stack = await ProgramStack.create(cluster, { from: "dev", stack: "shifts" });
  await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
});

afterAll(async () => {
  await stack?.dispose();
});

function script(name: string, args: string[]): Promise<ScriptRun> {
  return stack.runScript(name, args);
}

/** The weights the gateway's ConfigMap gives web's versions. */
async function configMapWeights(): Promise<Record<string, number>> {
  const cm = await stack.core().readNamespacedConfigMap({ name: "gateway-xds", namespace: "default" });
  const rds = parseEnvoyYaml(cm.data!["rds.yaml"]!) as {
    resources: {
      virtual_hosts: {
        name: string;
        routes: {
          match: { path_separated_prefix?: string };
          route: { weighted_clusters?: { clusters: { name: string; weight: number }[] } };
        }[];
      }[];
    }[];
  };
  const route = rds.resources[0]!.virtual_hosts.find((h) => h.name === "dev")!.routes.find(
    (r) => r.match.path_separated_prefix === `/${NS}/web`,
  )!;
  return Object.fromEntries(route.route.weighted_clusters!.clusters.map((c) => [c.name.split("_")[2]!, c.weight]));
}

/** Runs sync-routes and returns the weights written, with the weights the policy gives at the start and end of the run. */
async function syncAndRead(): Promise<{ weights: Record<string, number>; lowest: number; highest: number }> {
  const before = new Date();
  const r = await script("sync-routes", []);
  const after = new Date();
  expect(r.code, r.stderr).toBe(0);
  return {
    weights: await configMapWeights(),
    lowest: shiftWeights(shift, before).to,
    highest: shiftWeights(shift, after).to,
  };
}

describe("a linear shift of a dev service", () => {
  it("moves the ConfigMap's weights between two sync-routes runs as the policy says", async () => {
    const core = stack.core();
    await stack.createNamespace(NS, { "envoy-gateways.io/routes": "dev" });
    const start = new Date();
    shift = { service: "web", from: "blue", to: "green", policy: "linear", start, durationMs: 240_000 };
    for (const version of ["blue", "green"]) {
      await core.createNamespacedService({
        namespace: NS,
        body: {
          metadata: {
            name: `web-${version}`,
            labels: routingLabels({ service: "web", version, weight: 100, replicas: 2, websocket: false }),
            annotations:
              version === "green"
                ? {
                    [SHIFT_ANNOTATION.from]: "blue",
                    [SHIFT_ANNOTATION.policy]: "linear",
                    [SHIFT_ANNOTATION.start]: start.toISOString(),
                    [SHIFT_ANNOTATION.duration]: "240s",
                  }
                : {},
          },
          spec: {
            clusterIP: "None",
            selector: { app: `web-${version}` },
            ports: [{ name: "https", port: 443, targetPort: 443 }],
          },
        },
      });
    }
    const first = await syncAndRead();
    expect(first.weights.green).toBeGreaterThanOrEqual(first.lowest);
    expect(first.weights.green).toBeLessThanOrEqual(first.highest);
    expect(first.weights.blue! + first.weights.green!).toBe(100);

    await new Promise((r) => setTimeout(r, 30_000));
    const second = await syncAndRead();
    expect(second.weights.green).toBeGreaterThanOrEqual(second.lowest);
    expect(second.weights.green).toBeLessThanOrEqual(second.highest);
    // 30 s or more of a 240 s shift: at least 12.5 points moved, 12 after rounding.
    expect(second.weights.green! - first.weights.green!).toBeGreaterThanOrEqual(12);
  });

  it("lists the shift in progress with its weights, next step and end", async () => {
    const r = await script("shifts", []);
    expect(r.code, r.stderr).toBe(0);
    const line = r.stdout.split("\n").find((l) => l.startsWith(`${NS}/web`))!;
    expect(line).toMatch(/blue -> green\s+linear\s+shifting\s+\d+\/\d+\s+\d+\/\d+ at \S+\s+\S+/);
    expect(line).toContain(new Date(shift.start.getTime() + shift.durationMs).toISOString());
  });

  it("sends traffic back to the old version when reversed", async () => {
    const reversed = await script("shifts", ["--reverse", `${NS}/web`]);
    expect(reversed.code, reversed.stderr).toBe(0);
    expect(reversed.stdout).toMatch(
      new RegExp(`reversed the shift of ${NS}/web at \\S+ \\(annotated Service ${NS}/web-green\\)`),
    );
    const svc = await stack.core().readNamespacedService({ name: "web-green", namespace: NS });
    const reversedAt = new Date(svc.metadata!.annotations![SHIFT_ANNOTATION.reversed]!);
    // The share green had when the shift turned around (the ConfigMap's
    // value was written earlier and is behind it).
    const atReversal = shiftWeights(shift, reversedAt).to;
    shift = { ...shift, reversedAt };
    await new Promise((r) => setTimeout(r, 15_000));
    const after = await syncAndRead();
    expect(after.weights.green).toBeGreaterThanOrEqual(after.highest);
    expect(after.weights.green).toBeLessThanOrEqual(after.lowest);
    // 15 s or more of a 240 s linear shift back: 6 points or more after rounding.
    expect(atReversal - after.weights.green!).toBeGreaterThanOrEqual(6);
    const again = await script("shifts", ["--reverse", `${NS}/web`]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/was already reversed at .*; it cannot be reversed twice/);
  });
});
