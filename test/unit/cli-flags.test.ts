// Every CLI of the package: a bad flag is one line naming it (and what is allowed) and exit code 2, before anything runs.
// From source (tsx), as `npm run <name>` runs them, so that `npm test` needs no build; the e2e tests run dist/<name>.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./fixtures.js";

function run(script: string, ...args: string[]) {
  const r = spawnSync(process.execPath, ["--import", "tsx", join(ROOT, "cli", `${script}.ts`), ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, PATH: "/nonexistent" },
  });
  return { code: r.status, stderr: r.stderr.trim() };
}

describe("CLI flags", () => {
  const cases: [string, string[], RegExp][] = [
    [
      "route-controller",
      ["--port", "0"],
      /^route-controller: --port "0": must be a port number from 1 to 65535\nusage: dist\/route-controller /,
    ],
    [
      "route-controller",
      ["--port", "8080", "--stuck-after", "5"],
      /^route-controller: --stuck-after "5": must be a whole number with a unit \(s, m\), such as 90s or 5m\nusage: /,
    ],
    ["route-controller", ["--lease", "x"], /^route-controller: Unknown option '--lease'.*\nusage: /s],
    [
      "sync-routes",
      ["--stack", "dev", "--debounce", "2"],
      /^sync-routes: --debounce "2": must be a whole number with a unit \(ms, s\), such as 500ms or 2s\nusage: /,
    ],
    [
      "sync-routes",
      ["--stack", "dev", "--lock-wait", "soon"],
      /^sync-routes: --lock-wait "soon": must be a whole number with a unit \(s, m\), such as 90s or 15m\nusage: /,
    ],
    [
      "sync-routes",
      ["--stack", "dev", "--record-niceness", "20"],
      /^sync-routes: --record-niceness "20": must be a whole number from 0 \(the record's engine run as sync-routes itself\) to 19 \(the lowest CPU priority\)\nusage: /,
    ],
    [
      "sync-routes",
      ["--stack", "dev", "--record-niceness=low"],
      /^sync-routes: --record-niceness "low": must be a whole number from 0 .* to 19 .*\nusage: /,
    ],
    [
      "sync-routes",
      ["--stack", "dev", "--record-niceness=-1"],
      /^sync-routes: --record-niceness "-1": must be a whole number from 0 .* to 19 .*\nusage: /,
    ],
    ["sync-routes", ["--stack", "dev", "--wacth"], /^sync-routes: Unknown option '--wacth'.*\nusage: /s],
    ["sync-routes", ["--watch"], /^sync-routes: --stack is required\nusage: /],
    ["shifts", ["--stack", "dev", "--revers", "batch"], /^shifts: Unknown option '--revers'.*\nusage: /s],
    [
      "shifts",
      ["--stack", "dev", "--reverse", "PR 1/web"],
      /^shifts: --reverse "PR 1\/web": must be a production service \(batch\) or a dev\/PR service as <namespace>\/<service>/,
    ],
    ["shifts", [], /^shifts: --stack is required\nusage: /],
  ];
  // Each case starts a process that compiles the CLI with tsx (seconds on a busy machine).
  it.each(cases)("%s %j", { timeout: 60_000 }, (script, args, expected) => {
    const r = run(script, ...args);
    expect(r.stderr).toMatch(expected);
    expect(r.code).toBe(2);
  });
});
