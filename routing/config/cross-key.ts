// Checks across keys of the stack config: unique service names that are no
// gateway's, derived names (hosts, Services) Kubernetes and DNS accept and that
// never coincide, listener limits within the pod's, shifts against the
// services they move.
import { checkShift, overlapProblem, type Shift } from "../shifts.js";
import { isDnsSubdomain } from "./kubernetes.js";
import { GATEWAY_ROLES, GATEWAYS, gatewayPodsService } from "./gateways.js";
import { DNS_LABEL } from "./primitives.js";

/** A list in the raw config, or none: the cross-key checks read values the schema may have refused. */
function listAt(value: unknown): unknown[] {
  // Stryker disable next-line ArrayDeclaration: what stands in for a missing list is never a service or a shift (no object), so it is skipped like none
  return Array.isArray(value) ? value : [];
}

/**
 * Checks across keys. They run on the raw input even when other keys are bad,
 * so that every error is reported at once; they read it defensively.
 */
export function crossKeyProblems(raw: Record<string, unknown>): CrossKeyProblem[] {
  const problems: CrossKeyProblem[] = [];
  const seen = new Map<string, number>();
  listAt(raw.services).forEach((s, i) => {
    const name = (s as { name?: unknown } | null)?.name;
    if (typeof name !== "string") return;
    const first = seen.get(name);
    if (first !== undefined)
      problems.push({
        path: ["services", i, "name"],
        input: name,
        message: `duplicates services[${first}].name; service names must be unique`,
      });
    else if ((GATEWAYS as readonly string[]).includes(name))
      problems.push({
        path: ["services", i, "name"],
        input: name,
        message: `is the name of a gateway's own Service; choose another name`,
      });
    else if (GATEWAYS.some((g) => gatewayPodsService(g) === name))
      problems.push({
        path: ["services", i, "name"],
        input: name,
        message: `is the name of the headless Service of a gateway's own pods; choose another name`,
      });
    else seen.set(name, i);
  });
  problems.push(...shiftConfigProblems(raw), ...derivedNameProblems(raw), ...listenerLimitProblems(raw));
  if (typeof raw.domain === "string" && raw.domain === raw.internalDomain) {
    problems.push({ path: ["internalDomain"], input: raw.internalDomain, message: "must differ from domain" });
  }
  return problems;
}

/** A problem of one key against others: its config path, the value as given (none for a problem of no single value) and what is wrong. */
export type CrossKeyProblem = { path: (string | number)[]; input: unknown; message: string };

/** A listener's connection limit above the pod's would never apply: refused, naming both. */
function listenerLimitProblems(raw: Record<string, unknown>): CrossKeyProblem[] {
  const edge = (raw.edge && typeof raw.edge === "object" ? raw.edge : {}) as Record<string, unknown>;
  const total = typeof edge.maxConnections === "number" ? edge.maxConnections : 50000;
  return (["httpsMaxConnections", "httpMaxConnections"] as const)
    .filter((key) => Number.isInteger(edge[key]) && (edge[key] as number) > total)
    .map((key) => ({
      path: ["edge", key],
      input: edge[key],
      message: `must be at most edge.maxConnections (${total.toLocaleString("en-US")}), the limit of the whole pod`,
    }));
}

/**
 * The names the program derives from the config: each gateway's hosts
 * (<service>.<domain>, the aliases it serves, its dev/PR host), the Services
 * of the versions (<service>-<version>) and their DNS names. Each must be a
 * name Kubernetes and DNS accept, and no two may coincide: a clash is
 * reported on the later key, naming the earlier one.
 */
function derivedNameProblems(raw: Record<string, unknown>): CrossKeyProblem[] {
  // One problem per key, whatever the number of names it spoils (one on each gateway, say).
  const byKey = new Map<string, CrossKeyProblem>();
  const out = {
    push(p: CrossKeyProblem) {
      const key = pathKey(p.path);
      const first = byKey.get(key);
      if (first) first.message += `; ${p.message}`;
      else byKey.set(key, { ...p });
    },
  };
  const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
  // Entries may be anything (null among them); those without a valid name are skipped first.
  const services = listAt(raw.services) as { name?: unknown; versions?: unknown; aliases?: unknown }[];
  const gateways = (raw.gateways && typeof raw.gateways === "object" ? raw.gateways : {}) as Record<
    string,
    Record<string, unknown> | undefined
  >;
  const namespace = str(raw.namespace) ?? "default";
  const clusterDomain = str(raw.clusterDomain) ?? "cluster.local";
  // A bad or duplicate name is reported by the schema and the checks above, once: not again here.
  const firstOf = new Map<string, number>();
  services.forEach((s, i) => {
    const name = str(s?.name);
    if (name && isDnsLabelName(name) && !firstOf.has(name)) firstOf.set(name, i);
  });
  // No service is named "": its name is no DNS label.
  const valid = (name: string | undefined, i: number): name is string => firstOf.get(name ?? "") === i;

  for (const gateway of GATEWAYS) {
    const g = gateways[gateway] ?? {};
    const domain = str(g.domain) ?? str(raw[GATEWAY_ROLES[gateway].domainKey]);
    if (!domain || !isDnsSubdomain(domain)) continue;
    const devHost = str(g.devHost) ?? `internal.${domain}`;
    const serveAliases = typeof g.serveAliases === "boolean" ? g.serveAliases : GATEWAY_ROLES[gateway].serveAliases;
    const hosts = new Map<string, string>([
      [devHost, `the dev/PR host of ${gateway} (envoy-gateways:gateways.${gateway}.devHost)`],
    ]);
    // The default dev/PR host: a given one was checked as a DNS name already. Too long, the domain is at fault, for every host.
    if (g.devHost === undefined && !isDnsSubdomain(devHost)) {
      out.push({
        path: [GATEWAY_ROLES[gateway].domainKey],
        input: domain,
        message: `gives ${gateway} hosts longer than the 253 characters DNS allows (its dev/PR host internal.<domain>, and <service>.<domain>); shorten it (or set gateways.${gateway}.devHost)`,
      });
      continue;
    }
    const claim = (host: string, path: (string | number)[], what: string) => {
      const other = hosts.get(host);
      if (other)
        out.push({
          path,
          input: host,
          message: `${what} ${host} on ${gateway} is also ${other}; each host is served once`,
        });
      else hosts.set(host, `${what} of envoy-gateways:${pathKey(path)}`);
    };
    services.forEach((s, i) => {
      const name = str(s?.name);
      if (!valid(name, i)) return;
      const host = `${name}.${domain}`;
      if (!isDnsSubdomain(host))
        out.push({
          path: ["services", i, "name"],
          input: name,
          message: `gives the host ${host} on ${gateway}, longer than the 253 characters DNS allows`,
        });
      else claim(host, ["services", i, "name"], "the host");
      if (!serveAliases || !Array.isArray(s.aliases)) return;
      s.aliases.forEach((alias: unknown, j: number) => {
        if (typeof alias === "string" && isDnsSubdomain(alias))
          claim(alias, ["services", i, "aliases", j], "the alias");
      });
    });
  }

  // Kubernetes Services: <service> for a single version, <service>-<version> for each of several.
  const owners = new Map<string, string>();
  services.forEach((s, i) => {
    const name = str(s?.name);
    if (!valid(name, i)) return;
    const versions = Array.isArray(s.versions) ? s.versions : undefined;
    const own = (service: string, path: (string | number)[], what: string) => {
      const other = owners.get(service);
      if (other)
        out.push({
          path,
          input: path.length === 4 ? versions![path[3] as number] : name,
          message: `${what} is the Service ${service}, which is also ${other}; choose another name`,
        });
      else owners.set(service, `the Service of envoy-gateways:${pathKey(path)}`);
      const host = `${service}.${namespace}.svc.${clusterDomain}`;
      if (host.length > 253)
        out.push({
          path,
          input: service,
          message: `${what}'s Service name gives the upstream host ${host}, longer than the 253 characters DNS allows`,
        });
    };
    if (!versions) return own(name, ["services", i, "name"], "this service");
    const seen = new Set<string>();
    versions.forEach((v: unknown, j: number) => {
      if (typeof v !== "string" || !isDnsLabelName(v)) return;
      if (seen.has(v))
        return out.push({
          path: ["services", i, "versions", j],
          input: v,
          message: `is listed twice; each version is listed once`,
        });
      seen.add(v);
      const service = `${name}-${v}`;
      if (service.length > 63)
        return out.push({
          path: ["services", i, "versions", j],
          input: v,
          message: `gives the Service ${service}, longer than the 63 characters a Kubernetes name allows`,
        });
      own(service, ["services", i, "versions", j], "this version");
    });
  });
  return [...byKey.values()];
}

function isDnsLabelName(name: string): boolean {
  return name.length <= 63 && DNS_LABEL.test(name);
}

/** A path as the config key after the project prefix: services[2].aliases[0]. */
function pathKey(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");
}

/** Shifts against the services they move: known service with versions, the checks every shift gets, no overlaps, every multi-version service shifted. */
function shiftConfigProblems(raw: Record<string, unknown>): CrossKeyProblem[] {
  const out: CrossKeyProblem[] = [];
  const services = listAt(raw.services) as ({ name?: unknown; versions?: unknown } | null)[];
  const shifts = listAt(raw.shifts) as (Record<string, unknown> | null)[];
  const versionsOf = new Map<string, string[]>();
  for (const s of services)
    if (typeof s?.name === "string")
      versionsOf.set(
        s.name,
        Array.isArray(s.versions) ? (s.versions as unknown[]).filter((v): v is string => typeof v === "string") : [],
      );
  const parsed = new Map<string, Shift[]>();
  shifts.forEach((sh, i) => {
    if (!sh || typeof sh !== "object" || typeof sh.service !== "string") return;
    const versions = versionsOf.get(sh.service);
    if (versions === undefined) {
      out.push({
        path: ["shifts", i, "service"],
        input: sh.service,
        message: "is not a service of this stack (envoy-gateways:services)",
      });
      return;
    }
    if (versions.length < 2) {
      out.push({
        path: ["shifts", i, "service"],
        input: sh.service,
        message: "has no versions to shift between; list them in its versions",
      });
      return;
    }
    const checked = checkShift(sh.service, sh, versions);
    for (const p of checked.problems)
      out.push({ path: p.field ? ["shifts", i, p.field] : ["shifts", i], input: p.value, message: p.message });
    if (checked.shift) (parsed.get(sh.service) ?? parsed.set(sh.service, []).get(sh.service)!).push(checked.shift);
  });
  for (const [service, list] of parsed) {
    const problem = overlapProblem(service, list);
    if (problem) out.push({ path: ["shifts"], input: undefined, message: problem });
  }
  services.forEach((s, i) => {
    if (
      typeof s?.name === "string" &&
      Array.isArray(s.versions) &&
      s.versions.length >= 2 &&
      !shifts.some((sh) => sh?.service === s.name)
    ) {
      out.push({
        path: ["services", i, "versions"],
        input: s.versions,
        message: `${s.name} has several versions but no shift in envoy-gateways:shifts says how to split its traffic`,
      });
    }
  });
  return out;
}
