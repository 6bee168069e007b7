// YAML files read the way Pulumi reads a stack file (anchors, aliases and
// `<<` merge keys resolved), keeping where each value was written, so an
// error can name the file, the line and the value exactly as written
// (`.nan`, `1e400`, `2 hours`).
import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from "yaml";
import { InputError, type ProblemSource } from "./errors.js";

export interface YamlSource {
  /** The file's path, as given. */
  file: string;
  /** The parsed value. */
  value: unknown;
  /** Where the node at `path` was written: its line (1-based) and, for a scalar, its text and value. */
  at(path: readonly (string | number)[]): Written | undefined;
}

/** Where a node was written, and for a scalar its text and the value it reads as. */
export interface Written {
  line: number;
  written?: string;
  value?: unknown;
}

/** How many nodes aliases may expand to in all (Pulumi's reader has a limit too): beyond, an alias bomb. */
export const MAX_ALIAS_COUNT = 1000;

/**
 * The text to show for `value` in a problem at `at`: as written in the file when the problem
 * is about the value written there, not when it is about something else at that place (a
 * mapping's key, for one).
 */
export function writtenFor(at: Written | undefined, value: unknown): string | undefined {
  return at?.written !== undefined && Object.is(at.value, value) ? at.written : undefined;
}

/**
 * Parses `text` (the contents of `file`, which holds `source`). A syntax error is one
 * problem, the first the parser found, with its line (the errors after it mostly follow from
 * it: the count says how many); aliases expanding past MAX_ALIAS_COUNT nodes are one problem
 * naming the key that expands them.
 */
export function parseYamlSource(text: string, file: string, subject: string, source: ProblemSource): YamlSource {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { merge: true, lineCounter, prettyErrors: true, uniqueKeys: true });
  const lineOf = (offset: number) => lineCounter.linePos(offset).line;
  const [first, ...more] = doc.errors;
  if (first) {
    const count = more.length ? ` (the first of ${more.length + 1} errors; the others mostly follow from it)` : "";
    throw new InputError(subject, [
      {
        key: `${file}:${first.linePos?.[0]?.line ?? "?"}`,
        source,
        message: `is not valid YAML${count}: ${first.message.trimEnd()}`,
      },
    ]);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (e) {
    if (!(e instanceof ReferenceError)) throw e;
    const at = aliasBomb(doc, doc.contents, []);
    throw new InputError(subject, [
      {
        key: `${file}:${at?.node.range ? lineOf(at.node.range[0]) : "?"}: ${at?.path.join(".") ?? "(document)"}`,
        source,
        message: `expands its YAML aliases past ${MAX_ALIAS_COUNT.toLocaleString("en-US")} nodes (a resource exhaustion attack?); write the values out instead`,
      },
    ]);
  }
  return {
    file,
    value,
    at(path) {
      const node = doc.getIn(path, true) as Node | undefined;
      if (!node?.range) return undefined;
      const line = lineOf(node.range[0]);
      if (!isScalar(node)) return { line };
      return { line, written: text.slice(node.range[0], node.range[1]).trim(), value: node.value };
    },
  };
}

/** The deepest node under `node` (at `path`) whose expansion exceeds the alias limit, and its path. */
function aliasBomb(doc: Document, node: unknown, path: string[]): { node: Node; path: string[] } | undefined {
  const expands = (n: unknown) => {
    try {
      (n as Node).toJS(doc, { maxAliasCount: MAX_ALIAS_COUNT });
      return false;
    } catch (e) {
      return e instanceof ReferenceError;
    }
  };
  if (!node || !expands(node)) return undefined;
  if (isMap(node)) {
    for (const pair of node.items) {
      if (!isPair(pair)) continue;
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      const found = aliasBomb(doc, pair.value, [...path, key]);
      if (found) return found;
    }
  } else if (isSeq(node)) {
    for (const [i, item] of node.items.entries()) {
      const found = aliasBomb(doc, item, [...path, String(i)]);
      if (found) return found;
    }
  }
  return isAlias(node) || isMap(node) || isSeq(node) ? { node: node as Node, path } : undefined;
}
