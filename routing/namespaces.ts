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
import { parse } from "yaml";
import { InputError } from "./config/errors.js";
import type { DevNamespaces } from "./table.js";

export function readNamespacesFile(path: string): DevNamespaces {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new InputError(`namespaces file ${path}`, [{ key: path, message: `cannot be read: ${(e as Error).message}` }]);
  }
  return parseNamespaces(text, path);
}

export function parseNamespaces(text: string, source: string): DevNamespaces {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new InputError(`namespaces file ${source}`, [{ key: source, message: `is not valid YAML: ${(e as Error).message.split("\n")[0]}` }]);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new InputError(`namespaces file ${source}`, [{ key: source, message: "must be a mapping of namespace -> list of services", value: doc }]);
  }
  return doc as DevNamespaces;
}
