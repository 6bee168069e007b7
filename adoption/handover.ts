// Turning a live ClusterIP Service headless without deleting it.
//
// Kubernetes refuses to change `clusterIP` in place, and deleting the Service leaves its
// name unresolvable until it is created again. Its type is not immutable, though, and
// the hand-over goes through ExternalName:
//
//   1. a temporary headless Service `<name>-handover` with the same selector and ports:
//      its name resolves to the ready pods' addresses;
//   2. `<name>` becomes `type: ExternalName` pointing at it (one request, which also
//      records the old cluster IP in an annotation): the name now answers a CNAME to
//      the same pods. Its cluster IP is released and taken at once by a second temporary
//      Service, `<name>-handover-ip` (ClusterIP, same selector), so that clients still
//      holding the old address (a DNS cache, an open connection) keep reaching the pods;
//   3. after the DNS grace (how long a client may keep an answer), `<name>` becomes
//      headless (`type: ClusterIP`, `clusterIP: None`). The endpoint slice controller
//      leaves an ExternalName Service's slices alone, so the pods' addresses are there
//      from the first answer: no empty (NXDOMAIN) answer in between, which would empty an
//      Envoy DNS cluster;
//   4. after another grace (for the CNAME), the temporary Services go.
//
// Every step is decided from what the cluster holds, so a hand-over stopped anywhere
// (a killed CI job) resumes where it stopped when run again, and running it on a
// Service that is already headless does nothing.
import * as k8s from "@kubernetes/client-node";
import { describeKubeError, withTimeout } from "../kube/client.js";

/** On a Service during its hand-over: the cluster IP it had. */
export const HANDOVER_ANNOTATION = "envoy-gateways.io/handover-cluster-ip";
/** On the temporary Services: the Service they stand in for. */
export const HANDOVER_LABEL = "envoy-gateways.io/handover-of";

/** Longest Service name whose temporary names (`<name>-handover-ip`) are still DNS labels. */
export const MAX_NAME_LENGTH = 63 - "-handover-ip".length;

export interface HandoverOptions {
  namespace: string;
  name: string;
  /** The cluster's DNS domain (cluster.local): the ExternalName target is `<name>-handover.<namespace>.svc.<domain>`. */
  clusterDomain: string;
  /** How long clients may keep a DNS answer; waited after each change of what the name answers. */
  dnsGraceMs: number;
  /** How long the pods' addresses may take to appear on a Service's EndpointSlices. */
  endpointsTimeoutMs?: number;
  log?: (line: string) => void;
}

/** What one hand-over did: its steps in order, with how long each took. */
export interface HandoverReport {
  service: string;
  /** The cluster IP it had ("" when it was already headless before this run). */
  clusterIP: string;
  steps: { step: string; ms: number }[];
}

/** Where a Service stands, read from the cluster. */
export type ServiceStage =
  | { stage: "cluster-ip"; clusterIP: string }
  | { stage: "external-name"; clusterIP: string }
  | { stage: "headless"; clusterIP: string; handingOver: boolean }
  | { stage: "unsupported"; reason: string };

/** Reads where a Service stands in its hand-over (a pure function of the object). */
export function stageOf(service: k8s.V1Service, handoverTarget: string): ServiceStage {
  const spec = service.spec ?? {};
  const held = service.metadata?.annotations?.[HANDOVER_ANNOTATION] ?? "";
  const type = spec.type ?? "ClusterIP";
  if (!spec.selector || Object.keys(spec.selector).length === 0)
    return {
      stage: "unsupported",
      reason: "it has no selector (its endpoints are kept by hand, so a headless Service would have none)",
    };
  if (type === "ClusterIP" && spec.clusterIP === "None")
    return { stage: "headless", clusterIP: held, handingOver: !!held };
  if (type === "ClusterIP" && spec.clusterIP) return { stage: "cluster-ip", clusterIP: spec.clusterIP };
  if (type === "ExternalName" && held && spec.externalName === handoverTarget)
    return { stage: "external-name", clusterIP: held };
  if (type === "ExternalName")
    return { stage: "unsupported", reason: `it is an ExternalName Service pointing at ${spec.externalName}` };
  return {
    stage: "unsupported",
    reason: `it is a ${type} Service (only ClusterIP Services are turned headless; entry points stay as they are)`,
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function handoverNames(name: string): { headless: string; clusterIp: string } {
  return { headless: `${name}-handover`, clusterIp: `${name}-handover-ip` };
}

/** Turns one ClusterIP Service headless (see the top of this file), or resumes a hand-over. */
export async function handOver(kc: k8s.KubeConfig, o: HandoverOptions): Promise<HandoverReport> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
  const { namespace, name } = o;
  const where = `Service ${namespace}/${name}`;
  const log = o.log ?? (() => undefined);
  if (name.length > MAX_NAME_LENGTH)
    throw new Error(
      `${where}: its name has ${name.length} characters; the hand-over's temporary Services need it to have at most ${MAX_NAME_LENGTH}`,
    );
  const temp = handoverNames(name);
  const target = `${temp.headless}.${namespace}.svc.${o.clusterDomain}`;
  const report: HandoverReport = { service: `${namespace}/${name}`, clusterIP: "", steps: [] };
  const step = async (label: string, run: () => Promise<void>) => {
    const t0 = performance.now();
    log(`${where}: ${label}`);
    await run();
    report.steps.push({ step: label, ms: Math.round(performance.now() - t0) });
  };
  const api = async <T>(action: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (e) {
      throw describeKubeError(kc, action, e);
    }
  };
  const read = () => api(`reading ${where}`, () => core.readNamespacedService({ name, namespace }, withTimeout()));

  let service = await read();
  let stage = stageOf(service, target);
  if (stage.stage === "unsupported") throw new Error(`${where} cannot be turned headless: ${stage.reason}`);
  report.clusterIP = stage.clusterIP;
  const selector = service.spec!.selector!;
  const ports = (service.spec!.ports ?? []).map((p) => ({
    name: p.name,
    port: p.port,
    targetPort: p.targetPort,
    protocol: p.protocol,
    appProtocol: p.appProtocol,
  }));
  const temporary = (tempName: string, spec: k8s.V1ServiceSpec): k8s.V1Service => ({
    metadata: { name: tempName, namespace, labels: { [HANDOVER_LABEL]: name } },
    spec: { selector, ports, publishNotReadyAddresses: false, ...spec },
  });

  if (stage.stage === "headless" && !stage.handingOver) {
    await cleanUp(); // temporary Services of an earlier run stopped after its last step
    return report;
  }

  if (stage.stage === "cluster-ip") {
    const clusterIP = stage.clusterIP;
    await step(`a headless stand-in ${temp.headless} with the same pods`, async () => {
      await createIfMissing(temporary(temp.headless, { clusterIP: "None" }));
      const want = await readyAddresses(name);
      if (want.length === 0) throw new Error(`${where} has no ready endpoint: nothing to hand over to; fix it first`);
      await waitAddresses(temp.headless, want);
      // CoreDNS learns of the new Service from its own watch: give it a moment.
      await sleep(Math.min(2000, o.dnsGraceMs));
    });
    await step(`${name} -> ExternalName ${target}, its cluster IP ${clusterIP} kept by ${temp.clusterIp}`, async () => {
      await api(`making ${where} an ExternalName Service`, () =>
        core.patchNamespacedService(
          {
            name,
            namespace,
            body: {
              metadata: { annotations: { [HANDOVER_ANNOTATION]: clusterIP } },
              spec: {
                type: "ExternalName",
                externalName: target,
                clusterIP: null,
                clusterIPs: null,
                ipFamilies: null,
                ipFamilyPolicy: null,
                internalTrafficPolicy: null,
              },
            },
          },
          withTimeout(k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch)),
        ),
      );
      await holdClusterIp(clusterIP);
    });
    service = await read();
    stage = stageOf(service, target);
  }

  if (stage.stage === "external-name") {
    const clusterIP = stage.clusterIP;
    // A run stopped right after the type change may have left the address unheld.
    await holdClusterIp(clusterIP);
    await step(`DNS grace: clients drop the cluster IP (${o.dnsGraceMs} ms)`, () => sleep(o.dnsGraceMs));
    await step(`${name} -> headless, answering with its pods`, async () => {
      await api(`making ${where} headless`, () =>
        core.patchNamespacedService(
          { name, namespace, body: { spec: { type: "ClusterIP", clusterIP: "None", externalName: null } } },
          withTimeout(k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch)),
        ),
      );
      await waitAddresses(name, await readyAddresses(temp.headless), true);
    });
    service = await read();
    stage = stageOf(service, target);
  }

  if (stage.stage === "headless") {
    await step(`DNS grace: clients drop the CNAME (${o.dnsGraceMs} ms)`, () => sleep(o.dnsGraceMs));
    await step(`the stand-ins ${temp.headless} and ${temp.clusterIp} removed`, cleanUp);
  }
  return report;

  async function cleanUp(): Promise<void> {
    for (const tempName of [temp.clusterIp, temp.headless]) {
      await api(`deleting the stand-in Service ${namespace}/${tempName}`, () =>
        core.deleteNamespacedService({ name: tempName, namespace }, withTimeout()).catch((e: unknown) => {
          if (!(e instanceof k8s.ApiException && e.code === 404)) throw e;
        }),
      );
    }
    if (service.metadata?.annotations?.[HANDOVER_ANNOTATION] !== undefined)
      await api(`removing the hand-over annotation of ${where}`, () =>
        core.patchNamespacedService(
          { name, namespace, body: { metadata: { annotations: { [HANDOVER_ANNOTATION]: null } } } },
          withTimeout(k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch)),
        ),
      );
  }

  async function createIfMissing(body: k8s.V1Service): Promise<boolean> {
    try {
      await core.createNamespacedService({ namespace, body }, withTimeout());
      return true;
    } catch (e) {
      if (e instanceof k8s.ApiException && e.code === 409) return false;
      throw describeKubeError(kc, `creating the stand-in Service ${namespace}/${body.metadata!.name}`, e);
    }
  }

  /**
   * Gives the released cluster IP to `<name>-handover-ip` (unless an earlier run did); if
   * another Service took it meanwhile, says which and goes on.
   */
  async function holdClusterIp(clusterIP: string): Promise<void> {
    const deadline = Date.now() + 5000;
    for (;;) {
      try {
        await core.createNamespacedService(
          { namespace, body: temporary(temp.clusterIp, { type: "ClusterIP", clusterIP, clusterIPs: [clusterIP] }) },
          withTimeout(),
        );
        return;
      } catch (e) {
        if (e instanceof k8s.ApiException && e.code === 409) return; // held already
        // The API server checks the address before the name: an existing stand-in gets 422 too.
        const allocated = e instanceof k8s.ApiException && e.code === 422 && /already allocated/.test(String(e.body));
        if (!allocated) throw describeKubeError(kc, `creating the stand-in Service ${namespace}/${temp.clusterIp}`, e);
        const holder = await holderOf(clusterIP);
        if (holder.service === `${namespace}/${temp.clusterIp}`) return;
        if (Date.now() < deadline) {
          await sleep(100);
          continue;
        }
        log(`${where}: its old cluster IP ${clusterIP} is ${holder.words}; clients still using it fail`);
        return;
      }
    }
  }

  /** Who holds a cluster IP: the Service the API server's IPAddress object names. */
  async function holderOf(ip: string): Promise<{ service?: string; words: string }> {
    try {
      const held = await kc.makeApiClient(k8s.NetworkingV1Api).readIPAddress({ name: ip }, withTimeout());
      const ref = held.spec?.parentRef;
      if (!ref) return { words: "allocated" };
      const service = `${ref.namespace}/${ref.name}`;
      return {
        service: ref.resource === "services" ? service : undefined,
        words: `held by ${ref.resource} ${service}`,
      };
    } catch (e) {
      return { words: `still allocated (${describeKubeError(kc, `reading IPAddress ${ip}`, e).message})` };
    }
  }

  /** The ready addresses of a Service's EndpointSlices, sorted. */
  async function readyAddresses(service: string, controllerOnly = false): Promise<string[]> {
    const slices = await api(`listing the EndpointSlices of ${namespace}/${service}`, () =>
      discovery.listNamespacedEndpointSlice(
        { namespace, labelSelector: `kubernetes.io/service-name=${service}` },
        withTimeout(),
      ),
    );
    const addresses = slices.items
      .filter((s) => !controllerOnly || s.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"])
      .flatMap((s) => (s.endpoints ?? []).filter((e) => e.conditions?.ready === true).flatMap((e) => e.addresses));
    return [...new Set(addresses)].sort();
  }

  async function waitAddresses(service: string, want: string[], controllerOnly = false): Promise<void> {
    const deadline = Date.now() + (o.endpointsTimeoutMs ?? 60_000);
    let have: string[] = [];
    while (Date.now() < deadline) {
      have = await readyAddresses(service, controllerOnly);
      if (have.length > 0 && want.every((a) => have.includes(a))) return;
      await sleep(200);
    }
    throw new Error(
      `${namespace}/${service}: its EndpointSlices list ${have.join(", ") || "no ready address"} after ${(o.endpointsTimeoutMs ?? 60_000) / 1000} s, waiting for ${want.join(", ")}`,
    );
  }
}
