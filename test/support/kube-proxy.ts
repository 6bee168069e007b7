// kube-proxy's rules on the local node (nftables mode, table `ip kube-proxy`), read with
// nft as the tests' root user. Tests wait for these rules before they connect to a Service
// address; they never probe it by connecting. A connection made before kube-proxy serves
// the address is not translated: it reaches the node itself and is refused, and conntrack
// keeps that untranslated entry (SYN_SENT, 120 s). A later connection that happens to
// reuse the source port matches the entry, is not translated either, and is refused too.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { until } from "./workloads.js";

const run = promisify(execFile);

/** A Service address kube-proxy translates: a node port on the node's addresses, or a cluster IP and port. */
export type ServiceAddress = { nodePort: number } | { clusterIp: string; port: number };

/** kube-proxy's whole nftables table, as `nft list table ip kube-proxy` prints it. */
export async function kubeProxyRules(): Promise<string> {
  return (await run("nft", ["list", "table", "ip", "kube-proxy"])).stdout;
}

/**
 * The element of kube-proxy's verdict maps that sends new connections to `address` on to the
 * Service's endpoints. kube-proxy writes it only while the Service has a ready endpoint (an
 * address without one is in its no-endpoint maps instead, and refused).
 */
export function serviceMapElement(address: ServiceAddress): string {
  return "nodePort" in address
    ? `tcp . ${address.nodePort} : goto `
    : `${address.clusterIp} . tcp . ${address.port} : goto `;
}

/** Waits until kube-proxy sends new connections to every address on to a ready endpoint. */
export async function untilKubeProxyServes(
  what: string,
  addresses: ServiceAddress[],
  timeoutMs = 60_000,
): Promise<void> {
  await until(`kube-proxy to serve ${what}`, timeoutMs, async () => {
    const rules = await kubeProxyRules();
    return addresses.every((a) => rules.includes(serviceMapElement(a)));
  });
}
