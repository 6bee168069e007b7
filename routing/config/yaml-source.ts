// YAML files read the way Pulumi reads a stack file (anchors, aliases and
// `<<` merge keys resolved), keeping where each value was written, so an
// error can name the file, the line and the value exactly as written
// (`.nan`, `1e400`, `2 hours`).
import { isScalar, LineCounter, parseDocument } from "yaml";
import { InputError, type ProblemSource } from "./errors.js";

export interface YamlSource {
  /** The file's path, as given. */
  file: string;
  /** The parsed value. */
  value: unknown;
  /** Where the node at `path` was written: its line (1-based) and, for a scalar, its text. */
  at(path: readonly (string | number)[]): { line: number; written?: string } | undefined;
}

/** Parses `text` (the contents of `file`, which holds `source`); a syntax error is one problem with the parser's whole excerpt. */
export function parseYamlSource(text: string, file: string, subject: string, source: ProblemSource): YamlSource {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { merge: true, lineCounter, prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length) {
    throw new InputError(
      subject,
      doc.errors.map((e) => ({
        key: `${file}:${e.linePos?.[0]?.line ?? "?"}`,
        source,
        message: `is not valid YAML: ${e.message}`,
      })),
    );
  }
  const value = doc.toJS({ maxAliasCount: 1000 });
  return {
    file,
    value,
    at(path) {
      const node = doc.getIn(path, true) as { range?: [number, number, number]; source?: string } | undefined;
      if (!node?.range) return undefined;
      const line = lineCounter.linePos(node.range[0]).line;
      const written = isScalar(node) ? text.slice(node.range[0], node.range[1]).trim() : undefined;
      return written !== undefined ? { line, written } : { line };
    },
  };
}
