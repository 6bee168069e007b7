// The policy pack's entry point: registers tsx (TypeScript with the ".js"
// import specifiers Node's module resolution needs, like the program's
// entry.cjs), then runs index.ts, which constructs the PolicyPack.
require("tsx/cjs");
require("./index.ts");
