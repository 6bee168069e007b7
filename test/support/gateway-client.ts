// A client of the gateway pods on the local node, as a cloud load balancer in
// front of them would be: it follows the gateway Service's EndpointSlices and
// sends each request to a ready gateway pod (its pod IP, port 8443, straight
// from the host, as a load balancer with pod targets does), or to the Service's
// node port (`viaNodePort`: kube-proxy picks the pod); HTTPS with the public host
// as SNI and Host, trusting the cluster's services CA. Plus a bounded load generator.
import { CoreV1Api, DiscoveryV1Api, KubeConfig } from "@kubernetes/client-node";
import { Agent, request } from "node:https";
import type { IncomingHttpHeaders } from "node:http";
import type { LocalCluster } from "./cluster.js";
import { servicesCa } from "./local-stack.js";

/** What the stand-in pods answer (JSON), see tools/pod-images/standin. */
export interface PodAnswer {
  pod: string;
  namespace: string;
  /** The Service name on the pod's certificate. */
  service: string;
  /** The TLS server name (SNI) the gateway asked the pod for. */
  serverName: string;
  method: string;
  path: string;
  host: string;
  headers: Record<string, string[]>;
  remoteAddress: string;
  /** Subject CN of the client certificate the gateway presented, if any. */
  clientCertificate?: string;
}

export interface GatewayResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The gateway pod that answered. */
  gatewayPod: string;
  /**
   * Sent again on a new connection: the kept-alive one it went out on was closed
   * before any answer (a gateway pod closing its idle connections as it drains).
   */
  retried?: true;
  /** The stand-in pod's answer (throws if the body is not one). */
  answer(): PodAnswer;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  method?: string;
  /** Default 10 s. */
  timeoutMs?: number;
  /** Reuse pooled connections (default true). */
  keepAlive?: boolean;
}

/** Where a request goes: an address and port, and what the reports call it (a gateway pod's name). */
export interface Endpoint {
  address: string;
  port: number;
  pod: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class GatewayClient {
  /** Ready gateway pods, as the EndpointSlices list them now. */
  endpoints: Endpoint[] = [];
  private next = 0;
  private stopped = false;
  private readonly agents = new Map<string, Agent>();
  private poller: Promise<void> | undefined;

  private constructor(
    readonly ca: string,
    readonly namespace: string,
    readonly gateway: string,
  ) {}

  /**
   * A client that sends every request to the node port of the Service `service` on the
   * node's address, as a cloud load balancer does: kube-proxy picks the pod, whatever the
   * Service selects (the old world's NGINX, or the Envoy gateways after the cutover).
   */
  static async viaNodePort(cluster: LocalCluster, service: string, namespace = "default"): Promise<GatewayClient> {
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const found = await kc.makeApiClient(CoreV1Api).readNamespacedService({ name: service, namespace });
    const nodePort = found.spec?.ports?.find((p) => p.name === "https")?.nodePort;
    if (!nodePort) throw new Error(`Service ${namespace}/${service} has no node port named https`);
    const endpoint = { address: cluster.node.ip, port: nodePort, pod: `node port ${nodePort} of ${service}` };
    return GatewayClient.fixed(servicesCa(cluster).cert, endpoint, service, namespace);
  }

  /** A client that sends every request to one address and port, trusting `ca`, as the Service `gateway` in `namespace`. */
  static fixed(ca: string, endpoint: Endpoint, gateway: string, namespace = "default"): GatewayClient {
    const client = new GatewayClient(ca, namespace, gateway);
    client.endpoints = [endpoint];
    return client;
  }

  /** Starts following the gateway Service's ready endpoints; waits until there is one. */
  static async start(
    cluster: LocalCluster,
    gateway = "gateway",
    namespace = "default",
    pollMs = 200,
  ): Promise<GatewayClient> {
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const discovery = kc.makeApiClient(DiscoveryV1Api);
    const client = new GatewayClient(servicesCa(cluster).cert, namespace, gateway);
    await client.refresh(discovery);
    client.poller = (async () => {
      while (!client.stopped) {
        await sleep(pollMs);
        await client.refresh(discovery).catch(() => undefined); // keep the last list while the API is unreachable
      }
    })();
    const deadline = Date.now() + 120_000;
    while (client.endpoints.length === 0) {
      if (Date.now() > deadline) throw new Error(`no ready pod of Service ${namespace}/${gateway} within 120 s`);
      await sleep(pollMs);
      await client.refresh(discovery).catch(() => undefined);
    }
    return client;
  }

  /** The ready pods of the Service, as its EndpointSlices list them now. */
  private async refresh(discovery: DiscoveryV1Api): Promise<void> {
    const slices = await discovery.listNamespacedEndpointSlice({
      namespace: this.namespace,
      labelSelector: `kubernetes.io/service-name=${this.gateway}`,
    });
    const endpoints: Endpoint[] = [];
    for (const slice of slices.items) {
      const port = slice.ports?.find((p) => p.name === "https")?.port;
      if (!port) continue;
      for (const e of slice.endpoints ?? []) {
        if (e.conditions?.ready !== true) continue;
        for (const address of e.addresses) endpoints.push({ address, port, pod: e.targetRef?.name ?? address });
      }
    }
    endpoints.sort((a, b) => a.address.localeCompare(b.address));
    this.endpoints = endpoints;
  }

  private agent(address: string): Agent {
    let agent = this.agents.get(address);
    if (!agent) this.agents.set(address, (agent = new Agent({ keepAlive: true, maxSockets: 64, ca: this.ca })));
    return agent;
  }

  /**
   * One HTTPS request through a ready gateway pod (round robin across them). A GET
   * or HEAD whose kept-alive connection closes before any answer is sent once more
   * on a new connection, as HTTP clients do (RFC 9112 9.3.1; browsers, curl, Go):
   * a server may close an idle connection at any time, and one that drains does.
   */
  request(host: string, path: string, options: RequestOptions = {}): Promise<GatewayResponse> {
    if (this.endpoints.length === 0)
      return Promise.reject(new Error(`no ready pod of Service ${this.namespace}/${this.gateway}`));
    const endpoint = this.endpoints[this.next++ % this.endpoints.length]!;
    const idempotent = ["GET", "HEAD"].includes(options.method ?? "GET");
    return this.send(endpoint, host, path, options).catch((e: Error & { reusedSocket?: boolean }) => {
      if (!(e.reusedSocket && idempotent)) throw e;
      return this.send(endpoint, host, path, { ...options, keepAlive: false }).then((r) => ({
        ...r,
        retried: true as const,
      }));
    });
  }

  /** One attempt; an error says whether it went out on a kept-alive connection (`reusedSocket`) and got no answer. */
  private send(endpoint: Endpoint, host: string, path: string, options: RequestOptions): Promise<GatewayResponse> {
    return new Promise((resolve, reject) => {
      const req = request({
        host: endpoint.address,
        port: endpoint.port,
        path,
        method: options.method ?? "GET",
        servername: host,
        headers: { host, ...(options.headers ?? {}) },
        setHost: false,
        ca: this.ca,
        agent: options.keepAlive === false ? false : this.agent(endpoint.address),
        timeout: options.timeoutMs ?? 10_000,
      });
      req.on("timeout", () => req.destroy(new Error(`request ${host}${path} via ${endpoint.pod} timed out`)));
      // Once the answer has begun, a closed connection is an error of the response (res), not of the request.
      req.on("error", (e) => reject(Object.assign(e, { gatewayPod: endpoint.pod, reusedSocket: req.reusedSocket })));
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            gatewayPod: endpoint.pod,
            answer: () => {
              try {
                return JSON.parse(body) as PodAnswer;
              } catch {
                throw new Error(
                  `not a pod's answer (status ${res.statusCode} via ${endpoint.pod}): ${body.slice(0, 300)}`,
                );
              }
            },
          });
        });
      });
      req.end();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.poller;
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

/** One request of a load run. */
export interface Sample {
  /** ms since the run started (performance.now() - t0), when it was sent and when it ended. */
  sent: number;
  done: number;
  status: number;
  /** The pod that answered (its answer's name), for 200s from a stand-in pod. */
  pod?: string;
  /** The gateway pod it went through. */
  via?: string;
  /** The product in its answer's Server header (envoy, nginx), for answers that have one. */
  server?: string;
  /** Sent again on a new connection after the kept-alive one closed before any answer (GatewayResponse.retried). */
  retried?: true;
  /** The start of the answer's body, for answers other than 200: Envoy's local replies say why ("Sub cluster warming timeout", "no healthy upstream"). */
  body?: string;
  error?: string;
}

export interface LoadOptions {
  /** Requests started per second (paced). */
  rate: number;
  /** Stops starting requests after this long... */
  maxMs: number;
  /** ...or after this many, whichever comes first. */
  maxRequests: number;
  /** At most this many in flight (default 16). */
  concurrency?: number;
}

/** The outcome of a load run. */
export interface LoadResult {
  samples: Sample[];
  failures: Sample[];
  /** Requests per pod (answers of 200). */
  byPod: Map<string, number>;
}

/** A load run in progress. */
export interface Load {
  /** performance.now() when it started: the origin of every sample's times. */
  t0: number;
  /** The samples so far, in the order they ended. */
  samples: Sample[];
  /** ms since t0. */
  now(): number;
  /** Starts no more requests; `result` resolves once the last one ended. */
  stop(): void;
  result: Promise<LoadResult>;
}

/**
 * Sends `send()` at a steady rate, bounded in count and time, with at most
 * `concurrency` requests in flight. A request fails when it errors or its
 * status is not 200.
 */
export function startLoad(send: () => Promise<GatewayResponse>, options: LoadOptions): Load {
  const samples: Sample[] = [];
  const t0 = performance.now();
  const concurrency = options.concurrency ?? 16;
  const interval = 1000 / options.rate;
  let stopped = false;
  const now = () => performance.now() - t0;
  const run = async (): Promise<LoadResult> => {
    const inFlight = new Set<Promise<void>>();
    for (let i = 0; i < options.maxRequests && !stopped; i++) {
      const due = i * interval;
      if (now() > options.maxMs) break;
      if (due > now()) await sleep(due - now());
      while (inFlight.size >= concurrency) await Promise.race(inFlight);
      if (stopped) break;
      const sent = now();
      const p = send().then(
        (r) => {
          let pod: string | undefined;
          if (r.status === 200) {
            try {
              pod = r.answer().pod;
            } catch {
              pod = undefined;
            }
          }
          samples.push({
            sent,
            done: now(),
            status: r.status,
            pod,
            via: r.gatewayPod,
            server: serverProduct(r),
            ...(r.retried ? { retried: r.retried } : {}),
            ...(r.status !== 200 ? { body: r.body.slice(0, FAILED_BODY_CHARS) } : {}),
          });
        },
        (e: Error & { gatewayPod?: string }) => {
          samples.push({ sent, done: now(), status: 0, via: e.gatewayPod, error: e.message });
        },
      );
      const tracked: Promise<void> = p.finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
    }
    await Promise.all(inFlight);
    const sorted = [...samples].sort((a, b) => a.sent - b.sent);
    const byPod = new Map<string, number>();
    for (const s of sorted) if (s.status === 200 && s.pod) byPod.set(s.pod, (byPod.get(s.pod) ?? 0) + 1);
    return { samples: sorted, failures: sorted.filter((s) => s.status !== 200), byPod };
  };
  return { t0, samples, now, stop: () => (stopped = true), result: run() };
}

/** How much of a failed answer's body a sample keeps. */
const FAILED_BODY_CHARS = 120;

/** The product in a response's Server header (`envoy`, `nginx`), without its version; undefined without one. */
export function serverProduct(r: Pick<GatewayResponse, "headers">): string | undefined {
  return r.headers.server ? String(r.headers.server).split("/")[0] : undefined;
}

/** startLoad() to its end. */
export function runLoad(send: () => Promise<GatewayResponse>, options: LoadOptions): Promise<LoadResult> {
  return startLoad(send, options).result;
}

/** ", 2 sent again on a new connection after a gateway pod closed a kept-alive one before answering", or "" for none. */
export function describeRetries(result: Pick<LoadResult, "samples">): string {
  const retried = result.samples.filter((s) => s.retried).length;
  return retried
    ? `, ${retried} sent again on a new connection after a gateway pod closed a kept-alive one before answering`
    : "";
}

/** "3 of 1200 failed: 503 at 10.20 s; ..." for messages. */
export function describeFailures(result: Pick<LoadResult, "samples" | "failures">, limit = 10): string {
  const f = result.failures;
  if (f.length === 0) return `0 of ${result.samples.length} failed`;
  const shown = f
    .slice(0, limit)
    .map(
      (s) =>
        `${s.status || s.error} at ${(s.sent / 1000).toFixed(2)} s${s.via ? ` via ${s.via}` : ""}` +
        (s.body ? ` (${JSON.stringify(s.body.trim())})` : ""),
    );
  return `${f.length} of ${result.samples.length} failed: ${shown.join("; ")}${f.length > limit ? "; ..." : ""}`;
}
