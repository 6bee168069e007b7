// Pulumi's entry point for this program. It registers tsx, which compiles the
// TypeScript sources (without type checking: `npm run typecheck` does that)
// and resolves the ".js" import specifiers Node's module resolution needs,
// whichever Node language host runs the program; then it runs index.ts.
require("tsx/cjs");
module.exports = require("./index.ts");
