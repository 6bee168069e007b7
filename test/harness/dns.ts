// Cluster DNS stand-in: a real dnsmasq on 127.0.0.1:<free port> answering
// <svc>.<ns>.svc.<clusterDomain> with every pod address of that headless
// Service (A records, TTL 1 s), and NXDOMAIN for any other name under the
// cluster domain. Records live in an addn-hosts file; `setRecords` rewrites
// it and sends SIGHUP, and waits until dnsmasq answers with the new set.
import { execFileSync } from "node:child_process";
import { Resolver } from "node:dns/promises";
import { existsSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freeTcpUdpPort } from "./ports.js";
import { sleep, startProcess, waitFor, type ManagedProcess } from "./processes.js";

export function dnsmasqBinary(): string {
  for (const path of ["/usr/sbin/dnsmasq", "/usr/bin/dnsmasq"]) if (existsSync(path)) return path;
  try {
    return execFileSync("sh", ["-c", "command -v dnsmasq"], { encoding: "utf8" }).trim();
  } catch {
    throw new Error("dnsmasq not found: run bash scripts/install-debian-packages.sh development");
  }
}

export class ClusterDns {
  readonly address = "127.0.0.1";
  port = 0;
  private process: ManagedProcess | undefined;
  private readonly hostsPath: string;
  private records = new Map<string, string[]>();

  constructor(
    private readonly dir: string,
    /** Names under this domain that have no records get NXDOMAIN (never forwarded). */
    private readonly clusterDomain: string,
    /** TTL of every answer, in seconds. */
    readonly ttlSeconds = 1,
    /** Log every query (see `queries`). */
    private readonly logQueries = false,
    /** Answer every name under the cluster domain with this address (one pod per Service), instead of NXDOMAIN for names without records. */
    private readonly answerEvery?: string,
  ) {
    this.hostsPath = join(dir, "dns-hosts");
  }

  async start(): Promise<void> {
    this.writeHosts();
    const binary = dnsmasqBinary();
    for (let attempt = 0; attempt < 5; attempt++) {
      this.port = await freeTcpUdpPort(this.address);
      const log = join(this.dir, `dnsmasq-${this.port}.log`);
      this.process = startProcess(
        "dnsmasq",
        binary,
        [
          "--keep-in-foreground",
          "--conf-file=/dev/null",
          "--no-resolv",
          "--no-hosts",
          "--no-poll",
          `--addn-hosts=${this.hostsPath}`,
          `--listen-address=${this.address}`,
          "--bind-interfaces",
          `--port=${this.port}`,
          `--local-ttl=${this.ttlSeconds}`,
          `--neg-ttl=${this.ttlSeconds}`,
          this.answerEvery ? `--address=/${this.clusterDomain}/${this.answerEvery}` : `--local=/${this.clusterDomain}/`,
          "--cache-size=0",
          "--user=root",
          "--pid-file=",
          "--log-facility=-",
          ...(this.logQueries ? ["--log-queries"] : []),
        ],
        log,
      );
      try {
        await waitFor(`dnsmasq on ${this.address}:${this.port}`, 10_000, async () => {
          if (this.process!.exited()) throw new Error(`dnsmasq exited: ${this.process!.log()}`);
          await this.query(`probe.invalid`).catch((e: NodeJS.ErrnoException) => {
            if (e.code !== "ENOTFOUND" && e.code !== "ENODATA" && e.code !== "EREFUSED") throw e;
          });
          return true;
        });
        return;
      } catch (e) {
        await this.process.stop();
        if (attempt === 4) throw e;
      }
    }
  }

  /** Resolves `name` (A records) through this dnsmasq. */
  async query(name: string): Promise<string[]> {
    const resolver = new Resolver({ timeout: 500, tries: 2 });
    resolver.setServers([`${this.address}:${this.port}`]);
    return (await resolver.resolve4(name)).sort();
  }

  /** The addresses `name` currently has. */
  get(name: string): string[] {
    return [...(this.records.get(name) ?? [])];
  }

  /**
   * Sets the addresses of each name given (an empty list removes the name),
   * reloads dnsmasq and waits until it answers accordingly.
   */
  async setRecords(updates: Record<string, string[]>): Promise<void> {
    for (const [name, addresses] of Object.entries(updates)) {
      if (addresses.length) this.records.set(name, [...addresses]);
      else this.records.delete(name);
    }
    this.writeHosts();
    if (!this.process) return;
    this.process.signal("SIGHUP");
    for (const [name, addresses] of Object.entries(updates)) {
      const want = [...addresses].sort().join(",");
      await waitFor(
        `dnsmasq to answer ${name} with [${want}]`,
        10_000,
        async () => {
          const got = await this.query(name).catch(() => [] as string[]);
          if (got.join(",") === want) return true;
          this.process!.signal("SIGHUP");
          await sleep(50);
          return false;
        },
        100,
      );
    }
  }

  private writeHosts(): void {
    const lines = ["# written by the envoy-gateways test harness"];
    for (const [name, addresses] of this.records) for (const a of addresses) lines.push(`${a} ${name}`);
    const tmp = `${this.hostsPath}.tmp`;
    writeFileSync(tmp, lines.join("\n") + "\n");
    renameSync(tmp, this.hostsPath);
  }

  log(): string {
    return this.process?.log() ?? "";
  }

  /** The queries received so far, oldest first (only with logQueries): record type and name, such as { type: "A", name: "www.default.svc.cluster.local" }. */
  queries(): { type: string; name: string }[] {
    return [...this.log().matchAll(/query\[(\w+)\] (\S+) from /g)].map((m) => ({ type: m[1]!, name: m[2]! }));
  }

  async stop(): Promise<void> {
    await this.process?.stop();
  }
}
