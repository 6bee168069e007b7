// Runs the cached Envoy binary on loopback with a given bootstrap.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requireComponents } from "./components.js";

export interface RunningEnvoy {
  /** http://127.0.0.1:<port> of the admin interface. */
  adminUrl: string;
  /** The bound address ("127.0.0.1:<port>") of each listener, by listener name. */
  listeners: Record<string, string>;
  process: ChildProcess;
  /** Temporary directory with the bootstrap and envoy.log. */
  dir: string;
  /** Everything Envoy logged so far. */
  log(): string;
  /** Stops Envoy, waits for it to exit and removes its directory. */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts Envoy with `bootstrapYaml` (give admin and listeners port 0 on 127.0.0.1 to get
 * free ports) and waits until the admin interface reports the server LIVE.
 */
export async function startEnvoy(bootstrapYaml: string, extraArgs: string[] = []): Promise<RunningEnvoy> {
  const { envoy } = requireComponents();
  const dir = mkdtempSync(join(tmpdir(), "eg-envoy-"));
  const bootstrap = join(dir, "bootstrap.yaml");
  const adminPath = join(dir, "admin-address");
  const logPath = join(dir, "envoy.log");
  writeFileSync(bootstrap, bootstrapYaml);
  const child = spawn(
    envoy,
    [
      "-c",
      bootstrap,
      "--admin-address-path",
      adminPath,
      "--disable-hot-restart",
      "--concurrency",
      "1",
      "--log-path",
      logPath,
      ...extraArgs,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  let exited = false;
  const exit = new Promise<void>((resolve) => child.on("exit", () => ((exited = true), resolve())));
  const log = () => (existsSync(logPath) ? readFileSync(logPath, "utf8") : "") + stderr;

  const stop = async () => {
    if (!exited) {
      child.kill("SIGTERM");
      const killed = await Promise.race([exit.then(() => true), sleep(10_000).then(() => false)]);
      if (!killed) {
        child.kill("SIGKILL");
        await exit;
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const deadline = Date.now() + 30_000;
    let adminUrl = "";
    for (;;) {
      if (exited) throw new Error(`envoy exited during startup (code ${child.exitCode}):\n${log()}`);
      if (Date.now() > deadline) throw new Error(`envoy did not become LIVE within 30s:\n${log()}`);
      if (!adminUrl && existsSync(adminPath)) {
        const address = readFileSync(adminPath, "utf8").trim();
        if (address) adminUrl = `http://${address}`;
      }
      if (adminUrl) {
        const ready = await fetch(`${adminUrl}/ready`).then(
          (r) => r.text(),
          () => "",
        );
        if (ready.trim() === "LIVE") break;
      }
      await sleep(100);
    }
    const listeners: Record<string, string> = {};
    const body = (await (await fetch(`${adminUrl}/listeners?format=json`)).json()) as {
      listener_statuses?: {
        name: string;
        local_address?: { socket_address?: { address: string; port_value: number } };
      }[];
    };
    for (const status of body.listener_statuses ?? []) {
      const socket = status.local_address?.socket_address;
      if (socket) listeners[status.name] = `${socket.address}:${socket.port_value}`;
    }
    return { adminUrl, listeners, process: child, dir, log, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
