// Free ports and loopback addresses chosen at run time, so that several
// harnesses (parallel test runs, a benchmark next to a test) never collide.
import { createSocket } from "node:dgram";
import { createServer } from "node:net";

/** A TCP port free on `address` right now (the OS picks it). */
export async function freeTcpPort(address = "127.0.0.1"): Promise<number> {
  return (await freeTcpPorts(address, 1))[0]!;
}

/**
 * `count` different TCP ports free on `address` right now: each held open until all are
 * chosen (ports picked one after another can repeat, as the OS may hand a just-closed
 * port out again: the on-demand suite once got the same one for two listeners).
 */
export async function freeTcpPorts(address: string, count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once("error", reject);
          server.listen({ host: address, port: 0, exclusive: true }, () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/** True when `port` can be bound on `address` for TCP. */
export function tcpPortFree(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ host: address, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** True when `port` can be bound on `address` for UDP. */
export function udpPortFree(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket("udp4");
    socket.once("error", () => {
      socket.close();
      resolve(false);
    });
    socket.bind({ address, port, exclusive: true }, () => socket.close(() => resolve(true)));
  });
}

/** A port free for both TCP and UDP on `address` (for a DNS server). */
export async function freeTcpUdpPort(address = "127.0.0.1"): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await freeTcpPort(address);
    if (await udpPortFree(address, port)) return port;
  }
  throw new Error(`no port free for both TCP and UDP on ${address} after 50 tries`);
}

/**
 * A /24 of loopback addresses (127.X.Y.0/24, X and Y random, avoiding
 * 127.0.0.0/16) where nothing listens on the ports given: the gateway and the
 * pods of one harness live there. Returns the prefix "127.X.Y".
 */
export async function freeLoopbackSubnet(probe: { address: number; ports: number[] }[]): Promise<string> {
  for (let i = 0; i < 50; i++) {
    const x = 1 + Math.floor(Math.random() * 254);
    const y = Math.floor(Math.random() * 256);
    const prefix = `127.${x}.${y}`;
    let free = true;
    for (const p of probe) {
      for (const port of p.ports) {
        if (!(await tcpPortFree(`${prefix}.${p.address}`, port))) free = false;
      }
    }
    if (free) return prefix;
  }
  throw new Error("no free loopback /24 found after 50 tries");
}
