// What sync-routes prints: the routes added, removed and changed between two states.
import { describe, expect, it } from "vitest";
import { engineErrorLines } from "../../route-sync/stack.js";
import type { RoutesResourceState } from "../../route-sync/stack.js";
import { plan, recorded, report, routeChanges, writeLive } from "../../route-sync/sync.js";
import { renderRoutes } from "../../routes-provider/core.js";
import { routingConfig } from "../../routing/config/schema.js";
import { dataDigest } from "../../routing/units.js";
import { minutesIntoShift, shiftedService } from "./fixtures.js";
import { routesView } from "../../routing/routes-view.js";
import { buildRoutingTable } from "../../routing/table.js";
import { eachTest, stackConfig } from "./fixtures.js";

const config = eachTest(() => stackConfig("dev"));
const state = (dev: Record<string, string[]>) => ({ "gateway-routes": routesView(config(), buildRoutingTable(config(), dev), "gateway") });

describe("sync-routes report", () => {
  it("lists routes added and removed, by id, with where they go", () => {
    const changes = routeChanges(state({ "pr-1": ["batch"] }), state({ "pr-2": ["batch", "ci"] }));
    expect(changes).toEqual({
      added: [
        "pr-2/batch on gateway: https://internal.dev.example.org/pr-2/batch -> batch.pr-2.svc.cluster.local:443 (pr-2_batch)",
        "pr-2/ci on gateway: https://internal.dev.example.org/pr-2/ci -> ci.pr-2.svc.cluster.local:443 (pr-2_ci)",
      ],
      removed: ["pr-1/batch on gateway: https://internal.dev.example.org/pr-1/batch -> batch.pr-1.svc.cluster.local:443 (pr-1_batch)"],
      changed: [],
    });
    expect(report({ ...changes, unchanged: false, steps: {}, liveSeconds: 0.44, recordedSeconds: 9.81 }).at(-1)).toBe("routes live in 0.4s, recorded in the state in 9.8s: 2 added, 1 removed, 0 changed");
    expect(report({ added: [], removed: [], changed: [], unchanged: true, steps: {}, liveSeconds: 0.63 })).toEqual(["nothing to change (0.6s): the ConfigMaps and the state hold these routes; no engine run"]);
  });

  it("reports nothing for an unchanged state", () => {
    expect(routeChanges(state({ "pr-1": ["batch"] }), state({ "pr-1": ["batch"] }))).toEqual({ added: [], removed: [], changed: [] });
  });

  it("keeps the engine's error lines of a failed run", () => {
    const stderr = "Updating (dev):\n  pulumi:pulumi:Stack dev running\n  error: discovering dev/PR namespaces failed; nothing was changed: listing namespaces labelled a=b: cannot reach the Kubernetes API at https://127.0.0.1:6443 (ECONNREFUSED)\n";
    expect(engineErrorLines({ stderr })).toBe("error: discovering dev/PR namespaces failed; nothing was changed: listing namespaces labelled a=b: cannot reach the Kubernetes API at https://127.0.0.1:6443 (ECONNREFUSED)");
  });
});

describe("sync-routes: what needs an engine run", () => {
  /** A routes resource's state as a sync recorded it: these namespaces, rendered at `at`. */
  function stateOf(dev: Record<string, unknown>, at: Date): RoutesResourceState[] {
    const facts = { gateway: "gateway" as const, namespace: "default", configMap: "gateway-xds", config: routingConfig(config()), devNamespaces: dev as never };
    const r = renderRoutes(facts, at);
    return [{ urn: "urn:pulumi:dev::envoy-gateways::pulumi-nodejs:dynamic/envoy-gateways:Routes::gateway-routes", name: "gateway-routes", outputs: { ...facts, routes: r.routes, dataDigest: dataDigest(r.files.xds), renderedAt: at.toISOString() } }];
  }
  const dev = { "pr-1": ["batch"], "pr-2": [shiftedService("web")] };
  const at = minutesIntoShift(100); // the shift has ended: weights stay put

  it("nothing, when the state holds the discovered namespaces at the same weights", () => {
    expect(plan(stateOf(dev, at), { config: config() }, dev, minutesIntoShift(120)).every(recorded)).toBe(true);
  });
  it("a write and a record for a new namespace, a removed one, or weights a shift moved", () => {
    expect(plan(stateOf(dev, at), { config: config() }, { ...dev, "pr-3": ["ci"] }, at).every(recorded)).toBe(false);
    expect(plan(stateOf(dev, at), { config: config() }, { "pr-1": ["batch"] }, at).every(recorded)).toBe(false);
    expect(plan(stateOf(dev, minutesIntoShift(30)), { config: config() }, dev, minutesIntoShift(31)).every(recorded)).toBe(false);
  });
  it("a record for state written before the inputs were facts, or that a refresh found drifted", () => {
    const [r] = stateOf(dev, at);
    const { devNamespaces: _, ...old } = r!.outputs;
    expect(recorded(plan([{ ...r!, outputs: old as never }], { config: config() }, dev, at)[0]!)).toBe(false);
    expect(recorded(plan([{ ...r!, outputs: { ...r!.outputs, drift: { "pr-1/batch": "cluster pr-1_batch changed" } } }], { config: config() }, dev, at)[0]!)).toBe(false);
  });
  it("a record when the kubeconfig to write with changed", () => {
    expect(plan(stateOf(dev, at), { config: config(), kubeconfig: "apiVersion: v1" }, dev, at).every(recorded)).toBe(false);
  });

  it("validates every gateway's files before it writes any: too many routes for a ConfigMap write nothing", async () => {
    const many: Record<string, string[]> = {};
    for (let i = 0; i < 500; i++) many[`pr-${i}`] = ["batch", "batch-driver", "ci", "memory"];
    // Were anything written, it would go to this API server, which does not exist: the error would say so.
    const kubeconfig = "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n";
    const planned = plan(stateOf(dev, at), { config: config(), kubeconfig }, many, at);
    await expect(writeLive(planned, many, at)).rejects.toThrow(/over the 1,048,576 bytes Kubernetes allows in a ConfigMap/);
  });
});
