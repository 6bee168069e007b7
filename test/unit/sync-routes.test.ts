// What sync-routes prints: the routes added, removed and changed between two states.
import { describe, expect, it } from "vitest";
import { engineErrorLines } from "../../route-sync/stack.js";
import { report, routeChanges } from "../../route-sync/sync.js";
import { routesView } from "../../routing/routes-view.js";
import { buildRoutingTable } from "../../routing/table.js";
import { stackConfig } from "./fixtures.js";

const config = stackConfig("dev");
const state = (dev: Record<string, string[]>) => ({ "gateway-routes": routesView(config, buildRoutingTable(config, dev), "gateway") });

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
    expect(report({ ...changes, seconds: 3.24 }).at(-1)).toBe("synced in 3.2s: 2 added, 1 removed, 0 changed");
  });

  it("reports nothing for an unchanged state", () => {
    expect(routeChanges(state({ "pr-1": ["batch"] }), state({ "pr-1": ["batch"] }))).toEqual({ added: [], removed: [], changed: [] });
  });

  it("keeps the engine's error lines of a failed run", () => {
    const stderr = "Updating (dev):\n  pulumi:pulumi:Stack dev running\n  error: discovering dev/PR namespaces failed; nothing was changed: listing namespaces labelled a=b: cannot reach the Kubernetes API at https://127.0.0.1:6443 (ECONNREFUSED)\n";
    expect(engineErrorLines({ stderr })).toBe("error: discovering dev/PR namespaces failed; nothing was changed: listing namespaces labelled a=b: cannot reach the Kubernetes API at https://127.0.0.1:6443 (ECONNREFUSED)");
  });
});
