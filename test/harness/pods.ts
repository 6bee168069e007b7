// Upstream "pods": small servers on their own loopback address, as the pods
// behind a headless Service. HTTPS pods (port 443) present a certificate for
// the Service's DNS name and, for verified upstreams, require and verify
// Envoy's client certificate; they echo what they received (method, path,
// headers, client address, pod id) as JSON, count TLS handshakes and
// requests, and echo websocket messages after an upgrade. Plain-HTTP pods
// serve the ACME solver. A handler can replace the echo (the auth service).
import { createHash } from "node:crypto";
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";

/** What an echo pod answers (JSON body). */
export interface Echo {
  pod: string;
  service: string;
  method: string;
  /** The request target as received (path and query). */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Address Envoy connected from. */
  remoteAddress: string | undefined;
  /** Subject of the client certificate presented, if any. */
  clientCertificate: string | undefined;
  body: string;
}

export interface PodRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** Replaces the echo: return undefined to echo as usual. */
export type PodHandler = (req: PodRequest, res: ServerResponse) => boolean | void;

/** Pods accept far larger headers than Envoy lets through, so any 431 is Envoy's. */
const MAX_HEADER_BYTES = 1 << 20;

export interface PodOptions {
  /** Pod name, such as default_www-0 (reported in every answer). */
  id: string;
  /** The Service's DNS name (reported as `service`). */
  service: string;
  address: string;
  port: number;
  /** TLS: certificate and key, plus the CA that signs accepted client certificates. */
  tls?: { cert: string; key: string; clientCa?: string; requireClientCert: boolean };
}

export class Pod {
  readonly id: string;
  readonly service: string;
  readonly address: string;
  readonly port: number;
  /** TLS handshakes completed (new and resumed sessions). */
  handshakes = 0;
  /** TLS handshakes that failed (such as a client certificate refused). */
  failedHandshakes = 0;
  /** TCP connections accepted. */
  connections = 0;
  /** HTTP requests answered (including upgrades). */
  requests = 0;
  /** Every request seen, oldest first (bounded to the last 10,000). */
  readonly seen: PodRequest[] = [];
  handler: PodHandler | undefined;
  private server: HttpServer | undefined;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly options: PodOptions) {
    this.id = options.id;
    this.service = options.service;
    this.address = options.address;
    this.port = options.port;
  }

  get listening(): boolean {
    return this.server?.listening ?? false;
  }

  /** Starts listening (again, after stop). */
  async start(): Promise<void> {
    if (this.server) return;
    const o = this.options;
    const onRequest = (req: IncomingMessage, res: ServerResponse) => this.onRequest(req, res);
    const server: HttpServer = o.tls
      ? (createHttpsServer(
          {
            cert: o.tls.cert,
            key: o.tls.key,
            ca: o.tls.clientCa,
            requestCert: o.tls.requireClientCert,
            rejectUnauthorized: o.tls.requireClientCert,
            minVersion: "TLSv1.2",
            maxHeaderSize: MAX_HEADER_BYTES,
          },
          onRequest,
        ) as unknown as HttpServer)
      : createHttpServer({ maxHeaderSize: MAX_HEADER_BYTES }, onRequest);
    server.keepAliveTimeout = 60_000;
    server.headersTimeout = 70_000;
    server.requestTimeout = 0;
    server.on("connection", (socket: Socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    if (o.tls) {
      server.on("secureConnection", (socket: Socket) => {
        this.handshakes++;
        this.sockets.add(socket);
        socket.on("close", () => this.sockets.delete(socket));
      });
      server.on("tlsClientError", () => this.failedHandshakes++);
    }
    server.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => this.onUpgrade(req, socket, head));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: this.address, port: this.port, exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.server = server;
  }

  /** Stops listening and closes every connection (a pod going away). */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    server.closeAllConnections();
    await closed;
  }

  resetCounters(): void {
    this.handshakes = 0;
    this.failedHandshakes = 0;
    this.connections = 0;
    this.requests = 0;
    this.seen.length = 0;
  }

  private record(req: PodRequest): void {
    this.requests++;
    this.seen.push(req);
    if (this.seen.length > 10_000) this.seen.splice(0, this.seen.length - 10_000);
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= 1 << 20) chunks.push(c);
    });
    req.on("end", () => {
      const request: PodRequest = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      this.record(request);
      if (this.handler && this.handler(request, res) === true) return;
      const peer = req.socket as Socket & { getPeerCertificate?: () => { subject?: { CN?: string } } };
      const echo: Echo = {
        pod: this.id,
        service: this.service,
        method: request.method,
        path: request.path,
        headers: req.headers,
        remoteAddress: req.socket.remoteAddress,
        clientCertificate: peer.getPeerCertificate?.()?.subject?.CN,
        body: request.body,
      };
      const body = JSON.stringify(echo);
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        "x-pod": this.id,
      });
      res.end(body);
    });
  }

  /** Websocket (RFC 6455): accept the upgrade, then echo every text or binary message. */
  private onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    this.record({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: "" });
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
    const key = req.headers["sec-websocket-key"];
    if ((req.headers.upgrade ?? "").toLowerCase() !== "websocket" || typeof key !== "string") {
      socket.end("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    socket.write(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        `Sec-WebSocket-Accept: ${websocketAccept(key)}\r\nx-pod: ${this.id}\r\n\r\n`,
    );
    let buffer = head;
    const onData = (data: Buffer) => {
      buffer = Buffer.concat([buffer, data]);
      for (;;) {
        const frame = parseFrame(buffer);
        if (!frame) return;
        buffer = buffer.subarray(frame.length);
        if (frame.opcode === 0x8) {
          socket.end(encodeFrame(0x8, Buffer.alloc(0), false));
          return;
        }
        if (frame.opcode === 0x9) socket.write(encodeFrame(0xa, frame.payload, false));
        else if (frame.opcode === 0x1 || frame.opcode === 0x2) {
          const reply =
            frame.opcode === 0x1 ? Buffer.from(`${this.id}: ${frame.payload.toString("utf8")}`) : frame.payload;
          socket.write(encodeFrame(frame.opcode, reply, false));
        }
      }
    };
    socket.on("data", onData);
    socket.on("error", () => socket.destroy());
    if (head.length) onData(Buffer.alloc(0));
  }
}

export function websocketAccept(key: string): string {
  return createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
}

/** One websocket frame (final, unfragmented), masked when sent by a client. */
export function encodeFrame(opcode: number, payload: Buffer, mask: boolean): Buffer {
  const length = payload.length;
  const header: number[] = [0x80 | opcode];
  const maskBit = mask ? 0x80 : 0;
  if (length < 126) header.push(maskBit | length);
  else if (length < 65536) header.push(maskBit | 126, length >> 8, length & 0xff);
  else throw new Error("frames over 64 KiB are not needed here");
  if (!mask) return Buffer.concat([Buffer.from(header), payload]);
  const key = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const masked = Buffer.from(payload.map((b, i) => b ^ key[i % 4]!));
  return Buffer.concat([Buffer.from(header), key, masked]);
}

/** Parses one complete frame at the start of `buffer`, or undefined when more bytes are needed. */
export function parseFrame(buffer: Buffer): { opcode: number; payload: Buffer; length: number } | undefined {
  if (buffer.length < 2) return undefined;
  const opcode = buffer[0]! & 0x0f;
  const masked = (buffer[1]! & 0x80) !== 0;
  let length = buffer[1]! & 0x7f;
  let offset = 2;
  if (length === 126) {
    if (buffer.length < 4) return undefined;
    length = buffer.readUInt16BE(2);
    offset = 4;
  } else if (length === 127) {
    if (buffer.length < 10) return undefined;
    length = Number(buffer.readBigUInt64BE(2));
    offset = 10;
  }
  const maskKey = masked ? buffer.subarray(offset, offset + 4) : undefined;
  if (masked) offset += 4;
  if (buffer.length < offset + length) return undefined;
  let payload = Buffer.from(buffer.subarray(offset, offset + length));
  if (maskKey) payload = Buffer.from(payload.map((b, i) => b ^ maskKey[i % 4]!));
  return { opcode, payload, length: offset + length };
}
