// The route controller's metrics before anything happened: every series its alerts
// read exists at 0 from the start. A counter that first appears at 1 hides its first
// failure from increase(), and an absent leader gauge reads as "no controller".
import { describe, expect, it } from "vitest";
import { controllerMetrics } from "../../route-sync/controller-metrics.js";

describe("controllerMetrics", () => {
  it("serves the leader, its epoch, the refused config and both steps' failures at 0 before any event", async () => {
    const text = await controllerMetrics().registry.metrics();
    for (const line of [
      "envoy_gateways_route_controller_leader 0",
      "envoy_gateways_route_controller_leader_epoch 0",
      "envoy_gateways_route_controller_config_refused 0",
      'envoy_gateways_route_controller_step_failures_total{step="live"} 0',
      'envoy_gateways_route_controller_step_failures_total{step="status"} 0',
    ])
      expect(text.split("\n"), line).toContain(line);
  });

  it("counts a failed step under its own label, the other left at 0", async () => {
    const m = controllerMetrics();
    m.observe({ kind: "failed", step: "live" });
    const text = await m.registry.metrics();
    expect(text).toMatch(/^envoy_gateways_route_controller_step_failures_total\{step="live"\} 1$/m);
    expect(text).toMatch(/^envoy_gateways_route_controller_step_failures_total\{step="status"\} 0$/m);
  });
});
