// envoy-gateways: Kubernetes gateways on Envoy. See README.md.
import { declareStack, loadStackConfig } from "./components/stack.js";

const stack = declareStack(loadStackConfig());

/** Each gateway's Service and external address. */
export const gateways = stack.gateways;
/** Every routed host and path per gateway, and the upstream it reaches. */
export const routes = stack.routes;
