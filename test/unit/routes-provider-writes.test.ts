// What the routes resource writes and reads: the xDS ConfigMap's data and
// annotations, the gateway pods it tells, what refresh finds, and what delete
// leaves, against an in-memory stand-in for the Kubernetes API (the real API
// server is test/e2e/routes.test.ts's).
import { routeLines } from "../../routing/routes-view.js";
import { join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { routesProvider } from "../../components/routes.js";
import type { ConfigMapState } from "../../kube/client.js";
import * as core from "../../routes-provider/core.js";
import {
  applyRoutes,
  awaitController,
  CONTROLLER_CONFIG_ANNOTATION,
  diffRoutes,
  FencedError,
  readRoutes,
  removeRoutes,
  renderRoutes,
  routesInputs,
  RoutesInputError,
  WRITER_EPOCH_ANNOTATION,
  writeRoutes,
  type RoutesFacts,
  type WriteFence,
} from "../../routes-provider/core.js";
import { routingConfig } from "../../routing/config/schema.js";
import { plan, writeLive } from "../../route-sync/sync.js";
import { dataDigest } from "../../routing/units.js";
import { minutesIntoShift, ROOT, shiftedService, stackConfig } from "./fixtures.js";
import { tempDir } from "./temp-dir.js";

/** The cluster as the routes resource sees it: ConfigMaps by namespace/name, and what it was asked to do. */
const cluster = vi.hoisted(() => ({
  configMaps: new Map<string, ConfigMapState>(),
  kubeconfigs: [] as (string | undefined)[],
  applied: [] as {
    where: string;
    data: Record<string, string>;
    resourceVersion: string;
    annotations: Record<string, string>;
  }[],
  annotated: [] as { namespace: string; selector: string; annotations: Record<string, string> }[],
  annotateFails: undefined as string | undefined,
  /** Each read and write, in the order they were asked for. */
  calls: [] as string[],
}));

vi.mock("../../kube/client.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../kube/client.js")>()),
  loadKubeConfig: (text?: string) => {
    cluster.kubeconfigs.push(text);
    return { fake: true };
  },
  readConfigMap: async (_kc: unknown, namespace: string, name: string) => {
    cluster.calls.push(`read ${namespace}/${name}`);
    const cm = cluster.configMaps.get(`${namespace}/${name}`);
    return cm && structuredClone(cm);
  },
  applyConfigMapData: async (
    _kc: unknown,
    namespace: string,
    name: string,
    data: Record<string, string>,
    resourceVersion: string,
    annotations: Record<string, string>,
  ) => {
    const where = `${namespace}/${name}`;
    cluster.calls.push(`write ${where}`);
    const cm = cluster.configMaps.get(where)!;
    if (cm.resourceVersion !== resourceVersion)
      throw new Error(`writing ConfigMap ${where}: someone else changed it since it was read (409 Conflict)`);
    cluster.applied.push({ where, data, resourceVersion, annotations });
    cluster.configMaps.set(where, {
      data: { ...data },
      resourceVersion: String(Number(resourceVersion) + 1),
      annotations: { ...cm.annotations, ...annotations },
    });
    return String(Number(resourceVersion) + 1);
  },
  annotatePods: async (_kc: unknown, namespace: string, selector: string, annotations: Record<string, string>) => {
    if (cluster.annotateFails) throw new Error(cluster.annotateFails);
    cluster.annotated.push({ namespace, selector, annotations });
    return 2;
  },
}));

const at = minutesIntoShift(30);
const dev = { "pr-12": ["batch"], "pr-14": [shiftedService("web")] };
function facts(change: Partial<RoutesFacts> = {}): RoutesFacts {
  return {
    gateway: "gateway",
    namespace: "default",
    configMap: "gateway-xds",
    config: routingConfig(stackConfig("dev")),
    devNamespaces: dev,
    ...change,
  };
}
/** The xDS ConfigMap as the EnvoyGateway component creates it: production routes only. */
function created(): ConfigMapState {
  return {
    data: renderRoutes(facts({ devNamespaces: {} }), at).files.xds,
    resourceVersion: "7",
    annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}" },
  };
}
const DIGEST = "envoy-gateways.io/routes-digest";

beforeEach(() => {
  cluster.configMaps.clear();
  cluster.configMaps.set("default/gateway-xds", created());
  cluster.kubeconfigs.length = 0;
  cluster.applied.length = 0;
  cluster.annotated.length = 0;
  cluster.annotateFails = undefined;
  cluster.calls.length = 0;
});

describe("create and update", () => {
  it("write the files the facts give into the ConfigMap with their digest, then tell the gateway's pods", async () => {
    const expected = renderRoutes(facts(), at);
    const digest = dataDigest(expected.files.xds);
    const outputs = await writeRoutes(facts({ kubeconfig: "apiVersion: v1" }), at);
    expect(cluster.applied).toEqual([
      {
        where: "default/gateway-xds",
        data: expected.files.xds,
        resourceVersion: "7",
        annotations: { [DIGEST]: digest },
      },
    ]);
    expect(cluster.configMaps.get("default/gateway-xds")!.data["rds.yaml"]).toContain(
      '"path_separated_prefix":"/pr-12/batch"',
    );
    expect(cluster.annotated).toEqual([
      {
        namespace: "default",
        selector: "app.kubernetes.io/name=gateway,app.kubernetes.io/component=gateway",
        annotations: { "envoy-gateways.io/xds-digest": digest },
      },
    ]);
    expect(cluster.kubeconfigs).toEqual(["apiVersion: v1"]);
    expect(outputs).toEqual({
      ...facts({ kubeconfig: "apiVersion: v1" }),
      routes: routeLines(expected.routes),
      dataDigest: digest,
      renderedAt: "2026-11-30T10:30:00.000Z",
    });
  });

  it("write the internal gateway's ConfigMap and tell its own pods", async () => {
    cluster.configMaps.set("edge/internal-gateway-xds", created());
    await writeRoutes(facts({ gateway: "internal-gateway", namespace: "edge", configMap: "internal-gateway-xds" }), at);
    expect(cluster.applied.map((a) => a.where)).toEqual(["edge/internal-gateway-xds"]);
    expect(cluster.configMaps.get("edge/internal-gateway-xds")!.data["rds.yaml"]).toContain(
      '"domains":["internal.dev.hail"]',
    );
    expect(cluster.annotated).toEqual([
      {
        namespace: "edge",
        selector: "app.kubernetes.io/name=internal-gateway,app.kubernetes.io/component=gateway",
        annotations: { "envoy-gateways.io/xds-digest": expect.any(String) },
      },
    ]);
  });

  it("do not write a ConfigMap that already holds the files (and says so), but still tell the pods", async () => {
    await writeRoutes(facts(), at);
    await writeRoutes(facts(), at);
    expect(cluster.applied).toHaveLength(1);
    expect(cluster.annotated).toHaveLength(2);
  });

  it("write again when the data is right but its digest annotation is missing, or the annotation is right but the data not", async () => {
    const files = renderRoutes(facts(), at).files.xds;
    cluster.configMaps.set("default/gateway-xds", { data: files, resourceVersion: "8", annotations: {} });
    await writeRoutes(facts(), at);
    cluster.configMaps.set("default/gateway-xds", {
      data: created().data,
      resourceVersion: "9",
      annotations: { [DIGEST]: dataDigest(files) },
    });
    await writeRoutes(facts(), at);
    expect(cluster.applied.map((a) => a.resourceVersion)).toEqual(["8", "9"]);
  });

  it("refuse to write where the gateway has no ConfigMap, saying what creates it", async () => {
    cluster.configMaps.clear();
    await expect(writeRoutes(facts(), at)).rejects.toThrow(
      "ConfigMap default/gateway-xds does not exist: the EnvoyGateway component creates it with the production routes; run a full `pulumi up` first",
    );
    expect(cluster.annotated).toEqual([]);
  });

  it("write nothing for facts the routing table refuses", async () => {
    await expect(writeRoutes(facts({ devNamespaces: { "pr-1": ["Bad"] } }), at)).rejects.toThrow(RoutesInputError);
    expect(cluster.applied).toEqual([]);
  });

  it("say the ConfigMap was written when only telling the pods failed", async () => {
    cluster.annotateFails =
      "listing pods labelled app=gateway in default: cannot reach the Kubernetes API at https://127.0.0.1:6443 (ECONNREFUSED)";
    await expect(writeRoutes(facts(), at)).rejects.toThrow(
      "wrote ConfigMap default/gateway-xds, but telling the gateway's pods failed (their kubelets project it at their next periodic sync instead): listing pods labelled app=gateway in default: cannot reach the Kubernetes API at https://127.0.0.1:6443 (ECONNREFUSED)",
    );
    expect(cluster.applied).toHaveLength(1);
  });

  it("write only over what a sync wrote when told so, and leave a newer write alone", async () => {
    const syncWrote = dataDigest(created().data);
    await writeRoutes(facts(), at, { onlyOver: syncWrote });
    expect(cluster.applied).toHaveLength(1);
    // A newer sync wrote since: neither the ConfigMap nor the pods are touched, and what this run would have written is recorded.
    const outputs = await writeRoutes(facts({ devNamespaces: {} }), at, { onlyOver: syncWrote });
    expect(cluster.applied).toHaveLength(1);
    expect(cluster.annotated).toHaveLength(1);
    expect(outputs.dataDigest).toBe(syncWrote);
  });

  it("over what a sync wrote, still tell the pods when the ConfigMap already holds the files", async () => {
    await writeRoutes(facts(), at);
    await writeRoutes(facts(), at, { onlyOver: "0".repeat(64) });
    expect(cluster.applied).toHaveLength(1);
    expect(cluster.annotated).toHaveLength(2);
  });

  it("use what the caller rendered, validating it first", async () => {
    const rendered = renderRoutes(facts(), at, { validate: false });
    expect(rendered.validated).toBe(false);
    await writeRoutes(facts(), at, { rendered });
    expect(cluster.applied[0]!.data).toEqual(rendered.files.xds);
    const many: Record<string, string[]> = {};
    for (let i = 0; i < 500; i++) many[`pr-${i}`] = ["batch", "batch-driver", "ci", "memory"];
    const tooBig = renderRoutes(facts({ devNamespaces: many }), at, { validate: false });
    await expect(writeRoutes(facts({ devNamespaces: many }), at, { rendered: tooBig })).rejects.toThrow(
      /over the 1,048,576 bytes Kubernetes allows in a ConfigMap/,
    );
    expect(cluster.applied).toHaveLength(1);
  });

  it("in the engine run that records a sync: render at the sync's instant and write only over what the sync wrote", async () => {
    const syncWrite = { renderedAt: "2026-11-30T10:45:00.000Z", digest: dataDigest(created().data) };
    const outputs = await writeRoutes({ ...facts(), syncWrite });
    expect(outputs.renderedAt).toBe("2026-11-30T10:45:00.000Z");
    expect(outputs.routes["pr-14/web"]).toContain("(pr-14_web_green, version green, 45%)");
    expect(cluster.applied).toHaveLength(1);
    expect(cluster.applied[0]!.data).toEqual(renderRoutes(facts(), new Date(syncWrite.renderedAt)).files.xds);
    // What a sync wrote is not an output: the state's outputs stay the facts and what was written.
    expect(outputs).not.toHaveProperty("syncWrite");
    expect(outputs).toEqual(await writeRoutes(facts(), new Date(syncWrite.renderedAt)));
    // The ConfigMap no longer holds what the sync wrote: a later sync's engine run must not write over it.
    const annotated = cluster.annotated.length;
    await writeRoutes({ ...facts({ devNamespaces: {} }), syncWrite });
    expect(cluster.applied).toHaveLength(1);
    expect(cluster.annotated).toHaveLength(annotated);
    // Without what a sync wrote, the same facts are written (a `pulumi up` repairs anything).
    await writeRoutes(facts({ devNamespaces: {} }));
    expect(cluster.applied).toHaveLength(2);
  });
});

describe("sync-routes' live write (route-sync/sync.ts writeLive)", () => {
  const sync = { config: stackConfig("dev") };
  const stateOf = (gateway: "gateway" | "internal-gateway") => ({
    urn: `u-${gateway}`,
    name: `${gateway}-routes`,
    outputs: {
      ...routesInputs({ gateway, namespace: "default", configMap: `${gateway}-xds` }, sync.config, {}),
      routes: {},
      dataDigest: "",
      renderedAt: "",
    },
  });
  const planned = () => plan([stateOf("gateway"), stateOf("internal-gateway")], sync, dev, at);

  it("writes both gateways' ConfigMaps side by side, neither waiting for the other's write", async () => {
    cluster.configMaps.set("default/internal-gateway-xds", created());
    await writeLive(planned(), dev, at);
    expect(cluster.calls).toEqual([
      "read default/gateway-xds",
      "read default/internal-gateway-xds",
      "write default/gateway-xds",
      "write default/internal-gateway-xds",
    ]);
  });

  it("writes what was planned and rendered, not a render of its own", async () => {
    cluster.configMaps.set("default/internal-gateway-xds", created());
    const [gateway, internal] = planned();
    const productionOnly = plan([stateOf("gateway")], sync, {}, at)[0]!;
    await writeLive([{ ...gateway!, rendered: productionOnly.rendered }, internal!], dev, at);
    expect(cluster.configMaps.get("default/gateway-xds")!.data).toEqual(productionOnly.rendered.files.xds);
  });

  it("names every gateway whose write failed, and only those", async () => {
    await expect(writeLive(planned(), dev, at)).rejects.toThrow(
      /^writing the routes of internal-gateway failed; its ConfigMap keeps its content: ConfigMap default\/internal-gateway-xds does not exist/,
    );
    expect(cluster.applied.map((a) => a.where)).toEqual(["default/gateway-xds"]);
    cluster.configMaps.clear();
    const both = writeLive(planned(), dev, at);
    await expect(both).rejects.toMatchObject({
      cause: { message: expect.stringMatching(/^ConfigMap default\/gateway-xds does not exist/) },
    });
    await expect(both).rejects.toThrow(
      /^writing the routes of gateway failed; .*gateway-xds does not exist.*\nwriting the routes of internal-gateway failed; .*internal-gateway-xds does not exist/,
    );
  });
});

describe("refresh", () => {
  const state = async () => writeRoutes(facts(), at);

  it("keeps the state when the ConfigMap holds what was written, dropping an earlier drift", async () => {
    const written = await state();
    expect(await readRoutes({ ...written, drift: { "pr-12/batch": "route missing or changed" } })).toEqual(written);
    expect(await readRoutes(written)).toEqual(written);
  });

  it("finds nothing when the ConfigMap is gone", async () => {
    const written = await state();
    cluster.configMaps.clear();
    expect(await readRoutes(written)).toBeUndefined();
  });

  it("names the routes an out-of-band edit changed, and records the digest found", async () => {
    const written = await state();
    const cm = cluster.configMaps.get("default/gateway-xds")!;
    cm.data["cds.yaml"] = cm.data["cds.yaml"]!.replace("batch.pr-12.svc.cluster.local", "evil.example.org");
    const refreshed = await readRoutes(written);
    expect(refreshed).toEqual({
      ...written,
      dataDigest: dataDigest(cm.data),
      drift: { "pr-12/batch": "cluster pr-12_batch changed" },
    });
  });

  it("says a file Envoy cannot read is kept at what Envoy loaded last, and still compares the other", async () => {
    const written = await state();
    const cm = cluster.configMaps.get("default/gateway-xds")!;
    cm.data["rds.yaml"] = "resources: [";
    expect((await readRoutes(written))!.drift).toEqual({
      "(rds.yaml)": expect.stringMatching(
        /^cannot be read as Envoy reads it, so Envoy keeps what it loaded last: not valid YAML: [^\n]+$/,
      ),
    });
    cm.data["cds.yaml"] = cm.data["cds.yaml"]!.replace("batch.pr-12.svc.cluster.local", "evil.example.org");
    expect(Object.keys((await readRoutes(written))!.drift!)).toEqual(["pr-12/batch", "(rds.yaml)"]);
    cm.data["cds.yaml"] = "resources: {";
    expect((await readRoutes(written))!.drift).toEqual({
      "(cds.yaml)": expect.stringMatching(/^cannot be read as Envoy reads it/),
      "(rds.yaml)": expect.any(String),
    });
  });

  it("says when the files were rewritten with the same routes", async () => {
    const written = await state();
    const cm = cluster.configMaps.get("default/gateway-xds")!;
    cm.data["cds.yaml"] = `# reformatted\n${cm.data["cds.yaml"]}`;
    expect((await readRoutes(written))!.drift).toEqual({
      "(files)": "the ConfigMap's files were rewritten with the same routes",
    });
  });
});

describe("delete", () => {
  it("leaves the gateway its production routes", async () => {
    const written = await writeRoutes(facts({ kubeconfig: "apiVersion: v1" }), at);
    await removeRoutes(written);
    const left = cluster.configMaps.get("default/gateway-xds")!;
    expect(left.data["rds.yaml"]).not.toContain("/pr-12/batch");
    expect(left.data["rds.yaml"]).toContain('"domains":["batch.dev.example.org"]');
    expect(cluster.applied).toHaveLength(2);
    expect(cluster.kubeconfigs.every((k) => k === "apiVersion: v1")).toBe(true);
  });

  it("even over a ConfigMap a sync wrote since", async () => {
    const written = await writeRoutes(facts(), at);
    // A sync's live write: the ConfigMap now holds newer routes than this state.
    await writeRoutes(facts({ devNamespaces: { "pr-99": ["ci"] } }), at, {});
    await removeRoutes(written);
    expect(cluster.applied).toHaveLength(3);
    const left = cluster.configMaps.get("default/gateway-xds")!.data;
    expect(left["rds.yaml"]).not.toContain("/pr-99/ci");
    expect(left).toEqual(renderRoutes(facts({ devNamespaces: {} }), new Date()).files.xds);
  });

  it("does nothing when the ConfigMap is gone", async () => {
    const written = await writeRoutes(facts(), at);
    cluster.configMaps.clear();
    await removeRoutes(written);
    expect(cluster.applied).toHaveLength(1);
  });
});

describe("the route controller's writes (a fence)", () => {
  const fence = (change: Partial<WriteFence> = {}): WriteFence => ({
    epoch: 3,
    leading: () => true,
    configDigest: "c1",
    ...change,
  });
  const annotations = () => cluster.configMaps.get("default/gateway-xds")!.annotations;

  it("record the writer's epoch and the config it rendered from beside the digest", async () => {
    await writeRoutes(facts(), at, { fence: fence() });
    expect(cluster.applied[0]!.annotations).toEqual({
      [DIGEST]: dataDigest(renderRoutes(facts(), at).files.xds),
      [WRITER_EPOCH_ANNOTATION]: "3",
      [CONTROLLER_CONFIG_ANNOTATION]: "c1",
    });
  });

  it("write over an older or the same leader's epoch", async () => {
    await writeRoutes(facts(), at, { fence: fence({ epoch: 2 }) });
    await writeRoutes(facts({ devNamespaces: {} }), at, { fence: fence({ epoch: 2 }) });
    await writeRoutes(facts(), at, { fence: fence({ epoch: 3 }) });
    expect(cluster.applied).toHaveLength(3);
    expect(annotations()[WRITER_EPOCH_ANNOTATION]).toBe("3");
  });

  it("never write over a newer leader's epoch, saying both", async () => {
    await writeRoutes(facts({ devNamespaces: {} }), at, { fence: fence({ epoch: 5 }) });
    const write = writeRoutes(facts(), at, { fence: fence({ epoch: 4 }) });
    await expect(write).rejects.toThrow(FencedError);
    await expect(write).rejects.toThrow(
      "not written: ConfigMap default/gateway-xds was written by a newer route controller leader (epoch 5; this one's is 4)",
    );
    expect(cluster.applied).toHaveLength(1);
    expect(cluster.annotated).toHaveLength(1);
  });

  it("never write once the Lease is lost, asking just before the write", async () => {
    let asked = 0;
    const lost = fence({ leading: () => (asked++, false) });
    await expect(writeRoutes(facts(), at, { fence: lost })).rejects.toThrow(
      "not written: this route controller no longer holds the Lease (epoch 3)",
    );
    expect(asked).toBe(1);
    expect(cluster.applied).toEqual([]);
  });

  it("write again when only the config rendered from changed (the routes resources wait for it)", async () => {
    await writeRoutes(facts(), at, { fence: fence() });
    await writeRoutes(facts(), at, { fence: fence() });
    expect(cluster.applied).toHaveLength(1);
    await writeRoutes(facts(), at, { fence: fence({ configDigest: "c2" }) });
    expect(cluster.applied).toHaveLength(2);
    expect(annotations()[CONTROLLER_CONFIG_ANNOTATION]).toBe("c2");
  });

  it("sync-routes' live write hands its fence to each gateway's write", async () => {
    cluster.configMaps.set("default/internal-gateway-xds", created());
    const state = (["gateway", "internal-gateway"] as const).map((gateway) => ({
      urn: `urn:${gateway}`,
      name: `${gateway}-routes`,
      outputs: { gateway, namespace: "default", configMap: `${gateway}-xds` } as never,
    }));
    const planned = plan(state, { config: stackConfig("dev") }, {}, at);
    await writeLive(planned, {}, at, {}, fence({ epoch: 9 }));
    expect(cluster.applied.map((a) => a.annotations[WRITER_EPOCH_ANNOTATION])).toEqual(["9", "9"]);
  });
});

describe("when the route controller writes the ConfigMap", () => {
  const controller = { configDigest: "c1", deployment: "default/route-controller" };
  const wait = { timeoutMs: 300, pollMs: 50 };
  const inCluster = (change: Partial<RoutesFacts> = {}) => facts({ devNamespaces: {}, controller, ...change });
  /** The controller's write of config `digest`, with the dev/PR routes only it knows. */
  const controllerWrites = (digest: string) =>
    writeRoutes(facts(), at, { fence: { epoch: 1, leading: () => true, configDigest: digest } });

  it("the inputs give no dev/PR namespaces (the live ConfigMap is their record), and name the controller", () => {
    const given = routesInputs(
      { gateway: "gateway", namespace: "default", configMap: "gateway-xds" },
      stackConfig("dev"),
      dev,
      { controller },
    );
    expect(given.devNamespaces).toEqual({});
    expect(given.controller).toEqual(controller);
    expect(
      routesInputs({ gateway: "gateway", namespace: "default", configMap: "x" }, stackConfig("dev"), dev),
    ).not.toHaveProperty("controller");
  });

  it("create and update write nothing, and return once the controller wrote from this config", async () => {
    await controllerWrites("c0");
    const applied = cluster.applied.length;
    const waiting = applyRoutes(inCluster());
    setTimeout(() => void controllerWrites("c1"), 300);
    const outputs = await waiting;
    // The controller's one write, none of the resource's own.
    expect(cluster.applied).toHaveLength(applied + 1);
    expect(outputs.routes).toEqual(routeLines(renderRoutes(inCluster(), at).routes));
    expect(Object.keys(outputs.routes).some((id) => id.startsWith("pr-"))).toBe(false);
    expect(outputs.dataDigest).toBe(dataDigest(cluster.configMaps.get("default/gateway-xds")!.data));
    expect(outputs.controller).toEqual(controller);
  });

  it("without the controller's write in time: an error naming the ConfigMap, what it holds and where to look", async () => {
    await controllerWrites("c0");
    await expect(awaitController(inCluster(), wait)).rejects.toThrow(
      "the route controller did not write ConfigMap default/gateway-xds from its current config (c1) within 0.3s (it holds c0): is Deployment default/route-controller running? kubectl -n default logs deploy/route-controller",
    );
    cluster.configMaps.set("default/gateway-xds", created());
    await expect(awaitController(inCluster(), { timeoutMs: 0, pollMs: 100 })).rejects.toThrow(
      "(it holds no route controller write)",
    );
    cluster.configMaps.clear();
    await expect(awaitController(inCluster(), { timeoutMs: 0, pollMs: 100 })).rejects.toThrow("(it does not exist)");
  });

  it("a diff sees no change for the controller's writes, and the facts' changes as changes", async () => {
    await controllerWrites("c1");
    const outputs = await applyRoutes(inCluster());
    const inputs = core.checkRoutes(inCluster(), at).inputs!;
    expect(diffRoutes(outputs, inputs, at).changes).toBe(false);
    const next = core.checkRoutes(inCluster({ controller: { ...controller, configDigest: "c2" } }), at).inputs!;
    expect(diffRoutes(outputs, next, at).changes).toBe(true);
    // Without the controller, the same state is behind: the ConfigMap's files are not what the facts render.
    const { controller: _, ...plainInputs } = inputs;
    expect(diffRoutes(outputs, plainInputs, at).changes).toBe(true);
  });

  it("refresh keeps the state (no drift for the controller's routes), with the digest it found", async () => {
    await controllerWrites("c1");
    const outputs = await applyRoutes(inCluster());
    await writeRoutes(facts({ devNamespaces: { "pr-99": ["ci"] } }), at, {
      fence: { epoch: 1, leading: () => true, configDigest: "c1" },
    });
    const read = await readRoutes(outputs);
    expect(read!.drift).toBeUndefined();
    expect(read!.dataDigest).toBe(dataDigest(cluster.configMaps.get("default/gateway-xds")!.data));
    expect(read!.dataDigest).not.toBe(outputs.dataDigest);
  });

  it("delete leaves the controller's routes in place", async () => {
    await controllerWrites("c1");
    const outputs = await applyRoutes(inCluster());
    const applied = cluster.applied.length;
    await removeRoutes(outputs);
    expect(cluster.applied).toHaveLength(applied);
    expect(cluster.configMaps.get("default/gateway-xds")!.data["rds.yaml"]).toContain("/pr-12/batch");
  });
});

describe("the Routes dynamic provider (components/routes.ts)", () => {
  // The provider loads routes-provider/core.ts from the directory the engine runs it in (here the
  // project's); this process has it loaded already, with the in-memory API above.
  beforeEach(() => {
    const file = join(ROOT, "routes-provider", "core.ts");
    require.cache[file] = { id: file, filename: file, loaded: true, exports: core } as NodeJS.Module;
  });
  const plain = (change: Partial<RoutesFacts> = {}) => facts({ devNamespaces: { "pr-12": ["batch"] }, ...change });

  it("checks the facts into inputs with their routes, or says what is wrong on which input", async () => {
    const checked = await routesProvider.check!({}, plain());
    expect(checked).toEqual({ inputs: core.checkRoutes(plain()).inputs, failures: [] });
    expect(checked.inputs.routes["pr-12/batch"]).toMatch(/^https:\/\/internal\.dev\.example\.org\/pr-12\/batch -> /);
    const bad = plain({ devNamespaces: { "pr-12": ["Batch"] } });
    expect(await routesProvider.check!({}, bad)).toEqual({
      inputs: bad,
      failures: [
        {
          property: "devNamespaces",
          reason: `pr-12[0]: service name must be a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters) (got "Batch")`,
        },
      ],
    });
  });

  it("diffs, replacing the resource for another ConfigMap", async () => {
    const written = await routesProvider.create!(core.checkRoutes(plain()).inputs!);
    expect(await routesProvider.diff!(written.id, written.outs, core.checkRoutes(plain()).inputs!)).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
    expect(
      await routesProvider.diff!(written.id, written.outs, core.checkRoutes(plain({ configMap: "other-xds" })).inputs!),
    ).toEqual({ changes: true, replaces: ["configMap"], deleteBeforeReplace: false });
  });

  it("records a state from before routes were lines (an object per route) as lines, without writing the ConfigMap again", async () => {
    const inputs = core.checkRoutes(plain()).inputs!;
    const written = await routesProvider.create!(inputs);
    const old = { ...written.outs, routes: renderRoutes(plain(), new Date(written.outs.renderedAt)).routes };
    expect(await routesProvider.diff!(written.id, old, inputs)).toEqual({
      changes: true,
      replaces: [],
      deleteBeforeReplace: false,
    });
    const updated = await routesProvider.update!(written.id, old, inputs);
    expect(updated.outs!.routes).toEqual(inputs.routes);
    expect(Object.values(updated.outs!.routes).every((line) => typeof line === "string")).toBe(true);
    expect(cluster.applied).toHaveLength(1);
  });

  it("creates and updates through the route controller when it writes the ConfigMap", async () => {
    const controller = { configDigest: "c1", deployment: "default/route-controller" };
    await writeRoutes(facts(), at, { fence: { epoch: 1, leading: () => true, configDigest: "c1" } });
    const inputs = core.checkRoutes(plain({ devNamespaces: {}, controller })).inputs!;
    const created = await routesProvider.create!(inputs);
    const updated = await routesProvider.update!(created.id, created.outs, inputs);
    expect(created.outs.controller).toEqual(controller);
    expect(updated.outs!.controller).toEqual(controller);
    expect(cluster.applied).toHaveLength(1);
  });

  it("creates and updates by writing the ConfigMap, the resource's id being the ConfigMap's", async () => {
    const created = await routesProvider.create!(core.checkRoutes(plain()).inputs!);
    expect(created.id).toBe("default/gateway-xds");
    expect(created.outs.dataDigest).toBe(dataDigest(cluster.configMaps.get("default/gateway-xds")!.data));
    expect(created.outs.routes).toEqual(core.checkRoutes(plain()).inputs!.routes);
    const updated = await routesProvider.update!(
      created.id,
      created.outs,
      core.checkRoutes(plain({ devNamespaces: {} })).inputs!,
    );
    expect(updated.outs!.routes["pr-12/batch"]).toBeUndefined();
    expect(cluster.configMaps.get("default/gateway-xds")!.data["rds.yaml"]).not.toContain("/pr-12/batch");
    expect(cluster.applied).toHaveLength(2);
  });

  it("in a sync's record: checks, diffs and writes at the sync's instant, only over what it wrote", async () => {
    const shifting = (change: Partial<RoutesFacts> = {}) =>
      facts({ devNamespaces: { "pr-14": [shiftedService("web")] }, ...change });
    const syncWrite = { renderedAt: "2026-11-30T10:45:00.000Z", digest: dataDigest(created().data) };
    const checked = await routesProvider.check!({}, { ...shifting(), syncWrite });
    expect(checked.failures).toEqual([]);
    expect(checked.inputs.syncWrite).toEqual(syncWrite);
    expect(checked.inputs.routes["pr-14/web"]).toContain("(pr-14_web_green, version green, 45%)");
    const before = await routesProvider.create!(core.checkRoutes(shifting({ devNamespaces: {} }), at).inputs!);
    expect(await routesProvider.diff!(before.id, before.outs, checked.inputs)).toMatchObject({ changes: true });
    const updated = await routesProvider.update!(before.id, before.outs, checked.inputs);
    expect(updated.outs!.renderedAt).toBe("2026-11-30T10:45:00.000Z");
    expect(updated.outs!.routes["pr-14/web"]).toContain("(pr-14_web_green, version green, 45%)");
    expect(cluster.configMaps.get("default/gateway-xds")!.data).toEqual(
      renderRoutes(shifting(), new Date(syncWrite.renderedAt)).files.xds,
    );
    expect(await routesProvider.diff!(before.id, updated.outs!, checked.inputs)).toMatchObject({ changes: false });
    // A later sync wrote since: this record leaves its ConfigMap alone.
    const applied = cluster.applied.length;
    const stale = (await routesProvider.check!({}, { ...shifting({ devNamespaces: {} }), syncWrite })).inputs;
    await routesProvider.update!(before.id, updated.outs!, stale);
    expect(cluster.applied).toHaveLength(applied);
  });

  it("reads the state back on refresh, and nothing once the ConfigMap is gone", async () => {
    const created = await routesProvider.create!(core.checkRoutes(plain()).inputs!);
    expect(await routesProvider.read!(created.id, created.outs)).toEqual({
      id: "default/gateway-xds",
      props: created.outs,
    });
    cluster.configMaps.clear();
    expect(await routesProvider.read!(created.id, created.outs)).toEqual({});
  });

  it("on delete leaves the gateway its production routes", async () => {
    const created = await routesProvider.create!(core.checkRoutes(plain()).inputs!);
    await routesProvider.delete!(created.id, created.outs);
    expect(cluster.configMaps.get("default/gateway-xds")!.data["rds.yaml"]).not.toContain("/pr-12/batch");
  });

  it("refuses to run outside a checkout of the project, saying so", async () => {
    const elsewhere = tempDir("not-a-checkout-");
    const cwd = process.cwd();
    process.chdir(elsewhere);
    try {
      await expect(routesProvider.check!({}, plain())).rejects.toThrow(
        `the routes provider runs in the envoy-gateways project directory, but ${elsewhere} has no routes-provider/core.ts: run pulumi from a checkout of the project`,
      );
    } finally {
      process.chdir(cwd);
    }
  });
});
