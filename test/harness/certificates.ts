// A test PKI made with the openssl command line: a CA, the gateway's served
// certificate (the test domains as SANs), one certificate per upstream
// Service (SAN <svc>.<ns>.svc.<clusterDomain>, as the pods of a headless
// Service present), Envoy's upstream client certificate, and, for negative
// tests, certificates from a second, untrusted CA. EC P-256 keys: fast to make.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface KeyPair {
  /** PEM certificate (leaf only). */
  cert: string;
  /** PEM private key. */
  key: string;
  certPath: string;
  keyPath: string;
}

export interface Authority extends KeyPair {
  name: string;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync("openssl", args, { cwd, stdio: ["ignore", "pipe", "pipe"], timeout: 30_000 });
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      throw new Error("openssl not found: run bash scripts/install-debian-packages.sh development", { cause: e });
    throw new Error(`openssl ${args.join(" ")} failed: ${err.stderr?.toString() ?? err.message}`, { cause: e });
  }
}

function safeFileName(name: string): string {
  return name.replace(/[^A-Za-z0-9.-]/g, "_");
}

/** Certificates made under one directory. */
export class TestPki {
  readonly dir: string;
  private serial = 1;

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
  }

  /** A self-signed CA. */
  authority(name: string): Authority {
    const base = safeFileName(`ca-${name}`);
    const keyPath = join(this.dir, `${base}.key`);
    const certPath = join(this.dir, `${base}.crt`);
    openssl(
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-days",
        "7",
        "-subj",
        `/O=envoy-gateways test/CN=${name}`,
        "-keyout",
        keyPath,
        "-out",
        certPath,
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
      ],
      this.dir,
    );
    return { name, certPath, keyPath, cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8") };
  }

  /**
   * A leaf certificate signed by `ca` for `dnsNames` (the first is also the
   * CN), usable as server and client certificate.
   */
  leaf(ca: Authority, label: string, dnsNames: string[]): KeyPair {
    const base = safeFileName(`${label}-${this.serial}`);
    const keyPath = join(this.dir, `${base}.key`);
    const csrPath = join(this.dir, `${base}.csr`);
    const certPath = join(this.dir, `${base}.crt`);
    const extPath = join(this.dir, `${base}.ext`);
    writeFileSync(
      extPath,
      [
        "basicConstraints=critical,CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage=serverAuth,clientAuth",
        `subjectAltName=${dnsNames.map((n) => `DNS:${n}`).join(",")}`,
        "",
      ].join("\n"),
    );
    openssl(
      [
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-subj",
        `/CN=${dnsNames[0] ?? label}`,
        "-keyout",
        keyPath,
        "-out",
        csrPath,
      ],
      this.dir,
    );
    openssl(
      [
        "x509",
        "-req",
        "-in",
        csrPath,
        "-CA",
        ca.certPath,
        "-CAkey",
        ca.keyPath,
        "-set_serial",
        String(1000 + this.serial++),
        "-days",
        "7",
        "-extfile",
        extPath,
        "-out",
        certPath,
      ],
      this.dir,
    );
    return { certPath, keyPath, cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8") };
  }
}
