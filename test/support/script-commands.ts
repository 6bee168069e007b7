// What a script entrypoint runs on the machine: every external command (and host file
// it copies) reachable from it, found in the syntax trees of the shell scripts (shfmt
// --to-json) and of the TypeScript/JavaScript files they run (the TypeScript compiler's
// parser), following `source`, `bash FILE`, `npx tsx FILE`, `node FILE`, the functions
// they call and the TypeScript files they import. test/unit/script-commands.test.ts
// checks the result against scripts/commands.tsv.
//
// Rules, in the scripts' own terms:
// - a command is the first word of a simple command, when it is a literal; the command
//   after a wrapper (step NAME, check_output WANT, sudo/$SUDO, exec, setsid, nohup,
//   nice, timeout, env, xargs) is the one that runs; `command -v X` is a probe;
// - a word made of a variable ($KUBELET, "$out/bin/envoy") is a cached component, built
//   by scripts/build-components.sh, and not a command of the machine;
// - `python3 -m MODULE` is its own command (python3 -m venv needs python3-venv);
// - a literal absolute path under /bin, /sbin, /lib, /lib64 or /usr is a host file the
//   script reads or copies (the pod images copy /bin/bash, the old world's nginx);
// - build-components.sh builds entry NAME by calling build_NAME (install_entry NAME):
//   only the entries of the set it is run with count (QUICKSTART_ENTRIES or
//   DEVELOPMENT_ENTRIES in that script).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

export type CommandSet = "quickstart" | "development";

export interface CommandUse {
  /** The command as called (`ip`, `python3 -m venv`), or a host path (`/usr/sbin/nginx`). */
  command: string;
  /** Where: repository-relative file and line. */
  at: string;
}

type Node = { Type?: string; [key: string]: unknown };
type Word = { Parts?: Node[] };

const BUILTINS = new Set(
  (
    "alias bg bind break builtin caller cd command compgen complete continue declare dirs disown echo enable " +
    "eval exec exit export false fc fg getopts hash help history jobs kill let local logout mapfile popd printf " +
    "pushd pwd read readarray readonly return set shift shopt source suspend test times trap true type typeset " +
    "ulimit umask unalias unset wait [ : ."
  ).split(" "),
);

/**
 * Wrappers that run the command after their own words: how many words they take first.
 * step, check_output and launch are the scripts' own (lib.sh, build-components.sh,
 * local-cluster.sh): their bodies are walked too.
 */
const WRAPPERS: Record<string, number> = { step: 1, check_output: 1, launch: 1, sudo: 0, exec: 0, setsid: 0, nohup: 0 };
/** Wrappers with options (words starting with "-"; these options take a value). */
const OPTION_WRAPPERS: Record<string, { valued: string[]; positional: number }> = {
  nice: { valued: ["-n"], positional: 0 },
  timeout: { valued: ["-s", "-k"], positional: 1 },
  xargs: { valued: ["-I", "-n", "-P", "-d", "-L", "-s", "-E"], positional: 0 },
  env: { valued: ["-u", "-C"], positional: 0 },
  unshare: { valued: ["--propagation", "--setgroups", "-S", "-G", "-R", "-w"], positional: 0 },
};

const HOST_PATH = /^\/(?:usr\/)?(?:s?bin|lib|lib64)\/[\w./+-]*$/;

export class ScriptCommands {
  private readonly uses: CommandUse[] = [];
  private readonly functions = new Map<string, { body: Node; file: string }>();
  private readonly walkedFunctions = new Set<string>();
  private readonly loadedFiles = new Set<string>();
  private readonly entries: Record<CommandSet, Set<string>> = { quickstart: new Set(), development: new Set() };

  constructor(
    private readonly repoRoot: string,
    private readonly shfmt: string,
    private readonly set: CommandSet,
  ) {}

  /** Every command and host path reachable from the entrypoint (repository-relative). */
  static of(repoRoot: string, shfmt: string, set: CommandSet, entrypoint: string): CommandUse[] {
    const walker = new ScriptCommands(repoRoot, shfmt, set);
    walker.shellFile(resolve(repoRoot, entrypoint));
    return walker.uses;
  }

  /** Every command the given TypeScript/JavaScript files (and what they import) run. */
  static ofSources(repoRoot: string, files: string[]): CommandUse[] {
    const uses: CommandUse[] = [];
    const reader = new SourceCommands(repoRoot, uses);
    for (const file of files) reader.file(resolve(repoRoot, file));
    return uses;
  }

  private parse(script: string, what: string): Node {
    try {
      return JSON.parse(
        execFileSync(this.shfmt, ["--to-json", "-ln", "bash"], {
          input: script,
          encoding: "utf8",
          maxBuffer: 64 << 20,
          stdio: ["pipe", "pipe", "pipe"],
        }),
      ) as Node;
    } catch (e) {
      throw new Error(`shfmt cannot parse ${what}: ${String((e as { stderr?: string }).stderr ?? e).trim()}`, {
        cause: e,
      });
    }
  }

  private where(file: string, node: Node): string {
    const pos = node.Pos as { Line?: number } | undefined;
    return `${relative(this.repoRoot, file)}:${pos?.Line ?? "?"}`;
  }

  private shellFile(file: string): void {
    if (this.loadedFiles.has(file)) return;
    this.loadedFiles.add(file);
    const tree = this.parse(readFileSync(file, "utf8"), relative(this.repoRoot, file));
    this.collectFunctions(tree, file);
    if (file.endsWith("/build-components.sh")) this.readEntrySets(tree);
    this.walk(tree, file);
  }

  /** Registers every function a file defines, so calls to them are walked, not counted. */
  private collectFunctions(node: unknown, file: string): void {
    if (Array.isArray(node)) return node.forEach((n) => this.collectFunctions(n, file));
    if (!node || typeof node !== "object") return;
    const n = node as Node;
    if (n.Type === "FuncDecl") {
      this.functions.set((n.Name as { Value: string }).Value, { body: n.Body as Node, file });
    }
    for (const value of Object.values(n)) this.collectFunctions(value, file);
  }

  private readEntrySets(tree: Node): void {
    const values = new Map<string, string>();
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(visit);
      if (!node || typeof node !== "object") return;
      const n = node as Node;
      if (n.Type === "CallExpr" && !(n.Args as unknown[] | undefined)?.length) {
        for (const assign of (n.Assigns as { Name: { Value: string }; Value?: Word }[]) ?? []) {
          const text = expand(assign.Value, values);
          if (text !== null) values.set(assign.Name.Value, text);
        }
      }
      Object.values(n).forEach(visit);
    };
    visit(tree);
    for (const set of ["quickstart", "development"] as const) {
      const list = values.get(`${set.toUpperCase()}_ENTRIES`);
      if (list === undefined) throw new Error(`build-components.sh assigns no ${set.toUpperCase()}_ENTRIES`);
      for (const name of list.split(/\s+/).filter(Boolean)) this.entries[set].add(name);
    }
  }

  private walk(node: unknown, file: string): void {
    if (Array.isArray(node)) return node.forEach((n) => this.walk(n, file));
    if (!node || typeof node !== "object") return;
    const n = node as Node;
    if (n.Type === "FuncDecl") return; // walked when called
    if (n.Type === "CallExpr") this.call(n, file);
    if (Array.isArray(n.Parts) && n.Type !== "DblQuoted") {
      const text = literal(n as Word);
      if (text !== null && HOST_PATH.test(text)) this.uses.push({ command: text, at: this.where(file, n) });
    }
    for (const value of Object.values(n)) this.walk(value, file);
  }

  private call(n: Node, file: string): void {
    const args = (n.Args as Word[] | undefined) ?? [];
    let i = 0;
    for (;;) {
      if (i >= args.length) return;
      const word = args[i]!;
      const name = literal(word);
      if (name === null) {
        // $SUDO (empty as root, "sudo" otherwise) wraps; any other variable is a component.
        if (isParam(word, "SUDO")) {
          i += 1;
          continue;
        }
        return;
      }
      if (name in WRAPPERS) {
        if (this.functions.has(name)) this.function(name);
        else if (!BUILTINS.has(name)) this.use(name, file, n);
        i += 1 + WRAPPERS[name]!;
        continue;
      }
      const wrapper = OPTION_WRAPPERS[name];
      if (wrapper) {
        this.use(name, file, n);
        i += 1;
        while (i < args.length) {
          const option = literal(args[i]!) ?? "";
          if (name === "env" && /^\w+=/.test(option)) i += 1;
          else if (option.startsWith("-")) i += wrapper.valued.includes(option) ? 2 : 1;
          else break;
        }
        i += wrapper.positional;
        continue;
      }
      const rest = args.slice(i + 1).map(literal);
      this.command(name, rest, args.slice(i + 1), file, n);
      return;
    }
  }

  private command(name: string, rest: (string | null)[], words: Word[], file: string, n: Node): void {
    if (name === "command" && rest[0] === "-v") return; // a probe
    if (name === "source" || name === ".") return this.follow(words[0], file);
    if (name === "install_entry" && rest[0]) {
      if (this.entries[this.set].has(rest[0])) this.function(`build_${rest[0].replace(/-/g, "_")}`);
      return;
    }
    if (this.functions.has(name)) return this.function(name);
    if (BUILTINS.has(name)) return;
    if (name === "python3" && rest[0] === "-m" && rest[1]) return this.use(`python3 -m ${rest[1]}`, file, n);
    this.use(name, file, n);
    // The first word after bash or node: a script's path (perhaps after a variable) or an option.
    const script = words[0] && !(rest[0] ?? "").startsWith("-") ? words[0] : undefined;
    if (name === "bash" && script) return this.follow(script, file);
    if (name === "bash" && rest[0] === "-c" && rest[1]) return this.inline(rest[1], file);
    if (name === "npx" && rest[0] === "tsx" && words[1]) return this.followScript(words[1], file);
    if (name === "node" && script) return this.followScript(script, file);
  }

  private use(command: string, file: string, n: Node): void {
    this.uses.push({ command, at: this.where(file, n) });
  }

  private function(name: string): void {
    const fn = this.functions.get(name);
    if (!fn) throw new Error(`no function ${name} in the scripts read`);
    if (this.walkedFunctions.has(name)) return;
    this.walkedFunctions.add(name);
    this.walk(fn.body, fn.file);
  }

  /** A `bash -c` script given as a literal: parsed and walked like a file's statements. */
  private inline(script: string, file: string): void {
    this.walk(this.parse(script, `a bash -c script in ${relative(this.repoRoot, file)}`), file);
  }

  /** The file a word names: its literal tail, under the repository or the scripts directory. */
  private resolveWord(word: Word | undefined, from: string): string | null {
    const tail = literalTail(word);
    if (!tail) return null;
    return [join(this.repoRoot, tail), join(dirname(from), tail)].find((c) => existsSync(c)) ?? null;
  }

  private follow(word: Word | undefined, from: string): void {
    // A file named by expansions alone ("$(node_env_file)") is state the scripts wrote.
    if (!literalTail(word)) return;
    const file = this.resolveWord(word, from);
    if (!file) throw new Error(`${relative(this.repoRoot, from)}: cannot tell which file ${wordText(word)} is`);
    this.shellFile(file);
  }

  private followScript(word: Word, from: string): void {
    const file = this.resolveWord(word, from);
    if (file && /\.[cm]?[jt]s$/.test(file)) new SourceCommands(this.repoRoot, this.uses).file(file);
  }
}

/**
 * Commands a TypeScript or JavaScript file (and the relative modules it imports) runs
 * through node:child_process: the first argument of spawn, spawnSync, execFile,
 * execFileSync and of names bound to promisify(execFile), when it is a string literal.
 */
class SourceCommands {
  private static readonly seen = new WeakMap<CommandUse[], Set<string>>();

  constructor(
    private readonly repoRoot: string,
    private readonly uses: CommandUse[],
  ) {}

  file(path: string): void {
    const seen = SourceCommands.seen.get(this.uses) ?? new Set<string>();
    SourceCommands.seen.set(this.uses, seen);
    if (seen.has(path)) return;
    seen.add(path);
    const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
    const runners = new Set(["spawn", "spawnSync", "execFile", "execFileSync"]);
    const visit = (node: ts.Node): void => {
      if (
        ts.isVariableDeclaration(node) &&
        ts.isIdentifier(node.name) &&
        node.initializer &&
        ts.isCallExpression(node.initializer) &&
        node.initializer.expression.getText(source) === "promisify" &&
        runners.has(node.initializer.arguments[0]?.getText(source) ?? "")
      ) {
        runners.add(node.name.text);
      }
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        const name = ts.isIdentifier(callee)
          ? callee.text
          : ts.isPropertyAccessExpression(callee)
            ? callee.name.text
            : "";
        const first = node.arguments[0];
        if (runners.has(name) && first && ts.isStringLiteralLike(first)) {
          const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
          this.uses.push({ command: first.text, at: `${relative(this.repoRoot, path)}:${line}` });
        }
      }
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
        const spec = (node.moduleSpecifier as ts.StringLiteral).text;
        if (spec.startsWith(".")) {
          const target = resolve(dirname(path), spec).replace(/\.js$/, "");
          const found = [".ts", ".mts", ".js", ".mjs", "/index.ts"].map((ext) => target + ext).find(existsSync);
          const typeOnly = ts.isImportDeclaration(node) && node.importClause?.isTypeOnly;
          if (found && !typeOnly) this.file(found);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
}

function partText(part: Node): string | null {
  switch (part.Type) {
    case "Lit":
      return part.Value as string;
    case "SglQuoted":
      return part.Value as string;
    case "DblQuoted": {
      const inner = ((part.Parts as Node[]) ?? []).map(partText);
      return inner.every((t) => t !== null) ? inner.join("") : null;
    }
    default:
      return null;
  }
}

/** The word's text when it is all literal (quoted or not), else null. */
function literal(word: Word): string | null {
  const parts = (word.Parts ?? []).map(partText);
  return parts.length > 0 && parts.every((t) => t !== null) ? parts.join("") : null;
}

/** The literal text after the last expansion of a word ("$REPO_ROOT/scripts/x.sh" -> "/scripts/x.sh"). */
function literalTail(word: Word | undefined): string | null {
  const flat: Node[] = [];
  for (const part of word?.Parts ?? []) {
    if (part.Type === "DblQuoted") flat.push(...((part.Parts as Node[]) ?? []));
    else flat.push(part);
  }
  let tail = "";
  for (const part of flat) {
    const text = partText(part);
    tail = text === null ? "" : tail + text;
  }
  return tail || null;
}

function isParam(word: Word, name: string): boolean {
  const parts = word.Parts ?? [];
  return parts.length === 1 && parts[0]!.Type === "ParamExp" && (parts[0]!.Param as { Value: string }).Value === name;
}

function wordText(word: Word | undefined): string {
  return JSON.stringify(literal(word ?? {}) ?? literalTail(word) ?? "");
}

/** A word's value given earlier assignments (literals and $NAME / ${NAME} only), else null. */
function expand(word: Word | undefined, values: Map<string, string>): string | null {
  const flat: Node[] = [];
  for (const part of word?.Parts ?? []) {
    if (part.Type === "DblQuoted") flat.push(...((part.Parts as Node[]) ?? []));
    else flat.push(part);
  }
  let out = "";
  for (const part of flat) {
    if (part.Type === "ParamExp") {
      const value = values.get((part.Param as { Value: string }).Value);
      if (value === undefined) return null;
      out += value;
    } else {
      const text = partText(part);
      if (text === null) return null;
      out += text;
    }
  }
  return out;
}
