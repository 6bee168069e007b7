// `npm run render`, as a reviewer runs it: what it writes, and that every
// refused input or output leaves an earlier render byte for byte as it was.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parseEnvoyYaml } from "../../routing/envoy/xds.js";
import { renderCommand } from "../../cli/render.js";
import { minimalRaw, ROOT, withValue } from "./fixtures.js";
import { tempDir } from "./temp-dir.js";

/** Runs the command in this process: its exit code and what it printed. */
function render(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = renderCommand(args, { log: (l) => out.push(l), error: (l) => err.push(l) });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

/** Every file under `dir` with its content: what "unchanged" is compared on. */
function tree(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (e.isFile())
      files[join(e.parentPath, e.name).slice(dir.length)] = readFileSync(join(e.parentPath, e.name), "utf8");
  return files;
}

/** A project directory with stack `s` holding `raw` as its config, and an earlier good render in `out`. */
function project(raw: Record<string, unknown>): { dir: string; out: string; before: Record<string, string> } {
  const dir = tempDir("render-");
  writeFileSync(
    join(dir, "Pulumi.good.yaml"),
    stringify({ config: Object.fromEntries(Object.entries(minimalRaw()).map(([k, v]) => [`envoy-gateways:${k}`, v])) }),
  );
  writeFileSync(
    join(dir, "Pulumi.s.yaml"),
    stringify({ config: Object.fromEntries(Object.entries(raw).map(([k, v]) => [`envoy-gateways:${k}`, v])) }),
  );
  const out = join(dir, "out");
  expect(render("--stack", "good", "--project-dir", dir, "--out", out).code).toBe(0);
  return { dir, out, before: tree(out) };
}

describe("render command", () => {
  it("writes envoy.yaml, cds.yaml and rds.yaml per gateway, including the namespaces file's routes", () => {
    const dir = tempDir("render-");
    const ns = join(dir, "ns.yaml");
    writeFileSync(ns, "pr-12: [batch]\n");
    const out = join(dir, "out");
    const r = render("--stack", "dev", "--out", out, "--namespaces", ns);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("1 dev routes in 1 namespaces");
    expect(readdirSync(out).sort()).toEqual(["gateway", "internal-gateway"]);
    expect(readdirSync(join(out, "gateway"))).toEqual(expect.arrayContaining(["envoy.yaml", "cds.yaml", "rds.yaml"]));
    const rds = parseEnvoyYaml(readFileSync(join(out, "gateway", "rds.yaml"), "utf8")) as {
      resources: { virtual_hosts: { name: string; routes: { match: unknown }[] }[] }[];
    };
    const dev = rds.resources[0]!.virtual_hosts.find((h) => h.name === "dev")!;
    expect(dev.routes.map((r) => r.match)).toEqual([{ path_separated_prefix: "/pr-12/batch" }]);
  });

  it("runs as `npm run render` does (a process of its own)", { timeout: 60_000 }, () => {
    const dir = tempDir("render-");
    const r = spawnSync(
      process.execPath,
      ["--import", "tsx", join(ROOT, "cli", "render.ts"), "--stack", "dev", "--out", join(dir, "out")],
      { cwd: ROOT, encoding: "utf8" },
    );
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(readdirSync(join(dir, "out")).sort()).toEqual(["gateway", "internal-gateway"]);
  });

  it("reads YAML as Pulumi does: anchors, aliases and merge keys", () => {
    const dir = tempDir("render-");
    const dev = readFileSync(join(ROOT, "Pulumi.dev.yaml"), "utf8");
    // The internal gateway's settings as a merge of the gateway's, with its own TLS.
    const merged = dev
      .replace("    gateway:\n      replicas: 1", "    gateway: &gw\n      replicas: 1")
      .replace(
        / {4}internal-gateway:\n( {6}.*\n| {8}.*\n)+? {6}tls:/,
        "    internal-gateway:\n      <<: *gw\n      tls:",
      );
    expect(merged).toContain("<<: *gw");
    writeFileSync(join(dir, "Pulumi.merged.yaml"), merged);
    const r = render("--stack", "merged", "--project-dir", dir, "--out", join(dir, "out"));
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  });
});

describe("refused input leaves an earlier render as it was", () => {
  // Stack config each refused case starts from, with the error it must give (once).
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      "an image tagged latest",
      withValue(minimalRaw(), "envoyImage", "envoyproxy/envoy:latest"),
      /envoy-gateways:envoyImage: must be pinned/,
    ],
    [
      "zero replicas",
      withValue(minimalRaw(), "gateways.gateway.replicas", 0),
      /envoy-gateways:gateways\.gateway\.replicas: .*\(got 0\)/,
    ],
    [
      "a domain label of 64 characters",
      withValue(minimalRaw(), "domain", `${"d".repeat(64)}.org`),
      /envoy-gateways:domain: must be a lower-case DNS name/,
    ],
    [
      "a service named like the dev/PR host",
      withValue(minimalRaw(), "services", [{ name: "internal", replicas: 1 }]),
      /services\[0\]\.name: the host internal\.example\.org on gateway is also the dev\/PR host/,
    ],
    [
      "a request above its limit",
      withValue(minimalRaw(), "gateways.gateway.resources.requests.memory", "2Gi"),
      /requests\.memory: must be at most the limit/,
    ],
    [
      "a zero connect timeout",
      withValue(minimalRaw(), "upstream", { connectTimeout: "0s" }),
      /upstream\.connectTimeout: must be a duration from 1ms to 1h/,
    ],
    [
      "a shift with a bad duration",
      withValue(withValue(minimalRaw(), "services", [{ name: "web", replicas: 2, versions: ["a", "b"] }]), "shifts", [
        { service: "web", from: "a", to: "b", policy: "linear", start: "2026-12-01T10:00:00Z", duration: "2 hours" },
      ]),
      /shifts\[0\]\.duration: must be a duration from 1 minute to 5 days.*\(got 2 hours\)/,
    ],
    [
      "an annotation key Kubernetes refuses",
      withValue(minimalRaw(), "gateways.gateway.service", { annotations: { "a b": "c" } }),
      /annotations\.a b: the annotation key must be/,
    ],
  ];
  it.each(cases)("%s", (_, raw, expected) => {
    const { dir, out, before } = project(raw);
    const r = render("--stack", "s", "--project-dir", dir, "--out", out);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(expected);
    // file:line of the value, then the key.
    expect(r.stderr).toMatch(
      new RegExp(`${dir.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}/Pulumi\\.s\\.yaml:\\d+: envoy-gateways:`),
    );
    expect(tree(out)).toEqual(before);
  });

  it("shows values as written: .nan, .inf, huge numbers", () => {
    for (const [written, shown] of [
      [".nan", ".nan"],
      [".inf", ".inf"],
      ["1e400", "1e400"],
    ] as const) {
      const { dir, out, before } = project(minimalRaw());
      const text = readFileSync(join(dir, "Pulumi.s.yaml"), "utf8").replace(/( {6}replicas: )2/, `$1${written}`);
      writeFileSync(join(dir, "Pulumi.s.yaml"), text);
      const r = render("--stack", "s", "--project-dir", dir, "--out", out);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `gateways\\.gateway\\.replicas: must be a whole number of replicas from 1 to 100 \\(got ${shown.replace(".", "\\.")}\\)`,
        ),
      );
      expect(tree(out)).toEqual(before);
    }
  });

  it("names the namespaces file, the line and the key of each bad entry", () => {
    const { dir, out, before } = project(minimalRaw());
    const ns = join(dir, "ns.yaml");
    writeFileSync(
      ns,
      [
        "PR-1: [batch]",
        "pr-2:",
        "  - name: web",
        "    versions:",
        "      - { version: blue, service: web-blue }",
        "      - { version: green, service: Web_Green }",
        "    shifts:",
        "      - { from: blue, to: green, policy: linear, start: '2026-12-01T10:00:00Z', duration: 2 hours }",
        "",
      ].join("\n"),
    );
    const r = render("--stack", "s", "--project-dir", dir, "--out", out, "--namespaces", ns);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`namespaces file ${ns}: 3 problems`);
    expect(r.stderr).toContain(`${ns}:1: PR-1: namespace must be a DNS label`);
    expect(r.stderr).toContain(
      `${ns}:6: pr-2[0] (web).versions[1].service: Kubernetes Service name must be a DNS label`,
    );
    expect(r.stderr).toContain(
      `${ns}:8: pr-2[0] (web).shifts[0].duration: must be a duration from 1 minute to 5 days, such as 90s, 30m, 2h or 5d (got 2 hours)`,
    );
    expect(tree(out)).toEqual(before);
  });

  it("keeps a YAML syntax error's whole excerpt", () => {
    const { dir, out, before } = project(minimalRaw());
    const ns = join(dir, "ns.yaml");
    writeFileSync(ns, "pr-1: [batch\npr-2: [ci]\n");
    const r = render("--stack", "s", "--project-dir", dir, "--out", out, "--namespaces", ns);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `${ns.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}:\\d+: is not valid YAML: .*\\n[\\s\\S]*pr-1: \\[batch\\npr-2: \\[ci\\]\\n\\^`,
      ),
    );
    expect(tree(out)).toEqual(before);
  });
});

describe("refused output: one line, nothing changed", () => {
  it("--out pointing at a file", () => {
    const { dir } = project(minimalRaw());
    const file = join(dir, "out.txt");
    writeFileSync(file, "keep me");
    const r = render("--stack", "good", "--project-dir", dir, "--out", file);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `render: --out ${file}: is a file, not a directory; give a new or empty directory, or an earlier render's; nothing was written`,
    );
    expect(readFileSync(file, "utf8")).toBe("keep me");
  });

  it("--out under a file", () => {
    const { dir } = project(minimalRaw());
    const file = join(dir, "out.txt");
    writeFileSync(file, "keep me");
    const r = render("--stack", "good", "--project-dir", dir, "--out", join(file, "a", "b"));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `render: --out ${join(file, "a", "b")}: ${file} is a file, so there can be no directory under it; nothing was written`,
    );
    expect(readFileSync(file, "utf8")).toBe("keep me");
  });

  it("--out on a read-only file system", () => {
    const r = render("--stack", "dev", "--out", "/proc/envoy-gateways-render");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^render: --out \/proc\/envoy-gateways-render: (cannot write in \/proc \((permission denied|a read-only file system)\)|cannot be written \(ENOENT\)); nothing was written$/,
    );
  });

  it("--out holding other files", () => {
    const { dir, out, before } = project(minimalRaw());
    writeFileSync(join(out, "notes.txt"), "keep me");
    const r = render("--stack", "good", "--project-dir", dir, "--out", out);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("holds other files (notes.txt)");
    expect(tree(out)).toEqual({ ...before, "/notes.txt": "keep me" });
  });

  it("an unknown flag, a missing value, an unknown stack", () => {
    expect(render("--stack", "dev", "--out", "x", "--namespace", "ns.yaml")).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^render: Unknown option '--namespace'.*\nusage: dist\/render/s),
    });
    expect(render("--stack")).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^render: Option '--stack <value>' argument missing/),
    });
    expect(render("--stack", "prd", "--out", "x")).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^render: --stack "prd": no stack file .*Pulumi\.prd\.yaml/),
    });
  });

  it("a directory it may not write in (a non-root user)", { timeout: 60_000 }, () => {
    // As root every directory is writable: this case needs another user, which only root can become.
    const dir = tempDir("render-ro-");
    mkdirSync(join(dir, "locked"));
    chmodSync(dir, 0o755);
    chmodSync(join(dir, "locked"), 0o555);
    const asNobody = spawnSync(
      "setpriv",
      [
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        process.execPath,
        "--import",
        "tsx",
        join(ROOT, "cli", "render.ts"),
        "--stack",
        "dev",
        "--out",
        join(dir, "locked", "out"),
      ],
      {
        cwd: ROOT,
        encoding: "utf8",
        env: { ...process.env, HOME: dir, TSX_TSCONFIG_PATH: join(ROOT, "tsconfig.json") },
      },
    );
    expect(statSync(join(dir, "locked")).isDirectory()).toBe(true);
    expect(asNobody.stderr.trim()).toBe(
      `render: --out ${join(dir, "locked", "out")}: cannot write in ${join(dir, "locked")} (permission denied); nothing was written`,
    );
    expect(asNobody.status).toBe(1);
    expect(existsSync(join(dir, "locked", "out"))).toBe(false);
  });
});
