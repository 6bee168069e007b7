// Edge limits on the real Envoy: each public listener has its own connection
// limit (one listener cannot take the pod's whole budget), and the
// bootstrap's static clusters have the same bounded buffers as the routed
// ones.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect as tcpConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { join } from "node:path";
import { GatewayHarness } from "../harness/gateway.js";
import { waitFor } from "../harness/processes.js";
import { e2eHarnessOptions, e2eStackConfig } from "../harness/stack.js";
import { readStackFile } from "../../routing/config/load.js";
import type { Json } from "../../routing/envoy/types.js";
import { repoRoot } from "../support/components.js";

const HTTP_LIMIT = 3;
const HTTPS_LIMIT = 4;

let h: GatewayHarness;
const open: Socket[] = [];

beforeAll(async () => {
  const edge = (readStackFile(join(repoRoot, "Pulumi.prod.yaml")).edge ?? {}) as Record<string, unknown>;
  h = await GatewayHarness.start({
    ...e2eHarnessOptions(),
    config: e2eStackConfig({ edge: { ...edge, httpMaxConnections: HTTP_LIMIT, httpsMaxConnections: HTTPS_LIMIT } }),
  });
});

afterAll(async () => {
  for (const s of open) s.destroy();
  await h?.stop();
});

/** A new client connection, once it is up as far as the client can tell (Envoy may still close it), and whether it has been closed since. */
function connection(tls: boolean): Promise<{ socket: Socket; closed: () => boolean }> {
  return new Promise((resolve, reject) => {
    const port = tls ? h.ports.https : h.ports.http;
    const socket = tls
      ? tlsConnect({ host: h.address, port, servername: "www.hail.is", ca: h.ca.cert })
      : tcpConnect({ host: h.address, port, localAddress: h.clientAddress });
    open.push(socket);
    let closed = false;
    socket.on("error", () => undefined);
    socket.once("close", () => (closed = true));
    // A TLS handshake Envoy cuts short closes before it completes.
    socket.once("close", () => resolve({ socket, closed: () => closed }));
    socket.once(tls ? "secureConnect" : "connect", () => resolve({ socket, closed: () => closed }));
    setTimeout(() => reject(new Error("the connection neither came up nor closed in 10 s")), 10_000).unref();
  });
}

const gauge = (name: string) => h.envoy.stat(name);

async function closeAll(listener: "http" | "https"): Promise<void> {
  for (const s of open.splice(0)) s.destroy();
  await waitFor(
    `the ${listener} listener's connections to close`,
    10_000,
    async () => (await gauge(`connection_limit.${listener}.active_connections`)) === 0,
  );
}

describe("per-listener connection limits", () => {
  it("close a plain-HTTP connection over its listener's limit while HTTPS keeps serving", async () => {
    const kept = [];
    for (let i = 0; i < HTTP_LIMIT; i++) kept.push(await connection(false));
    await waitFor(
      "Envoy to count the connections",
      10_000,
      async () => (await gauge("connection_limit.http.active_connections")) === HTTP_LIMIT,
    );
    const extra = await connection(false);
    await waitFor("Envoy to close the connection over the limit", 10_000, () => extra.closed());
    expect(kept.map((c) => c.closed())).toEqual(Array(HTTP_LIMIT).fill(false));
    expect(await h.envoy.stat("connection_limit.http.limited_connections")).toBe(1);
    // The other listener has its own budget.
    expect((await h.get("www.hail.is", "/")).status).toBe(200);
    await closeAll("http");
    expect((await h.getPlain("www.hail.is", "/")).status).toBe(301);
  });

  it("close a TLS connection over the HTTPS listener's limit while plain HTTP keeps serving", async () => {
    const kept = [];
    for (let i = 0; i < HTTPS_LIMIT; i++) kept.push(await connection(true));
    await waitFor(
      "Envoy to count the connections",
      10_000,
      async () => (await gauge("connection_limit.https.active_connections")) === HTTPS_LIMIT,
    );
    const extra = await connection(true);
    await waitFor("Envoy to close the connection over the limit", 10_000, () => extra.closed());
    expect(kept.map((c) => c.closed())).toEqual(Array(HTTPS_LIMIT).fill(false));
    expect(await h.envoy.stat("connection_limit.https.limited_connections")).toBe(1);
    expect((await h.getPlain("www.hail.is", "/")).status).toBe(301);
    await closeAll("https");
    expect((await h.get("www.hail.is", "/")).status).toBe(200);
  });
});

describe("the bootstrap's static clusters", () => {
  it("are loaded with the same per-connection buffer limit as the routed clusters", async () => {
    const dump = JSON.parse(await h.envoy.admin("/config_dump?resource=static_clusters")) as { configs: Json[] };
    const limits = Object.fromEntries(
      dump.configs.map((c) => [(c.cluster as Json).name, (c.cluster as Json).per_connection_buffer_limit_bytes]),
    );
    const limit = h.config.edge.bufferLimitBytes;
    expect(limits).toEqual({
      "ext-authz": limit,
      "acme-solver": limit,
      "envoy-admin": limit,
      "gateway-pods": limit,
      "dev-on-demand": limit,
    });
  });
});
