// The stack sync-routes works on, through the Pulumi Automation API (the
// same engine, program and state as `pulumi up`): its config, and what its
// routes resources hold in state.
import { LocalWorkspace, type Stack } from "@pulumi/pulumi/automation";
import { fromPulumiConfig, kubeconfigOf, KUBECONFIG_KEY, parseStackConfig, PROJECT } from "../routing/config/load.js";
import type { StackConfig } from "../routing/config/schema.js";
import type { RoutesOutputs } from "../routes-provider/core.js";

/** The stack through the Automation API, with the pulumi CLI found on PATH. */
export async function openStack(stackName: string, projectDir: string): Promise<Stack> {
  try {
    return await LocalWorkspace.selectStack({ stackName, workDir: projectDir });
  } catch (e) {
    if (/ENOENT/.test(String((e as Error).message))) {
      throw new Error("the pulumi CLI is not on PATH: `source scripts/env.sh` puts the one scripts/build-components.sh built there, with the local backend");
    }
    throw new Error(`stack ${stackName} in ${projectDir}: ${engineErrorLines(e)}`);
  }
}

/** The stack's validated config, and its kubeconfig (a secret) kept apart. */
export async function stackConfigOf(stack: Stack): Promise<{ config: StackConfig; kubeconfig?: string }> {
  const all = await stack.getAllConfig();
  const values = Object.fromEntries(Object.entries(all).map(([k, v]) => [k, v.value]));
  const secretKeys = new Set(Object.entries(all).filter(([k, v]) => v.secret && k.startsWith(`${PROJECT}:`)).map(([k]) => k.slice(PROJECT.length + 1)));
  const raw = fromPulumiConfig(values);
  const config = parseStackConfig(raw, `stack ${stack.name} config`, { secretKeys });
  const kubeconfig = secretKeys.has(KUBECONFIG_KEY) ? kubeconfigOf(raw) : undefined;
  return { config, ...(kubeconfig ? { kubeconfig } : {}) };
}

/** One routes resource as the stack's state holds it. */
export interface RoutesResourceState {
  urn: string;
  /** Its name in the program: <gateway>-routes. */
  name: string;
  outputs: RoutesOutputs;
}

/** The stack's routes resources as its state holds them (secrets decrypted: this process writes the ConfigMaps with their kubeconfig). */
export async function routesInState(stack: Stack): Promise<RoutesResourceState[]> {
  const deployment = await stack.exportStack();
  const resources = (deployment.deployment as { resources?: { urn: string; type: string; outputs?: unknown }[] }).resources ?? [];
  return resources
    .filter((r) => r.type.endsWith(":Routes"))
    .map((r) => ({ urn: r.urn, name: r.urn.slice(r.urn.lastIndexOf("::") + 2), outputs: decrypted(r.outputs) as RoutesOutputs }));
}

/** State values as the engine exports them, with secrets ({ "4dabf18193072939515e22adb298388d": ..., plaintext }) as their plaintext. */
function decrypted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decrypted);
  if (!value || typeof value !== "object") return value;
  const v = value as Record<string, unknown>;
  if (v["4dabf18193072939515e22adb298388d"] === "1b47061264138c4ac30d75fd1eb44270" && "plaintext" in v) return JSON.parse(String(v.plaintext));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decrypted(x)]));
}

/** The engine's own error lines of a failed command, without its progress output. */
export function engineErrorLines(e: unknown): string {
  const text = String((e as { stderr?: string }).stderr || (e as { stdout?: string }).stdout || (e as Error).message || e);
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => /error|failed|forbidden|cannot|refused|not allowed|locked/i.test(l));
  return [...new Set(lines)].slice(0, 8).join("\n") || text.slice(0, 2000);
}
