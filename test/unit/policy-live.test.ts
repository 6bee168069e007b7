// policy/live.ts: the headless-in-place policy's view of a Service as it runs, read from a
// fake API server on loopback through the kubeconfig the stack's provider holds (or the
// ambient one when the provider has none, as the Kubernetes provider does).
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { HANDOVER_ANNOTATION } from "../../adoption/handover.js";
import { liveService } from "../../policy/live.js";

/** The Services the fake API server holds, by path; anything else is 404. */
const SERVICES: Record<string, { status: number; body: unknown }> = {
  "/api/v1/namespaces/prod/services/www": {
    status: 200,
    body: { kind: "Service", metadata: { name: "www" }, spec: { type: "ClusterIP", clusterIP: "10.0.0.12" } },
  },
  "/api/v1/namespaces/prod/services/batch": {
    status: 200,
    body: {
      kind: "Service",
      metadata: { name: "batch", annotations: { [HANDOVER_ANNOTATION]: "10.0.0.13" } },
      spec: { clusterIP: "None" },
    },
  },
  "/api/v1/namespaces/prod/services/bare": { status: 200, body: { kind: "Service" } },
  "/api/v1/namespaces/prod/services/locked": {
    status: 403,
    body: { kind: "Status", code: 403, message: 'services "locked" is forbidden' },
  },
};

let server: Server;
let url: string;
/** The bearer token of each request, in order. */
const tokens: string[] = [];

function kubeconfig(token: string): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters: [{name: fake, cluster: {server: '" + url + "', insecure-skip-tls-verify: true}}]", // plain HTTP on loopback
    "users: [{name: " + token + "-user, user: {token: " + token + "}}]",
    "contexts: [{name: fake, context: {cluster: fake, user: " + token + "-user}}]",
    "current-context: fake",
  ].join("\n");
}

beforeAll(async () => {
  server = createServer((req, res) => {
    tokens.push(String(req.headers.authorization).replace(/^Bearer /, ""));
    const found = SERVICES[req.url ?? ""] ?? {
      status: 404,
      body: { kind: "Status", code: 404, message: "not found" },
    };
    res.writeHead(found.status, { "content-type": "application/json" });
    res.end(JSON.stringify(found.body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("liveService", () => {
  it("reads a ClusterIP Service through the provider's own kubeconfig", async () => {
    tokens.length = 0;
    const live = await liveService({ kubeconfig: kubeconfig("stack-token") }, "prod", "www");
    expect(live).toEqual({ type: "ClusterIP", clusterIP: "10.0.0.12", handingOver: false });
    expect(tokens).toEqual(["stack-token"]);
  });

  it("takes a Service without a type for ClusterIP, and sees a hand-over in progress", async () => {
    const live = await liveService({ kubeconfig: kubeconfig("stack-token") }, "prod", "batch");
    expect(live).toEqual({ type: "ClusterIP", clusterIP: "None", handingOver: true });
  });

  it("reads a Service that has neither spec nor metadata as a plain ClusterIP Service", async () => {
    const live = await liveService({ kubeconfig: kubeconfig("stack-token") }, "prod", "bare");
    expect(live).toEqual({ type: "ClusterIP", clusterIP: undefined, handingOver: false });
  });

  it("answers undefined for a Service the cluster does not have", async () => {
    await expect(liveService({ kubeconfig: kubeconfig("stack-token") }, "prod", "new")).resolves.toBeUndefined();
  });

  it("throws a sentence naming the Service and the refusal for any other answer", async () => {
    await expect(liveService({ kubeconfig: kubeconfig("stack-token") }, "prod", "locked")).rejects.toThrow(
      'reading Service prod/locked: stack-token-user is not allowed to (403 Forbidden: services "locked" is forbidden)',
    );
  });

  it("uses the ambient kubeconfig when the provider has none, as the provider does", async () => {
    const dir = mkdtempSync(join(tmpdir(), "eg-policy-live-"));
    writeFileSync(join(dir, "config"), kubeconfig("ambient-token"));
    vi.stubEnv("KUBECONFIG", join(dir, "config"));
    try {
      tokens.length = 0;
      const live = await liveService({ namespace: "prod", kubeconfig: { not: "text" } }, "prod", "www");
      expect(live?.clusterIP).toBe("10.0.0.12");
      // No provider inputs at all (the default provider): the ambient kubeconfig too.
      await liveService(undefined, "prod", "www");
      expect(tokens).toEqual(["ambient-token", "ambient-token"]);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
