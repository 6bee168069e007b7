// The stack sync-routes works on: its config and what its routes resources
// hold in state, read with the pulumi CLI; and, for an engine run (the
// record step, `shifts --reverse`), the same stack through the Pulumi
// Automation API (the same engine, program and state as `pulumi up`). The
// Automation API is loaded only then: loading it costs about half a second,
// more than the rest of a sync that finds nothing to change.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { Stack } from "@pulumi/pulumi/automation";
import { fromPulumiConfig, kubeconfigOf, KUBECONFIG_KEY, parseStackConfig, PROJECT } from "../routing/config/load.js";
import type { StackConfig } from "../routing/config/schema.js";
import type { RoutesOutputs } from "../routes-provider/core.js";
import { nicedCliRoot, onPath } from "./niced-cli.js";

const exec = promisify(execFile);

const NOT_ON_PATH =
  "the pulumi CLI is not on PATH: `source scripts/env.sh` puts the one scripts/build-components.sh built there, with the local backend";

/** The pulumi CLI an engine run would start: the first on PATH. */
function pulumiOnPath(): string {
  const cli = onPath("pulumi", process.env.PATH ?? "");
  if (cli === undefined) throw new Error(NOT_ON_PATH);
  return cli;
}

/**
 * A stack of the project in `workDir`, run with the pulumi CLI found on PATH.
 * Constructing it reads nothing: its config and state are read when asked for
 * (a missing stack or CLI is reported then).
 */
export class ProjectStack {
  private engine?: Promise<Stack>;

  /**
   * @param name the stack's name.
   * @param workDir the project's directory (Pulumi.yaml).
   * @param engineNiceness how much lower than this process an engine run
   *   (the pulumi CLI and its plugins) runs on the CPU (nice(1)): 0, as this
   *   process, to 19, the lowest.
   */
  constructor(
    readonly name: string,
    readonly workDir: string,
    readonly engineNiceness = 0,
  ) {}

  /** Runs `pulumi <args> --stack <name> --non-interactive` in the project's directory, as the Automation API would; its stdout. */
  async pulumi(args: string[]): Promise<string> {
    try {
      const { stdout } = await exec("pulumi", [...args, "--stack", this.name, "--non-interactive"], {
        cwd: this.workDir,
        env: { ...process.env, PULUMI_AUTOMATION_API: "true" },
        maxBuffer: 1 << 30,
      });
      return stdout;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") {
        throw new Error(NOT_ON_PATH, { cause: e });
      }
      throw Object.assign(new Error(`stack ${this.name} in ${this.workDir}: ${engineErrorLines(e)}`, { cause: e }), {
        stderr: (e as { stderr?: string }).stderr,
      });
    }
  }

  /** The same stack through the Automation API, for an engine run (loaded, and the stack selected, on first use). */
  automation(): Promise<Stack> {
    this.engine ??= import("@pulumi/pulumi/automation/index.js").then(async ({ LocalWorkspace, PulumiCommand }) => {
      const pulumiCommand =
        this.engineNiceness > 0
          ? await PulumiCommand.get({ root: nicedCliRoot(pulumiOnPath(), this.engineNiceness) })
          : undefined;
      return LocalWorkspace.selectStack({ stackName: this.name, workDir: this.workDir }, { pulumiCommand }).catch(
        (e: unknown) => {
          throw new Error(`stack ${this.name} in ${this.workDir}: ${engineErrorLines(e)}`, { cause: e });
        },
      );
    });
    return this.engine;
  }
}

/** The stack's validated config, and its kubeconfig (a secret) kept apart. */
export async function stackConfigOf(stack: ProjectStack): Promise<{ config: StackConfig; kubeconfig?: string }> {
  // What the Automation API's getAllConfig runs.
  const all = JSON.parse(await stack.pulumi(["config", "--show-secrets", "--json"])) as Record<
    string,
    { value: string; secret?: boolean }
  >;
  const values = Object.fromEntries(Object.entries(all).map(([k, v]) => [k, v.value]));
  const secretKeys = new Set(
    Object.entries(all)
      .filter(([k, v]) => v.secret && k.startsWith(`${PROJECT}:`))
      .map(([k]) => k.slice(PROJECT.length + 1)),
  );
  const raw = fromPulumiConfig(values);
  const config = parseStackConfig(raw, `stack ${stack.name} config`, { secretKeys });
  const kubeconfig = secretKeys.has(KUBECONFIG_KEY) ? kubeconfigOf(raw) : undefined;
  return { config, ...(kubeconfig ? { kubeconfig } : {}) };
}

/** One routes resource as the stack's state holds it, without its secrets. */
export interface RoutesResourceState {
  urn: string;
  /** Its name in the program: <gateway>-routes. */
  name: string;
  /** Its outputs but the kubeconfig (a secret): sync-routes writes with the stack config's. */
  outputs: Omit<RoutesOutputs, "kubeconfig">;
}

/**
 * The stack's routes resources as its state holds them, read without
 * decrypting its secrets: nothing sync-routes needs from the state is secret,
 * and decrypting costs the CLI deriving the stack's key again (about a
 * quarter of a second of CPU) beside the config read, which needs it for the
 * kubeconfig.
 */
export async function routesInState(stack: ProjectStack): Promise<RoutesResourceState[]> {
  return routesOf(JSON.parse(await stack.pulumi(["stack", "export"])) as { deployment?: unknown });
}

/** A secret as the engine exports it without --show-secrets: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext }. */
function isSecret(value: unknown): boolean {
  return (
    !!value &&
    typeof value === "object" &&
    (value as Record<string, unknown>)["4dabf18193072939515e22adb298388d"] === "1b47061264138c4ac30d75fd1eb44270"
  );
}

/** The routes resources of an exported stack, every secret value in their outputs left out. */
export function routesOf(exported: { deployment?: unknown }): RoutesResourceState[] {
  const resources =
    (exported.deployment as { resources?: { urn: string; type: string; outputs?: unknown }[] } | undefined)
      ?.resources ?? [];
  return resources
    .filter((r) => r.type.endsWith(":Routes"))
    .map((r) => ({
      urn: r.urn,
      name: r.urn.slice(r.urn.lastIndexOf("::") + 2),
      outputs: withoutSecrets(r.outputs ?? {}) as RoutesResourceState["outputs"],
    }));
}

function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((x) => !isSecret(x)).map(withoutSecrets);
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, x]) => !isSecret(x))
      .map(([k, x]) => [k, withoutSecrets(x)]),
  );
}

/** The engine's own error lines of a failed command, without its progress output. */
export function engineErrorLines(e: unknown): string {
  const text = String(
    (e as { stderr?: string }).stderr || (e as { stdout?: string }).stdout || (e as Error).message || e,
  );
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => /error|failed|forbidden|cannot|refused|not allowed|locked/i.test(l));
  return [...new Set(lines)].slice(0, 8).join("\n") || text.slice(0, 2000);
}
