#!/usr/bin/env bash
# The route controller's image (routeSync.inCluster.image), built from this checkout:
# Node ($NODE_VERSION, the cached one) with the glibc libraries it links, and the
# compiled route controller (dist/route-controller.bundle.js, its packages' licence comments and the Envoy API
# descriptors beside it), run as user 10001. One layer, made by tools/pod-images/mkimage,
# with no registry or container engine. Its tag is keyed by what is in it:
#   envoy-gateways/route-controller:<package version>-<12 hex of Node, bundle and descriptors>
# so an unchanged build gives the same tag (and digest), and a changed one a new tag: a
# `pulumi up` with the new tag rolls the controller.
#
#   bash scripts/route-controller-image.sh [--import CONTAINERD_SOCKET]
#
# Prints the tag. The archive is cached in $EG_CACHE/route-controller-image/<tag>.tar;
# --import loads it into containerd (the k8s.io namespace the kubelet reads) at that
# socket: the local node's is <cluster>/node/containerd.sock. For a real cluster, load
# the archive (`docker load` or `skopeo copy docker-archive:...`) and push it to a
# registry the cluster pulls from. Run `npm run build` first.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

import_socket=""
while (($#)); do
  case "$1" in
    --import) import_socket="${2:?--import needs the containerd socket}"; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) log "unknown argument $1: usage: bash scripts/route-controller-image.sh [--import CONTAINERD_SOCKET]"; exit 2 ;;
  esac
done

bundle="$REPO_ROOT/dist/route-controller.bundle.js"
descriptors="$REPO_ROOT/dist/generated/envoy-api.binpb"
# The licence comments of the bundled packages (the build puts them beside the bundle).
legal="$REPO_ROOT/dist/route-controller.bundle.js.LEGAL.txt"
node="$(node_dir)/bin/node"
for f in "$bundle" "$descriptors" "$legal"; do
  [[ -f "$f" ]] || { log "$f is missing: run \`npm run build\` first"; exit 1; }
done
[[ -x "$node" ]] || { log "$node is missing: run \`bash scripts/setup.sh\` (or \`source scripts/env.sh\`) first"; exit 1; }

version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$REPO_ROOT/package.json")"
content="$({ echo "node $NODE_VERSION"; sha256sum "$bundle" "$descriptors" "$legal" | cut -d' ' -f1; } | sha256sum | cut -c1-12)"
tag="envoy-gateways/route-controller:$version-$content"
cache="$EG_CACHE/route-controller-image"
archive="$cache/$version-$content.tar"
mkdir -p "$cache"

if [[ ! -f "$archive" ]]; then
  tools="$cache/tools"
  if [[ ! -x "$tools/bin/mkimage" ]]; then
    mkdir -p "$tools/bin"
    (cd "$REPO_ROOT/tools/pod-images" && CGO_ENABLED=0 go build -buildvcs=false -trimpath -mod=readonly \
      -ldflags "-s -w" -o "$tools/bin/" ./mkimage)
  fi
  root="$(mktemp -d "$cache/root.XXXXXX")"
  trap 'rm -rf "$root"' EXIT
  glibc_root "$root" "$node"
  mkdir -p "$root/usr/local/bin" "$root/app/generated"
  install -m 0755 "$node" "$root/usr/local/bin/node"
  install -m 0644 "$bundle" "$root/app/route-controller.bundle.js"
  install -m 0644 "$descriptors" "$root/app/generated/envoy-api.binpb"
  install -m 0644 "$legal" "$root/app/route-controller.bundle.js.LEGAL.txt"
  printf 'root:x:0:0:root:/:/usr/sbin/nologin\ncontroller:x:10001:10001:route controller:/tmp:/usr/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\ncontroller:x:10001:\n' >"$root/etc/group"
  # Checked before it is packed: Node runs in that root with nothing from the host.
  out="$(chroot "$root" /usr/local/bin/node /app/route-controller.bundle.js --help 2>&1)" \
    || { log "the route controller does not start in its image's root: $out"; exit 1; }
  [[ "$out" == usage:* ]] || { log "the route controller printed '$out' for --help, expected its usage"; exit 1; }
  "$tools/bin/mkimage" -rootfs "$root" -tag "$tag" \
    -entrypoint '["/usr/local/bin/node","/app/route-controller.bundle.js"]' \
    -user 10001:10001 -workdir /app -o "$archive.partial" >&2
  mv "$archive.partial" "$archive"
  log "built $tag ($(du -h "$archive" | cut -f1), $archive)"
fi

if [[ -n "$import_socket" ]]; then
  ctr --address "$import_socket" --namespace k8s.io images import "$archive" >/dev/null
  log "imported $tag into containerd at $import_socket"
fi
echo "$tag"
