// The real Envoy binary, started with a rendered bootstrap and watched
// through its admin interface (127.0.0.1 only).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { componentPaths } from "../support/components.js";
import { startProcess, waitFor, type ManagedProcess } from "./processes.js";

/** The cached Envoy binary (scripts/versions.env ENVOY_VERSION), or a clear error. */
export function envoyBinary(): string {
  const path = componentPaths().envoy;
  if (!existsSync(path)) throw new Error(`Envoy binary missing at ${path}: run bash scripts/build-components.sh`);
  return path;
}

export interface EnvoyOptions {
  /** The bootstrap file (envoy.yaml in the bootstrap directory). */
  bootstrapPath: string;
  /** http://127.0.0.1:<port> of the admin interface as the bootstrap sets it. */
  adminUrl: string;
  /** Worker threads (default 2). */
  concurrency?: number;
  /** Directory for envoy.log (Envoy's own log and the JSON access log). */
  logDir: string;
  logLevel?: string;
  /** Extra environment variables (c-ares reads LOCALDOMAIN and RES_OPTIONS, as resolv.conf's search and options). */
  env?: Record<string, string>;
}

export class EnvoyProcess {
  private process: ManagedProcess | undefined;
  constructor(readonly options: EnvoyOptions) {}

  get pid(): number | undefined {
    return this.process?.pid;
  }

  get adminUrl(): string {
    return this.options.adminUrl;
  }

  /** Starts Envoy and waits until it reports LIVE (its initial CDS and RDS loaded). */
  async start(): Promise<void> {
    const o = this.options;
    const args = [
      "-c",
      o.bootstrapPath,
      "--concurrency",
      String(o.concurrency ?? 2),
      "--reject-unknown-dynamic-fields",
      "--disable-hot-restart",
      "--drain-time-s",
      "1",
      "--log-level",
      o.logLevel ?? "info",
    ];
    // Envoy's own log goes to stderr (written at once; --log-path is flushed only every
    // few seconds), the JSON access log to stdout: both into envoy.log.
    this.process = startProcess(
      "envoy",
      envoyBinary(),
      args,
      join(o.logDir, "envoy.log"),
      o.env ? { ...process.env, ...o.env } : undefined,
    );
    // An exit ends the wait at once (waitFor retries on errors, so it is a result, not a throw).
    const state = await waitFor(
      "Envoy to become LIVE",
      60_000,
      async () => {
        if (this.process!.exited()) return "exited";
        const res = await fetch(`${o.adminUrl}/ready`, { signal: AbortSignal.timeout(1000) });
        return (await res.text()).trim() === "LIVE" ? "live" : undefined;
      },
      100,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n--- envoy log ---\n${this.log().slice(-6000)}`);
    });
    if (state === "exited")
      throw new Error(`Envoy exited with code ${this.process.exitCode()}:\n${this.log().slice(-6000)}`);
  }

  /** Envoy's own log and the access log lines, as written. */
  log(): string {
    return this.process?.log() ?? "";
  }

  /** The JSON access log lines (stdout), parsed. */
  accessLog(): Record<string, unknown>[] {
    return (this.process?.log() ?? "")
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          return {};
        }
      });
  }

  get running(): boolean {
    return !!this.process && !this.process.exited();
  }

  /** GET on the admin interface. */
  async admin(path: string): Promise<string> {
    const res = await fetch(`${this.options.adminUrl}${path}`, { signal: AbortSignal.timeout(5000) });
    if (!res.ok) throw new Error(`admin ${path}: ${res.status}`);
    return res.text();
  }

  /** Every counter and gauge, by name. */
  async stats(filter?: string): Promise<Map<string, number>> {
    const text = await this.admin(`/stats${filter ? `?filter=${encodeURIComponent(filter)}` : ""}`);
    const stats = new Map<string, number>();
    for (const line of text.split("\n")) {
      const m = /^([^:]+): (\d+)$/.exec(line);
      if (m) stats.set(m[1]!, Number(m[2]));
    }
    return stats;
  }

  /** The heap tcmalloc has allocated (admin /memory), in bytes. */
  async heapBytes(): Promise<number> {
    return Number((JSON.parse(await this.admin("/memory")) as { allocated: string }).allocated);
  }

  /** The port Envoy bound for the listener `name` (such as a port 0 in the bootstrap). */
  async listenerPort(name: string): Promise<number> {
    const listeners = JSON.parse(await this.admin("/listeners?format=json")) as {
      listener_statuses: { name: string; local_address: { socket_address: { port_value: number } } }[];
    };
    const listener = listeners.listener_statuses.find((l) => l.name === name);
    if (!listener) throw new Error(`Envoy has no listener ${name}`);
    return listener.local_address.socket_address.port_value;
  }

  async stat(name: string): Promise<number> {
    const stats = await this.stats(`^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
    return stats.get(name) ?? 0;
  }

  /** Addresses of the hosts Envoy currently has in `cluster`. */
  async clusterHosts(cluster: string): Promise<string[]> {
    const text = await this.admin("/clusters");
    const hosts = new Set<string>();
    for (const line of text.split("\n")) {
      const m = /^([^:]+)::([0-9.]+):(\d+)::/.exec(line);
      if (m && m[1] === cluster) hosts.add(m[2]!);
    }
    return [...hosts].sort();
  }

  async stop(): Promise<void> {
    await this.process?.stop(5_000);
  }
}
