// How the program wires its resources together (under Pulumi mocks): which
// provider each uses, what is created before what, what the engine keeps
// secret, and what each stack option changes.
import * as pulumi from "@pulumi/pulumi";
import { beforeAll, describe, expect, it } from "vitest";
import { declareStack, loadStackConfig } from "../../program/stack.js";
import type { DevNamespaces } from "../../routing/table.js";
import { minimalRaw, minutesIntoShift, SHIFT_START, withValue } from "./fixtures.js";
import { declaring, named, of, optionsOf, setStackConfig, useMocks } from "./pulumi-mocks.js";

beforeAll(() => useMocks("wiring"));

function stack(raw: Record<string, unknown>, dev: DevNamespaces = {}, now?: Date) {
  setStackConfig(raw);
  return declaring(() => declareStack(loadStackConfig(), dev, now));
}
const ROUTES = "pulumi-nodejs:dynamic/envoy-gateways:Routes";

describe("the program's wiring", () => {
  it("creates each routes resource after its gateway's xDS ConfigMap, and has the engine keep its kubeconfig secret", async () => {
    const { result, options, resources } = await stack(
      { ...minimalRaw(), kubeconfig: "apiVersion: v1\nkind: Config\n" },
      { "pr-5": ["batch"] },
    );
    expect(
      resources
        .filter((r) => r.type === ROUTES)
        .map((r) => r.name)
        .sort(),
    ).toEqual(["gateway-routes", "internal-gateway-routes"]);
    for (const gateway of ["gateway", "internal-gateway"] as const) {
      const opts = optionsOf(options, ROUTES, `${gateway}-routes`);
      expect(opts.additionalSecretOutputs).toEqual(["kubeconfig"]);
      expect(opts.dependsOn).toEqual([result.gatewayResources[gateway].xdsConfigMap]);
      const inputs = resources.find((r) => r.name === `${gateway}-routes`)!.inputs;
      expect(inputs).toMatchObject({
        gateway,
        namespace: "default",
        configMap: `${gateway}-xds`,
        devNamespaces: { "pr-5": ["batch"] },
      });
      expect(inputs.kubeconfig).toEqual({
        [pulumi.runtime.specialSigKey]: pulumi.runtime.specialSecretSig,
        value: "apiVersion: v1\nkind: Config\n",
      });
    }
  });

  it("declares every Kubernetes object through the stack's provider, and the gateways after the Services they route to", async () => {
    const { result, options } = await stack(minimalRaw());
    const provider = optionsOf(options, "pulumi:providers:kubernetes", "kubernetes");
    expect(provider).toBeDefined();
    for (const [type, name] of [
      ["envoy-gateways:gateway:EnvoyGateway", "gateway"],
      ["envoy-gateways:gateway:EnvoyGateway", "internal-gateway"],
      ["envoy-gateways:service:HeadlessService", "www"],
      ["envoy-gateways:rbac:RouteSyncAccess", "route-sync"],
    ] as const) {
      expect(optionsOf(options, type, name).provider, name).toBeInstanceOf(pulumi.ProviderResource);
    }
    for (const gateway of ["gateway", "internal-gateway"])
      expect(optionsOf(options, "envoy-gateways:gateway:EnvoyGateway", gateway).dependsOn).toEqual(result.services);
    expect(result.services.map((s) => s.service)).toHaveLength(3);
  });

  it("gives each version of a production service its own headless Service, weighted by the shift now, without declaring the image's pods", async () => {
    let raw = withValue(minimalRaw(), "services", [
      { name: "web", replicas: 4, websocket: true, image: "team/web:1.0.0", versions: ["blue", "green"] },
      { name: "api", replicas: 2, image: "team/api:2.0.0" },
    ]);
    raw = withValue(raw, "shifts", [
      {
        service: "web",
        from: "blue",
        to: "green",
        policy: "linear",
        start: SHIFT_START.toISOString(),
        duration: "100m",
      },
    ]);
    const { resources, result } = await stack(raw, {}, minutesIntoShift(40));
    const labels = (name: string) => named(resources, "core/v1:Service", name).inputs.metadata.labels;
    expect(
      of(resources, "core/v1:Service")
        .filter((s) => s.inputs.metadata.labels["app.kubernetes.io/component"] === "routed-service")
        .map((s) => s.inputs.metadata.name)
        .sort(),
    ).toEqual(["api", "web-blue", "web-green"]);
    expect(labels("web-blue")).toMatchObject({
      "envoy-gateways.io/service": "web",
      "envoy-gateways.io/version": "blue",
      "envoy-gateways.io/weight": "60",
      "envoy-gateways.io/replicas": "4",
      "envoy-gateways.io/protocol": "websocket",
    });
    expect(labels("web-green")).toMatchObject({
      "envoy-gateways.io/version": "green",
      "envoy-gateways.io/weight": "40",
    });
    expect(labels("api")).not.toHaveProperty(["envoy-gateways.io/version"]);
    expect(
      of(resources, "apps/v1:Deployment")
        .map((d) => d.inputs.metadata.name)
        .sort(),
    ).toEqual(["api", "gateway", "internal-gateway"]);
    expect(named(resources, "apps/v1:Deployment", "api").inputs.spec.replicas).toBe(2);
    expect(result.routes.gateway).toContain(
      "https://web.example.org/ -> web-blue.default.svc.cluster.local:443 (default_web_blue, version blue, 60%) + web-green.default.svc.cluster.local:443 (default_web_green, version green, 40%)",
    );
  });

  it("starts the xDS ConfigMaps with the production routes and lists the discovered dev/PR routes too in the outputs", async () => {
    const { resources, result } = await stack(withValue(minimalRaw(), "namespace", "apps"), { "pr-5": ["batch"] });
    expect(named(resources, "core/v1:ConfigMap", "gateway-xds").inputs.data["rds.yaml"]).not.toContain("/pr-5/batch");
    expect(named(resources, "core/v1:ConfigMap", "gateway-xds").inputs.metadata.namespace).toBe("apps");
    expect(result.routes.gateway).toEqual([
      "https://www.example.org/ -> www.apps.svc.cluster.local:443 (apps_www)",
      "https://example.org/ -> www.apps.svc.cluster.local:443 (apps_www)",
      "https://batch.example.org/ -> batch.apps.svc.cluster.local:443 (apps_batch)",
      "https://notebook.example.org/ -> notebook.apps.svc.cluster.local:443 (apps_notebook)",
      "https://internal.example.org/pr-5/batch -> batch.pr-5.svc.cluster.local:443 (pr-5_batch)",
    ]);
    expect(result.routes["internal-gateway"]).toContain(
      "https://internal.example.internal/pr-5/batch -> batch.pr-5.svc.cluster.local:443 (pr-5_batch)",
    );
    expect(result.gateways.gateway.service).toBe("apps/gateway");
    expect(result.gateways["internal-gateway"].service).toBe("apps/internal-gateway");
    expect(
      named(resources, "rbac.authorization.k8s.io/v1:Role", "envoy-gateways-route-sync-write").inputs.metadata
        .namespace,
    ).toBe("apps");
  });

  it("drains the gateways for the stack's edge.drainSeconds", async () => {
    const { resources } = await stack(withValue(minimalRaw(), "edge", { drainSeconds: 50 }));
    for (const gateway of ["gateway", "internal-gateway"])
      expect(
        named(resources, "apps/v1:Deployment", gateway).inputs.spec.template.spec.terminationGracePeriodSeconds,
      ).toBe(65);
  });

  it("in render mode declares no routes resources (there is no cluster to write to)", async () => {
    const { resources } = await stack(withValue(minimalRaw(), "renderYamlToDirectory", "out/manifests"));
    expect(resources.filter((r) => r.type === ROUTES)).toEqual([]);
    // The gateways' ConfigMaps only (the bootstrap's name ends with its content's checksum).
    expect(
      of(resources, "core/v1:ConfigMap")
        .map((c) => (c.inputs.metadata.name as string).replace(/-[0-9a-f]{10}$/, "-<checksum>"))
        .sort(),
    ).toEqual([
      "gateway-bootstrap-<checksum>",
      "gateway-xds",
      "internal-gateway-bootstrap-<checksum>",
      "internal-gateway-xds",
    ]);
  });

  it("stops with one message, and declares nothing, when the discovered dev/PR namespaces are refused", async () => {
    setStackConfig(minimalRaw());
    let error: unknown;
    const { resources } = await declaring(() => {
      try {
        declareStack(loadStackConfig(), { PR_5: ["batch"] });
      } catch (e) {
        error = e;
      }
    });
    expect(error).toBeInstanceOf(pulumi.RunError);
    expect((error as Error).message).toBe(
      `discovered dev/PR namespaces: 1 problem\n  - PR_5: namespace must be a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters) (got "PR_5")`,
    );
    expect((error as Error).stack).toBe((error as Error).message);
    expect(resources).toEqual([]);
  });

  it("refuses any other value set as a secret, naming it, and a plain kubeconfig, without showing either", () => {
    setStackConfig({ ...minimalRaw(), domain: "example.org" }, ["domain"]);
    expect(() => loadStackConfig()).toThrow(
      "stack wiring config: 1 problem\n  - envoy-gateways:domain: is set as a secret, but it is rendered into the gateways' ConfigMaps and the stack's state in plain text like every value but the kubeconfig; set it without --secret (value not shown)",
    );
    setStackConfig({ ...minimalRaw(), kubeconfig: "token: s3cr3t" }, []);
    expect(() => loadStackConfig()).toThrow(
      "stack wiring config: 1 problem\n  - envoy-gateways:kubeconfig: is plain text in the stack's config; set it as a secret: pulumi config set --secret envoy-gateways:kubeconfig (value not shown)",
    );
    // Secrets of other namespaces (a provider's) are not the program's concern.
    pulumi.runtime.setAllConfig(
      {
        ...Object.fromEntries(
          Object.entries(minimalRaw()).map(([k, v]) => [
            `envoy-gateways:${k}`,
            typeof v === "string" ? v : JSON.stringify(v),
          ]),
        ),
        "kubernetes:kubeconfig": "x",
      },
      ["kubernetes:kubeconfig"],
    );
    expect(loadStackConfig()).toEqual({
      config: expect.objectContaining({ domain: "example.org" }),
      raw: minimalRaw(),
    });
  });

  it("keeps the config as written, without the kubeconfig, for the route controller", () => {
    setStackConfig({ ...minimalRaw(), kubeconfig: "token: s3cr3t" }, ["kubeconfig"]);
    const loaded = loadStackConfig();
    expect(loaded.raw).toEqual(minimalRaw());
    expect(loaded.kubeconfig?.text).toBe("token: s3cr3t");
  });
});
