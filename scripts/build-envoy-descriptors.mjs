#!/usr/bin/env node
// Builds the descriptor set of Envoy's v3 API that the validator decodes
// documents against: the .proto files shipped in @grpc/grpc-js-xds, compiled
// by buf (from the npm package @bufbuild/buf) into one binary FileDescriptorSet
// at routing/validation/generated/envoy-api.binpb.
//
// - Only files whose imports all resolve are kept: the package carries the v3
//   API (what Envoy loads) but not the retired v2 API or a few third-party
//   protos (OpenCensus, OpenTelemetry, Prometheus) that some v3 files import.
// - validate/validate.proto in the package lacks StringRules.ignore_empty = 26,
//   which the Envoy API uses; a patched copy adds it so the option decodes.
// - The package's Envoy API predates two fields of UpstreamTlsContext that the
//   gateways use (Envoy 1.40 has them): auto_host_sni = 6 (SNI from the
//   upstream host's DNS name) and auto_sni_san_validation = 7 (check the
//   certificate against that SNI). A patched copy adds them, with Envoy's
//   own names and numbers.
// Runs from `npm install` (the `prepare` script); safe to run again.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, "package.json"));
const depsDir = join(dirname(require.resolve("@grpc/grpc-js-xds/package.json")), "deps");
const outFile = join(root, "routing/validation/generated/envoy-api.binpb");

const roots = {
  "envoy-api": join(depsDir, "envoy-api"),
  xds: join(depsDir, "xds"),
  googleapis: join(depsDir, "googleapis"),
  validate: join(depsDir, "protoc-gen-validate"),
};
// Well-known types come with buf itself.
const builtin = (name) => name.startsWith("google/protobuf/");

function listProtos(dir, prefix = "") {
  const { readdirSync, statSync } = require("node:fs");
  const found = [];
  for (const entry of readdirSync(join(dir, prefix))) {
    const rel = prefix ? `${prefix}/${entry}` : entry;
    if (statSync(join(dir, rel)).isDirectory()) found.push(...listProtos(dir, rel));
    else if (entry.endsWith(".proto")) found.push(rel);
  }
  return found;
}

// name -> { module, imports }
const files = new Map();
for (const [module, dir] of Object.entries(roots)) {
  const subdirs = module === "validate" ? ["validate"] : [""];
  for (const sub of subdirs) {
    for (const rel of listProtos(dir, sub)) {
      const text = readFileSync(join(dir, rel), "utf8");
      const imports = [...text.matchAll(/^import\s+(?:public\s+|weak\s+)?"([^"]+)";/gm)].map((m) => m[1]);
      files.set(rel, { module, imports });
    }
  }
}

const usable = new Map();
function isUsable(name, seen = new Set()) {
  if (builtin(name)) return true;
  if (usable.has(name)) return usable.get(name);
  if (seen.has(name)) return true;
  seen.add(name);
  const file = files.get(name);
  const ok = !!file && file.imports.every((i) => isUsable(i, seen));
  usable.set(name, ok);
  return ok;
}

const wanted = [...files.keys()].filter((n) => n.startsWith("envoy/") && /\/v3(alpha)?\//.test(n));
const keep = new Set();
function include(name) {
  if (builtin(name) || keep.has(name)) return;
  keep.add(name);
  for (const i of files.get(name).imports) include(i);
}
for (const name of wanted) if (isUsable(name)) include(name);

const work = mkdtempSync(join(tmpdir(), "envoy-api-"));
try {
  for (const name of keep) {
    const { module } = files.get(name);
    const dest = join(work, module, name);
    mkdirSync(dirname(dest), { recursive: true });
    cpSync(join(roots[module], name), dest);
  }
  const validateProto = join(work, "validate/validate/validate.proto");
  const original = readFileSync(validateProto, "utf8").replace(/\r\n/g, "\n");
  if (!/ignore_empty\s*=\s*26/.test(original)) {
    const patched = original.replace(
      /(message StringRules \{[\s\S]*?)(\n\}\n)/,
      (_, body, end) =>
        `${body}\n\n    // Added by envoy-gateways: used by the Envoy API, missing from this copy.\n    optional bool ignore_empty = 26;${end}`,
    );
    if (patched === original) throw new Error("could not patch StringRules in validate.proto");
    writeFileSync(validateProto, patched);
  }
  const tlsProto = join(work, "envoy-api/envoy/extensions/transport_sockets/tls/v3/tls.proto");
  const tls = readFileSync(tlsProto, "utf8").replace(/\r\n/g, "\n");
  if (!/auto_host_sni\s*=/.test(tls)) {
    const patchedTls = tls.replace(
      /(message UpstreamTlsContext \{[\s\S]*?)(\n\}\n)/,
      (_, body, end) =>
        `${body}\n\n  // Added by envoy-gateways from Envoy's current API (absent from this copy).\n  bool auto_host_sni = 6;\n\n  bool auto_sni_san_validation = 7;${end}`,
    );
    if (patchedTls === tls) throw new Error("could not patch UpstreamTlsContext in tls.proto");
    writeFileSync(tlsProto, patchedTls);
  }
  writeFileSync(
    join(work, "buf.yaml"),
    ["version: v2", "modules:", ...Object.keys(roots).map((m) => `  - path: ${m}`), "lint:", "  use: [MINIMAL]", ""].join("\n"),
  );
  const buf = join(dirname(require.resolve("@bufbuild/buf/package.json")), "bin", "buf");
  if (!existsSync(buf)) throw new Error(`buf binary not found at ${buf}`);
  mkdirSync(dirname(outFile), { recursive: true });
  const partial = `${outFile}.partial`;
  execFileSync(buf, ["build", work, "--exclude-source-info", "-o", partial], { stdio: "inherit" });
  renameSync(partial, outFile);
  const dropped = wanted.filter((n) => !usable.get(n));
  console.log(
    `envoy-api descriptors: ${keep.size} files -> ${relative(root, outFile)}` +
      (dropped.length ? ` (left out ${dropped.length} v3 files with unresolvable imports: ${dropped.join(", ")})` : ""),
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
