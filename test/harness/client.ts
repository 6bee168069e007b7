// A client as a user's browser or tool would be: HTTPS (or plain HTTP) to the
// gateway's address with the public host name as SNI and Host header,
// trusting the test CA; keep-alive agents for load; a minimal websocket
// client; TLS probes with the openssl command line.
import { execFile } from "node:child_process";
import { request as httpRequest, Agent as HttpAgent, type IncomingHttpHeaders } from "node:http";
import { request as httpsRequest, Agent as HttpsAgent } from "node:https";
import { connect as tlsConnect } from "node:tls";
import { randomBytes } from "node:crypto";
import { encodeFrame, parseFrame, websocketAccept, type Echo } from "./pods.js";

export interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The pod's echo, when the answer came from an echo pod. */
  echo(): Echo;
}

export interface RequestOptions {
  /** Host header and TLS SNI. */
  host: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Local address to connect from (the client address Envoy sees). */
  localAddress?: string;
  /** Keep-alive agent to reuse connections (default: a new connection). */
  agent?: HttpsAgent | HttpAgent;
  /** Default 10 s. */
  timeoutMs?: number;
}

export interface Endpoint {
  address: string;
  port: number;
  /** PEM CA bundle trusted for HTTPS. */
  ca?: string;
}

/** One HTTPS request to the gateway's TLS listener. */
export function httpsGet(endpoint: Endpoint, options: RequestOptions): Promise<Response> {
  return send(true, endpoint, options);
}

/** One plain-HTTP request to the gateway's HTTP listener. */
export function httpGet(endpoint: Endpoint, options: RequestOptions): Promise<Response> {
  return send(false, endpoint, options);
}

function send(tls: boolean, endpoint: Endpoint, o: RequestOptions): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: o.host, ...(o.headers ?? {}) };
    if (o.body !== undefined) headers["content-length"] = String(Buffer.byteLength(o.body));
    const common = {
      host: endpoint.address,
      port: endpoint.port,
      path: o.path,
      method: o.method ?? "GET",
      headers,
      setHost: false,
      localAddress: o.localAddress,
      agent: o.agent ?? false,
      timeout: o.timeoutMs ?? 10_000,
    };
    const req = tls
      ? httpsRequest({
          ...common,
          servername: o.host,
          ca: endpoint.ca,
          agent: (o.agent as HttpsAgent | undefined) ?? false,
        })
      : httpRequest({ ...common, agent: (o.agent as HttpAgent | undefined) ?? false });
    req.on("timeout", () => req.destroy(new Error(`request ${o.method ?? "GET"} ${o.host}${o.path} timed out`)));
    req.on("error", reject);
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
          echo: () => {
            try {
              return JSON.parse(body) as Echo;
            } catch {
              throw new Error(`not an echo from a pod (status ${res.statusCode}): ${body.slice(0, 300)}`);
            }
          },
        });
      });
    });
    req.end(o.body);
  });
}

/** A keep-alive agent with at most `sockets` connections (for request loops). */
export function keepAliveAgent(endpoint: Endpoint, sockets: number): HttpsAgent {
  return new HttpsAgent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets, ca: endpoint.ca });
}

export interface WebsocketResult {
  status: number;
  /** Response head as received. */
  head: string;
  acceptValid: boolean;
  /** Messages received back, one per message sent. */
  replies: string[];
}

/**
 * Opens a websocket through the gateway (HTTP/1.1 Upgrade over TLS), sends
 * each message as a text frame, the next one `gapMs` after the reply to the
 * previous, and collects one reply per message, then closes.
 */
export function websocketExchange(
  endpoint: Endpoint,
  host: string,
  path: string,
  messages: string[],
  timeoutMs = 10_000,
  gapMs = 0,
): Promise<WebsocketResult> {
  return new Promise((resolve, reject) => {
    const key = randomBytes(16).toString("base64");
    const socket = tlsConnect({
      host: endpoint.address,
      port: endpoint.port,
      servername: host,
      ca: endpoint.ca,
      ALPNProtocols: ["http/1.1"],
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`websocket to ${host}${path} timed out`));
    }, timeoutMs);
    let buffer = Buffer.alloc(0);
    let head: string | undefined;
    const replies: string[] = [];
    const finish = (result: WebsocketResult) => {
      clearTimeout(timer);
      socket.end(encodeFrame(0x8, Buffer.alloc(0), true));
      socket.destroy();
      resolve(result);
    };
    socket.on("secureConnect", () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    socket.on("data", (data: Buffer) => {
      buffer = Buffer.concat([buffer, data]);
      if (head === undefined) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) return;
        head = buffer.subarray(0, end).toString("latin1");
        buffer = buffer.subarray(end + 4);
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
        const accept = /\r\nsec-websocket-accept: *([^\r\n]+)/i.exec(head)?.[1]?.trim();
        if (status !== 101) return finish({ status, head, acceptValid: false, replies });
        if (accept !== websocketAccept(key)) return finish({ status, head, acceptValid: false, replies });
        if (messages.length === 0) return finish({ status, head, acceptValid: true, replies });
        socket.write(encodeFrame(0x1, Buffer.from(messages[0]!), true));
      }
      for (;;) {
        const frame = parseFrame(buffer);
        if (!frame) break;
        buffer = buffer.subarray(frame.length);
        if (frame.opcode === 0x1) {
          replies.push(frame.payload.toString("utf8"));
          const next = messages[replies.length];
          if (next !== undefined) setTimeout(() => socket.write(encodeFrame(0x1, Buffer.from(next), true)), gapMs);
        }
        if (replies.length === messages.length) {
          const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
          return finish({ status, head, acceptValid: true, replies });
        }
      }
    });
    socket.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

export interface TlsProbe {
  /** True when the handshake completed. */
  connected: boolean;
  protocol: string | undefined;
  cipher: string | undefined;
  output: string;
}

/**
 * A TLS handshake with `openssl s_client` (as a scanner would do it), with
 * extra arguments such as ["-tls1_1"] or ["-tls1_2", "-cipher", "AES128-SHA"].
 */
export function opensslProbe(
  endpoint: Endpoint,
  servername: string,
  extra: string[],
  caFile?: string,
): Promise<TlsProbe> {
  return new Promise((resolve) => {
    const args = [
      "s_client",
      "-connect",
      `${endpoint.address}:${endpoint.port}`,
      "-servername",
      servername,
      ...(caFile ? ["-CAfile", caFile] : []),
      ...extra,
    ];
    const child = execFile("openssl", args, { timeout: 15_000 }, (_err, stdout, stderr) => {
      const output = `${stdout}\n${stderr}`;
      const protocol = /^\s*Protocol\s*:\s*(\S+)/m.exec(output)?.[1];
      const cipher = /^\s*Cipher\s*:\s*(\S+)/m.exec(output)?.[1] ?? /Cipher is (\S+)/.exec(output)?.[1];
      const connected =
        !!cipher && cipher !== "0000" && cipher !== "(NONE)" && !/New, \(NONE\), Cipher is \(NONE\)/.test(output);
      resolve({ connected, protocol, cipher, output });
    });
    child.stdin?.end("Q\n");
  });
}
