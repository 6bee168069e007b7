// envoy-gateways: Kubernetes gateways on Envoy. See README.md.
import { discoverDevNamespaces } from "./program/discover.js";
import { declareStack, loadStackConfig } from "./program/stack.js";

async function main() {
  const loaded = loadStackConfig();
  const stack = declareStack(loaded, await discoverDevNamespaces(loaded));
  return {
    /** Each gateway's Service and external address. */
    gateways: stack.gateways,
    /** Every routed host and path per gateway, and the upstream it reaches. */
    routes: stack.routes,
  };
}

// Exported as a function: the engine calls it and awaits it at once, so a
// failure is reported as this program's error (not as an unhandled rejection).
export = main;
