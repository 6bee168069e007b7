import { describe, expect, it } from "vitest";
import { InputError } from "../../routing/config/errors.js";
import { fromPulumiConfig, parseStackConfig } from "../../routing/config/load.js";
import { isPinnedImage, parseImageReference } from "../../routing/config/schema.js";
import { minimalRaw, rawStack, stackConfig, withValue } from "./fixtures.js";

function problemsOf(raw: Record<string, unknown>): string[] {
  try {
    parseStackConfig(raw);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as InputError).message
      .split("\n")
      .slice(1)
      .map((l) => l.replace(/^ {2}- /, ""));
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
    expect(prod.upstream.dnsLookupFamily).toBe("V4_ONLY");
    expect(prod.tls.minimumVersion).toBe("TLSv1_2");
    // The gateways' settings that default by role.
    expect(prod.gateways.gateway.authenticateMetrics).toBe(true);
    expect(prod.gateways["internal-gateway"].authenticateMetrics).toBe(false);
    expect(Object.keys(prod.gateways.gateway.securityHeaders)).toEqual([
      "strict-transport-security",
      "x-content-type-options",
      "referrer-policy",
    ]);
    expect(prod.gateways["internal-gateway"].securityHeaders).toEqual({});
    expect(prod.upstream).toMatchObject({
      routeTimeout: "300s",
      retries: 2,
      retryResetMethods: ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"],
      retryBudgetPercent: 20,
    });
    expect(prod.edge).toMatchObject({ maxConnections: 50000, httpsMaxConnections: 45000, httpMaxConnections: 5000 });
  });

  it("merges a gateway's security headers over its role's defaults, in every written form", () => {
    const c = parseStackConfig(
      withValue(minimalRaw(), "gateways.gateway.securityHeaders", {
        "x-frame-options": "DENY",
        "referrer-policy": false,
        "strict-transport-security": { value: "max-age=60", replace: true },
      }),
    );
    expect(c.gateways.gateway.securityHeaders).toEqual({
      "strict-transport-security": { value: "max-age=60", replace: true },
      "x-content-type-options": { value: "nosniff", replace: false },
      "referrer-policy": false,
      "x-frame-options": { value: "DENY", replace: false },
    });
  });

  it("fills in every documented default", () => {
    const securityHeaders = {
      "strict-transport-security": { value: "max-age=31536000", replace: false },
      "x-content-type-options": { value: "nosniff", replace: false },
      "referrer-policy": { value: "strict-origin-when-cross-origin", replace: false },
    };
    const gateway = (
      name: string,
      role: {
        compression: boolean;
        acme: boolean;
        serveAliases: boolean;
        authenticateMetrics: boolean;
        securityHeaders: object;
        domain: string;
      },
    ) => ({
      replicas: 2,
      targetCpuUtilization: 70,
      resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { cpu: "1", memory: "512Mi" } },
      service: { type: "LoadBalancer", annotations: {} },
      tls: { serverSecret: `${name}-tls`, upstreamSecret: `${name}-upstream-tls` },
      compression: role.compression,
      acme: role.acme,
      serveAliases: role.serveAliases,
      authenticateDevRoutes: true,
      authenticateMetrics: role.authenticateMetrics,
      securityHeaders: role.securityHeaders,
      domain: role.domain,
      devHost: `internal.${role.domain}`,
    });
    expect(parseStackConfig({ ...minimalRaw(), services: undefined })).toEqual({
      domain: "example.org",
      internalDomain: "example.internal",
      clusterDomain: "cluster.local",
      namespace: "default",
      envoyImage: "envoyproxy/envoy:v1.40.0",
      gateways: {
        gateway: gateway("gateway", {
          compression: false,
          acme: true,
          serveAliases: true,
          authenticateMetrics: true,
          securityHeaders,
          domain: "example.org",
        }),
        "internal-gateway": gateway("internal-gateway", {
          compression: true,
          acme: false,
          serveAliases: false,
          authenticateMetrics: false,
          securityHeaders: {},
          domain: "example.internal",
        }),
      },
      routeSync: {},
      services: [],
      shifts: [],
      devNamespaces: {
        selector: "envoy-gateways.io/routes=dev",
        rateLimit: 200,
        upstreamTls: "verify",
        clusters: "per-service",
        protected: ["kube-system", "kube-public", "kube-node-lease"],
        maxXdsBytes: 1_040_384,
      },
      auth: {
        service: "auth",
        namespace: "default",
        port: 443,
        pathPrefix: "/api/v1alpha/verify_dev_credentials",
        timeout: "500ms",
        allowedHeaders: ["cookie", "authorization"],
      },
      acme: { service: "letsencrypt", namespace: "default", port: 80 },
      upstream: {
        lbPolicy: "LEAST_REQUEST",
        connectTimeout: "3s",
        dnsRefreshRate: "5s",
        dnsLookupFamily: "V4_ONLY",
        protocol: "http1",
        idleTimeout: "300s",
        maxConnections: 1024,
        maxPendingRequests: 1024,
        maxRequests: 1024,
        consecutive5xx: 5,
        baseEjectionTime: "30s",
        maxEjectionPercent: 50,
        routeTimeout: "300s",
        retries: 2,
        retryResetMethods: ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"],
        retryBudgetPercent: 20,
      },
      edge: {
        trustedHops: 0,
        maxConnections: 50000,
        httpsMaxConnections: 45000,
        httpMaxConnections: 5000,
        maxRequestHeadersKb: 60,
        idleTimeout: "1h",
        streamIdleTimeout: "300s",
        requestTimeout: "300s",
        requestHeadersTimeout: "10s",
        websocketIdleTimeout: "1h",
        http2MaxConcurrentStreams: 100,
        http2InitialStreamWindowSize: 65536,
        http2InitialConnectionWindowSize: 1048576,
        bufferLimitBytes: 32768,
        drainSeconds: 30,
        accessLog: "json",
      },
      tls: {
        minimumVersion: "TLSv1_2",
        cipherSuites: [
          "ECDHE-ECDSA-AES128-GCM-SHA256",
          "ECDHE-RSA-AES128-GCM-SHA256",
          "ECDHE-ECDSA-AES256-GCM-SHA384",
          "ECDHE-RSA-AES256-GCM-SHA384",
          "ECDHE-ECDSA-CHACHA20-POLY1305",
          "ECDHE-RSA-CHACHA20-POLY1305",
        ],
      },
      stats: { devClusters: "dashboards", deferredCreation: true },
      networkPolicy: {
        enabled: true,
        metricsScrapers: {
          namespaces: { "kubernetes.io/metadata.name": "monitoring" },
          pods: { "app.kubernetes.io/name": "prometheus" },
        },
        clusterDns: { namespace: "kube-system", pods: { "k8s-app": "kube-dns" }, cidrs: [] },
        apiServer: { cidrs: [], ports: [443, 6443] },
      },
      skipAwait: false,
      adoptExisting: false,
    });
    // A service's own defaults.
    expect(parseStackConfig(minimalRaw()).services[1]).toEqual({
      name: "batch",
      replicas: 3,
      rateLimit: 100,
      websocket: false,
      aliases: [],
    });
  });

  it("reads config the way the engine passes it (objects as JSON text)", () => {
    const all: Record<string, string> = { "kubernetes:context": "kind" };
    for (const [k, v] of Object.entries(rawStack("dev")))
      all[`envoy-gateways:${k}`] = typeof v === "string" ? v : JSON.stringify(v);
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
    [
      "internal domain equal to domain",
      "internalDomain",
      "example.org",
      "envoy-gateways:internalDomain",
      /must differ from domain/,
    ],
    ["cluster domain with underscore", "clusterDomain", "cluster_local", "envoy-gateways:clusterDomain", /DNS name/],
    ["namespace not a DNS label", "namespace", "Default", "envoy-gateways:namespace", /DNS label.*got "Default"/],
    [
      "image tagged latest",
      "envoyImage",
      "envoyproxy/envoy:latest",
      "envoy-gateways:envoyImage",
      /never latest or untagged.*got "envoyproxy\/envoy:latest"/,
    ],
    [
      "image without tag",
      "envoyImage",
      "envoyproxy/envoy",
      "envoy-gateways:envoyImage",
      /pinned to a version tag or a digest/,
    ],
    ["image with a non-version tag", "envoyImage", "envoyproxy/envoy:dev", "envoy-gateways:envoyImage", /pinned/],
    [
      "image with a short digest",
      "envoyImage",
      "envoyproxy/envoy@sha256:abc",
      "envoy-gateways:envoyImage",
      /must be one image reference such as envoyproxy\/envoy:v1\.40\.0.*got "envoyproxy\/envoy@sha256:abc"/,
    ],
    [
      "image with two tags",
      "envoyImage",
      "envoyproxy/envoy:v1.40.0:v1.41.0",
      "envoy-gateways:envoyImage",
      /must be one image reference/,
    ],
    [
      "service image with upper case",
      "services.0.image",
      "Team/App:1.0.0",
      "envoy-gateways:services[0].image",
      /must be one image reference/,
    ],
    [
      "no internal-gateway",
      "gateways.internal-gateway",
      undefined,
      "envoy-gateways:gateways.internal-gateway",
      /is required/,
    ],
    [
      "zero replicas",
      "gateways.gateway.replicas",
      0,
      "envoy-gateways:gateways.gateway.replicas",
      /whole number of replicas from 1 to 100 \(got 0\)/,
    ],
    [
      "fractional replicas",
      "gateways.gateway.replicas",
      1.5,
      "envoy-gateways:gateways.gateway.replicas",
      /whole number of replicas/,
    ],
    [
      "replicas as text",
      "gateways.gateway.replicas",
      "three",
      "envoy-gateways:gateways.gateway.replicas",
      /whole number of replicas.*got "three"/,
    ],
    [
      "maxReplicas below replicas",
      "gateways.gateway.maxReplicas",
      1,
      "envoy-gateways:gateways.gateway.maxReplicas",
      /at least replicas/,
    ],
    [
      "CPU target over 100",
      "gateways.gateway.targetCpuUtilization",
      150,
      "envoy-gateways:gateways.gateway.targetCpuUtilization",
      /percentage from 1 to 100/,
    ],
    [
      "bad CPU quantity",
      "gateways.gateway.resources.requests.cpu",
      "1 core",
      "envoy-gateways:gateways.gateway.resources.requests.cpu",
      /CPU quantity/,
    ],
    [
      "bad memory quantity",
      "gateways.gateway.resources.limits.memory",
      "1GB",
      "envoy-gateways:gateways.gateway.resources.limits.memory",
      /memory quantity/,
    ],
    [
      "no limits",
      "gateways.gateway.resources.limits",
      undefined,
      "envoy-gateways:gateways.gateway.resources.limits",
      /is required/,
    ],
    [
      "unknown Service type",
      "gateways.gateway.service",
      { type: "Ingress" },
      "envoy-gateways:gateways.gateway.service.type",
      /LoadBalancer, NodePort or ClusterIP/,
    ],
    [
      "bad load-balancer IP",
      "gateways.gateway.service",
      { loadBalancerIP: "10.0.0.300" },
      "envoy-gateways:gateways.gateway.service.loadBalancerIP",
      /IPv4 address/,
    ],
    [
      "annotation value not a string",
      "gateways.gateway.service",
      { annotations: { a: 1 } },
      "envoy-gateways:gateways.gateway.service.annotations.a",
      /must be strings/,
    ],
    [
      "servedBy with no label",
      "gateways.gateway.service",
      { servedBy: {} },
      "envoy-gateways:gateways.gateway.service.servedBy",
      /at least one label \(an empty selector would select every pod\)/,
    ],
    [
      "servedBy with a bad label key",
      "gateways.gateway.service",
      { servedBy: { "bad key!": "nginx" } },
      "envoy-gateways:gateways.gateway.service.servedBy.bad key!",
      /the label key must be a Kubernetes label or annotation key/,
    ],
    [
      "servedBy with a bad label value",
      "gateways.gateway.service",
      { servedBy: { app: "-nginx" } },
      "envoy-gateways:gateways.gateway.service.servedBy.app",
      /the label value must be at most 63 letters/,
    ],
    [
      "route controller without an image",
      "routeSync.inCluster",
      { replicas: 2 },
      "envoy-gateways:routeSync.inCluster.image",
      /is required/,
    ],
    [
      "route controller image not pinned",
      "routeSync.inCluster",
      { image: "registry.example.org/envoy-gateways/route-controller:latest" },
      "envoy-gateways:routeSync.inCluster.image",
      /route-controller:0\.1\.0 or \.\.\.@sha256:<64 hex>\), never latest or untagged/,
    ],
    [
      "route controller with no replicas",
      "routeSync.inCluster",
      { image: "rc:0.1.0", replicas: 0 },
      "envoy-gateways:routeSync.inCluster.replicas",
      /whole number of replicas from 1 to 5 \(got 0\)/,
    ],
    [
      "route controller debounce over 10 s",
      "routeSync.inCluster",
      { image: "rc:0.1.0", debounceMs: 60_000 },
      "envoy-gateways:routeSync.inCluster.debounceMs",
      /number of milliseconds from 0 to 10,000 \(got 60000\)/,
    ],
    [
      "route controller with an unknown key",
      "routeSync",
      { inCluster: { image: "rc:0.1.0", replica: 2 } },
      "envoy-gateways:routeSync.inCluster.replica",
      /unknown key/,
    ],
    [
      "API server range not an address range",
      "networkPolicy.apiServer",
      { cidrs: ["10.0.0.1"] },
      "envoy-gateways:networkPolicy.apiServer.cidrs[0]",
      /in CIDR notation/,
    ],
    [
      "API server port out of range",
      "networkPolicy.apiServer",
      { ports: [70000] },
      "envoy-gateways:networkPolicy.apiServer.ports[0]",
      /port number from 1 to 65,535 \(got 70000\)/,
    ],
    ["adoptExisting not a boolean", "adoptExisting", "yes", "envoy-gateways:adoptExisting", /must be true or false/],
    [
      "listenersFrom with a bad address range",
      "gateways.gateway.listenersFrom",
      ["10.0.0.0/8", "10.0.0.300/32"],
      "envoy-gateways:gateways.gateway.listenersFrom[1]",
      /must be an address range in CIDR notation, such as 10.0.0.0\/8 or fd00::\/8 \(got "10.0.0.300\/32"\)/,
    ],
    [
      "listenersFrom with an address and no prefix length",
      "gateways.internal-gateway.listenersFrom",
      ["192.168.1.7"],
      "envoy-gateways:gateways.internal-gateway.listenersFrom[0]",
      /in CIDR notation/,
    ],
    [
      "listenersFrom empty",
      "gateways.gateway.listenersFrom",
      [],
      "envoy-gateways:gateways.gateway.listenersFrom",
      /at least one address range \(leave it out for anywhere\)/,
    ],
    [
      "NetworkPolicy switch not a boolean",
      "networkPolicy.enabled",
      "no",
      "envoy-gateways:networkPolicy.enabled",
      /must be true or false/,
    ],
    [
      "metrics scrapers' namespaces with no label",
      "networkPolicy.metricsScrapers.namespaces",
      {},
      "envoy-gateways:networkPolicy.metricsScrapers.namespaces",
      /an empty selector would select every namespace/,
    ],
    [
      "metrics scrapers' pods with a bad label value",
      "networkPolicy.metricsScrapers.pods",
      { app: "prom etheus" },
      "envoy-gateways:networkPolicy.metricsScrapers.pods.app",
      /the label value must be at most 63 letters/,
    ],
    [
      "cluster DNS address range not a range",
      "networkPolicy.clusterDns.cidrs",
      ["fd00::/129"],
      "envoy-gateways:networkPolicy.clusterDns.cidrs[0]",
      /in CIDR notation/,
    ],
    [
      "cluster DNS address ranges not a list",
      "networkPolicy.clusterDns.cidrs",
      "10.0.0.10/32",
      "envoy-gateways:networkPolicy.clusterDns.cidrs",
      /must be a list of address ranges/,
    ],
    [
      "auth pod port out of range",
      "auth.podPort",
      70000,
      "envoy-gateways:auth.podPort",
      /port number from 1 to 65,535/,
    ],
    ["ACME pod port not a number", "acme.podPort", "8089", "envoy-gateways:acme.podPort", /port number/],
    [
      "TLS secret not a DNS label",
      "gateways.gateway.tls.serverSecret",
      "Gateway_TLS",
      "envoy-gateways:gateways.gateway.tls.serverSecret",
      /DNS label/,
    ],
    [
      "compression not a boolean",
      "gateways.gateway.compression",
      "yes",
      "envoy-gateways:gateways.gateway.compression",
      /true or false/,
    ],
    [
      "bad dev host",
      "gateways.gateway.devHost",
      "internal..example.org",
      "envoy-gateways:gateways.gateway.devHost",
      /DNS name/,
    ],
    [
      "unknown gateway key",
      "gateways.gateway.replica",
      2,
      "envoy-gateways:gateways.gateway.replica",
      /unknown key; allowed: replicas, maxReplicas/,
    ],
    [
      "unknown top-level key",
      "domian",
      "example.org",
      "envoy-gateways:domian",
      /unknown key; allowed: domain, internalDomain/,
    ],
    [
      "service name with upper case",
      "services.1.name",
      "Batch",
      "envoy-gateways:services[1].name",
      /DNS label.*got "Batch"/,
    ],
    [
      "service name too long",
      "services.1.name",
      "a".repeat(64),
      "envoy-gateways:services[1].name",
      /at most 63 characters/,
    ],
    [
      "duplicate service",
      "services.1.name",
      "www",
      "envoy-gateways:services[1].name",
      /duplicates services\[0\]\.name/,
    ],
    ["access log format unknown", "edge.accessLog", "text", "envoy-gateways:edge.accessLog", /must be json or off/],
    [
      "dev cluster stats misspelt",
      "stats.devClusters",
      "dashboard",
      "envoy-gateways:stats.devClusters",
      /must be dashboards or all/,
    ],
    [
      "deferred stats not a boolean",
      "stats.deferredCreation",
      "yes",
      "envoy-gateways:stats.deferredCreation",
      /must be true or false/,
    ],
    [
      "service named like a gateway's pods Service",
      "services.1.name",
      "internal-gateway-pods",
      "envoy-gateways:services[1].name",
      /headless Service of a gateway's own pods/,
    ],
    ["service with zero replicas", "services.0.replicas", 0, "envoy-gateways:services[0].replicas", /from 1 to 1,000/],
    [
      "rate limit zero",
      "services.0.rateLimit",
      0,
      "envoy-gateways:services[0].rateLimit",
      /requests per second from 1/,
    ],
    [
      "service pods' memory request above its limit",
      "services.0.resources",
      { requests: { cpu: "100m", memory: "1Gi" }, limits: { cpu: "1", memory: "512Mi" } },
      "envoy-gateways:services[0].resources.requests.memory",
      /at most the limit \(limits\.memory: 512Mi\)/,
    ],
    [
      "service pods' bad CPU quantity",
      "services.0.resources",
      { requests: { cpu: "a lot", memory: "128Mi" }, limits: { cpu: "1", memory: "512Mi" } },
      "envoy-gateways:services[0].resources.requests.cpu",
      /CPU quantity/,
    ],
    [
      "alias not a DNS name",
      "services.0.aliases",
      ["*.example.org"],
      "envoy-gateways:services[0].aliases[0]",
      /DNS name/,
    ],
    [
      "bad namespace selector",
      "devNamespaces",
      { selector: "routes dev" },
      "envoy-gateways:devNamespaces.selector",
      /label selector/,
    ],
    [
      "dev rate limit negative",
      "devNamespaces",
      { rateLimit: -5 },
      "envoy-gateways:devNamespaces.rateLimit",
      /requests per second/,
    ],
    [
      "dev upstream TLS mode",
      "devNamespaces",
      { upstreamTls: "none" },
      "envoy-gateways:devNamespaces.upstreamTls",
      /verify or encrypt-only/,
    ],
    [
      "dev clusters layout",
      "devNamespaces",
      { clusters: "dynamic" },
      "envoy-gateways:devNamespaces.clusters",
      /must be per-service or on-demand \(got "dynamic"\)/,
    ],
    [
      "protected namespace not a name",
      "devNamespaces",
      { protected: ["kube-system", "Kube_Public"] },
      "envoy-gateways:devNamespaces.protected[1]",
      /must be a DNS label/,
    ],
    [
      "protected namespaces not a list",
      "devNamespaces",
      { protected: "kube-system" },
      "envoy-gateways:devNamespaces.protected",
      /must be a list of namespace names/,
    ],
    [
      "ConfigMap capacity past what Kubernetes allows",
      "devNamespaces",
      { maxXdsBytes: 1_048_576 },
      "envoy-gateways:devNamespaces.maxXdsBytes",
      /must be a whole number of bytes from 16,384 to 1,040,384 \(got/,
    ],
    [
      "ConfigMap capacity too small for production",
      "devNamespaces",
      { maxXdsBytes: 1000 },
      "envoy-gateways:devNamespaces.maxXdsBytes",
      /must be a whole number of bytes from 16,384 to 1,040,384 \(got/,
    ],
    [
      "auth path without slash",
      "auth",
      { pathPrefix: "verify" },
      "envoy-gateways:auth.pathPrefix",
      /path starting with \//,
    ],
    [
      "login URL not a URL",
      "auth",
      { loginUrl: "auth.example.org/login" },
      "envoy-gateways:auth.loginUrl",
      /http\(s\) URL/,
    ],
    ["auth port out of range", "auth", { port: 70000 }, "envoy-gateways:auth.port", /port number from 1 to 65,535/],
    [
      "auth timeout without unit",
      "auth",
      { timeout: "500" },
      "envoy-gateways:auth.timeout",
      /duration from 1ms to 1h, written like 250ms.*got "500"/,
    ],
    [
      "unknown load-balancing policy",
      "upstream",
      { lbPolicy: "RANDOM" },
      "envoy-gateways:upstream.lbPolicy",
      /ROUND_ROBIN or LEAST_REQUEST.*got "RANDOM"/,
    ],
    [
      "unknown DNS lookup family",
      "upstream",
      { dnsLookupFamily: "V4" },
      "envoy-gateways:upstream.dnsLookupFamily",
      /V4_ONLY, V6_ONLY, V4_PREFERRED, AUTO or ALL.*got "V4"/,
    ],
    [
      "connect timeout with a space",
      "upstream",
      { connectTimeout: "3 s" },
      "envoy-gateways:upstream.connectTimeout",
      /duration/,
    ],
    ["upstream protocol", "upstream", { protocol: "http3" }, "envoy-gateways:upstream.protocol", /http1 or http2/],
    [
      "ejection percent over 100",
      "upstream",
      { maxEjectionPercent: 101 },
      "envoy-gateways:upstream.maxEjectionPercent",
      /percentage from 1 to 100/,
    ],
    ["too many trusted hops", "edge", { trustedHops: 11 }, "envoy-gateways:edge.trustedHops", /from 0 to 10/],
    [
      "buffer limit too small",
      "edge",
      { bufferLimitBytes: 100 },
      "envoy-gateways:edge.bufferLimitBytes",
      /bytes from 1,024/,
    ],
    [
      "HTTP/2 window too small",
      "edge",
      { http2InitialStreamWindowSize: 1000 },
      "envoy-gateways:edge.http2InitialStreamWindowSize",
      /from 65,535/,
    ],
    [
      "TLS 1.1 allowed",
      "tls",
      { minimumVersion: "TLSv1_1" },
      "envoy-gateways:tls.minimumVersion",
      /TLSv1_2 or TLSv1_3/,
    ],
    [
      "weak cipher",
      "tls",
      { cipherSuites: ["AES128-SHA"] },
      "envoy-gateways:tls.cipherSuites[0]",
      /must be one of ECDHE-ECDSA-AES128-GCM-SHA256/,
    ],
    ["no ciphers", "tls", { cipherSuites: [] }, "envoy-gateways:tls.cipherSuites", /at least one cipher suite/],
    ["skipAwait as text", "skipAwait", "yes", "envoy-gateways:skipAwait", /true or false/],
    [
      "metrics auth as text",
      "gateways.gateway.authenticateMetrics",
      "yes",
      "envoy-gateways:gateways.gateway.authenticateMetrics",
      /true or false.*got "yes"/,
    ],
    [
      "a service's metrics auth as a number",
      "services.0.authenticateMetrics",
      1,
      "envoy-gateways:services[0].authenticateMetrics",
      /true or false \(got 1\)/,
    ],
    [
      "security headers as a list",
      "gateways.gateway.securityHeaders",
      ["nosniff"],
      "envoy-gateways:gateways.gateway.securityHeaders",
      /mapping of header name to value/,
    ],
    [
      "an upper-case security header",
      "gateways.gateway.securityHeaders",
      { "X-Frame-Options": "DENY" },
      "envoy-gateways:gateways.gateway.securityHeaders.X-Frame-Options",
      /not a header name: lower-case letters.*got "X-Frame-Options"/,
    ],
    [
      "a security header the gateway must not set",
      "services.0.securityHeaders",
      { "set-cookie": "a=b" },
      "envoy-gateways:services[0].securityHeaders.set-cookie",
      /must not set on responses.*got "set-cookie"/,
    ],
    [
      "a security header value with a line break",
      "gateways.gateway.securityHeaders",
      { "x-frame-options": "DENY\r\nx-evil: 1" },
      "envoy-gateways:gateways.gateway.securityHeaders.x-frame-options",
      /must be a header value \(printable ASCII, no line breaks.*or false to add none/,
    ],
    [
      "a security header with an unknown option",
      "services.0.securityHeaders",
      { "x-frame-options": { value: "DENY", force: true } },
      "envoy-gateways:services[0].securityHeaders.x-frame-options",
      /must be a header value.*\{ value: <that>, replace: true \}.*got \{"value":"DENY","force":true\}/,
    ],
    [
      "an empty security header value",
      "gateways.gateway.securityHeaders",
      { "x-frame-options": "" },
      "envoy-gateways:gateways.gateway.securityHeaders.x-frame-options",
      /must be a header value/,
    ],
    [
      "no route timeout at all",
      "upstream",
      { routeTimeout: "0s" },
      "envoy-gateways:upstream.routeTimeout",
      /duration from 1s to 720h.*a service without a bound sets services\[\]\.routeTimeout: 0s\) \(got "0s"\)/,
    ],
    [
      "a service's route timeout without a unit",
      "services.1.routeTimeout",
      "30",
      "envoy-gateways:services[1].routeTimeout",
      /duration from 0s to 720h.*\(0s: no bound\) \(got "30"\)/,
    ],
    [
      "eleven retries",
      "upstream",
      { retries: 11 },
      "envoy-gateways:upstream.retries",
      /whole number of retries from 0 to 10 \(got 11\)/,
    ],
    [
      "a fraction of a retry for a service",
      "services.0.retries",
      1.5,
      "envoy-gateways:services[0].retries",
      /whole number of retries from 0 to 10/,
    ],
    [
      "POST retried after a reset",
      "upstream",
      { retryResetMethods: ["GET", "POST"] },
      "envoy-gateways:upstream.retryResetMethods[1]",
      /idempotent methods: GET, HEAD, OPTIONS, PUT, DELETE, TRACE \(never POST, PATCH or CONNECT.*got "POST"/,
    ],
    [
      "a method listed twice",
      "services.0.retryResetMethods",
      ["GET", "GET"],
      "envoy-gateways:services[0].retryResetMethods[1]",
      /listed twice/,
    ],
    [
      "methods as one string",
      "services.0.retryResetMethods",
      "GET,HEAD",
      "envoy-gateways:services[0].retryResetMethods",
      /must list idempotent methods/,
    ],
    [
      "a retry budget of 0%",
      "upstream",
      { retryBudgetPercent: 0 },
      "envoy-gateways:upstream.retryBudgetPercent",
      /percentage from 1 to 100/,
    ],
    [
      "no connections for plain HTTP",
      "edge",
      { httpMaxConnections: 0 },
      "envoy-gateways:edge.httpMaxConnections",
      /from 1 to 10,000,000 \(got 0\)/,
    ],
    [
      "an HTTPS listener limit above the pod's",
      "edge",
      { maxConnections: 1000, httpsMaxConnections: 2000 },
      "envoy-gateways:edge.httpsMaxConnections",
      /must be at most edge\.maxConnections \(1,000\), the limit of the whole pod \(got 2000\)/,
    ],
  ];

  it.each(cases)("rejects %s, naming the key, the value and what is allowed", (_, path, value, key, message) => {
    const problems = problemsOf(withValue(minimalRaw(), path, value));
    const mine = problems.filter((p) => p.startsWith(`${key}: `));
    expect(mine, problems.join("\n")).toHaveLength(1);
    expect(mine[0]).toMatch(message);
    expect(problems, "only the broken key is reported").toHaveLength(1);
  });

  it("gives the route controller two replicas, small resources and a 100 ms debounce unless set", () => {
    const config = parseStackConfig({ ...minimalRaw(), routeSync: { inCluster: { image: "rc:0.1.0" } } });
    expect(config.routeSync.inCluster).toEqual({
      replicas: 2,
      image: "rc:0.1.0",
      resources: { requests: { cpu: "20m", memory: "256Mi" }, limits: { cpu: "1", memory: "512Mi" } },
      debounceMs: 100,
    });
    expect(parseStackConfig(minimalRaw()).routeSync.inCluster).toBeUndefined();
  });

  it("refuses any secret but the kubeconfig, and never shows a secret value, even under a misspelt key", () => {
    const raw = {
      ...minimalRaw(),
      domain: "s3cr3t-domain.org",
      kubeconfg: "token: s3cr3t-t0ken",
      kubeconfig: "token: s3cr3t-k",
    };
    let message = "";
    try {
      parseStackConfig(raw, "stack config", { secretKeys: new Set(["domain", "kubeconfg", "kubeconfig"]) });
    } catch (e) {
      message = (e as InputError).message;
    }
    expect(message).toContain(
      "envoy-gateways:domain: is set as a secret, but it is rendered into the gateways' ConfigMaps and the stack's state in plain text",
    );
    expect(message).toMatch(
      /envoy-gateways:kubeconfg: unknown key; allowed: domain, .* \(value not shown: it is a secret\)/,
    );
    expect(message).not.toContain("s3cr3t");
    expect((message.match(/^ {2}- /gm) ?? []).length).toBe(2);
  });

  it("keeps the kubeconfig out of the stack config", () => {
    const config = parseStackConfig({ ...minimalRaw(), kubeconfig: "apiVersion: v1" }, "stack config", {
      secretKeys: new Set(["kubeconfig"]),
    });
    expect(JSON.stringify(config)).not.toContain("apiVersion");
  });

  it("has at least 30 bad-input cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });
});

describe("values that look like credentials", () => {
  it("are never printed in an error, whatever the key", () => {
    const pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----";
    const kube =
      "apiVersion: v1\nkind: Config\nusers: [{name: a, user: {client-key-data: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t}}]";
    const token = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0";
    for (const [key, value] of [
      ["sslKey", pem],
      ["kubeconfg", kube],
      ["githubToken", token],
    ] as const) {
      const problems = problemsOf({ ...minimalRaw(), [key]: value });
      expect(problems, key).toEqual([
        expect.stringMatching(
          new RegExp(`^envoy-gateways:${key}: unknown key; allowed: .*\\(value hidden: it looks like a credential\\)$`),
        ),
      ]);
    }
  });
  it("still show a long name or a digest as written", () => {
    const label = "a".repeat(64);
    expect(problemsOf(withValue(minimalRaw(), "namespace", label))[0]).toContain(`(got "${label}")`);
    const image = `envoyproxy/envoy:v1.40.0:v1.41.0@sha256:${"ab12".repeat(16)}`;
    expect(problemsOf(withValue(minimalRaw(), "envoyImage", image))[0]).toContain(image);
  });
});

describe("names the program derives, and values Kubernetes or Envoy would refuse", () => {
  const shiftOf = (service: string, from: string, to: string) => ({
    service,
    from,
    to,
    policy: "linear",
    start: "2026-12-01T10:00:00Z",
    duration: "1h",
  });
  const long = (n: number) => `${"a".repeat(63)}.`.repeat(Math.floor(n / 64)) + "b".repeat(n % 64 || 1);
  const services = (list: unknown[]) => withValue(minimalRaw(), "services", list);
  // Each case: what to change, the problems it must give (exactly these), matched in order.
  const cases: [string, Record<string, unknown>, RegExp[]][] = [
    [
      "a domain label of 64 characters",
      withValue(minimalRaw(), "domain", `${"a".repeat(64)}.org`),
      [/^envoy-gateways:domain: must be a lower-case DNS name .*labels of at most 63/],
    ],
    [
      "a service host over 253 characters",
      withValue(withValue(minimalRaw(), "domain", long(200)), "services", [{ name: "s".repeat(60), replicas: 1 }]),
      [
        /^envoy-gateways:services\[0\]\.name: gives the host s{60}\..* on gateway, longer than the 253 characters DNS allows/,
      ],
    ],
    [
      "a domain too long for the dev/PR host",
      withValue(minimalRaw(), "domain", long(246)),
      [
        /^envoy-gateways:domain: gives gateway hosts longer than the 253 characters DNS allows \(its dev\/PR host internal\.<domain>, and <service>\.<domain>\); shorten it/,
      ],
    ],
    [
      "a service named like the dev/PR host",
      services([{ name: "internal", replicas: 2 }]),
      [
        /^envoy-gateways:services\[0\]\.name: the host internal\.example\.org on gateway is also the dev\/PR host of gateway \(envoy-gateways:gateways\.gateway\.devHost\); each host is served once; the host internal\.example\.internal on internal-gateway is also the dev\/PR host of internal-gateway/,
      ],
    ],
    [
      "a version whose Service is another service",
      withValue(
        services([
          { name: "batch", replicas: 2, versions: ["driver", "v2"] },
          { name: "batch-driver", replicas: 1 },
        ]),
        "shifts",
        [shiftOf("batch", "driver", "v2")],
      ),
      [
        /^envoy-gateways:services\[1\]\.name: this service is the Service batch-driver, which is also the Service of envoy-gateways:services\[0\]\.versions\[0\]; choose another name/,
      ],
    ],
    [
      "two versions giving the same Service",
      withValue(
        services([
          { name: "a", replicas: 1, versions: ["b-c", "d"] },
          { name: "a-b", replicas: 1, versions: ["c", "e"] },
        ]),
        "shifts",
        [shiftOf("a", "b-c", "d"), shiftOf("a-b", "c", "e")],
      ),
      [
        /^envoy-gateways:services\[1\]\.versions\[0\]: this version is the Service a-b-c, which is also the Service of envoy-gateways:services\[0\]\.versions\[0\]; choose another name \(got "c"\)$/,
      ],
    ],
    [
      "an alias that is another service's host",
      services([
        { name: "www", replicas: 2, aliases: ["batch.example.org"] },
        { name: "batch", replicas: 2 },
      ]),
      [
        /^envoy-gateways:services\[1\]\.name: the host batch\.example\.org on gateway is also the alias of envoy-gateways:services\[0\]\.aliases\[0\]/,
      ],
    ],
    [
      "one alias on two services",
      services([
        { name: "www", replicas: 2, aliases: ["example.org"] },
        { name: "web", replicas: 2, aliases: ["example.org"] },
      ]),
      [
        /^envoy-gateways:services\[1\]\.aliases\[0\]: the alias example\.org on gateway is also the alias of envoy-gateways:services\[0\]\.aliases\[0\]/,
      ],
    ],
    [
      "a version listed twice",
      withValue(services([{ name: "batch", replicas: 2, versions: ["blue", "green", "blue"] }]), "shifts", [
        shiftOf("batch", "blue", "green"),
      ]),
      [/^envoy-gateways:services\[0\]\.versions\[2\]: is listed twice/],
    ],
    [
      "a version Service over 63 characters",
      withValue(services([{ name: "b".repeat(40), replicas: 2, versions: ["v".repeat(30), "w"] }]), "shifts", [
        shiftOf("b".repeat(40), "v".repeat(30), "w"),
      ]),
      [
        /^envoy-gateways:services\[0\]\.versions\[0\]: gives the Service b{40}-v{30}, longer than the 63 characters a Kubernetes name allows/,
      ],
    ],
    [
      "a CPU request above its limit",
      withValue(minimalRaw(), "gateways.gateway.resources.requests.cpu", "2"),
      [
        /^envoy-gateways:gateways\.gateway\.resources\.requests\.cpu: must be at most the limit \(limits\.cpu: 1\); Kubernetes refuses a request above its limit \(got "2"\)$/,
      ],
    ],
    [
      "a memory request above its limit",
      withValue(minimalRaw(), "gateways.gateway.resources.requests.memory", "1Gi"),
      [
        /^envoy-gateways:gateways\.gateway\.resources\.requests\.memory: must be at most the limit \(limits\.memory: 512Mi\)/,
      ],
    ],
    [
      "a memory quantity with an unknown suffix",
      withValue(minimalRaw(), "gateways.gateway.resources.limits.memory", "1GB"),
      [
        /^envoy-gateways:gateways\.gateway\.resources\.limits\.memory: must be a memory quantity Kubernetes accepts.*\(got "1GB"\)$/,
      ],
    ],
    [
      "a fraction of a byte",
      withValue(minimalRaw(), "gateways.gateway.resources.limits.memory", "1500m"),
      [
        /limits\.memory: must be a memory quantity Kubernetes accepts, such as 256Mi, 1Gi or 1\.5G: a whole number of bytes/,
      ],
    ],
    [
      "a zero CPU limit",
      withValue(minimalRaw(), "gateways.gateway.resources.limits.cpu", "0"),
      [/limits\.cpu: must be a CPU quantity Kubernetes accepts, such as 250m, 0\.5 or 2, of at least 1m \(got "0"\)/],
    ],
    [
      "a negative CPU request",
      withValue(minimalRaw(), "gateways.gateway.resources.requests.cpu", "-1"),
      [/requests\.cpu: must be a CPU quantity/],
    ],
    [
      "an annotation key Kubernetes refuses",
      withValue(minimalRaw(), "gateways.gateway.service", { annotations: { "cloud/lb/type": "x" } }),
      [
        /^envoy-gateways:gateways\.gateway\.service\.annotations\.cloud\/lb\/type: the annotation key must be a Kubernetes label or annotation key/,
      ],
    ],
    [
      "annotations over 256 KiB",
      withValue(minimalRaw(), "gateways.gateway.service", { annotations: { big: "x".repeat(300_000) } }),
      [
        /^envoy-gateways:gateways\.gateway\.service\.annotations: hold 300,003 bytes; Kubernetes allows 262,144 in all$/,
      ],
    ],
    [
      "a selector value of 64 characters",
      withValue(minimalRaw(), "devNamespaces", { selector: `routes=${"d".repeat(64)}` }),
      [
        /^envoy-gateways:devNamespaces\.selector: must be a label selector .*: value "d{64}" of routes is not a label value/,
      ],
    ],
    [
      "a selector key with a bad prefix",
      withValue(minimalRaw(), "devNamespaces", { selector: "Routes.IO/x=dev" }),
      [
        /devNamespaces\.selector: must be a label selector .*: key "Routes\.IO\/x" is not a Kubernetes label or annotation key/,
      ],
    ],
    [
      "a zero connect timeout",
      withValue(minimalRaw(), "upstream", { connectTimeout: "0s" }),
      [
        /^envoy-gateways:upstream\.connectTimeout: must be a duration from 1ms to 1h, written like 250ms, 5s, 10m or 1h \(got "0s"\)$/,
      ],
    ],
    [
      "a timeout too large to encode",
      withValue(minimalRaw(), "upstream", { routeTimeout: "99999999999h" }),
      [/^envoy-gateways:upstream\.routeTimeout: must be a duration from 1s to 720h.*\(got "99999999999h"\)$/],
    ],
    [
      "replicas out of range, with a maxReplicas below it",
      withValue(withValue(minimalRaw(), "gateways.gateway.maxReplicas", 5), "gateways.gateway.replicas", 200),
      [/^envoy-gateways:gateways\.gateway\.replicas: must be a whole number of replicas from 1 to 100 \(got 200\)$/],
    ],
    [
      "replicas as text, with a maxReplicas",
      withValue(withValue(minimalRaw(), "gateways.gateway.maxReplicas", 5), "gateways.gateway.replicas", "three"),
      [/^envoy-gateways:gateways\.gateway\.replicas: .*\(got "three"\)$/],
    ],
    [
      "maxReplicas below replicas, without the whole gateway",
      withValue(minimalRaw(), "gateways.gateway.maxReplicas", 1),
      [/^envoy-gateways:gateways\.gateway\.maxReplicas: must be at least replicas \(2\) \(got 1\)$/],
    ],
    [
      "maxReplicas 99 below replicas 100",
      withValue(withValue(minimalRaw(), "gateways.gateway.maxReplicas", 99), "gateways.gateway.replicas", 100),
      [/^envoy-gateways:gateways\.gateway\.maxReplicas: must be at least replicas \(100\) \(got 99\)$/],
    ],
    [
      "maxReplicas of 0, not also compared",
      withValue(minimalRaw(), "gateways.gateway.maxReplicas", 0),
      [/^envoy-gateways:gateways\.gateway\.maxReplicas: must be a whole number of replicas from 1 to 100 \(got 0\)$/],
    ],
    [
      "replicas of 2.5, not also compared",
      withValue(withValue(minimalRaw(), "gateways.gateway.maxReplicas", 2), "gateways.gateway.replicas", 2.5),
      [/^envoy-gateways:gateways\.gateway\.replicas: must be a whole number of replicas from 1 to 100 \(got 2\.5\)$/],
    ],
    [
      "a listener limit that is no whole number, not also compared",
      withValue(minimalRaw(), "edge", { httpsMaxConnections: 60000.5 }),
      [/^envoy-gateways:edge\.httpsMaxConnections: .*\(got 60000\.5\)$/],
    ],
    [
      "a service named like a gateway",
      services([{ name: "internal-gateway", replicas: 2 }]),
      [
        /^envoy-gateways:services\[0\]\.name: is the name of a gateway's own Service; choose another name \(got "internal-gateway"\)$/,
      ],
    ],
    [
      "a service named like a gateway's pods",
      services([{ name: "gateway-pods", replicas: 2 }]),
      [
        /^envoy-gateways:services\[0\]\.name: is the name of the headless Service of a gateway's own pods; choose another name \(got "gateway-pods"\)$/,
      ],
    ],
    [
      "a service that is no mapping (the others still checked)",
      services([null, { name: "www", replicas: 2 }, { name: "www", replicas: 2 }]),
      [
        /^envoy-gateways:services\[0\]: /,
        /^envoy-gateways:services\[2\]\.name: duplicates services\[1\]\.name; service names must be unique/,
      ],
    ],
    [
      "two services with the same name that is no text",
      services([
        { name: 5, replicas: 2 },
        { name: 5, replicas: 2 },
      ]),
      [/^envoy-gateways:services\[0\]\.name: /, /^envoy-gateways:services\[1\]\.name: /],
    ],
    [
      "a bad alias on two services, not also a clash",
      services([
        { name: "www", replicas: 2, aliases: ["Bad.example.org"] },
        { name: "web", replicas: 2, aliases: ["Bad.example.org"] },
      ]),
      [/^envoy-gateways:services\[0\]\.aliases\[0\]: /, /^envoy-gateways:services\[1\]\.aliases\[0\]: /],
    ],
    [
      "a bad version listed twice, not also a duplicate",
      withValue(services([{ name: "batch", replicas: 2, versions: ["Bad_V", "Bad_V", "blue"] }]), "shifts", [
        shiftOf("batch", "blue", "Bad_V"),
      ]),
      [
        /^envoy-gateways:services\[0\]\.versions\[0\]: must be a DNS label/,
        /^envoy-gateways:services\[0\]\.versions\[1\]: must be a DNS label/,
      ],
    ],
    [
      "a version that is no text beside its text, not also a clash",
      withValue(services([{ name: "batch", replicas: 2, versions: [5, "5"] }]), "shifts", [shiftOf("batch", "5", "6")]),
      [
        /^envoy-gateways:services\[0\]\.versions\[0\]: /,
        /^envoy-gateways:shifts\[0\]\.service: has no versions to shift between/,
      ],
    ],
    [
      "a service of 63 characters whose versions' Services are longer",
      withValue(services([{ name: "s".repeat(63), replicas: 2, versions: ["a", "b"] }]), "shifts", [
        shiftOf("s".repeat(63), "a", "b"),
      ]),
      [
        /^envoy-gateways:services\[0\]\.versions\[0\]: gives the Service s{63}-a, longer than the 63 characters/,
        /^envoy-gateways:services\[0\]\.versions\[1\]: gives the Service s{63}-b/,
      ],
    ],
    [
      "an upstream host over 253 characters in the default namespace",
      withValue(services([{ name: "s".repeat(63), replicas: 2 }]), "clusterDomain", long(190)),
      [
        new RegExp(
          `^envoy-gateways:services\\[0\\]\\.name: this service's Service name gives the upstream host s{63}\\.default\\.svc\\.${long(190).replace(/\./g, "\\.")}, longer than the 253 characters DNS allows`,
        ),
      ],
    ],
    [
      "a shift of a service without versions",
      withValue(minimalRaw(), "shifts", [shiftOf("www", "a", "b")]),
      [
        /^envoy-gateways:shifts\[0\]\.service: has no versions to shift between; list them in its versions \(got "www"\)$/,
      ],
    ],
    [
      "a shift of no service of the stack",
      withValue(minimalRaw(), "shifts", [null, shiftOf("nope", "a", "b")]),
      [
        /^envoy-gateways:shifts\[0\]: /,
        /^envoy-gateways:shifts\[1\]\.service: is not a service of this stack \(envoy-gateways:services\) \(got "nope"\)$/,
      ],
    ],
    [
      "a service with versions and no shift",
      services([{ name: "batch", replicas: 2, versions: ["blue", "green"] }]),
      [
        /^envoy-gateways:services\[0\]\.versions: batch has several versions but no shift in envoy-gateways:shifts says how to split its traffic \(got \["blue","green"\]\)$/,
      ],
    ],
    [
      "a service with versions whose only shift is another's, among shifts that are not all mappings",
      withValue(
        services([
          { name: "batch", replicas: 2, versions: ["blue", "green"] },
          { name: "web", replicas: 2, versions: ["a", "b"] },
        ]),
        "shifts",
        [null, shiftOf("web", "a", "b")],
      ),
      [
        /^envoy-gateways:shifts\[0\]: /,
        /^envoy-gateways:services\[0\]\.versions: batch has several versions but no shift/,
      ],
    ],
    [
      "a bad shift beside a good one of the same service",
      withValue(services([{ name: "batch", replicas: 2, versions: ["blue", "green"] }]), "shifts", [
        { ...shiftOf("batch", "blue", "green"), policy: "canary" },
        shiftOf("batch", "blue", "green"),
      ]),
      [/^envoy-gateways:shifts\[0\]\.policy: /],
    ],
  ];
  it.each(cases)("refuses %s, once, naming the key and the value", (_, raw, expected) => {
    const problems = problemsOf(raw);
    expect(problems, problems.join("\n")).toHaveLength(expected.length);
    expected.forEach((pattern, i) => expect(problems[i]).toMatch(pattern));
  });

  it("accepts an upstream host of exactly 253 characters", () => {
    const raw = withValue(services([{ name: "s".repeat(63), replicas: 2 }]), "clusterDomain", long(177));
    expect(`${"s".repeat(63)}.default.svc.${long(177)}`).toHaveLength(253);
    expect(parseStackConfig(raw).clusterDomain).toBe(long(177));
  });

  it("accepts a version Service of exactly 63 characters, and aliases a gateway does not serve twice", () => {
    let raw = withValue(
      services([
        { name: "b".repeat(40), replicas: 2, versions: ["v".repeat(22), "w"] },
        { name: "www", replicas: 2, aliases: ["example.com"] },
        { name: "web", replicas: 2, aliases: ["example.com"] },
      ]),
      "shifts",
      [shiftOf("b".repeat(40), "v".repeat(22), "w")],
    );
    raw = withValue(raw, "gateways.gateway.serveAliases", false);
    expect(parseStackConfig(raw).services[0]!.versions).toEqual(["v".repeat(22), "w"]);
  });

  it("accepts what Kubernetes and Envoy accept", () => {
    let raw = withValue(minimalRaw(), "gateways.gateway.resources", {
      requests: { cpu: "0.5", memory: "1.5Gi" },
      limits: { cpu: "1500m", memory: "2e9" },
    });
    raw = withValue(raw, "gateways.gateway.service", {
      annotations: { "networking.gke.io/load-balancer-type": "Internal", plain: "" },
    });
    raw = withValue(raw, "devNamespaces", { selector: "team.example.org/routes=dev,tier!=prod" });
    raw = withValue(raw, "upstream", {
      routeTimeout: "1s",
      connectTimeout: "250ms",
      retries: 0,
      retryResetMethods: [],
    });
    raw = withValue(raw, "services", [
      {
        name: "batch",
        replicas: 2,
        versions: ["blue", "green"],
        routeTimeout: "0s",
        retries: 10,
        retryResetMethods: ["TRACE"],
      },
      { name: "batch-driver", replicas: 1, securityHeaders: { "x-frame-options": false } },
    ]);
    raw = withValue(raw, "shifts", [
      { service: "batch", from: "blue", to: "green", policy: "atomic", start: "2026-12-01T10:00:00Z", duration: "1h" },
    ]);
    expect(() => parseStackConfig(raw)).not.toThrow();
  });
  it("accepts every bound itself: the largest duration, the smallest quantities, a request at its limit, replicas at 100", () => {
    let raw = withValue(minimalRaw(), "gateways.gateway.resources", {
      requests: { cpu: "1m", memory: "1" },
      limits: { cpu: "1m", memory: "1" },
    });
    raw = withValue(raw, "gateways.gateway.replicas", 100);
    raw = withValue(raw, "gateways.gateway.maxReplicas", 100);
    raw = withValue(raw, "upstream", { routeTimeout: "720h", connectTimeout: "10m", dnsRefreshRate: "10ms" });
    raw = withValue(raw, "edge", { maxConnections: 2000, httpsMaxConnections: 2000, httpMaxConnections: 2000 });
    const annotation = "x".repeat(262_144 - "big".length);
    raw = withValue(raw, "gateways.gateway.service", { annotations: { big: annotation } });
    const c = parseStackConfig(raw);
    expect(c.upstream).toMatchObject({ routeTimeout: "720h", connectTimeout: "10m", dnsRefreshRate: "10ms" });
    expect(c.gateways.gateway).toMatchObject({
      replicas: 100,
      maxReplicas: 100,
      resources: { requests: { cpu: "1m", memory: "1" } },
    });
  });

  it.each([
    ["a duration past its largest", "upstream.routeTimeout", "721h", /must be a duration from 1s to 720h/],
    [
      "a connection limit above the default pod limit of 50,000",
      "edge.httpsMaxConnections",
      50001,
      /must be at most edge\.maxConnections \(50,000\), the limit of the whole pod \(got 50001\)$/,
    ],
    [
      "annotations one byte over",
      "gateways.gateway.service.annotations",
      { big: "x".repeat(262_142) },
      /hold 262,145 bytes; Kubernetes allows 262,144 in all$/,
    ],
    [
      "a memory quantity under a byte",
      "gateways.gateway.resources.requests.memory",
      "0.5",
      /requests\.memory: must be a memory quantity/,
    ],
    [
      "a CPU quantity under 1m",
      "gateways.gateway.resources.requests.cpu",
      "0.0009",
      /requests\.cpu: must be a CPU quantity/,
    ],
    [
      "a header that must not be set",
      "gateways.gateway.securityHeaders",
      { "set-cookie": "a=b" },
      /securityHeaders\.set-cookie: is a header the gateway must not set on responses \(connection, content-length, keep-alive, proxy-connection, set-cookie, te, trailer, transfer-encoding, upgrade, host\) \(got "set-cookie"\)$/,
    ],
    [
      "a header entry as a list",
      "gateways.gateway.securityHeaders",
      { "x-frame-options": ["DENY"] },
      /securityHeaders\.x-frame-options: must be a header value/,
    ],
    [
      "a header entry with another key",
      "gateways.gateway.securityHeaders",
      { "x-frame-options": { value: "DENY", force: true } },
      /securityHeaders\.x-frame-options: must be a header value/,
    ],
    [
      "a header entry with replace as text",
      "gateways.gateway.securityHeaders",
      { "x-frame-options": { value: "DENY", replace: "yes" } },
      /securityHeaders\.x-frame-options: must be a header value/,
    ],
    [
      "a header entry of null",
      "gateways.gateway.securityHeaders",
      { "x-frame-options": null },
      /securityHeaders\.x-frame-options: must be a header value/,
    ],
    [
      "an empty header value",
      "gateways.gateway.securityHeaders",
      { "x-frame-options": "" },
      /securityHeaders\.x-frame-options: must be a header value/,
    ],
    [
      "a header value over 4,096 characters",
      "gateways.gateway.securityHeaders",
      { "x-frame-options": "x".repeat(4097) },
      /securityHeaders\.x-frame-options: must be a header value/,
    ],
  ])("refuses %s", (_, path, value, message) => {
    const problems = problemsOf(withValue(minimalRaw(), path, value));
    expect(problems, problems.join("\n")).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });

  it("accepts header values of one character and of 4,096", () => {
    const c = parseStackConfig(
      withValue(minimalRaw(), "gateways.gateway.securityHeaders", { "x-a": "a", "x-b": "b".repeat(4096) }),
    );
    expect(c.gateways.gateway.securityHeaders).toMatchObject({
      "x-a": { value: "a" },
      "x-b": { value: "b".repeat(4096) },
    });
  });

  it("takes a security header's replace as false unless it says true", () => {
    const c = parseStackConfig(
      withValue(minimalRaw(), "gateways.gateway.securityHeaders", { "x-frame-options": { value: "DENY" } }),
    );
    expect(c.gateways.gateway.securityHeaders["x-frame-options"]).toEqual({ value: "DENY", replace: false });
  });
});

describe("image references", () => {
  const digest = `sha256:${"0a".repeat(32)}`;
  it.each([
    ["envoyproxy/envoy:v1.40.0", { name: "envoyproxy/envoy", tag: "v1.40.0" }, true],
    ["registry.example.org:5000/team/app:1.2.3", { name: "registry.example.org:5000/team/app", tag: "1.2.3" }, true],
    ["Registry.Example.org/app:10.20.30-rc.1", { name: "Registry.Example.org/app", tag: "10.20.30-rc.1" }, true],
    ["a:5000/app:1.0.0-build.5", { name: "a:5000/app", tag: "1.0.0-build.5" }, true],
    ["localhost/team/a--b.cd__e:1.0.0", { name: "localhost/team/a--b.cd__e", tag: "1.0.0" }, true],
    [`localhost:5000/app@${digest}`, { name: "localhost:5000/app", digest }, true],
    [`envoyproxy/envoy:v1.40.0@${digest}`, { name: "envoyproxy/envoy", tag: "v1.40.0", digest }, true],
    ["app", { name: "app" }, false],
    ["app:latest", { name: "app", tag: "latest" }, false],
    ["app:1.2", { name: "app", tag: "1.2" }, false],
    ["app:x1.2.3", { name: "app", tag: "x1.2.3" }, false],
    ["app:1.2.3-", { name: "app", tag: "1.2.3-" }, false],
    ["app:1.2.3rc1", { name: "app", tag: "1.2.3rc1" }, false],
    [`${"a".repeat(450)}:1.0.0`, { name: "a".repeat(450), tag: "1.0.0" }, true],
  ])("reads %s as its parts, pinned or not", (image, parts, pinned) => {
    expect(parseImageReference(image)).toStrictEqual(parts);
    expect(isPinnedImage(image)).toBe(pinned);
  });

  it.each([
    ["a path component in capitals (no registry without a dot, a port or localhost)", "Ex/app:1.0.0"],
    ["one component in capitals", "Ex.org:1.0.0"],
    ["a capitalised localhost", "LOCALHOST/app:1.0.0"],
    ["localhost with more after it", "localhostX/app:1.0.0"],
    ["localhost with more before it", "Xlocalhost/app:1.0.0"],
    ["a registry starting with a dash", "-ex.org/app:1.0.0"],
    ["a registry ending with a dash", "ex.org-/app:1.0.0"],
    ["a registry with an underscore", "ex_org.com/app:1.0.0"],
    ["a port of six digits", "ex.org:123456/app:1.0.0"],
    ["a port that is no number", "ex.org:x/app:1.0.0"],
    ["a component starting with a dash", "team/-app:1.0.0"],
    ["a component ending with a separator", "team/app_:1.0.0"],
    ["three underscores", "team/a___b:1.0.0"],
    ["a short digest", `app@sha256:${"0a".repeat(31)}`],
    ["a digest in capitals", `app@sha256:${"0A".repeat(32)}`],
    ["one character over 456", `${"a".repeat(451)}:1.0.0`],
  ])("refuses %s", (_, image) => {
    expect(parseImageReference(image)).toBeUndefined();
    expect(isPinnedImage(image)).toBe(false);
  });
});
