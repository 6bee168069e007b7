// The dev/PR namespaces file `render` accepts: YAML mapping each namespace to
// its routed services, the same facts discovery produces. A service is a
// name, or { name, websocket?, versions?: [{ version, service }], shifts?:
// [{ from, to, policy, start, duration, reversed? }] } (weights come from the
// shifts, as for discovered services).
//
//   pr-1234: [batch, batch-driver]
//   pr-1240:
//     - name: batch
//       versions:
//         - { version: blue, service: batch-blue }
//         - { version: green, service: batch-green }
//       shifts:
//         - { from: blue, to: green, policy: linear, start: "2026-12-01T09:00:00Z", duration: 30m }
//
// Entries are checked when the routing table is built (every problem at once).
import { readFileSync } from "node:fs";
import { InputError } from "./config/errors.js";
import { parseYamlSource, writtenFor, type YamlSource } from "./config/yaml-source.js";
import type { DevNamespaces } from "./table.js";

/** A namespaces file: the dev/PR namespaces it lists, and where each value was written. */
export interface NamespacesFile {
  devNamespaces: DevNamespaces;
  source: YamlSource;
}

export function readNamespacesFile(path: string): DevNamespaces {
  return readNamespacesSource(path).devNamespaces;
}

export function readNamespacesSource(path: string): NamespacesFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new InputError(`namespaces file ${path}`, [
      {
        key: path,
        source: "namespaces",
        message: `cannot be read: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}`,
      },
    ]);
  }
  return parseNamespaces(text, path);
}

export function parseNamespaces(text: string, file: string): NamespacesFile {
  const source = parseYamlSource(text, file, `namespaces file ${file}`, "namespaces");
  const doc = source.value;
  if (doc === null || doc === undefined) return { devNamespaces: {}, source };
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new InputError(`namespaces file ${file}`, [
      { key: file, source: "namespaces", message: "must be a mapping of namespace -> list of services", value: doc },
    ]);
  }
  return { devNamespaces: doc as DevNamespaces, source };
}

/** The routing table's problems with the namespaces, each naming the file and the line (`ns.yaml:7: pr-1[0] (web).versions`) and its value as written. */
export function locatedInFile(error: InputError, source: YamlSource): InputError {
  return new InputError(
    error.subject,
    error.problems.map((p) => {
      const at = p.path ? source.at(p.path) : undefined;
      if (!at) return p;
      const written = "value" in p ? writtenFor(at, p.value) : undefined;
      return { ...p, key: `${source.file}:${at.line}: ${p.key}`, ...(written !== undefined ? { written } : {}) };
    }),
  );
}
