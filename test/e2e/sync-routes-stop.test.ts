// The documented way to run the watcher, `dist/sync-routes --stack <s> --watch`,
// stops on SIGTERM: the signal reaches the watcher itself (the launcher execs
// Node: nothing stands between, where `npm run` has npm, a shell and tsx relay
// it, and tsx SIGKILLs a child that does not acknowledge it within 30 ms), the
// record step in progress (an engine run, with its pulumi processes) finishes
// first, at a lower CPU priority than the watcher, and then the process and
// every process it started are gone.
import { existsSync, readFileSync } from "node:fs";
import { getPriority } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { descendants, proc, type Proc } from "../harness/processes.js";
import { repoRoot } from "../support/components.js";
import { ProgramStack, routedServiceBody } from "../support/program.js";

const cluster = inject("cluster");
let stack: ProgramStack;
const DEV = "envoy-gateways.io/routes";

beforeAll(async () => {
  stack = await ProgramStack.create(cluster, { from: "dev", stack: "stop" });
  await stack.ws.ok(["up", "--yes", "--skip-preview"], 600_000);
});

afterAll(async () => {
  await stack?.dispose();
});

const alive = (p: Proc) => proc(p.pid)?.start === p.start;

/** The record step's engine run: the Automation API's `pulumi up`. */
const ENGINE_RUN = /(^|\/)pulumi up /;

describe("dist/sync-routes --watch and SIGTERM", () => {
  it("stops after the record in progress, and leaves no process behind", async () => {
    const child = stack.spawnScript("sync-routes", ["--watch", "--debounce", "300ms"]);
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d));
    child.stderr.on("data", (d: Buffer) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    /** Every process the watcher started while it ran, as seen every 50 ms until it exits. */
    const seen = new Map<string, Proc>();
    /** A process that is exiting reads as an empty command line: the command seen before it stays. */
    const remember = (p: Proc) => {
      const key = `${p.pid}/${p.start}`;
      if (p.command || !seen.has(key)) seen.set(key, p);
      return p;
    };
    let running = true;
    void exited.then(() => (running = false));
    const sample = () => {
      if (!running) return;
      for (const p of descendants(child.pid!)) remember(p);
      setTimeout(sample, 50);
    };
    sample();
    try {
      const until = async (what: string, pattern: RegExp, ms: number): Promise<void> => {
        const deadline = Date.now() + ms;
        while (!pattern.test(out)) {
          if (Date.now() > deadline) throw new Error(`no ${what} within ${ms} ms; output:\n${out}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      await until("the watch to start", /watching namespaces labelled envoy-gateways\.io\/routes=dev/, 120_000);
      // The pid SIGTERM goes to is the watcher's Node itself: the launcher exec'd it.
      expect(proc(child.pid!)?.command).toMatch(/node \S*dist\/sync-routes\.js --stack stop /);
      // At the priority it was started with; only its engine runs go lower.
      expect(proc(child.pid!)?.nice).toBe(getPriority());

      // A change: written live, then recorded by an engine run, during which SIGTERM arrives.
      await stack.createNamespace("pr-e2e-stop", { [DEV]: "dev" });
      await stack.core().createNamespacedService({ namespace: "pr-e2e-stop", body: routedServiceBody("batch") });
      await until("the live write", /\+ pr-e2e-stop\/batch on gateway[\s\S]*?routes live/, 60_000);
      const deadline = Date.now() + 120_000;
      // What this loop sees is sampled too: the check below then holds whatever the sampler's timing.
      const sampled = () => descendants(child.pid!).map(remember);
      while (!sampled().some((p) => ENGINE_RUN.test(p.command))) {
        if (/recorded in the stack's state/.test(out)) throw new Error(`the record ended before it was seen:\n${out}`);
        if (Date.now() > deadline) throw new Error(`no engine run (pulumi) under the watcher; output:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(out).not.toMatch(/recorded in the stack's state/);
      process.kill(child.pid!, "SIGTERM");

      expect(await exited).toBe(0);
      // The record in progress finished, then the watcher stopped.
      expect(out).toMatch(
        /SIGTERM: stopping after any sync in progress[\s\S]*recorded in the stack's state \([\d.]+s\)[\s\S]*\] stopped\n/,
      );
      expect([...seen.values()].some((p) => ENGINE_RUN.test(p.command))).toBe(true);
      // The engine run and the plugins it started had the cores after everything else: nice 10 (--record-niceness).
      const engine = [...seen.values()].filter((p) => ENGINE_RUN.test(p.command) || /pulumi-resource-/.test(p.command));
      expect(engine.some((p) => /pulumi-resource-kubernetes/.test(p.command))).toBe(true);
      expect(engine.map((p) => `${p.command.split(" ")[0]} nice ${p.nice}`)).toEqual(
        engine.map((p) => `${p.command.split(" ")[0]} nice ${Math.min(19, getPriority() + 10)}`),
      );
      expect([...seen.values()].filter(alive).map((p) => `${p.pid} ${p.command}`)).toEqual([]);
      expect(proc(child.pid!)).toBeUndefined();
      // What was recorded is the state: the program sees nothing to change.
      const again = await stack.ws.run(["preview", "--expect-no-changes"], 300_000);
      expect(again.code, again.stdout + again.stderr).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      running = false;
    }
  });

  it("is the command the docs give", () => {
    for (const doc of ["README.md", "docs/sync-routes.md"])
      expect(readFileSync(join(repoRoot, doc), "utf8")).toMatch(/^dist\/sync-routes --stack \S+ --watch/m);
    expect(existsSync(join(repoRoot, "dist", "sync-routes"))).toBe(true);
  });
});
