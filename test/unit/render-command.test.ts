// `npm run render`, as a reviewer runs it.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseEnvoyYaml } from "../../routing/envoy/xds.js";
import { ROOT } from "./fixtures.js";

function render(...args: string[]) {
  const r = spawnSync(process.execPath, ["--import", "tsx", join(ROOT, "scripts", "render.ts"), ...args], { cwd: ROOT, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("render command", () => {
  it("writes envoy.yaml, cds.yaml and rds.yaml per gateway, including the namespaces file's routes", () => {
    const dir = mkdtempSync(join(tmpdir(), "render-"));
    const ns = join(dir, "ns.yaml");
    writeFileSync(ns, "pr-12: [batch]\n");
    const out = join(dir, "out");
    const r = render("--stack", "dev", "--out", out, "--namespaces", ns);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("1 dev routes in 1 namespaces");
    expect(readdirSync(out).sort()).toEqual(["gateway", "internal-gateway"]);
    expect(readdirSync(join(out, "gateway"))).toEqual(expect.arrayContaining(["envoy.yaml", "cds.yaml", "rds.yaml"]));
    const rds = parseEnvoyYaml(readFileSync(join(out, "gateway", "rds.yaml"), "utf8")) as { resources: { virtual_hosts: { name: string; routes: { match: unknown }[] }[] }[] };
    const dev = rds.resources[0]!.virtual_hosts.find((h) => h.name === "dev")!;
    expect(dev.routes.map((r) => r.match)).toEqual([{ path_separated_prefix: "/pr-12/batch" }]);
  });

  it("exits non-zero with every problem and writes nothing for a bad namespaces file", () => {
    const dir = mkdtempSync(join(tmpdir(), "render-"));
    const ns = join(dir, "ns.yaml");
    writeFileSync(ns, "PR-1: [batch]\npr-2: [Batch]\n");
    const r = render("--stack", "dev", "--out", join(dir, "out"), "--namespaces", ns);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`namespaces file ${ns}: 2 problems`);
    expect(r.stderr).toMatch(/PR-1: namespace must be a DNS label/);
    expect(r.stderr).toMatch(/pr-2\[0\]: service name must be a DNS label.*got "Batch"/);
    expect(existsSync(join(dir, "out"))).toBe(false);
  });

  it("exits non-zero with every problem and writes nothing for a bad stack config", () => {
    const dir = mkdtempSync(join(tmpdir(), "render-"));
    writeFileSync(join(dir, "Pulumi.broken.yaml"), readFileSync(join(ROOT, "Pulumi.dev.yaml"), "utf8").replace("envoyproxy/envoy:v1.40.0", "envoyproxy/envoy:latest").replace("replicas: 1\n", "replicas: 0\n"));
    const r = render("--stack", "broken", "--project-dir", dir, "--out", join(dir, "out"));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/envoy-gateways:envoyImage: .*latest/);
    expect(r.stderr).toMatch(/envoy-gateways:gateways\.gateway\.replicas: .*got 0/);
    expect(existsSync(join(dir, "out"))).toBe(false);
  });

  it("refuses to replace a directory that holds anything but an earlier render", () => {
    const dir = mkdtempSync(join(tmpdir(), "render-"));
    writeFileSync(join(dir, "notes.txt"), "keep me");
    const r = render("--stack", "dev", "--out", dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("holds other files (notes.txt)");
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("keep me");
  });
});
