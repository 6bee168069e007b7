// The Envoy end-to-end harness, for tests, benchmarks and people (see docs/envoy-e2e.md).
export {
  GatewayHarness,
  type GatewayHarnessOptions,
  type PodGroup,
  type AuthMode,
  type AuthCheck,
  type PodCertificate,
} from "./gateway.js";
export { e2eHarnessOptions, e2eStackConfig, E2E_DEV_NAMESPACES, E2E_SERVICES } from "./stack.js";
export {
  httpsGet,
  httpGet,
  keepAliveAgent,
  websocketExchange,
  opensslProbe,
  type Response,
  type Endpoint,
} from "./client.js";
export { Pod, type Echo } from "./pods.js";
export { ClusterDns } from "./dns.js";
export { ConfigMapVolume } from "./configmap-volume.js";
export { EnvoyProcess, envoyBinary } from "./envoy.js";
export { TestPki } from "./certificates.js";
export { startProcess, waitFor, sleep } from "./processes.js";
export { freeTcpPort, freeLoopbackSubnet } from "./ports.js";
