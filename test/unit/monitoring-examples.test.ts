// The route controller's alerts and dashboard (docs/examples/monitoring/) read
// only metrics the controller serves, and the alerts the issue asks for are
// there: a metric renamed in route-sync/controller-metrics.ts fails here, not
// silently on a Prometheus that never fires.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { controllerMetrics } from "../../route-sync/controller-metrics.js";
import { ROOT } from "./fixtures.js";

const dir = join(ROOT, "docs/examples/monitoring");
const alerts = parse(readFileSync(join(dir, "route-controller-alerts.yaml"), "utf8")) as {
  kind: string;
  spec: { groups: { rules: { alert: string; expr: string; for: string }[] }[] };
};
const dashboard = JSON.parse(readFileSync(join(dir, "route-controller-dashboard.json"), "utf8")) as {
  panels: { targets: { expr: string }[] }[];
};
const rules = alerts.spec.groups.flatMap((g) => g.rules);

/** The metric names an expression reads (a histogram's series by its own name). */
function metricsOf(expr: string): string[] {
  const names = expr.match(/\b(envoy_gateways_route_controller_[a-z_]+|process_[a-z_]+)\b/g) ?? [];
  return names.map((n) => n.replace(/_(bucket|count|sum)$/, ""));
}

describe("the route controller's alerts and dashboard", () => {
  it("read only metrics it serves", async () => {
    const served = new Set((await controllerMetrics().registry.getMetricsAsJSON()).map((m) => m.name));
    const read = [...rules.map((r) => r.expr), ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr))];
    const unknown = read.flatMap(metricsOf).filter((n) => !served.has(n));
    expect(read.length).toBeGreaterThan(8);
    expect(unknown).toEqual([]);
  });

  it("alert on a missing leader, failing syncs and a ConfigMap over 90% full", () => {
    expect(alerts.kind).toBe("PrometheusRule");
    const byName = Object.fromEntries(rules.map((r) => [r.alert, r]));
    expect(byName.RouteControllerLeaderMissing!.expr).toContain("absent(envoy_gateways_route_controller_leader)");
    expect(byName.RouteControllerSyncFailing!.expr).toContain('step_failures_total{step="live"}');
    expect(byName.RouteControllerConfigMapNearlyFull!.expr).toMatch(/configmap_fill_ratio\) > 0\.9$/);
    for (const r of rules) expect(r.for, r.alert).toMatch(/^\d+m$/);
  });
});
