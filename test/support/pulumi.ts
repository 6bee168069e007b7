// Runs the real pulumi CLI (with the cached Node language host and Kubernetes
// provider) against a program, with a local file backend in a temporary directory.
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { repoRoot, requireComponents } from "./components.js";

export interface PulumiResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface PulumiWorkspaceOptions {
  /**
   * Directory holding Pulumi.yaml. It is copied into the workspace (so stack files such
   * as Pulumi.<stack>.yaml never land in the repository), with node_modules linked to
   * the repository's.
   */
  programDir: string;
  /** Stack to create; default "test". */
  stack?: string;
  /** Passphrase of the stack's secrets; default a fixed test passphrase. */
  passphrase?: string;
  /** Extra environment variables for every pulumi command. */
  env?: Record<string, string>;
  /** The file backend of another workspace (another checkout of the same stack); default a new one. */
  backendDir?: string;
  /** Copy the stack files (Pulumi.<stack>.yaml) too, as a second clone of a repository that has them. */
  keepStackFiles?: boolean;
}

/** The part of a package-lock.json a release check reads: each installed package's version and integrity. */
export interface PackageLock {
  packages: Record<string, { version?: string; integrity?: string }>;
}

/**
 * The packages `release` pins that `current` does not have at the same
 * version and integrity (the project itself, key "", aside): a release runs
 * with this checkout's node_modules, which may hold more packages than it
 * needs, never other ones.
 */
export function packagesNotAsPinned(release: PackageLock, current: PackageLock): string[] {
  return Object.entries(release.packages)
    .filter(([path]) => path !== "")
    .filter(([path, p]) => {
      const now = current.packages[path];
      return now?.version !== p.version || now?.integrity !== p.integrity;
    })
    .map(([path, p]) => `${path.replace(/^node_modules\//, "")}@${p.version ?? "?"}`);
}

export class PulumiWorkspace {
  /** Temporary directory holding the program copy and the file backend; removed by dispose(). */
  readonly dir: string;
  readonly stack: string;
  /** The copy of the program the commands run in. */
  readonly programDir: string;
  /** The file backend (shared by other checkouts made with anotherCheckout()). */
  readonly backendDir: string;
  /** TMPDIR of every command (the engine, the program, the providers). */
  readonly tmpDir: string;
  readonly env: Record<string, string>;
  private readonly ownsBackend: boolean;

  constructor(private readonly options: PulumiWorkspaceOptions) {
    const c = requireComponents();
    this.stack = options.stack ?? "test";
    this.dir = mkdtempSync(join(tmpdir(), "eg-pulumi-"));
    this.ownsBackend = options.backendDir === undefined;
    this.backendDir = options.backendDir ?? join(this.dir, "backend");
    mkdirSync(this.backendDir, { recursive: true });
    this.tmpDir = join(this.dir, "tmp");
    mkdirSync(this.tmpDir);
    this.programDir = join(this.dir, "program");
    const skip = options.keepStackFiles
      ? /[\\/](node_modules|dist)$/
      : /[\\/](node_modules|dist|Pulumi\.[^\\/]+\.yaml)$/;
    cpSync(options.programDir, this.programDir, { recursive: true, filter: (src) => !skip.test(src) });
    symlinkSync(join(repoRoot, "node_modules"), join(this.programDir, "node_modules"), "dir");
    const path = [
      dirname(process.execPath), // the Node 22 running the tests runs the program too
      c.pulumiBinDir,
      c.kubernetesProviderBinDir,
      process.env.PATH ?? "",
    ].join(delimiter);
    this.env = {
      ...stringEnv(process.env),
      PATH: path,
      PULUMI_HOME: c.pulumiHome,
      PULUMI_BACKEND_URL: `file://${this.backendDir}`,
      TMPDIR: this.tmpDir,
      PULUMI_CONFIG_PASSPHRASE: options.passphrase ?? "envoy-gateways-test",
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
      PULUMI_SKIP_UPDATE_CHECK: "1",
      PULUMI_SKIP_CONFIRMATIONS: "true",
      NO_COLOR: "1",
      ...options.env,
    };
    delete this.env.PULUMI_CONFIG_PASSPHRASE_FILE;
    delete this.env.PULUMI_ACCESS_TOKEN;
  }

  /**
   * A checkout of the same program at another path, sharing this stack's
   * backend (and its stack file): a CI runner next to a laptop.
   */
  anotherCheckout(): PulumiWorkspace {
    return new PulumiWorkspace({
      ...this.options,
      programDir: this.programDir,
      stack: this.stack,
      backendDir: this.backendDir,
      keepStackFiles: true,
    });
  }

  /**
   * The same stack (backend and stack file) run from the sources of an earlier release of this
   * repository (`git archive <commit>` and its build of the Envoy API descriptors), as a team
   * rolling back checks that release out and sets it up. It runs
   * with this checkout's node_modules, so the release must pin the same packages (checked).
   */
  atRelease(commit: string): PulumiWorkspace {
    const git = (...args: string[]) => execFileSync("git", ["-C", repoRoot, ...args], { encoding: "utf8" });
    try {
      git("cat-file", "-e", `${commit}^{commit}`);
    } catch {
      throw new Error(`release ${commit} is not in this clone's history (a shallow clone? run git fetch --unshallow)`);
    }
    const differ = packagesNotAsPinned(
      JSON.parse(git("show", `${commit}:package-lock.json`)) as PackageLock,
      JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as PackageLock,
    );
    if (differ.length > 0)
      throw new Error(
        `release ${commit} pins packages this checkout has otherwise (its node_modules would not be the release's): ${differ.slice(0, 5).join(", ")}`,
      );
    const sources = mkdtempSync(join(tmpdir(), "eg-release-"));
    try {
      git("archive", "--output", join(sources, "release.tar"), commit);
      execFileSync("tar", ["-xf", "release.tar"], { cwd: sources });
      rmSync(join(sources, "release.tar"));
      // Its build step for what git does not hold (the Envoy API descriptors): from the cache.
      execFileSync("bash", ["scripts/build-components.sh", "--only", "envoy-api"], { cwd: sources, stdio: "ignore" });
      const release = new PulumiWorkspace({
        ...this.options,
        programDir: sources,
        stack: this.stack,
        backendDir: this.backendDir,
      });
      const stackFile = `Pulumi.${this.stack}.yaml`;
      copyFileSync(join(this.programDir, stackFile), join(release.programDir, stackFile));
      return release;
    } finally {
      rmSync(sources, { recursive: true, force: true });
    }
  }

  /** Starts `pulumi ARGS` in the program directory and returns the process (the caller waits for it). */
  spawn(args: string[]): ChildProcessWithoutNullStreams {
    return spawn(requireComponents().pulumi, ["--non-interactive", "--color", "never", ...args], {
      cwd: this.programDir,
      env: this.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
  }

  /** Runs `pulumi ARGS` in the program directory; never throws on a non-zero exit. */
  run(args: string[], timeoutMs = 240_000): Promise<PulumiResult> {
    const c = requireComponents();
    return new Promise((resolve, reject) => {
      const child = spawn(c.pulumi, ["--non-interactive", "--color", "never", ...args], {
        cwd: this.programDir,
        env: this.env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      child.on("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stdout, stderr });
      });
    });
  }

  /** Like run(), but throws with the command's output unless it exits 0. */
  async ok(args: string[], timeoutMs?: number): Promise<PulumiResult> {
    const result = await this.run(args, timeoutMs);
    if (result.code !== 0) {
      throw new Error(
        `pulumi ${args.join(" ")} exited with ${result.code ?? result.signal}\n` +
          `--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`,
      );
    }
    return result;
  }

  /** Creates the stack in the file backend. */
  async init(): Promise<void> {
    await this.ok(["stack", "init", this.stack]);
  }

  /** Sets a config value of the stack (as a secret when `secret`). */
  async setConfig(key: string, value: string, secret = false): Promise<void> {
    // --  so that values starting with "-" are not taken for flags.
    await this.ok([
      "config",
      "set",
      "--stack",
      this.stack,
      ...(secret ? ["--secret"] : ["--plaintext"]),
      key,
      "--",
      value,
    ]);
  }

  /** The stack's outputs, with secrets shown. */
  async outputs(): Promise<Record<string, unknown>> {
    const result = await this.ok(["stack", "output", "--stack", this.stack, "--json", "--show-secrets"]);
    return JSON.parse(result.stdout) as Record<string, unknown>;
  }

  /**
   * An executable that runs the Node policy pack in `packDir` (PulumiPolicy.yaml,
   * package.json with a version, index.ts); pass it to `--policy-pack`.
   *
   * The engine starts a policy pack *directory* through the Node language host's
   * RunPlugin, which the language host built here (v3.68.0, see
   * docs/real-components.md) lacks. For an executable file the engine instead runs it
   * as a binary analyzer plugin with the engine address as its argument; this one runs
   * @pulumi/pulumi's cmd/run-policy-pack on the pack, which is what the language host
   * would run.
   */
  policyPackLauncher(packDir: string): string {
    const runPolicyPack = createRequire(join(packDir, "package.json")).resolve("@pulumi/pulumi/cmd/run-policy-pack");
    const launcher = join(this.dir, `policy-pack-${randomSuffix()}`);
    writeFileSync(
      launcher,
      `#!/bin/sh\ncd ${shellQuote(packDir)} && exec node ${shellQuote(runPolicyPack)} "$1" ${shellQuote(packDir)}\n`,
    );
    chmodSync(launcher, 0o755);
    return launcher;
  }

  /** Removes the stack (if still there, and this workspace made its backend) and the temporary directory. */
  async dispose(): Promise<void> {
    if (this.ownsBackend && existsSync(this.programDir))
      await this.run(["stack", "rm", "--stack", this.stack, "--yes", "--force"]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function randomSuffix(): string {
  return Math.random().toString(36).slice(2, 10);
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) out[key] = value;
  return out;
}
