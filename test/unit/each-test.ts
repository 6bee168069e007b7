// Values computed per test, for the unit tests.
import { beforeEach } from "vitest";

/**
 * A value each test computes for itself, when it first asks for it, and
 * reuses within that test. Computed inside the test, never while the file
 * loads or in a beforeAll: a mutation run (`npm run test:mutation`) then knows
 * which tests use which code, and runs only those against each mutant.
 */
export function eachTest<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  beforeEach(() => {
    made = undefined;
  });
  return () => (made ??= { value: make() }).value;
}
