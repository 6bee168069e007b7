// The Kubernetes client against a loopback HTTPS server standing in for the
// API server: kube/client.ts's PooledKubeConfig (API calls share TLS
// connections instead of one handshake per call, headers are still set per
// call, a changed CA gets a new pool), and kube/watch.ts's informers, whose
// caches keep objects without their field managers.
import * as k8s from "@kubernetes/client-node";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import { loadKubeConfig } from "../../kube/client.js";
import { watchRoutedObjects } from "../../kube/watch.js";
import { type Authority, TestPki } from "../harness/certificates.js";

const SERVER_NAME = "api.kube.test";
let dir: string;
let ca: Authority;
let otherCa: Authority;
let server: Server;
let port: number;
let connections = 0;
let authorizations: (string | undefined)[] = [];

/** What the server's field managers and kubectl apply add to an object `manager` wrote. */
function bookkeeping(manager: string, labels: Record<string, string>) {
  return {
    labels,
    annotations: {
      "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify({ metadata: { labels } }),
      "envoy-gateways.io/routes": "kept",
    },
    managedFields: [
      {
        manager,
        operation: "Update",
        apiVersion: "v1",
        fieldsType: "FieldsV1",
        fieldsV1: { "f:metadata": { "f:labels": { ".": {} } } },
      },
    ],
  };
}
const namespace = (name: string) => ({
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name, resourceVersion: "10", ...bookkeeping("kubectl", { "envoy-gateways.io/dev": "true" }) },
  status: { phase: "Active" },
});
const service = (ns: string, name: string, resourceVersion: string) => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace: ns, resourceVersion, ...bookkeeping("argocd", { "envoy-gateways.io/service": name }) },
  spec: { clusterIP: "None", ports: [{ name: "https", port: 443 }] },
});
/** The lists (and the one object each watch then adds) the server answers, by path. */
const LISTS: Record<string, { kind: string; items: object[]; watched: object }> = {
  "/api/v1/namespaces": { kind: "NamespaceList", items: [namespace("pr-1")], watched: namespace("pr-2") },
  "/api/v1/services": {
    kind: "ServiceList",
    items: [service("pr-1", "api", "10")],
    watched: service("pr-2", "web", "11"),
  },
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "eg-kube-connections-"));
  const pki = new TestPki(dir);
  ca = pki.authority("kube");
  otherCa = pki.authority("other");
  const served = pki.leaf(ca, "apiserver", [SERVER_NAME]);
  server = createServer({ cert: served.cert, key: served.key }, (req, res) => {
    authorizations.push(req.headers.authorization);
    const url = new URL(req.url ?? "/", `https://${SERVER_NAME}`);
    res.setHeader("content-type", "application/json");
    const listed = LISTS[url.pathname];
    if (listed && url.searchParams.get("watch") === "true") {
      // One event, then the watch stays open (closed with the server).
      res.write(`${JSON.stringify({ type: "ADDED", object: listed.watched })}\n`);
      return;
    }
    if (listed)
      return res.end(
        JSON.stringify({
          kind: listed.kind,
          apiVersion: "v1",
          metadata: { resourceVersion: "10" },
          items: listed.items,
        }),
      );
    const name = url.pathname.split("/").pop();
    res.end(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name } }));
  });
  server.on("secureConnection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  connections = 0;
  authorizations = [];
});

/** A kubeconfig for the loopback server, trusting `authorities` and sending `token`. */
function kubeconfig(authorities: Authority[], token: string): string {
  const caData = Buffer.from(authorities.map((a) => a.cert).join("")).toString("base64");
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "test",
        cluster: {
          server: `https://127.0.0.1:${port}`,
          "certificate-authority-data": caData,
          "tls-server-name": SERVER_NAME,
        },
      },
    ],
    users: [{ name: "tester", user: { token } }],
    contexts: [{ name: "test", context: { cluster: "test", user: "tester" } }],
    "current-context": "test",
  });
}

async function readNamespaces(kc: k8s.KubeConfig, names: string[]): Promise<string[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const read: string[] = [];
  for (const name of names) read.push((await core.readNamespace({ name })).metadata?.name ?? "");
  return read;
}

describe("the routed objects' informers", () => {
  it("keep listed and watched objects without managedFields or kubectl's last-applied copy, and the rest as it came", async () => {
    const kc = loadKubeConfig(kubeconfig([ca], "token-1"));
    const errors: string[] = [];
    const objects = watchRoutedObjects(kc, "envoy-gateways.io/dev=true", "envoy-gateways.io/service", {
      onChange: () => {},
      onError: (message) => errors.push(message),
    });
    try {
      await objects.synced;
      await vi.waitFor(() => expect(objects.services()).toHaveLength(2), { timeout: 10_000 });
      await vi.waitFor(() => expect(objects.namespaces()).toHaveLength(2), { timeout: 10_000 });
      for (const o of [...objects.namespaces(), ...objects.services()]) {
        expect((o.metadata as k8s.V1ObjectMeta | undefined)?.managedFields).toBeUndefined();
        expect(o.metadata?.annotations).toEqual({ "envoy-gateways.io/routes": "kept" });
      }
      expect(
        objects.services().map((s) => [s.metadata?.namespace, s.metadata?.name, s.metadata?.labels, s.spec]),
      ).toEqual([
        [
          "pr-1",
          "api",
          { "envoy-gateways.io/service": "api" },
          { clusterIP: "None", ports: [{ name: "https", port: 443 }] },
        ],
        [
          "pr-2",
          "web",
          { "envoy-gateways.io/service": "web" },
          { clusterIP: "None", ports: [{ name: "https", port: 443 }] },
        ],
      ]);
      expect(objects.namespaces().map((n) => [n.metadata?.name, n.status?.phase])).toEqual([
        ["pr-1", "Active"],
        ["pr-2", "Active"],
      ]);
      expect(errors).toEqual([]);
    } finally {
      await objects.stop();
    }
  });
});

/** n namespace names: ns-0, ns-1, ... */
const namespaceNames = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `ns-${from + i}`);

// undici hands a connection back to its pool just after the response is read,
// so a call made at once after another may open a second one: a pool of one or
// two connections, reused from then on.
describe("loadKubeConfig's connection pool", () => {
  it("opens no new TLS connection once its pool is warm, and sends the Authorization header on each call", async () => {
    const kc = loadKubeConfig(kubeconfig([ca], "token-1"));
    await readNamespaces(kc, namespaceNames(5));
    const warm = connections;
    expect(warm).toBeLessThanOrEqual(2);
    expect(await readNamespaces(kc, namespaceNames(20, 5))).toEqual(namespaceNames(20, 5));
    expect(connections).toBe(warm);
    expect(authorizations).toEqual(namespaceNames(25).map(() => "Bearer token-1"));
  });

  it("is needed: client-node's own KubeConfig opens a TLS connection per call", async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromString(kubeconfig([ca], "token-1"));
    expect(await readNamespaces(kc, namespaceNames(5))).toEqual(namespaceNames(5));
    expect(connections).toBe(5);
  });

  it("sends the token as it is now, and opens a new pool once the CA changes", async () => {
    const kc = loadKubeConfig(kubeconfig([ca], "token-1"));
    await readNamespaces(kc, namespaceNames(5));
    const warm = connections;
    kc.loadFromString(kubeconfig([ca], "token-2"));
    await readNamespaces(kc, namespaceNames(5, 5));
    expect(connections).toBe(warm);
    kc.loadFromString(kubeconfig([otherCa, ca], "token-2"));
    await readNamespaces(kc, namespaceNames(5, 10));
    const rotated = connections;
    expect(rotated).toBeGreaterThan(warm);
    await readNamespaces(kc, namespaceNames(5, 15));
    expect(connections).toBe(rotated);
    expect(authorizations).toEqual([
      ...namespaceNames(5).map(() => "Bearer token-1"),
      ...namespaceNames(15).map(() => "Bearer token-2"),
    ]);
  });

  it("refuses a server its CA did not sign, as before", async () => {
    const kc = loadKubeConfig(kubeconfig([otherCa], "token-1"));
    await expect(readNamespaces(kc, ["a"])).rejects.toThrow();
    expect(authorizations).toEqual([]);
  });
});
