// What Kubernetes accepts for names, labels, annotations and selectors, so
// stack config is refused here, with its key, rather than by the API server
// in the middle of an update.

/** A DNS subdomain (RFC 1123): labels joined by dots, at most 253 characters. */
export function isDnsSubdomain(name: string): boolean {
  return (
    name.length <= 253 &&
    name.split(".").every((label) => label.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(label))
  );
}

/** A label or annotation key: an optional DNS-subdomain prefix and "/", then a name of at most 63 characters. */
export function isQualifiedName(key: string): boolean {
  const slash = key.lastIndexOf("/");
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length === 0 || !isDnsSubdomain(prefix))) return false;
  return name.length >= 1 && name.length <= 63 && /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name);
}

/** A label value: empty, or at most 63 characters of letters, digits, '-', '_', '.', starting and ending alphanumeric. */
export function isLabelValue(value: string): boolean {
  return value.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(value);
}

export const QUALIFIED_NAME_HINT =
  "a Kubernetes label or annotation key: an optional DNS-subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit";

/** Kubernetes refuses an object whose annotations (keys and values) exceed 256 KiB. */
export const ANNOTATIONS_MAX_BYTES = 256 * 1024;

/** One term of an equality-based label selector: key=value (or key==value), or key!=value. */
interface SelectorTerm {
  key: string;
  equal: boolean;
  value: string;
}

function selectorTerm(term: string): SelectorTerm | undefined {
  const m = /^([^=!]*)(==?|!=)(.*)$/.exec(term.trim());
  return m ? { key: m[1]!.trim(), equal: m[2] !== "!=", value: m[3]!.trim() } : undefined;
}

/** What is wrong with an equality-based label selector ("a=b,c!=d"), or undefined. */
export function labelSelectorProblem(selector: string): string | undefined {
  if (selector.trim() === "") return "is empty";
  for (const written of selector.split(",")) {
    const term = selectorTerm(written);
    if (!term) return `term ${JSON.stringify(written.trim())} is not key=value or key!=value`;
    const { key, value } = term;
    if (!isQualifiedName(key)) return `key ${JSON.stringify(key)} is not ${QUALIFIED_NAME_HINT}`;
    if (!isLabelValue(value))
      return `value ${JSON.stringify(value)} of ${key} is not a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`;
  }
  return undefined;
}

/** A Kubernetes LabelSelector's fields (the subset equality-based selectors need). */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: "In" | "NotIn"; values: string[] }[];
}

/**
 * A valid equality-based selector ("a=b,c!=d") as a LabelSelector: key=value terms in
 * matchLabels, key!=value terms as NotIn (which, like !=, also matches objects without the key).
 */
export function labelSelectorObject(selector: string): LabelSelector {
  const terms = selector.split(",").map((t) => selectorTerm(t)!);
  const out: LabelSelector = {};
  const equal = terms.filter((t) => t.equal);
  const notEqual = terms.filter((t) => !t.equal);
  if (equal.length) out.matchLabels = Object.fromEntries(equal.map((t) => [t.key, t.value]));
  if (notEqual.length)
    out.matchExpressions = notEqual.map((t) => ({ key: t.key, operator: "NotIn", values: [t.value] }));
  return out;
}
