import { describe, expect, it } from "vitest";
import { InputError } from "../../routing/config/errors.js";
import { fromPulumiConfig, parseStackConfig } from "../../routing/config/load.js";
import { minimalRaw, rawStack, stackConfig, withValue } from "./fixtures.js";

function problemsOf(raw: Record<string, unknown>): string[] {
  try {
    parseStackConfig(raw);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as InputError).message.split("\n").slice(1).map((l) => l.replace(/^ {2}- /, ""));
  }
  throw new Error("config was accepted");
}

describe("stack config", () => {
  it("accepts both stacks' files, with their values and the documented defaults", () => {
    const dev = stackConfig("dev");
    expect(dev.gateways.gateway.replicas).toBe(1);
    expect(dev.devNamespaces.upstreamTls).toBe("encrypt-only");
    expect(dev.clusterDomain).toBe("cluster.local");
    expect(dev.gateways["internal-gateway"].compression).toBe(true);
    expect(dev.gateways.gateway.compression).toBe(false);
    const prod = stackConfig("prod");
    expect(prod.gateways.gateway.replicas).toBeGreaterThanOrEqual(3);
    expect(prod.services.length).toBeGreaterThanOrEqual(20);
    expect(prod.services.every((s) => s.rateLimit !== undefined)).toBe(true);
    expect(prod.upstream.lbPolicy).toBe("LEAST_REQUEST");
    expect(prod.tls.minimumVersion).toBe("TLSv1_2");
  });

  it("reads config the way the engine passes it (objects as JSON text)", () => {
    const all: Record<string, string> = { "kubernetes:context": "kind" };
    for (const [k, v] of Object.entries(rawStack("dev"))) all[`envoy-gateways:${k}`] = typeof v === "string" ? v : JSON.stringify(v);
    all["envoy-gateways:skipAwait"] = "true";
    const config = parseStackConfig(fromPulumiConfig(all));
    expect(config.skipAwait).toBe(true);
    expect(config.services.map((s) => s.name)).toEqual(stackConfig("dev").services.map((s) => s.name));
  });

  it("collects every bad value in one error, not only the first", () => {
    let raw = withValue(minimalRaw(), "domain", "Example.org");
    raw = withValue(raw, "gateways.gateway.replicas", 0);
    raw = withValue(raw, "upstream", { lbPolicy: "RANDOM" });
    const problems = problemsOf(raw);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^envoy-gateways:domain: /);
  });

  // Each case: what to change, the key the error must name, what it must say.
  const cases: [string, string, unknown, string, RegExp][] = [
    ["upper-case domain", "domain", "Example.org", "envoy-gateways:domain", /lower-case DNS name.*got "Example\.org"/],
    ["domain with a space", "domain", "exa mple.org", "envoy-gateways:domain", /lower-case DNS name/],
    ["missing domain", "domain", undefined, "envoy-gateways:domain", /is required/],
    ["internal domain equal to domain", "internalDomain", "example.org", "envoy-gateways:internalDomain", /must differ from domain/],
    ["cluster domain with underscore", "clusterDomain", "cluster_local", "envoy-gateways:clusterDomain", /DNS name/],
    ["namespace not a DNS label", "namespace", "Default", "envoy-gateways:namespace", /DNS label.*got "Default"/],
    ["image tagged latest", "envoyImage", "envoyproxy/envoy:latest", "envoy-gateways:envoyImage", /never latest or untagged.*got "envoyproxy\/envoy:latest"/],
    ["image without tag", "envoyImage", "envoyproxy/envoy", "envoy-gateways:envoyImage", /pinned to a version tag or a digest/],
    ["image with a non-version tag", "envoyImage", "envoyproxy/envoy:dev", "envoy-gateways:envoyImage", /pinned/],
    ["image with a short digest", "envoyImage", "envoyproxy/envoy@sha256:abc", "envoy-gateways:envoyImage", /pinned/],
    ["no internal-gateway", "gateways.internal-gateway", undefined, "envoy-gateways:gateways.internal-gateway", /is required/],
    ["zero replicas", "gateways.gateway.replicas", 0, "envoy-gateways:gateways.gateway.replicas", /whole number of replicas from 1 to 100 \(got 0\)/],
    ["fractional replicas", "gateways.gateway.replicas", 1.5, "envoy-gateways:gateways.gateway.replicas", /whole number of replicas/],
    ["replicas as text", "gateways.gateway.replicas", "three", "envoy-gateways:gateways.gateway.replicas", /whole number of replicas.*got "three"/],
    ["maxReplicas below replicas", "gateways.gateway.maxReplicas", 1, "envoy-gateways:gateways.gateway.maxReplicas", /at least replicas/],
    ["CPU target over 100", "gateways.gateway.targetCpuUtilization", 150, "envoy-gateways:gateways.gateway.targetCpuUtilization", /percentage from 1 to 100/],
    ["bad CPU quantity", "gateways.gateway.resources.requests.cpu", "1 core", "envoy-gateways:gateways.gateway.resources.requests.cpu", /CPU quantity/],
    ["bad memory quantity", "gateways.gateway.resources.limits.memory", "1GB", "envoy-gateways:gateways.gateway.resources.limits.memory", /memory quantity/],
    ["no limits", "gateways.gateway.resources.limits", undefined, "envoy-gateways:gateways.gateway.resources.limits", /is required/],
    ["unknown Service type", "gateways.gateway.service", { type: "Ingress" }, "envoy-gateways:gateways.gateway.service.type", /LoadBalancer, NodePort or ClusterIP/],
    ["bad load-balancer IP", "gateways.gateway.service", { loadBalancerIP: "10.0.0.300" }, "envoy-gateways:gateways.gateway.service.loadBalancerIP", /IPv4 address/],
    ["annotation value not a string", "gateways.gateway.service", { annotations: { a: 1 } }, "envoy-gateways:gateways.gateway.service.annotations.a", /must be strings/],
    ["TLS secret not a DNS label", "gateways.gateway.tls.serverSecret", "Gateway_TLS", "envoy-gateways:gateways.gateway.tls.serverSecret", /DNS label/],
    ["compression not a boolean", "gateways.gateway.compression", "yes", "envoy-gateways:gateways.gateway.compression", /true or false/],
    ["bad dev host", "gateways.gateway.devHost", "internal..example.org", "envoy-gateways:gateways.gateway.devHost", /DNS name/],
    ["unknown gateway key", "gateways.gateway.replica", 2, "envoy-gateways:gateways.gateway.replica", /unknown key; allowed: replicas, maxReplicas/],
    ["unknown top-level key", "domian", "example.org", "envoy-gateways:domian", /unknown key; allowed: domain, internalDomain/],
    ["service name with upper case", "services.1.name", "Batch", "envoy-gateways:services[1].name", /DNS label.*got "Batch"/],
    ["service name too long", "services.1.name", "a".repeat(64), "envoy-gateways:services[1].name", /at most 63 characters/],
    ["duplicate service", "services.1.name", "www", "envoy-gateways:services[1].name", /duplicates services\[0\]\.name/],
    ["service with zero replicas", "services.0.replicas", 0, "envoy-gateways:services[0].replicas", /from 1 to 1,000/],
    ["rate limit zero", "services.0.rateLimit", 0, "envoy-gateways:services[0].rateLimit", /requests per second from 1/],
    ["alias not a DNS name", "services.0.aliases", ["*.example.org"], "envoy-gateways:services[0].aliases[0]", /DNS name/],
    ["bad namespace selector", "devNamespaces", { selector: "routes dev" }, "envoy-gateways:devNamespaces.selector", /label selector/],
    ["dev rate limit negative", "devNamespaces", { rateLimit: -5 }, "envoy-gateways:devNamespaces.rateLimit", /requests per second/],
    ["dev upstream TLS mode", "devNamespaces", { upstreamTls: "none" }, "envoy-gateways:devNamespaces.upstreamTls", /verify or encrypt-only/],
    ["auth path without slash", "auth", { pathPrefix: "verify" }, "envoy-gateways:auth.pathPrefix", /path starting with \//],
    ["login URL not a URL", "auth", { loginUrl: "auth.example.org/login" }, "envoy-gateways:auth.loginUrl", /http\(s\) URL/],
    ["auth port out of range", "auth", { port: 70000 }, "envoy-gateways:auth.port", /port number from 1 to 65,535/],
    ["auth timeout without unit", "auth", { timeout: "500" }, "envoy-gateways:auth.timeout", /duration such as 250ms/],
    ["unknown load-balancing policy", "upstream", { lbPolicy: "RANDOM" }, "envoy-gateways:upstream.lbPolicy", /ROUND_ROBIN or LEAST_REQUEST.*got "RANDOM"/],
    ["connect timeout with a space", "upstream", { connectTimeout: "3 s" }, "envoy-gateways:upstream.connectTimeout", /duration/],
    ["upstream protocol", "upstream", { protocol: "http3" }, "envoy-gateways:upstream.protocol", /http1 or http2/],
    ["ejection percent over 100", "upstream", { maxEjectionPercent: 101 }, "envoy-gateways:upstream.maxEjectionPercent", /percentage from 1 to 100/],
    ["too many trusted hops", "edge", { trustedHops: 11 }, "envoy-gateways:edge.trustedHops", /from 0 to 10/],
    ["buffer limit too small", "edge", { bufferLimitBytes: 100 }, "envoy-gateways:edge.bufferLimitBytes", /bytes from 1,024/],
    ["HTTP/2 window too small", "edge", { http2InitialStreamWindowSize: 1000 }, "envoy-gateways:edge.http2InitialStreamWindowSize", /from 65,535/],
    ["TLS 1.1 allowed", "tls", { minimumVersion: "TLSv1_1" }, "envoy-gateways:tls.minimumVersion", /TLSv1_2 or TLSv1_3/],
    ["weak cipher", "tls", { cipherSuites: ["AES128-SHA"] }, "envoy-gateways:tls.cipherSuites[0]", /must be one of ECDHE-ECDSA-AES128-GCM-SHA256/],
    ["no ciphers", "tls", { cipherSuites: [] }, "envoy-gateways:tls.cipherSuites", /at least one cipher suite/],
    ["skipAwait as text", "skipAwait", "yes", "envoy-gateways:skipAwait", /true or false/],
  ];

  it.each(cases)("rejects %s, naming the key, the value and what is allowed", (_, path, value, key, message) => {
    const problems = problemsOf(withValue(minimalRaw(), path, value));
    const mine = problems.filter((p) => p.startsWith(`${key}: `));
    expect(mine, problems.join("\n")).toHaveLength(1);
    expect(mine[0]).toMatch(message);
    expect(problems, "only the broken key is reported").toHaveLength(1);
  });

  it("refuses any secret but the kubeconfig, and never shows a secret value, even under a misspelt key", () => {
    const raw = { ...minimalRaw(), domain: "s3cr3t-domain.org", kubeconfg: "token: s3cr3t-t0ken", kubeconfig: "token: s3cr3t-k" };
    let message = "";
    try {
      parseStackConfig(raw, "stack config", { secretKeys: new Set(["domain", "kubeconfg", "kubeconfig"]) });
    } catch (e) {
      message = (e as InputError).message;
    }
    expect(message).toContain("envoy-gateways:domain: is set as a secret, but it is rendered into the gateways' ConfigMaps and the stack's state in plain text");
    expect(message).toMatch(/envoy-gateways:kubeconfg: unknown key; allowed: domain, .* \(value not shown: it is a secret\)/);
    expect(message).not.toContain("s3cr3t");
    expect((message.match(/^ {2}- /gm) ?? []).length).toBe(2);
  });

  it("keeps the kubeconfig out of the stack config", () => {
    const config = parseStackConfig({ ...minimalRaw(), kubeconfig: "apiVersion: v1" }, "stack config", { secretKeys: new Set(["kubeconfig"]) });
    expect(JSON.stringify(config)).not.toContain("apiVersion");
  });

  it("has at least 30 bad-input cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });
});
