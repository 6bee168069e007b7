// The layout's direction (docs/architecture.md): each folder imports only the
// folders below it, and what the program and the routes provider act on
// reaches them as arguments and inputs, never through the environment.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./fixtures.js";

/** Top to bottom: a folder may import those after it, never those before. */
const LAYERS = ["cli", "adoption", "route-sync", "program", "components", "routes-provider", "kube", "routing"];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** The project folders a source file imports (static, type-only, dynamic or required), by relative path. */
function importedFolders(file: string, text: string): string[] {
  const specifiers = [...text.matchAll(/(?:from\s+|import\s*\(\s*|require\s*\(\s*)"(\.{1,2}\/[^"]+)"/g)].map(
    (m) => m[1]!,
  );
  return [...new Set(specifiers.map((s) => relative(ROOT, join(ROOT, dirname(file), s)).split(sep)[0]!))];
}

describe("the layout", () => {
  it("reads the folders a file imports, however it imports them", () => {
    const text = [
      'import type { A } from "../program/main.js";',
      'const m = await import("../components/routes.js");',
      'require("../kube/client.js");',
      'import { b } from "./lock.js";',
      'import * as pulumi from "@pulumi/pulumi";',
    ].join("\n");
    expect(importedFolders("route-sync/sync.ts", text).sort()).toEqual(["components", "kube", "program", "route-sync"]);
  });

  it.each(LAYERS)("%s/ imports only itself and the folders below it", (dir) => {
    const below = new Set(LAYERS.slice(LAYERS.indexOf(dir)));
    const upward = sources(dir).flatMap((file) =>
      importedFolders(file, readFileSync(join(ROOT, file), "utf8"))
        .filter((d) => LAYERS.includes(d) && !below.has(d))
        .map((d) => `${file} -> ${d}/`),
    );
    expect(upward).toEqual([]);
  });

  it("the program and the routes provider read no environment variable: what they act on is given", () => {
    const readers = ["program", "components", "routes-provider"]
      .flatMap(sources)
      .filter((file) => /process\.env|ENVOY_GATEWAYS_/.test(readFileSync(join(ROOT, file), "utf8")));
    expect(readers).toEqual([]);
  });
});
