// Running policies on resources shaped as the engine passes them: properties
// behind the engine's unknown-checking proxy, config with the schema's
// defaults, violations collected through reportViolation, and an unknown
// value turned into the engine's "can't run during preview" note.
import type {
  PolicyResource,
  ResourceValidationArgs,
  ResourceValidationPolicy,
  StackValidationPolicy,
} from "@pulumi/policy";
import type { Exemption, PolicySettings } from "../../policy/policies.js";

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a module path its package does not export
export const proxy = require("@pulumi/policy/proxy") as {
  unknownCheckingProxy<T>(v: T): T;
  unknownStringValue: string;
  unknownObjectValue: string;
  UnknownValueError: new (...a: unknown[]) => Error;
};
export const UNKNOWN = proxy.unknownStringValue;

export type Obj = { type: string; name: string; props: Record<string, any> };
export const K = (kind: string, group = "core/v1") => `kubernetes:${group}:${kind}`;

export interface Outcome {
  violations: string[];
  /** The engine's "can't run during preview" note, if the policy hit an unknown value. */
  note?: string;
}

export function asEngine(o: Obj): PolicyResource {
  const resource = {
    type: o.type,
    name: o.name,
    urn: `urn:pulumi:test::envoy-gateways::${o.type}::${o.name}`,
    props: proxy.unknownCheckingProxy(structuredClone(o.props)),
    opts: {},
    dependencies: [],
    propertyDependencies: {},
  };
  return { ...resource, isType: () => false, asType: () => undefined } as unknown as PolicyResource;
}

export function runStack(policy: StackValidationPolicy, objs: Obj[], exemptions: Exemption[] = []): Outcome {
  const out: Outcome = { violations: [] };
  try {
    const result = policy.validateStack(
      {
        resources: objs.map(asEngine),
        getConfig: <T>() => ({ exemptions }) as T,
        stackTags: new Map(),
        notApplicable: () => {
          throw new Error("not applicable");
        },
      },
      (message) => out.violations.push(message),
    );
    if (result instanceof Promise)
      throw new Error(`policy ${policy.name} is asynchronous: this helper runs synchronous policies only`);
  } catch (e) {
    if (!(e instanceof proxy.UnknownValueError)) throw e;
    out.note = `can't run policy ${policy.name} during preview: ${e.message}`;
  }
  return out;
}

/** Runs a resource policy on `o` with its config: the exemptions, or the whole settings. */
export function runResource(
  policy: ResourceValidationPolicy,
  o: Obj,
  config: Exemption[] | PolicySettings = [],
): Outcome {
  const out: Outcome = { violations: [] };
  const args = resourceArgs(o, Array.isArray(config) ? { exemptions: config } : config);
  const validations = Array.isArray(policy.validateResource) ? policy.validateResource : [policy.validateResource!];
  try {
    for (const v of validations) {
      const result = v(args, (message) => out.violations.push(message));
      if (result instanceof Promise)
        throw new Error(`policy ${policy.name} is asynchronous: this helper runs synchronous policies only`);
    }
  } catch (e) {
    if (!(e instanceof proxy.UnknownValueError)) throw e;
    out.note = e.message;
  }
  return out;
}

/** runResource for an asynchronous policy (one that reads the cluster), with the provider's inputs it is given. */
export async function runResourceAsync(
  policy: ResourceValidationPolicy,
  o: Obj,
  provider?: Record<string, unknown>,
  exemptions: Exemption[] = [],
): Promise<Outcome> {
  const out: Outcome = { violations: [] };
  const args = resourceArgs(o, { exemptions }, provider);
  const validations = Array.isArray(policy.validateResource) ? policy.validateResource : [policy.validateResource!];
  for (const v of validations) await v(args, (message) => out.violations.push(message));
  return out;
}

/** The arguments the engine gives a resource policy: the resource, its config, and its provider's inputs if any. */
function resourceArgs(o: Obj, settings: PolicySettings, provider?: Record<string, unknown>): ResourceValidationArgs {
  const r = asEngine(o);
  return {
    type: o.type,
    props: r.props,
    urn: r.urn,
    name: o.name,
    opts: {} as any,
    provider: provider
      ? { type: "pulumi:providers:kubernetes", name: "kubernetes", urn: "", props: provider }
      : undefined,
    stackTags: new Map(),
    getConfig: <T>() => settings as T,
    notApplicable: () => {
      throw new Error("not applicable");
    },
  } as unknown as ResourceValidationArgs;
}
