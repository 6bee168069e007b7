// Pulumi's entry point for this program. It registers tsx, which compiles the
// TypeScript sources (without type checking: `npm run typecheck` does that)
// and resolves the ".js" import specifiers Node's module resolution needs,
// whichever Node language host runs the program; then it runs index.ts.
//
// @kubernetes/client-node is an ES module: Node 22 requires it natively. It is
// loaded before tsx so that tsx does not recompile it with inline source maps,
// which the engine's source-map support would then decode (gigabytes, tens of
// seconds) whenever an error's stack is printed.
require("@kubernetes/client-node");
require("tsx/cjs");
module.exports = require("./index.ts");
