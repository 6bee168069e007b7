// The gateway harness: one real Envoy running a gateway's rendered config,
// with everything it talks to on loopback. See docs/envoy-e2e.md.
//
//   const h = await GatewayHarness.start({ config, devNamespaces: { "pr-1": ["batch"] } });
//   const res = await h.get("www.hail.is", "/");         // HTTPS through Envoy
//   await h.setDevNamespaces({});                          // kubelet-style xDS swap
//   await h.stop();
//
// What is real: the Envoy binary, the bootstrap/CDS/RDS/SDS files exactly as
// renderGateway() writes them (only file paths, listener ports and address,
// and the DNS resolver remapped through RenderOptions), dnsmasq, openssl
// certificates. The pods, the ext_authz service and the ACME solver are small
// Node servers on their own 127.X.Y.Z addresses.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GatewayName, StackConfig } from "../../routing/config/schema.js";
import { extAuthzUse, type RenderOptions } from "../../routing/envoy/context.js";
import type { EnvoyPaths, ListenerPorts } from "../../routing/envoy/types.js";
import { gatewayPodsService, serviceHost, UPSTREAM_PORT } from "../../routing/names.js";
import { renderGateway, type GatewayFiles } from "../../routing/render.js";
import { buildRoutingTable, type DevNamespaces, type RoutingTable } from "../../routing/table.js";
import { TestPki, type Authority, type KeyPair } from "./certificates.js";
import { httpGet, httpsGet, type Endpoint, type RequestOptions, type Response } from "./client.js";
import { ConfigMapVolume } from "./configmap-volume.js";
import { ClusterDns } from "./dns.js";
import { EnvoyProcess } from "./envoy.js";
import { Pod, type PodRequest } from "./pods.js";
import { freeLoopbackSubnet, freeTcpPort, freeTcpPorts } from "./ports.js";
import { waitFor } from "./processes.js";

/** Addresses of the gateway's other pods (scaleGateway): 127.X.Y.200 and up; upstream pods stay below. */
const FIRST_PEER_ADDRESS = 200;
const LAST_POD_ADDRESS = FIRST_PEER_ADDRESS - 1;

/** What a Service's pods present to Envoy. */
export type PodCertificate = "valid" | "untrusted-ca" | "wrong-name";
export type AuthMode = "allow" | "deny" | "down";

export interface GatewayHarnessOptions {
  /** Validated stack config (parseStackConfig / loadStackFile). */
  config: StackConfig;
  /** Which gateway to run (default "gateway"). */
  gateway?: GatewayName;
  /** Dev/PR namespaces routed at start (default none). */
  devNamespaces?: DevNamespaces;
  /** Pods of a Service (default: production services their replicas, anything else 1). */
  podCount?: (namespace: string, service: string) => number | undefined;
  /** Certificate the pods of a Service present (default "valid"). */
  podCertificate?: (namespace: string, service: string) => PodCertificate | undefined;
  /** Envoy worker threads (default 2). */
  concurrency?: number;
  /** Keep the working directory (certificates, logs, files) after stop (default: false, or true when EG_HARNESS_KEEP=1). */
  keepWorkDir?: boolean;
  /** Envoy log level (default info). */
  logLevel?: string;
}

/** Another pod of the same gateway (scaleGateway): its own Envoy, address and admin port; the same files otherwise. */
export interface GatewayPeer {
  address: string;
  envoy: EnvoyProcess;
  /** Its TLS listener (the same port as the first pod's, on its own address). */
  https: Endpoint;
}

/** The pods behind one headless Service. */
export interface PodGroup {
  namespace: string;
  service: string;
  /** <service>.<namespace>.svc.<clusterDomain>: what DNS answers with every pod address. */
  host: string;
  port: number;
  pods: Pod[];
  certificate: KeyPair | undefined;
  requireClientCert: boolean;
}

/** One check request the ext_authz service received. */
export interface AuthCheck {
  method: string;
  path: string;
  headers: PodRequest["headers"];
  decision: AuthMode;
}

export class GatewayHarness {
  config: StackConfig;
  readonly gateway: GatewayName;
  readonly workDir: string;
  readonly paths: EnvoyPaths;
  /** Prefix of this harness's loopback /24: "127.X.Y". */
  subnet = "";
  /** Address every listener binds (the "pod address" of the gateway). */
  address = "";
  /** Address the tests connect from (X-Real-IP checks). */
  clientAddress = "";
  ports!: ListenerPorts;
  pki!: TestPki;
  ca!: Authority;
  otherCa!: Authority;
  dns!: ClusterDns;
  envoy!: EnvoyProcess;
  table!: RoutingTable;
  /** The files last rendered (bootstrap and xDS). */
  files!: GatewayFiles;
  readonly groups = new Map<string, PodGroup>();
  /** What the ext_authz service answers. */
  authMode: AuthMode = "allow";
  /** Check requests the ext_authz service saw, oldest first. */
  readonly authChecks: AuthCheck[] = [];
  /** The gateway's pods after the first (`envoy`), started by scaleGateway. */
  readonly peers: GatewayPeer[] = [];
  /** Envoys with a variant of the bootstrap (startVariantEnvoy). */
  private readonly variants: GatewayPeer[] = [];
  private nextAddress = 10;
  private readonly volumes: Record<keyof EnvoyPaths, ConfigMapVolume>;

  private constructor(private readonly options: GatewayHarnessOptions) {
    this.config = options.config;
    this.gateway = options.gateway ?? "gateway";
    this.workDir = mkdtempSync(join(tmpdir(), "eg-envoy-harness-"));
    this.paths = {
      bootstrapDir: join(this.workDir, "etc/envoy/bootstrap"),
      xdsDir: join(this.workDir, "etc/envoy/xds"),
      serverTlsDir: join(this.workDir, "etc/envoy/tls/server"),
      upstreamTlsDir: join(this.workDir, "etc/envoy/tls/upstream"),
    };
    this.volumes = {
      bootstrapDir: new ConfigMapVolume(this.paths.bootstrapDir),
      xdsDir: new ConfigMapVolume(this.paths.xdsDir),
      serverTlsDir: new ConfigMapVolume(this.paths.serverTlsDir),
      upstreamTlsDir: new ConfigMapVolume(this.paths.upstreamTlsDir),
    };
  }

  /** Starts everything; on any failure stops what was started and rethrows. */
  static async start(options: GatewayHarnessOptions): Promise<GatewayHarness> {
    const h = new GatewayHarness(options);
    try {
      await h.startAll();
      return h;
    } catch (e) {
      await h.stop();
      throw e;
    }
  }

  private async startAll(): Promise<void> {
    const config = this.config;
    this.pki = new TestPki(join(this.workDir, "pki"));
    this.ca = this.pki.authority("envoy-gateways test CA");
    this.otherCa = this.pki.authority("some other CA");
    this.writeGatewayCertificates();

    this.subnet = await freeLoopbackSubnet([
      { address: 1, ports: [443, 80] },
      { address: 10, ports: [443, 80] },
    ]);
    this.address = `${this.subnet}.1`;
    this.clientAddress = `${this.subnet}.2`;
    const [http, https, health, metrics] = await freeTcpPorts(this.address, 4);
    this.ports = {
      http: http!,
      https: https!,
      health: health!,
      metrics: metrics!,
      admin: await freeTcpPort("127.0.0.1"),
    };

    this.dns = new ClusterDns(this.workDir, config.clusterDomain);
    await this.dns.start();

    this.table = buildRoutingTable(config, this.options.devNamespaces ?? {});
    await this.ensurePods(this.table);
    // The headless Service of the gateway's own pods: this one, until scaleGateway adds more.
    await this.dns.setRecords({ [this.gatewayPodsHost]: [this.address] });
    this.files = this.render(this.table);
    this.volumes.bootstrapDir.write(this.files.bootstrap);
    this.volumes.xdsDir.write(this.files.xds);

    this.envoy = new EnvoyProcess({
      bootstrapPath: join(this.paths.bootstrapDir, "envoy.yaml"),
      adminUrl: `http://127.0.0.1:${this.ports.admin}`,
      concurrency: this.options.concurrency ?? 2,
      logDir: this.workDir,
      logLevel: this.options.logLevel,
    });
    await this.envoy.start();
  }

  /** The render options of this harness: paths, ports, listen address and DNS resolver remapped, nothing else. */
  renderOptions(): RenderOptions {
    return {
      paths: this.paths,
      ports: this.ports,
      listenAddress: this.address,
      dnsResolver: { address: this.dns.address, port: this.dns.port },
    };
  }

  private render(table: RoutingTable): GatewayFiles {
    return renderGateway(this.config, table, this.gateway, this.renderOptions());
  }

  /** The served certificate (every host of both domains) and Envoy's upstream client certificate with the CA. */
  private writeGatewayCertificates(): void {
    const c = this.config;
    const names = new Set<string>();
    for (const domain of [c.domain, c.internalDomain]) {
      names.add(domain);
      names.add(`*.${domain}`);
      // Exact names too: clients refuse a wildcard right under a one-label domain (*.hail).
      for (const s of c.services) names.add(`${s.name}.${domain}`);
    }
    for (const s of c.services) for (const a of s.aliases) names.add(a);
    for (const g of Object.values(c.gateways)) if (g.devHost) names.add(g.devHost);
    const server = this.pki.leaf(this.ca, "gateway-server", [...names]);
    this.volumes.serverTlsDir.write({ "tls.crt": server.cert, "tls.key": server.key });
    const client = this.pki.leaf(this.ca, "gateway-upstream-client", [
      serviceHost(this.gateway, c.namespace, c.clusterDomain),
    ]);
    this.volumes.upstreamTlsDir.write({ "tls.crt": client.cert, "tls.key": client.key, "ca.crt": this.ca.cert });
  }

  // ---- upstream pods ------------------------------------------------------

  private groupKey(namespace: string, service: string): string {
    return `${namespace}/${service}`;
  }

  /** The pods behind <service>.<namespace> (throws when there are none). */
  group(namespace: string, service: string): PodGroup {
    const g = this.groups.get(this.groupKey(namespace, service));
    if (!g) throw new Error(`the harness runs no pods for ${namespace}/${service}`);
    return g;
  }

  /** Pods of a production service (in the config's namespace). */
  productionPods(service: string): Pod[] {
    return this.group(this.config.namespace, service).pods;
  }

  private isAuth(namespace: string, service: string): boolean {
    return namespace === this.config.auth.namespace && service === this.config.auth.service;
  }

  /** Starts pods (and DNS records) for every upstream Service the table or the bootstrap refers to. */
  private async ensurePods(table: RoutingTable): Promise<void> {
    const c = this.config;
    const settings = c.gateways[this.gateway];
    const wanted: { namespace: string; service: string; kind: "production" | "dev" | "auth" | "acme" }[] = [];
    for (const s of table.production)
      for (const v of s.versions) wanted.push({ namespace: s.namespace, service: v.service, kind: "production" });
    for (const s of table.dev)
      for (const v of s.versions) wanted.push({ namespace: s.namespace, service: v.service, kind: "dev" });
    if (extAuthzUse(c, this.gateway).filter)
      wanted.push({ namespace: c.auth.namespace, service: c.auth.service, kind: "auth" });
    if (settings.acme) wanted.push({ namespace: c.acme.namespace, service: c.acme.service, kind: "acme" });
    for (const w of wanted) {
      if (this.groups.has(this.groupKey(w.namespace, w.service))) continue;
      const host = serviceHost(w.service, w.namespace, c.clusterDomain);
      const acme = w.kind === "acme";
      const port = acme ? c.acme.port : w.kind === "auth" ? c.auth.port : UPSTREAM_PORT;
      const mode = this.options.podCertificate?.(w.namespace, w.service) ?? "valid";
      const certificate = acme
        ? undefined
        : mode === "valid"
          ? this.pki.leaf(this.ca, host, [host])
          : mode === "untrusted-ca"
            ? this.pki.leaf(this.otherCa, host, [host])
            : this.pki.leaf(this.ca, host, [serviceHost(`not-${w.service}`, w.namespace, c.clusterDomain)]);
      const requireClientCert = !acme && (w.kind !== "dev" || c.devNamespaces.upstreamTls === "verify");
      const group: PodGroup = {
        namespace: w.namespace,
        service: w.service,
        host,
        port,
        pods: [],
        certificate,
        requireClientCert,
      };
      this.groups.set(this.groupKey(w.namespace, w.service), group);
      const production = c.services.find((s) => s.name === w.service && w.namespace === c.namespace);
      const count = this.options.podCount?.(w.namespace, w.service) ?? production?.replicas ?? 1;
      for (let i = 0; i < count; i++) await this.startPod(group, false);
      await this.dns.setRecords({ [host]: group.pods.map((p) => p.address) });
    }
  }

  private allocateAddress(): string {
    if (this.nextAddress > LAST_POD_ADDRESS)
      throw new Error(`no loopback address left for pods in ${this.subnet}.0/24`);
    return `${this.subnet}.${this.nextAddress++}`;
  }

  private async startPod(group: PodGroup, publish: boolean): Promise<Pod> {
    const index = group.pods.length;
    const pod = new Pod({
      id: `${group.namespace}/${group.service}-${index}`,
      service: group.host,
      address: this.allocateAddress(),
      port: group.port,
      tls: group.certificate
        ? {
            cert: group.certificate.cert,
            key: group.certificate.key,
            clientCa: this.ca.cert,
            requireClientCert: group.requireClientCert,
          }
        : undefined,
    });
    if (this.isAuth(group.namespace, group.service)) pod.handler = (req, res) => this.authorize(req, res);
    await pod.start();
    group.pods.push(pod);
    if (publish) await this.dns.setRecords({ [group.host]: group.pods.map((p) => p.address) });
    return pod;
  }

  /** A new pod for a Service, published in DNS (as a pod becoming ready). */
  async addPod(namespace: string, service: string): Promise<Pod> {
    return this.startPod(this.group(namespace, service), true);
  }

  /** Takes a pod out of DNS (as a pod no longer ready); it keeps listening until `stopPod`. */
  async unpublishPod(pod: Pod): Promise<void> {
    for (const g of this.groups.values()) {
      if (!g.pods.includes(pod)) continue;
      g.pods = g.pods.filter((p) => p !== pod);
      await this.dns.setRecords({ [g.host]: g.pods.map((p) => p.address) });
      return;
    }
    throw new Error(`pod ${pod.id} is not published`);
  }

  /** Every pod, published or not, for counters. */
  allPods(): Pod[] {
    return [...this.groups.values()].flatMap((g) => g.pods);
  }

  // ---- the gateway's own pods -------------------------------------------------

  /** DNS name of the headless Service of the gateway's pods (the bootstrap's local cluster). */
  get gatewayPodsHost(): string {
    return serviceHost(gatewayPodsService(this.gateway), this.config.namespace, this.config.clusterDomain);
  }

  /** Every running pod of the gateway: the first one, then the peers. */
  get gatewayEnvoys(): EnvoyProcess[] {
    return [this.envoy, ...this.peers.map((p) => p.envoy)];
  }

  /** The TLS listener of every running pod of the gateway, first one first. */
  get gatewayEndpoints(): Endpoint[] {
    return [this.https, ...this.peers.map((p) => p.https)];
  }

  /**
   * Runs `count` pods of this gateway, as the autoscaler would: starts or
   * stops peers (each an Envoy on its own address, with this gateway's files),
   * publishes them all in the headless Service's DNS, and waits until every
   * Envoy counts `count` hosts in its local cluster.
   */
  async scaleGateway(count: number): Promise<void> {
    if (!Number.isInteger(count) || count < 1 || count > 50)
      throw new Error(`scaleGateway: count must be 1..50 (got ${count})`);
    while (this.peers.length > count - 1) await this.peers.pop()!.envoy.stop();
    while (this.peers.length < count - 1) this.peers.push(await this.startPeer(this.peers.length));
    await this.dns.setRecords({ [this.gatewayPodsHost]: [this.address, ...this.peers.map((p) => p.address)] });
    for (const envoy of this.gatewayEnvoys) {
      await waitFor(
        `Envoy ${envoy.adminUrl} to count ${count} gateway pods`,
        30_000,
        async () => (await envoy.stat("cluster.gateway-pods.membership_total")) === count,
        100,
      );
    }
  }

  private async startPeer(index: number): Promise<GatewayPeer> {
    return this.startEnvoyAt(`${this.subnet}.${FIRST_PEER_ADDRESS + index}`, this.config, `gateway-pod-${index + 1}`);
  }

  /**
   * Another Envoy running this gateway's files rendered from `config` (a
   * variant of the harness's stack config that changes only the bootstrap,
   * such as the access log), on `address` of this harness's /24 with the same
   * listener ports and its own admin port; not published in DNS. For
   * benchmarks comparing bootstrap settings on the same pods.
   */
  async startVariantEnvoy(config: StackConfig, address: string, name: string): Promise<GatewayPeer> {
    const xds = renderGateway(config, this.table, this.gateway, this.renderOptions()).xds;
    if (JSON.stringify(xds) !== JSON.stringify(this.files.xds))
      throw new Error(`startVariantEnvoy(${name}): the config changes cds.yaml/rds.yaml, not only the bootstrap`);
    const peer = await this.startEnvoyAt(address, config, name);
    this.variants.push(peer);
    return peer;
  }

  private async startEnvoyAt(address: string, config: StackConfig, name: string): Promise<GatewayPeer> {
    const ports = { ...this.ports, admin: await freeTcpPort("127.0.0.1") };
    // The same files as the first pod (the SDS files and the xDS directory are shared), listening on its own address.
    const files = renderGateway(config, this.table, this.gateway, {
      ...this.renderOptions(),
      listenAddress: address,
      ports,
    });
    const dir = join(this.workDir, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "envoy.yaml"), files.bootstrap["envoy.yaml"]!);
    const envoy = new EnvoyProcess({
      bootstrapPath: join(dir, "envoy.yaml"),
      adminUrl: `http://127.0.0.1:${ports.admin}`,
      concurrency: this.options.concurrency ?? 2,
      logDir: dir,
      logLevel: this.options.logLevel,
    });
    await envoy.start();
    return { address, envoy, https: { address, port: this.ports.https, ca: this.ca.cert } };
  }

  // ---- ext_authz -----------------------------------------------------------

  /** Switches the ext_authz service: allow (200), deny (401) or down (its pods stop listening). */
  async setAuthMode(mode: AuthMode): Promise<void> {
    const group = this.group(this.config.auth.namespace, this.config.auth.service);
    this.authMode = mode;
    for (const pod of group.pods) {
      if (mode === "down") await pod.stop();
      else await pod.start();
    }
  }

  private authorize(req: PodRequest, res: import("node:http").ServerResponse): boolean {
    if (!req.path.startsWith(this.config.auth.pathPrefix)) return false; // the auth service's own pages: echo
    const decision = this.authMode;
    this.authChecks.push({ method: req.method, path: req.path, headers: req.headers, decision });
    if (decision === "allow") {
      res.writeHead(200, { "content-length": 0, "x-auth-user": "test-user" });
      res.end();
    } else {
      const body = "not signed in";
      res.writeHead(401, { "content-type": "text/plain", "content-length": Buffer.byteLength(body) });
      res.end(body);
    }
    return true;
  }

  // ---- routes ---------------------------------------------------------------

  /**
   * Renders the routes for these dev/PR namespaces (production unchanged),
   * starts pods for new Services and swaps the xDS files in like the kubelet.
   */
  async setDevNamespaces(devNamespaces: DevNamespaces, now: Date = new Date()): Promise<GatewayFiles> {
    const table = buildRoutingTable(this.config, devNamespaces, "dev namespaces", now);
    await this.ensurePods(table);
    const files = this.render(table);
    this.table = table;
    this.files = files;
    this.volumes.xdsDir.write(files.xds);
    return files;
  }

  /**
   * Applies a changed stack config (production services, limits, ...) through
   * the xDS files, as the routes resource would. Throws when the change also
   * needs a new bootstrap (listeners, TLS, auth service...): restart for those.
   */
  async setConfig(config: StackConfig, devNamespaces: DevNamespaces): Promise<GatewayFiles> {
    const table = buildRoutingTable(config, devNamespaces);
    const files = renderGateway(config, table, this.gateway, this.renderOptions());
    const changed = Object.keys({ ...files.bootstrap, ...this.files.bootstrap }).filter(
      (k) => files.bootstrap[k] !== this.files.bootstrap[k],
    );
    if (changed.length)
      throw new Error(`the change needs a new bootstrap (${changed.join(", ")} differ): restart the harness`);
    this.config = config;
    await this.ensurePods(table);
    this.table = table;
    this.files = files;
    this.volumes.xdsDir.write(files.xds);
    return files;
  }

  /** Swaps arbitrary xDS file contents in (bypassing the validator), like a hand-edited ConfigMap. */
  writeXdsFiles(files: Record<string, string>): void {
    this.volumes.xdsDir.write(files);
  }

  /** How many times the xDS directory was swapped. */
  get xdsSwaps(): number {
    return this.volumes.xdsDir.swaps;
  }

  // ---- clients ----------------------------------------------------------------

  /** The TLS listener, trusting the test CA. */
  get https(): Endpoint {
    return { address: this.address, port: this.ports.https, ca: this.ca.cert };
  }

  get http(): Endpoint {
    return { address: this.address, port: this.ports.http };
  }

  /** Public host of a production service on this gateway. */
  productionHost(service: string): string {
    return `${service}.${this.config.gateways[this.gateway].domain}`;
  }

  /** Host of the dev/PR routes on this gateway. */
  get devHost(): string {
    return this.config.gateways[this.gateway].devHost;
  }

  /** HTTPS request through Envoy, from the harness's client address. */
  get(host: string, path: string, options: Partial<RequestOptions> = {}): Promise<Response> {
    return httpsGet(this.https, { localAddress: this.clientAddress, ...options, host, path });
  }

  /** Plain-HTTP request through Envoy's HTTP listener. */
  getPlain(host: string, path: string, options: Partial<RequestOptions> = {}): Promise<Response> {
    return httpGet(this.http, { localAddress: this.clientAddress, ...options, host, path });
  }

  /** Envoy's log and the working directory, for failure messages. */
  diagnostics(): string {
    return `work dir ${this.workDir}\n--- envoy log (tail) ---\n${this.envoy?.log().slice(-8000) ?? ""}`;
  }

  /** Stops Envoy, dnsmasq and every pod; removes the working directory unless keepWorkDir. */
  async stop(): Promise<void> {
    const errors: unknown[] = [];
    const attempt = async (f: () => Promise<void> | undefined) => {
      try {
        await f();
      } catch (e) {
        errors.push(e);
      }
    };
    await attempt(() => this.envoy?.stop());
    for (const peer of [...this.peers, ...this.variants]) await attempt(() => peer.envoy.stop());
    for (const pod of this.allPods()) await attempt(() => pod.stop());
    await attempt(() => this.dns?.stop());
    const keep = this.options.keepWorkDir ?? process.env.EG_HARNESS_KEEP === "1";
    if (keep) console.error(`envoy harness: kept ${this.workDir}`);
    else rmSync(this.workDir, { recursive: true, force: true });
    if (errors.length) throw errors[0];
  }
}
