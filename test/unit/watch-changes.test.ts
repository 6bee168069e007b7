// What the watch of routed namespaces and Services reports as a change: an
// update that leaves what discovery reads the same (the API server's
// bookkeeping, the route status sync-routes writes itself) is none.
import type * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { changeDigest, changeFilter } from "../../kube/watch.js";
import { ROUTE_STATUS_ANNOTATION } from "../../routing/labels.js";

const OWN = new Set([ROUTE_STATUS_ANNOTATION]);

function service(): k8s.V1Service {
  return {
    metadata: {
      name: "batch",
      namespace: "pr-1",
      uid: "u-1",
      resourceVersion: "100",
      generation: 1,
      labels: { "envoy-gateways.io/service": "batch" },
      annotations: { "envoy-gateways.io/shift-from": "blue" },
      managedFields: [{ manager: "kubectl", operation: "Apply" }],
    },
    spec: { clusterIP: "None", ports: [{ name: "https", port: 443 }] },
  };
}

function edited(edit: (s: k8s.V1Service) => void): k8s.V1Service {
  const s = structuredClone(service());
  edit(s);
  return s;
}

describe("what the watch reports as a change", () => {
  const before = changeDigest(service(), OWN);

  it("is not the API server's bookkeeping, nor the route status the watcher writes itself", () => {
    for (const s of [
      edited((s) => (s.metadata!.resourceVersion = "101")),
      edited((s) => (s.metadata!.generation = 2)),
      edited((s) => s.metadata!.managedFields!.push({ manager: "envoy-gateways-status", operation: "Update" })),
      edited((s) => (s.metadata!.annotations![ROUTE_STATUS_ANNOTATION] = "https://internal.example.org/pr-1/batch")),
    ])
      expect(changeDigest(s, OWN)).toBe(before);
    const annotated = edited((s) => (s.metadata!.annotations![ROUTE_STATUS_ANNOTATION] = "a"));
    // A deletion timestamp the server sends as null is no deletion.
    expect(
      changeDigest(
        edited((s) => (s.metadata!.deletionTimestamp = null as never)),
        OWN,
      ),
    ).toBe(before);
    expect(
      changeDigest(
        edited((s) => delete s.metadata!.annotations),
        OWN,
      ),
    ).toBe(
      changeDigest(
        edited((s) => (s.metadata!.annotations = {})),
        OWN,
      ),
    );
    // The same annotation is a change for a caller that does not write it.
    expect(changeDigest(annotated, new Set())).not.toBe(changeDigest(service(), new Set()));
  });

  it("is the same for an object read by a list (typed models) and by a watch (plain JSON), whatever its key order", () => {
    const raw = {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        creationTimestamp: "2026-12-04T17:21:08Z",
        name: "batch",
        namespace: "pr-1",
        resourceVersion: "100",
        labels: { "envoy-gateways.io/service": "batch", "envoy-gateways.io/routes": "dev" },
      },
      spec: { ports: [{ port: 443, name: "https", protocol: "TCP", targetPort: 443 }], clusterIP: "None" },
      status: { loadBalancer: {} },
    };
    // As client-node's list gives it: typed models, with Dates and every unset field present as undefined.
    const listed: k8s.V1Service = {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        annotations: undefined,
        creationTimestamp: new Date("2026-12-04T17:21:08Z"),
        deletionTimestamp: undefined,
        labels: { "envoy-gateways.io/service": "batch", "envoy-gateways.io/routes": "dev" },
        name: "batch",
        namespace: "pr-1",
        resourceVersion: "100",
      },
      spec: {
        clusterIP: "None",
        externalName: undefined,
        ports: [{ appProtocol: undefined, name: "https", port: 443, protocol: "TCP", targetPort: 443 }],
      },
      status: { conditions: undefined, loadBalancer: {} },
    };
    const reordered = {
      ...raw,
      spec: { clusterIP: "None", ports: [{ name: "https", targetPort: 443, protocol: "TCP", port: 443 }] },
      metadata: {
        ...raw.metadata,
        resourceVersion: "101",
        labels: { "envoy-gateways.io/routes": "dev", "envoy-gateways.io/service": "batch" },
        annotations: { [ROUTE_STATUS_ANNOTATION]: "https://internal.example.org/pr-1/batch" },
      },
    };
    expect(changeDigest(reordered as never, OWN)).toBe(changeDigest(listed, OWN));
    expect(changeDigest({ ...reordered, metadata: { ...reordered.metadata, name: "web" } } as never, OWN)).not.toBe(
      changeDigest(listed, OWN),
    );
  });

  it("is anything discovery reads: labels, other annotations (traffic shifts), ports, headlessness, deletion", () => {
    const changes = [
      edited((s) => (s.metadata!.labels!["envoy-gateways.io/service"] = "web")),
      edited((s) => (s.metadata!.annotations!["envoy-gateways.io/shift-from"] = "green")),
      edited((s) => delete s.metadata!.annotations!["envoy-gateways.io/shift-from"]),
      edited((s) => (s.spec!.ports![0]!.port = 444)),
      edited((s) => (s.spec!.clusterIP = "10.0.0.7")),
      edited((s) => (s.metadata!.deletionTimestamp = new Date("2026-12-04T17:00:00Z"))),
      edited((s) => (s.metadata!.name = "web")),
      edited((s) => (s.metadata!.namespace = "pr-2")),
    ].map((s) => changeDigest(s, OWN));
    expect(new Set([before, ...changes]).size).toBe(changes.length + 1);
  });
});

describe("the watch's events", () => {
  it("say each add, real change and delete of an object, and nothing for an update that changes nothing of it", () => {
    const changes = changeFilter("Service", OWN);
    expect(changes.added(service())).toBe("Service pr-1/batch added");
    expect(changes.updated(edited((s) => (s.metadata!.resourceVersion = "101")))).toBeUndefined();
    expect(changes.updated(edited((s) => (s.metadata!.annotations![ROUTE_STATUS_ANNOTATION] = "x")))).toBeUndefined();
    const relabelled = edited((s) => (s.metadata!.labels!["envoy-gateways.io/service"] = "web"));
    expect(changes.updated(relabelled)).toBe("Service pr-1/batch changed");
    // Compared with what was last reported: the same labels again are no change, the old ones are.
    expect(changes.updated(relabelled)).toBeUndefined();
    expect(changes.updated(service())).toBe("Service pr-1/batch changed");
    // Objects are told apart by name; one deleted and added again is reported anew.
    expect(changes.updated(edited((s) => (s.metadata!.name = "ci")))).toBe("Service pr-1/ci changed");
    expect(changes.deleted(service())).toBe("Service pr-1/batch deleted");
    expect(changes.updated(service())).toBe("Service pr-1/batch changed");
    expect(changeFilter("namespace", OWN).added({ metadata: { name: "pr-1" } })).toBe("namespace pr-1 added");
  });
});
