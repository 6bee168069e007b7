// Nothing a script runs is left to chance: every external command (and host file) that
// scripts/quickstart.sh reaches is provided for the quickstart set by scripts/commands.tsv,
// and everything scripts/setup.sh, scripts/bare-machine.sh and the TypeScript under
// test/, bench/ and scripts/ run is provided for the development set. A command that only the development set installs
// (the old world's nginx, the checkers' python3 -m venv) fails the quick start's check.
// The analyzer itself (test/support/script-commands.ts) is tried on small made-up scripts.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot, requireShfmt } from "../support/components.js";
import { type CommandSet, type CommandUse, ScriptCommands } from "../support/script-commands.js";
import { tempDir } from "./temp-dir.js";

interface Row {
  command: string;
  provider: string;
  set: CommandSet;
  line: number;
  /** Columns past the third (a row has three). */
  extra: string[];
}

function readTable(text: string): Row[] {
  const rows: Row[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.startsWith("#") || line.trim() === "") return;
    const [command = "", provider = "", set = "", ...extra] = line.split("\t");
    rows.push({ command, provider, set: set as CommandSet, line: i + 1, extra });
  });
  return rows;
}

const table = readTable(readFileSync(join(repoRoot, "scripts/commands.tsv"), "utf8"));

/** Uses that the table does not provide for the set ("quickstart" rows count for both). */
function unprovided(uses: CommandUse[], set: CommandSet, rows: Row[] = table): string[] {
  const provided = new Set(rows.filter((r) => r.set === "quickstart" || r.set === set).map((r) => r.command));
  const missing = new Map<string, string[]>();
  for (const use of uses) {
    if (!provided.has(use.command)) missing.set(use.command, [...(missing.get(use.command) ?? []), use.at]);
  }
  return [...missing].map(([command, at]) => `${command} (${at.slice(0, 3).join(", ")})`).sort();
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(repoRoot, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|mts|mjs)$/.test(e.name))
    .map((e) => join(e.parentPath, e.name).slice(repoRoot.length + 1));
}

describe("scripts/commands.tsv", () => {
  it("has one command, a known provider and a set on each row, and names each command once", () => {
    const bad = table
      .filter(
        (r) =>
          !/^(debian|go|node|apt:[a-z0-9.+-]+|component:[a-z0-9-]+)$/.test(r.provider) ||
          !["quickstart", "development"].includes(r.set) ||
          r.command === "" ||
          r.extra.length > 0,
      )
      .map((r) => `line ${r.line}: ${JSON.stringify([r.command, r.provider, r.set])}`);
    expect(bad).toEqual([]);
    const names = table.map((r) => r.command);
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
    expect(table.length).toBeGreaterThan(40);
  });

  it("builds no old-world tool into the quick start: nginx and python3 -m venv are development rows", () => {
    const setOf = (command: string) => table.find((r) => r.command === command)?.set;
    expect(setOf("/usr/sbin/nginx")).toBe("development");
    expect(setOf("python3 -m venv")).toBe("development");
    expect(setOf("containerd")).toBe("quickstart");
  });
});

describe("scripts/steps.tsv", () => {
  const steps = readFileSync(join(repoRoot, "scripts/steps.tsv"), "utf8")
    .split("\n")
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => l.split("\t"));

  it("gives every step a measured time and what to do when it fails", () => {
    expect(steps.filter((f) => f.length !== 3 || !/^\d+$/.test(f[1]!) || f[2]!.length < 20)).toEqual([]);
  });

  it("has a row for every component entry and every step the quick start and setup plan", () => {
    const build = readFileSync(join(repoRoot, "scripts/build-components.sh"), "utf8");
    const entries = [
      ...build.matchAll(/^(?:QUICKSTART|DEVELOPMENT)_ENTRIES="(?:\$QUICKSTART_ENTRIES )?([^"]+)"$/gm),
    ].flatMap((m) => m[1]!.split(" "));
    expect(entries).toContain("pulumi-kubernetes");
    expect(entries).toContain("old-world-image");
    const planned = ["scripts/lib.sh", "scripts/quickstart.sh"].flatMap((file) =>
      [...readFileSync(join(repoRoot, file), "utf8").matchAll(/progress_plan((?: "[^"$]+")+)/g)].flatMap((m) =>
        [...m[1]!.matchAll(/"([^"]+)"/g)].map((q) => q[1]!),
      ),
    );
    expect(planned).toContain("pulumi up");
    const named = new Set(steps.map((f) => f[0]));
    const sets = ["quickstart", "development"].map((set) => `Debian packages (${set})`);
    expect([...entries, ...planned, ...sets, "npm ci", "CLIs (dist/)"].filter((n) => !named.has(n))).toEqual([]);
  });
});

describe("what the entrypoints run", () => {
  const shfmt = requireShfmt();

  it("scripts/quickstart.sh reaches only commands the quickstart set provides", () => {
    const uses = ScriptCommands.of(repoRoot, shfmt, "quickstart", "scripts/quickstart.sh");
    expect(unprovided(uses, "quickstart")).toEqual([]);
    // What it must reach for the check to mean anything: the node's runtime, the
    // certificates (TypeScript, through npx tsx) and the Go builds.
    const commands = new Set(uses.map((u) => u.command));
    for (const expected of ["containerd", "ip", "nft", "openssl", "go", "npm", "pulumi", "python3", "apt-get"]) {
      expect(commands, expected).toContain(expected);
    }
    expect(uses.find((u) => u.command === "openssl" && u.at.startsWith("test/harness/certificates.ts"))).toBeDefined();
    // The development entries are not built by the quick start.
    expect(commands).not.toContain("/usr/sbin/nginx");
    expect(commands).not.toContain("python3 -m venv");
  });

  it("scripts/setup.sh and the tests' and benchmarks' TypeScript reach only what the development set provides", () => {
    const uses = [
      ...ScriptCommands.of(repoRoot, shfmt, "development", "scripts/setup.sh"),
      ...ScriptCommands.of(repoRoot, shfmt, "development", "scripts/bare-machine.sh"),
      ...ScriptCommands.ofSources(repoRoot, [
        ...sourceFiles("test"),
        ...sourceFiles("bench"),
        ...sourceFiles("scripts"),
      ]),
    ];
    expect(unprovided(uses, "development")).toEqual([]);
    const commands = new Set(uses.map((u) => u.command));
    for (const expected of ["/usr/sbin/nginx", "python3 -m venv", "git", "wrk", "mmdebstrap", "unshare"]) {
      expect(commands, expected).toContain(expected);
    }
  });
});

describe("the command analyzer", () => {
  const shfmt = requireShfmt();

  /** A made-up repository: FILES maps repository paths to contents. */
  function repo(files: Record<string, string>): string {
    const root = tempDir("eg-script-commands-");
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    return root;
  }
  const commandsOf = (root: string, set: CommandSet = "quickstart") =>
    ScriptCommands.of(root, shfmt, set, "scripts/quickstart.sh").map((u) => u.command);

  it("finds a command behind wrappers and in command substitutions, with its line", () => {
    const root = repo({
      "scripts/quickstart.sh": [
        'step() { shift; "$@"; }',
        'step "name" $SUDO nginx -t',
        'x="$(timeout -s KILL 5 haproxy -v | wc -l)"',
        "FOO=1 env A=b nice -n 5 wrk --version",
        "find . -print0 | xargs -0 -n 1 sha1sum",
        "setsid dnsmasq --help",
        "check_output() { :; }",
        'check_output "ok" h2load --version',
      ].join("\n"),
    });
    const uses = ScriptCommands.of(root, shfmt, "quickstart", "scripts/quickstart.sh");
    expect(uses.map((u) => u.command)).toEqual(
      expect.arrayContaining(["nginx", "timeout", "haproxy", "wc", "env", "nice", "wrk", "find", "xargs", "sha1sum"]),
    );
    expect(uses.map((u) => u.command)).toEqual(expect.arrayContaining(["setsid", "dnsmasq", "h2load"]));
    expect(uses.find((u) => u.command === "nginx")?.at).toBe("scripts/quickstart.sh:2");
    expect(uses.map((u) => u.command)).not.toContain("step");
    expect(uses.map((u) => u.command)).not.toContain("KILL");
    expect(uses.map((u) => u.command)).not.toContain("5");
    expect(unprovided(uses, "quickstart")).toEqual(expect.arrayContaining(["nginx (scripts/quickstart.sh:2)"]));
  });

  it("leaves out probes, builtins, functions and commands named by a variable", () => {
    const root = repo({
      "scripts/quickstart.sh": [
        "command -v nginx >/dev/null || echo none",
        "helper() { printf '%s' x; }",
        "helper",
        '"$KUBELET" --version',
        '"$out/bin/envoy" --version',
        "local_var=1; read -r line <<<x; cd /; export A=1",
      ].join("\n"),
    });
    expect(commandsOf(root)).toEqual([]);
  });

  it("follows source, bash FILE and bash -c, and only into functions that are called", () => {
    const root = repo({
      "scripts/quickstart.sh": [
        'source "$(dirname "$0")/lib.sh"',
        "used",
        'bash "$REPO_ROOT/tools/x/run.sh" --flag',
      ].join("\n"),
      "scripts/lib.sh": ["used() { conntrack -L; }", "unused() { haproxy -v; }"].join("\n"),
      "tools/x/run.sh": "bash -c 'ipset list'",
    });
    const commands = commandsOf(root);
    expect(commands).toEqual(expect.arrayContaining(["conntrack", "bash", "ipset"]));
    expect(commands).not.toContain("haproxy");
  });

  it("refuses a script it cannot find or parse instead of passing over it", () => {
    const missing = repo({ "scripts/quickstart.sh": 'source "$ROOT/scripts/nowhere.sh"' });
    expect(() => commandsOf(missing)).toThrow(/cannot tell which file "\/scripts\/nowhere.sh" is/);
    const broken = repo({ "scripts/quickstart.sh": "if then fi (" });
    expect(() => commandsOf(broken)).toThrow(/shfmt cannot parse scripts\/quickstart.sh/);
  });

  it("counts python3 -m MODULE as its own command and literal host files as paths", () => {
    const root = repo({
      "scripts/quickstart.sh": [
        'python3 -m venv "$dir"',
        "python3 - <<'PY'\nprint(1)\nPY",
        'install /usr/sbin/nginx "$root/x"',
      ].join("\n"),
    });
    expect(commandsOf(root)).toEqual(["python3 -m venv", "python3", "install", "/usr/sbin/nginx"]);
  });

  it("builds only the entries of the set it runs: build_NAME through install_entry NAME", () => {
    const root = repo({
      "scripts/quickstart.sh": 'bash scripts/build-components.sh --set "$set"',
      "scripts/build-components.sh": [
        'QUICKSTART_ENTRIES="envoy"',
        'DEVELOPMENT_ENTRIES="$QUICKSTART_ENTRIES old-world-image"',
        "build_envoy() { unzip -v; }",
        "build_old_world_image() { install /usr/sbin/nginx x; }",
        'install_entry envoy "$dir" "$print"',
        'install_entry old-world-image "$dir" "$print"',
      ].join("\n"),
    });
    expect(commandsOf(root, "quickstart")).toEqual(["bash", "unzip"]);
    expect(commandsOf(root, "development")).toEqual(["bash", "unzip", "install", "/usr/sbin/nginx"]);
  });

  it("reads the commands TypeScript runs through npx tsx, across its imports", () => {
    const root = repo({
      "scripts/quickstart.sh": "npx tsx scripts/tool.ts show",
      "scripts/tool.ts":
        'import { certs } from "../lib/certs.js";\nimport type { T } from "../lib/types.js";\ncerts();',
      "lib/certs.ts": [
        'import { execFile, execFileSync } from "node:child_process";',
        'import { promisify } from "node:util";',
        "const run = promisify(execFile);",
        'export function certs() { execFileSync("openssl", ["version"]); return run("ip", ["link"]); }',
        "export const other = (cmd: string) => execFileSync(cmd, []);",
      ].join("\n"),
      "lib/types.ts": 'import { spawn } from "node:child_process";\nspawn("git", []);\nexport type T = 1;',
    });
    const uses = ScriptCommands.of(root, shfmt, "quickstart", "scripts/quickstart.sh");
    expect(uses.map((u) => u.command)).toEqual(["npx", "openssl", "ip"]);
    expect(uses[1]!.at).toBe("lib/certs.ts:4");
  });

  it("says which rows are missing for a set, and a quickstart row counts for development", () => {
    const rows = readTable("a\tdebian\tquickstart\nb\tapt:b\tdevelopment\n");
    const uses = [
      { command: "a", at: "x:1" },
      { command: "b", at: "x:2" },
      { command: "c", at: "x:3" },
    ];
    expect(unprovided(uses, "quickstart", rows)).toEqual(["b (x:2)", "c (x:3)"]);
    expect(unprovided(uses, "development", rows)).toEqual(["c (x:3)"]);
  });
});
