// A compiled CLI refuses to run once its sources changed after the build
// (scripts/cli-fresh.cjs, copied to dist/fresh.cjs and called by each
// dist/<name>.js): a project laid out in a temporary directory, with file times
// set by hand.
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/components.js";
import { tempDir } from "./temp-dir.js";

const fresh = createRequire(join(repoRoot, "package.json"))("./scripts/cli-fresh.cjs") as {
  staleSources(root: string, bundle: string, sources: string[]): string[];
};

/** A project with dist/render.bundle.js built at t=2000 s and sources written at the times given (seconds). */
function project(times: Record<string, number>) {
  const root = tempDir("cli-fresh-");
  mkdirSync(join(root, "dist"));
  const bundle = join(root, "dist", "render.bundle.js");
  writeFileSync(bundle, 'console.log("the bundle ran");\n');
  utimesSync(bundle, 2000, 2000);
  for (const [file, t] of Object.entries(times)) {
    mkdirSync(join(root, file, ".."), { recursive: true });
    writeFileSync(join(root, file), "// a source\n");
    utimesSync(join(root, file), t, t);
  }
  return { root, bundle };
}

describe("a compiled CLI's sources", () => {
  it("are fresh when none changed after the build", () => {
    const { root, bundle } = project({ "cli/render.ts": 1000, "routing/units.ts": 1999 });
    expect(fresh.staleSources(root, bundle, ["cli/render.ts", "routing/units.ts"])).toEqual([]);
  });

  it("names each source changed after the build, and each one gone", () => {
    const { root, bundle } = project({ "cli/render.ts": 1000, "routing/units.ts": 2001, "package-lock.json": 3000 });
    rmSync(join(root, "cli", "render.ts"));
    expect(fresh.staleSources(root, bundle, ["cli/render.ts", "routing/units.ts", "package-lock.json"])).toEqual([
      "cli/render.ts",
      "routing/units.ts",
      "package-lock.json",
    ]);
  });

  it("stop the command before its bundle loads, with one line saying what changed and what to run", () => {
    const sources = ["a.ts", "b.ts", "c.ts", "d.ts", "e.ts"];
    const { root } = project(Object.fromEntries(sources.map((f, i) => [f, i < 4 ? 2500 : 1000])));
    writeFileSync(
      join(root, "dist", "fresh.cjs"),
      `module.exports = require(${JSON.stringify(join(repoRoot, "scripts", "cli-fresh.cjs"))});\n`,
    );
    const wrapper = `require("./fresh.cjs").exitIfStale(__dirname, "render", ${JSON.stringify(sources)});\nrequire("./render.bundle.js");\n`;
    writeFileSync(join(root, "dist", "render.js"), wrapper);
    const stale = spawnSync(process.execPath, [join(root, "dist", "render.js")], { encoding: "utf8" });
    expect({ status: stale.status, stdout: stale.stdout, stderr: stale.stderr }).toEqual({
      status: 1,
      stdout: "",
      stderr:
        "dist/render was built before its sources last changed (a.ts, b.ts, c.ts and 1 more): run `npm run build`, or run it from source with `npm run render -- ...`\n",
    });
    for (const f of sources) utimesSync(join(root, f), 1000, 1000);
    const ran = spawnSync(process.execPath, [join(root, "dist", "render.js")], { encoding: "utf8" });
    expect({ status: ran.status, stdout: ran.stdout, stderr: ran.stderr }).toEqual({
      status: 0,
      stdout: "the bundle ran\n",
      stderr: "",
    });
  });
});
