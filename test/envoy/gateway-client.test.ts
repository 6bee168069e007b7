// The e2e suites' gateway client sends a GET or HEAD once more on a new
// connection when the kept-alive one it went out on closes before any answer
// (a draining gateway pod closing its idle connections), and nothing else: not
// a POST, not a request on a new connection, not one whose answer had begun.
// Against an HTTPS server on loopback that closes connections as told; no
// Envoy, no Kubernetes.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TestPki } from "../harness/certificates.js";
import { GatewayClient } from "../support/gateway-client.js";

const HOST = "gateway.example.test";

/**
 * What the server does with a request that comes on a connection which
 * already carried one (a request on a new connection is answered, unless
 * every request is closed).
 */
type OnReused = "answer" | "close" | "close after the head" | "close every request";

let dir: string;
let ca: string;
let server: Server;
let onReused: OnReused = "answer";
/** Requests the server got, with the number of their connection (1, 2, ...). */
let seen: { method: string; connection: number }[] = [];
const sockets = new Map<Socket, { connection: number; requests: number }>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "eg-gateway-client-"));
  const pki = new TestPki(dir);
  const authority = pki.authority("gateway-client test CA");
  const leaf = pki.leaf(authority, "gateway", [HOST]);
  ca = authority.cert;
  server = createServer({ cert: leaf.cert, key: leaf.key, keepAlive: true }, (req, res) => {
    const socket = req.socket;
    const s = sockets.get(socket) ?? { connection: sockets.size + 1, requests: 0 };
    sockets.set(socket, s);
    s.requests++;
    seen.push({ method: req.method!, connection: s.connection });
    req.resume();
    if (onReused === "close every request" || (s.requests > 1 && onReused === "close")) return socket.destroy();
    if (s.requests > 1 && onReused === "close after the head") {
      res.writeHead(200, { "content-length": "100" });
      res.write("part");
      setTimeout(() => socket.destroy(), 50);
      return;
    }
    res.end(JSON.stringify({ connection: s.connection }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

afterEach(() => {
  onReused = "answer";
  seen = [];
  for (const socket of sockets.keys()) socket.destroy();
  sockets.clear();
});

function client(): GatewayClient {
  const port = (server.address() as AddressInfo).port;
  return GatewayClient.fixed(ca, { address: "127.0.0.1", port, pod: "gateway-a" }, "gateway");
}

/** A client whose first request went out and was answered, its connection kept alive for the next. */
async function warmClient(): Promise<GatewayClient> {
  const c = client();
  const first = await c.request(HOST, "/first");
  expect(first.status).toBe(200);
  return c;
}

describe("GatewayClient sends a request again", () => {
  it("sends a GET once more on a new connection when its kept-alive one closes before any answer", async () => {
    const c = await warmClient();
    onReused = "close";
    const r = await c.request(HOST, "/again");
    expect(r.status).toBe(200);
    expect(r.retried).toBe(true);
    expect(r.gatewayPod).toBe("gateway-a");
    // The first request and the one cut off on connection 1, the one sent again on connection 2.
    expect(seen).toEqual([
      { method: "GET", connection: 1 },
      { method: "GET", connection: 1 },
      { method: "GET", connection: 2 },
    ]);
    expect(JSON.parse(r.body)).toEqual({ connection: 2 });
    await c.stop();
  });

  it("sends a HEAD again too", async () => {
    const c = await warmClient();
    onReused = "close";
    const r = await c.request(HOST, "/again", { method: "HEAD" });
    expect(r.retried).toBe(true);
    expect(seen.map((s) => s.method)).toEqual(["GET", "HEAD", "HEAD"]);
    await c.stop();
  });

  it("answers on a kept-alive connection are not marked as sent again", async () => {
    const c = await warmClient();
    const r = await c.request(HOST, "/second");
    expect(r.retried).toBeUndefined();
    expect(JSON.parse(r.body)).toEqual({ connection: 1 });
    await c.stop();
  });
});

describe("GatewayClient does not send a request again", () => {
  it("a POST whose kept-alive connection closes fails, sent once", async () => {
    const c = await warmClient();
    onReused = "close";
    await expect(c.request(HOST, "/form", { method: "POST" })).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(seen.map((s) => s.method)).toEqual(["GET", "POST"]);
    await c.stop();
  });

  it("a GET on a new connection that closes fails, sent once", async () => {
    const c = client();
    onReused = "close every request";
    await expect(c.request(HOST, "/fresh")).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(seen).toEqual([{ method: "GET", connection: 1 }]);
    await c.stop();
  });

  it("a GET whose answer had begun when the connection closed fails, sent once", async () => {
    const c = await warmClient();
    onReused = "close after the head";
    await expect(c.request(HOST, "/partial")).rejects.toThrow(/aborted|ECONNRESET|socket hang up/);
    expect(seen.map((s) => s.connection)).toEqual([1, 1]);
    await c.stop();
  });
});
