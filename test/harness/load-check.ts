// Loading files into the real Envoy, to learn whether it takes them: a
// gateway's files exactly as the ConfigMaps hold them (a golden directory, a
// `render` output, or documents written the way render writes them), with only
// what cannot work outside a pod remapped: the /etc/envoy/ paths (into a work
// directory holding test certificates), the listener and admin addresses (free
// ports on 127.0.0.1; listeners that shared an address still share one), and
// the DNS servers of the resolver (a dnsmasq that answers NXDOMAIN for every
// Service name, so DNS clusters warm at once with no hosts, or with one address
// for every name). Envoy runs in
// serve mode with --reject-unknown-dynamic-fields: `--mode validate` does not
// load file-based CDS or RDS.
//
//   const check = await LoadCheck.create("cluster.local");
//   const envoy = await check.start(files);            // throws EnvoyRejected if Envoy exits
//   const outcome = await envoy.swap({ "cds.yaml": ..., "rds.yaml": ... });
//   await check.stop();
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { BOOTSTRAP_FILE, POD_PATHS, XDS_FILES, type Json } from "../../routing/envoy/types.js";
import { TestPki } from "./certificates.js";
import { ConfigMapVolume } from "./configmap-volume.js";
import { ClusterDns } from "./dns.js";
import { EnvoyProcess } from "./envoy.js";
import { freeTcpPort } from "./ports.js";
import { waitFor } from "./processes.js";

const POD_ROOT = "/etc/envoy/";
/** Starts of one Envoy, each on newly picked ports, before a port taken meanwhile fails it. */
const PORT_ATTEMPTS = 3;

/** Envoy refused a bootstrap: it exited before becoming LIVE. */
export class EnvoyRejected extends Error {
  constructor(readonly reason: string) {
    super(`Envoy refused the bootstrap: ${reason}`);
  }
}

/** What Envoy made of a swap of cds.yaml and rds.yaml. */
export interface SwapOutcome {
  /** Whether each file's update_success moved (else update_rejected or update_failure did). */
  cds: boolean;
  rds: boolean;
  /** The rejections Envoy logged, one line per refused file. */
  reasons: string[];
}

/** A work directory with certificates and a DNS server, in which Envoys load files. */
export class LoadCheck {
  private envoys: LoadedEnvoy[] = [];
  private next = 0;

  private constructor(
    readonly workDir: string,
    readonly dns: ClusterDns,
    private readonly certificates: Record<string, Record<string, string>>,
  ) {}

  /**
   * `logQueries`: the DNS server logs every query it gets (ClusterDns.queries).
   * `answerEvery`: it answers every Service name with this address (each
   * cluster gets one host, as a Service with one pod) instead of NXDOMAIN.
   */
  static async create(clusterDomain: string, logQueries = false, answerEvery?: string): Promise<LoadCheck> {
    const workDir = mkdtempSync(join(tmpdir(), "eg-envoy-load-"));
    const pki = new TestPki(join(workDir, "pki"));
    const ca = pki.authority("envoy-gateways load-check CA");
    const server = pki.leaf(ca, "gateway-server", ["example.org"]);
    const client = pki.leaf(ca, "gateway-upstream-client", ["gateway.default.svc.cluster.local"]);
    const dns = new ClusterDns(workDir, clusterDomain, 1, logQueries, answerEvery);
    await dns.start();
    const relative = (dir: string) => dir.slice(POD_ROOT.length);
    const certificates: Record<string, Record<string, string>> = {
      [relative(POD_PATHS.serverTlsDir)]: { "tls.crt": server.cert, "tls.key": server.key },
      [relative(POD_PATHS.upstreamTlsDir)]: { "tls.crt": client.cert, "tls.key": client.key, "ca.crt": ca.cert },
    };
    return new LoadCheck(workDir, dns, certificates);
  }

  /**
   * Starts an Envoy with a gateway's files (file name -> text, pod paths):
   * envoy.yaml, its sds-*.yaml and cds.yaml, rds.yaml. Resolves once Envoy is
   * LIVE (everything loaded); throws EnvoyRejected when Envoy exits instead.
   * `env`: extra environment of the Envoy process.
   */
  async start(files: Record<string, string>, env?: Record<string, string>, concurrency = 1): Promise<LoadedEnvoy> {
    // The free ports are picked before Envoy binds them, so another process (a parallel test's
    // Envoy, a client's ephemeral port) can take one in between: then start again on new ones.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startOnce(files, env, concurrency);
      } catch (e) {
        if (!(e instanceof EnvoyRejected && /Address already in use/.test(e.message)) || attempt === PORT_ATTEMPTS)
          throw e;
      }
    }
  }

  private async startOnce(
    files: Record<string, string>,
    env: Record<string, string> | undefined,
    concurrency: number,
  ): Promise<LoadedEnvoy> {
    const root = join(this.workDir, `envoy-${this.next++}`);
    const etc = join(root, "etc/envoy/");
    for (const [dir, certs] of Object.entries(this.certificates)) new ConfigMapVolume(join(etc, dir)).write(certs);
    const local = (text: string) => text.replaceAll(POD_ROOT, etc);
    const bootstrapDir = join(etc, POD_PATHS.bootstrapDir.slice(POD_ROOT.length));
    mkdirSync(bootstrapDir, { recursive: true });
    const xds = new ConfigMapVolume(join(etc, POD_PATHS.xdsDir.slice(POD_ROOT.length)));
    const bootstrap = parse(local(files[BOOTSTRAP_FILE] ?? "")) as Json;
    const adminPort = await this.remapAddresses(bootstrap);
    for (const [name, text] of Object.entries(files)) {
      if (name === BOOTSTRAP_FILE) writeFileSync(join(bootstrapDir, name), JSON.stringify(bootstrap));
      else if (!Object.values(XDS_FILES).includes(name as never)) writeFileSync(join(bootstrapDir, name), local(text));
    }
    xds.write(
      Object.fromEntries(
        Object.values(XDS_FILES)
          .filter((f) => files[f] !== undefined)
          .map((f) => [f, local(files[f]!)]),
      ),
    );
    const envoy = new EnvoyProcess({
      bootstrapPath: join(bootstrapDir, BOOTSTRAP_FILE),
      adminUrl: `http://127.0.0.1:${adminPort}`,
      concurrency,
      logDir: root,
      env,
    });
    try {
      await envoy.start();
    } catch (e) {
      const exited = !envoy.running; // else it never became LIVE: not a verdict
      await envoy.stop();
      if (!exited) throw e;
      throw new EnvoyRejected(rejections(envoy.log())[0] ?? lastLines(envoy.log()));
    }
    const loaded = new LoadedEnvoy(envoy, xds, local);
    this.envoys.push(loaded);
    return loaded;
  }

  /** Admin and listeners on free 127.0.0.1 ports (one new port per distinct old address), DNS to dnsmasq. */
  private async remapAddresses(bootstrap: Json): Promise<number> {
    const ports = new Map<string, number>();
    const remap = async (address: Json | undefined) => {
      const sa = address?.socket_address as Json | undefined;
      if (!sa) return 0;
      const key = `${String(sa.address)}:${String(sa.port_value)}`;
      if (!ports.has(key)) {
        // The OS may hand a just-closed port out again: never give two addresses one port.
        let port = await freeTcpPort("127.0.0.1");
        while ([...ports.values()].includes(port)) port = await freeTcpPort("127.0.0.1");
        ports.set(key, port);
      }
      sa.address = "127.0.0.1";
      sa.port_value = ports.get(key)!;
      return sa.port_value as number;
    };
    const adminPort = await remap((bootstrap.admin as Json | undefined)?.address as Json | undefined);
    const listeners = ((bootstrap.static_resources as Json | undefined)?.listeners ?? []) as Json[];
    for (const l of listeners) await remap(l.address as Json | undefined);
    const resolver = (bootstrap.typed_dns_resolver_config as Json | undefined)?.typed_config as Json | undefined;
    if (resolver) resolver.resolvers = [{ socket_address: { address: this.dns.address, port_value: this.dns.port } }];
    return adminPort;
  }

  async stop(): Promise<void> {
    for (const e of this.envoys) await e.envoy.stop();
    await this.dns.stop();
    if (process.env.EG_HARNESS_KEEP === "1") console.error(`envoy load check: kept ${this.workDir}`);
    else rmSync(this.workDir, { recursive: true, force: true });
  }
}

/** An Envoy that loaded a gateway's files. */
export class LoadedEnvoy {
  constructor(
    readonly envoy: EnvoyProcess,
    private readonly xds: ConfigMapVolume,
    private readonly local: (text: string) => string,
  ) {}

  /** Counters and gauges, by name. */
  stats(filter?: string): Promise<Map<string, number>> {
    return this.envoy.stats(filter);
  }

  /**
   * What Envoy refused while it started although it came up: the first
   * cds.yaml or rds.yaml it rejected (such as routes whose filter config needs
   * something the bootstrap lacks), as the reasons it logged; empty when it
   * took everything.
   */
  async startupRejections(): Promise<string[]> {
    const stats = await this.envoy.stats("(cluster_manager\\.cds|http\\.https\\.rds\\.https)\\.update_rejected");
    if (![...stats.values()].some((n) => n > 0)) return [];
    let reasons: string[] = [];
    await waitFor(
      "Envoy to log why it refused a file at start-up",
      5_000,
      () => {
        reasons = rejections(this.envoy.log());
        return reasons.length > 0;
      },
      50,
    );
    return reasons;
  }

  /** /config_dump, parsed. */
  async configDump(): Promise<Json> {
    return JSON.parse(await this.envoy.admin("/config_dump")) as Json;
  }

  /**
   * Swaps cds.yaml and rds.yaml in as the kubelet swaps a ConfigMap volume
   * (pod paths inside are remapped like the bootstrap's), waits until Envoy
   * has processed both and says what it did with each.
   */
  async swap(files: Record<string, string>): Promise<SwapOutcome> {
    const read = async () => {
      const stats = await this.envoy.stats("(cluster_manager\\.cds|http\\.https\\.rds\\.https)\\.update_");
      const get = (prefix: string, what: string) => stats.get(`${prefix}.update_${what}`) ?? 0;
      const of = (prefix: string) => ({ attempt: get(prefix, "attempt"), success: get(prefix, "success") });
      return { cds: of("cluster_manager.cds"), rds: of("http.https.rds.https") };
    };
    const before = await read();
    const logStart = this.envoy.log().length;
    this.xds.write(Object.fromEntries(Object.entries(files).map(([name, text]) => [name, this.local(text)])));
    let after = before;
    await waitFor(
      "Envoy to process the swapped cds.yaml and rds.yaml",
      15_000,
      async () => {
        after = await read();
        return after.cds.attempt > before.cds.attempt && after.rds.attempt > before.rds.attempt;
      },
      50,
    );
    const cds = after.cds.success > before.cds.success;
    const rds = after.rds.success > before.rds.success;
    const refused = Number(!cds) + Number(!rds);
    let reasons: string[] = [];
    // A rejection's log line can follow its counter by a moment.
    await waitFor(
      `Envoy to log why it refused ${refused} file(s)`,
      5_000,
      () => {
        reasons = rejections(this.envoy.log().slice(logStart));
        return reasons.length >= refused;
      },
      50,
    );
    return { cds, rds, reasons };
  }
}

/**
 * Why Envoy refused a config, one entry per refusal in `log`: the log line,
 * without its timestamp prefix. When Envoy prints the refused message itself
 * (a multi-line text dump after the first line), only the words around it are
 * kept, not the dump: it names every field the message has, refused or not
 * (nor the echo of a file that does not parse, for the same reason).
 */
function rejections(log: string): string[] {
  const entries: string[][] = [];
  for (const line of log.split("\n")) {
    if (/^\[\d{4}-/.test(line)) entries.push([line]);
    else entries.at(-1)?.push(line);
  }
  const out: string[] = [];
  for (const lines of entries) {
    const head = lines[0]!;
    const startup = /error `([^`]*)` initializing config/.exec(head);
    if (startup) {
      out.push(startup[1]!);
      continue;
    }
    if (!/update rejected|update failure/i.test(head)) continue;
    const dumpEnd = lines.lastIndexOf("}");
    let text = lines.length > 1 && dumpEnd > 0 ? `${head} ... ${lines.slice(dumpEnd + 1).join(" ")}` : lines.join(" ");
    // A file that does not parse is echoed after the reason, as JSON.
    const echo = text.indexOf(': {"');
    if (echo > 0) text = text.slice(0, echo);
    out.push(text.replace(/^\[[^\]]*\]\[\d+\]\[\w+\]\[\w+\] \[[^\]]*\] /, "").slice(0, 2000));
  }
  return out;
}

function lastLines(log: string): string {
  return log.trim().split("\n").slice(-5).join("\n").slice(-2000);
}
