// The Pulumi runtime under mocks, for tests of what the program and its
// components declare: every resource's inputs as the engine receives them,
// and the options it is declared with (from a stack transformation, which
// sees what the engine is asked: dependencies, ignored changes, secret
// outputs, replacement order).
import * as pulumi from "@pulumi/pulumi";

export interface Declared {
  type: string;
  name: string;
  inputs: Record<string, any>;
}

export interface Options {
  type: string;
  name: string;
  opts: pulumi.CustomResourceOptions & pulumi.ComponentResourceOptions;
}

let declared: Declared[] = [];

/** Call once per file (in a beforeAll): resources get their inputs as state, Services of type LoadBalancer an ingress. */
export async function useMocks(stack = "test"): Promise<void> {
  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        declared.push({ type: args.type, name: args.name, inputs: args.inputs });
        const state = { ...args.inputs };
        if (args.type === "kubernetes:core/v1:Service" && args.inputs.spec?.type === "LoadBalancer") {
          const ingress = args.inputs.metadata?.annotations?.["test/ingress-hostname"]
            ? { hostname: args.inputs.metadata.annotations["test/ingress-hostname"] }
            : { ip: args.inputs.spec.loadBalancerIP ?? "203.0.113.7" };
          state.status = { loadBalancer: { ingress: [ingress] } };
        }
        return { id: `${args.name}-id`, state };
      },
      call: (args) => args.inputs,
    },
    "envoy-gateways",
    stack,
    false,
  );
}

// The mocks' pending registrations; waitForRPCs is how the SDK itself waits for them.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a module path its package does not export
const settings = require("@pulumi/pulumi/runtime/settings") as { waitForRPCs(): Promise<void> };

/** Runs `declare` in a stack of its own: what it declared, with the options of each resource. */
export async function declaring<T>(
  declare: () => T,
): Promise<{ result: T; resources: Declared[]; options: Options[] }> {
  declared = [];
  const options: Options[] = [];
  let result: T | undefined;
  await pulumi.runtime.runInPulumiStack(async () => {
    pulumi.runtime.registerStackTransformation((a) => {
      options.push({ type: a.type, name: a.name, opts: a.opts });
      return undefined;
    });
    result = declare();
  });
  await settings.waitForRPCs();
  return { result: result!, resources: declared.filter((r) => r.type !== "pulumi:pulumi:Stack"), options };
}

/** The engine's config map for raw stack config (objects as JSON text), with the kubeconfig a secret when set. */
export function setStackConfig(
  raw: Record<string, unknown>,
  secrets: string[] = raw.kubeconfig !== undefined ? ["kubeconfig"] : [],
): void {
  const all: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) all[`envoy-gateways:${k}`] = typeof v === "string" ? v : JSON.stringify(v);
  pulumi.runtime.setAllConfig(
    all,
    secrets.map((k) => `envoy-gateways:${k}`),
  );
}

export const of = (rs: Declared[], type: string) => rs.filter((r) => r.type === `kubernetes:${type}`);
export const named = (rs: Declared[], type: string, name: string) =>
  of(rs, type).find((r) => r.inputs.metadata?.name === name)!;
export const optionsOf = (os: Options[], type: string, name: string) =>
  os.find((o) => o.type === type && o.name === name)!.opts;
export const value = <T>(o: pulumi.Output<T>) => new Promise<T>((resolve) => o.apply(resolve));
