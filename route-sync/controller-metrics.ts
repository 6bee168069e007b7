// The route controller's Prometheus metrics (prom-client, on a registry of
// its own, served at /metrics by cli/route-controller.ts), fed by the
// watcher's events and the election. docs/route-controller.md lists them, and
// the dashboard and alerts there read them.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { WatchEvent } from "./watch.js";

const PREFIX = "envoy_gateways_route_controller_";

export interface ControllerMetrics {
  registry: Registry;
  /** A watcher event: a live write's latency, what a step routed, a failed step. */
  observe(event: WatchEvent): void;
  /** This replica leads with `epoch`, or not (undefined). */
  leading(epoch: number | undefined): void;
  /** Whether the controller's ConfigMap is refused (missing or bad) now. */
  configRefused(refused: boolean): void;
}

export function controllerMetrics(): ControllerMetrics {
  const registry = new Registry();
  const registers = [registry];
  // The event loop sampled every 100 ms, not prom-client's 10 ms: those 100 wake-ups a second cost
  // about 5 m of CPU on an idle replica (bench/route-controller.ts), and a lag under 100 ms is no trouble here.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  const leader = new Gauge({
    name: `${PREFIX}leader`,
    help: "1 while this replica holds the Lease and writes, else 0",
    registers,
  });
  const epoch = new Gauge({
    name: `${PREFIX}leader_epoch`,
    help: "The Lease's transitions when this replica took it (its writes' fencing token); 0 when not leading",
    registers,
  });
  const writeSeconds = new Histogram({
    name: `${PREFIX}write_seconds`,
    help: "Seconds from a namespace or Service change seen to the gateways' ConfigMaps written",
    buckets: [0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60],
    registers,
  });
  const failures = new Counter({
    name: `${PREFIX}step_failures_total`,
    help: "Failed steps, by step (live: the ConfigMap write; status: the route status on Services and namespaces)",
    labelNames: ["step"],
    registers,
  });
  const routed = new Gauge({
    name: `${PREFIX}routed_namespaces`,
    help: "Dev/PR namespaces routed by the latest step",
    registers,
  });
  const leftOut = new Gauge({
    name: `${PREFIX}left_out_namespaces`,
    help: "Labelled dev/PR namespaces the latest step left out (refused, or past capacity)",
    registers,
  });
  const fill = new Gauge({
    name: `${PREFIX}configmap_fill_ratio`,
    help: "How full each gateway's xDS ConfigMap is, of the bytes Kubernetes allows (0 to 1)",
    labelNames: ["gateway"],
    registers,
  });
  const refused = new Gauge({
    name: `${PREFIX}config_refused`,
    help: "1 while the route controller's ConfigMap is missing or refused (the last good config is kept)",
    registers,
  });
  for (const step of ["live", "status"]) failures.inc({ step }, 0);
  leader.set(0);
  epoch.set(0);
  refused.set(0);
  return {
    registry,
    observe(event) {
      if (event.kind === "failed") return failures.inc({ step: event.step });
      if (event.kind === "recorded") return;
      if (event.kind === "live") writeSeconds.observe(event.seconds);
      routed.set(event.routed);
      leftOut.set(event.leftOut);
      for (const [gateway, ratio] of Object.entries(event.fill)) fill.set({ gateway }, ratio);
    },
    leading(e) {
      leader.set(e === undefined ? 0 : 1);
      epoch.set(e ?? 0);
    },
    configRefused(r) {
      refused.set(r ? 1 : 0);
    },
  };
}
