// How a problem reads: the key, what is wrong, and the value (short, on one
// line, as written when known, never a credential).
import { describe, expect, it } from "vitest";
import { formatProblem, InputError, looksLikeCredential, showValue } from "../../routing/config/errors.js";

describe("a value in an error", () => {
  it("is JSON on one line, NaN and infinities as such, nothing as nothing", () => {
    expect(showValue("batch")).toBe('"batch"');
    expect(showValue({ a: [1, true, null] })).toBe('{"a":[1,true,null]}');
    expect(showValue(Number.NaN)).toBe("NaN");
    expect(showValue([Number.POSITIVE_INFINITY, -Infinity, 2])).toBe("[Infinity,-Infinity,2]");
    expect(showValue(undefined)).toBe("nothing");
    expect(showValue(() => 1)).toBe("() => 1");
    expect(showValue("a\nb")).toBe('"a\\nb"');
  });

  it("that cannot be JSON is shown as text", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(showValue(cyclic)).toBe("[object Object]");
    expect(showValue(10n)).toBe("10");
  });

  it("is cut after 160 characters when longer than 200, saying how long it was", () => {
    expect(showValue("x".repeat(198))).toBe(`"${"x".repeat(198)}"`);
    expect(showValue("x".repeat(199))).toBe(`"${"x".repeat(160 - 1)}... (201 characters)`);
    expect(showValue("y".repeat(2000))).toBe(`"${"y".repeat(159)}... (2,002 characters)`);
  });
});

describe("a value that looks like a credential", () => {
  it("is a PEM key or certificate, kubeconfig text, a key: value secret, a JWT, or a long random run", () => {
    for (const v of [
      "-----BEGIN RSA PRIVATE KEY-----",
      "-----BEGIN CERTIFICATE-----",
      "apiVersion: v1\nkind: Config",
      "client-key-data: abc",
      "token: x",
      '{"password": "hunter2"}',
      "Secret : x",
      "auth-provider: {}",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
      "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0",
      "0123456789abcdef0123456789abcdef01234567",
      { nested: { key: "-----BEGIN PRIVATE KEY-----" } },
    ]) {
      expect(looksLikeCredential(v), JSON.stringify(v)).toBe(true);
    }
  });

  it("is not a name, a digest, a long word, a number or nothing", () => {
    for (const v of [
      "batch-driver",
      `sha256:${"ab12".repeat(16)}`,
      "a".repeat(64),
      "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOP",
      "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqr",
      "0123456789012345678901234567890123456789",
      "tokens are fine",
      "my-token",
      "eyJshort.x",
      42,
      null,
      undefined,
      "0123456789abcdef0123456789abcdef0123456",
    ]) {
      expect(looksLikeCredential(v), JSON.stringify(v)).toBe(false);
    }
  });
});

describe("a problem", () => {
  it("reads key: message (got value), the value as written when known", () => {
    expect(formatProblem({ key: "envoy-gateways:domain", message: "must be a DNS name" })).toBe(
      "envoy-gateways:domain: must be a DNS name",
    );
    expect(formatProblem({ key: "k", message: "m", value: 0 })).toBe("k: m (got 0)");
    expect(formatProblem({ key: "k", message: "m", value: undefined })).toBe("k: m (got nothing)");
    expect(formatProblem({ key: "k", message: "m", value: null, written: "~" })).toBe("k: m (got ~)");
    expect(formatProblem({ key: "k", message: "m", value: 1, written: `${"9".repeat(300)}` })).toBe(
      `k: m (got ${"9".repeat(160)}... (300 characters))`,
    );
  });

  it("never shows a credential, as written or as parsed", () => {
    expect(formatProblem({ key: "k", message: "m", value: "token: abc" })).toBe(
      "k: m (value hidden: it looks like a credential)",
    );
    expect(formatProblem({ key: "k", message: "m", value: "x", written: "password: abc" })).toBe(
      "k: m (value hidden: it looks like a credential)",
    );
  });

  it("many make one error: what was read, how many, one line each", () => {
    const e = new InputError("stack config", [
      { key: "a", source: "config", message: "is bad" },
      { key: "b", source: "config", message: "is worse", value: 2 },
    ]);
    expect(e.message).toBe("stack config: 2 problems\n  - a: is bad\n  - b: is worse (got 2)");
    expect(e.name).toBe("InputError");
    expect(e.subject).toBe("stack config");
    expect(
      new InputError("namespaces file x.yaml", [{ key: "a", source: "namespaces", message: "is bad" }]).message,
    ).toBe("namespaces file x.yaml: 1 problem\n  - a: is bad");
  });
});
