#!/usr/bin/env bash
# The quick start on a bare Debian machine: a minimal Debian 12 root file system
# (mmdebstrap's minbase variant with python3 and ca-certificates: no curl, pip, git,
# npm, containerd or nginx), the Go toolchain of this machine (the README asks for Go),
# and a copy of this checkout (tracked and untracked files, no .git). In it, as root in
# a mount namespace of its own, it runs the README's commands and checks what they leave:
#
#   1. bash scripts/quickstart.sh         (first run: installs and builds everything)
#   2. bash scripts/quickstart.sh         (second run, warm)
#   3. bash scripts/quickstart.sh --down  (no process, mount or network device left)
#
# and prints one "bare-machine: KEY=VALUE" line per fact (test/bare/quickstart.test.ts
# reads them): which commands were there before, how long each run took, what was left.
# The runs' output is in DIR/logs/.
#
# By default Go's module and build caches of this machine ($EG_CACHE/go) are shared
# read-only (an overlay: what the runs add stays in DIR), so the Go builds link rather
# than compile; the Node, npm, pip, apt and component caches start empty. With --cold
# nothing is shared: the first run downloads and compiles everything (the figure in
# docs/real-components.md).
#
#   bash scripts/bare-machine.sh [--cold] [--dir DIR] [--keep]
#     --dir DIR   where the root file system and the logs go (default /var/tmp/eg-bare-machine,
#                 emptied first)
#     --keep      leave DIR in place (it is removed after a run that passed)
#
# Needs root, mmdebstrap (scripts/install-debian-packages.sh development) and the Debian
# mirror; the root file system's tar is cached in $EG_CACHE/bare-rootfs/, keyed by its recipe.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cold=0 keep=0 dir=/var/tmp/eg-bare-machine
while (($#)); do
  case "$1" in
    --cold) cold=1; shift ;;
    --keep) keep=1; shift ;;
    --dir) (($# >= 2)) || { log "--dir needs a value (see --help)"; exit 2; }; dir="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) log "unknown argument: $1 (see --help)"; exit 2 ;;
  esac
done
[[ "$(id -u)" == 0 ]] || { log "the bare machine needs root (chroot, mounts, the local node)"; exit 1; }
command -v mmdebstrap >/dev/null || { log "mmdebstrap is missing: run bash scripts/install-debian-packages.sh development"; exit 1; }
GO_ROOT="$(go env GOROOT)"

# --- the root file system -----------------------------------------------------------------
MIRROR=http://deb.debian.org/debian
ROOTFS_RECIPE="bookworm minbase python3,ca-certificates $MIRROR bookworm-updates bookworm-security"
rootfs_tar() {
  local key; key="$(printf '%s' "$ROOTFS_RECIPE" | sha256sum | cut -c1-16)"
  local tar="$EG_CACHE/bare-rootfs/$key.tar"
  if [[ ! -f "$tar" ]]; then
    mkdir -p "$(dirname "$tar")"
    log "building the bare root file system ($ROOTFS_RECIPE)"
    mmdebstrap --variant=minbase --include=python3,ca-certificates --quiet bookworm "${tar%.tar}.partial.tar" \
      "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
      "deb http://deb.debian.org/debian-security bookworm-security main" >&2
    mv "${tar%.tar}.partial.tar" "$tar"
  fi
  echo "$tar"
}

root="$dir/root"
checkout=/work/envoy-gateways
cache_in_root=/root/.cache/envoy-gateways

prepare_root() {
  if [[ -d "$dir" ]]; then
    if findmnt -rn -o TARGET | grep -q "^$root\(/\|$\)"; then
      log "$root still has mounts (another bare-machine run?): not touching it"; exit 1
    fi
    rm -rf "$dir"
  fi
  mkdir -p "$root" "$dir/logs"
  tar -xf "$(rootfs_tar)" -C "$root"
  # This machine's network: its resolver, and the certificate authorities its HTTPS
  # egress is signed by (a machine on the open internet needs neither).
  cp /etc/resolv.conf /etc/hosts "$root/etc/"
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null 2>&1
  fi
  mkdir -p "$root$checkout" "$root$cache_in_root" "$root/usr/local/go"
  (cd "$REPO_ROOT" && git ls-files -z --cached --others --exclude-standard \
    | xargs -0 -I{} sh -c '[ -e "$1" ] && printf "%s\0" "$1"' _ {} \
    | tar --null -cf - -T -) | tar -xf - -C "$root$checkout"
}

# The rows of scripts/commands.tsv (command, provider, set) whose provider matches the
# pattern given (all rows for ""). Before the quick start, the bare root must have every
# "debian" and "go" row and none of the others.
table_rows() { awk -F '\t' -v want="$1" '!/^#/ && NF >= 3 && (want == "" || $2 ~ want) { print $1 "\t" $2 "\t" $3 }' "$REPO_ROOT/scripts/commands.tsv"; }

# --- what runs inside -------------------------------------------------------------------------
# In the mount namespace: the file systems a machine has, Go read-only, the shared Go
# caches (unless --cold), then the three runs chrooted with a clean environment.
inside() {
  # The root a machine boots has "/" as a mount point (the kubelet looks its directories up in mountinfo).
  mount --bind "$root" "$root"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs -o mode=0755 tmpfs "$root/run"
  mount --bind "$GO_ROOT" "$root/usr/local/go" && mount -o remount,bind,ro "$root/usr/local/go"
  if ((!cold)) && [[ -d "$EG_CACHE/go" ]]; then
    mkdir -p "$dir/go-upper" "$dir/go-work" "$root$cache_in_root/go"
    mount -t overlay overlay -o "lowerdir=$EG_CACHE/go,upperdir=$dir/go-upper,workdir=$dir/go-work" "$root$cache_in_root/go"
  fi

  local env=(HOME=/root LANG=C.UTF-8 TERM=dumb "PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
  local var
  for var in SSL_CERT_FILE SSL_CERT_DIR NODE_EXTRA_CA_CERTS CURL_CA_BUNDLE REQUESTS_CA_BUNDLE; do
    [[ -n "${!var:-}" ]] && env+=("$var=${!var}")
  done
  in_root() { chroot "$root" /usr/bin/env -i "${env[@]}" bash -c "cd $checkout && $1"; }

  # Before: the "debian" and "go" rows must all be there, the others must not.
  local missing=() present=() what provider set
  while IFS=$'\t' read -r what provider set; do
    if in_root "$(have_check "$what")" 2>/dev/null; then
      [[ "$provider" == debian || "$provider" == go ]] || present+=("$what")
    else
      [[ "$provider" == debian || "$provider" == go ]] && missing+=("$what")
    fi
  done < <(table_rows "")
  fact machine-rows-missing "${missing[*]}"
  fact other-rows-present-before "${present[*]}"
  local mounts_before; mounts_before="$(in_root 'cat /proc/self/mountinfo' | awk '{ print $5 }' | sort)"

  run_timed first "bash scripts/quickstart.sh"
  run_timed second "bash scripts/quickstart.sh"

  # After the quick start: no row of the development set was installed.
  present=()
  while IFS=$'\t' read -r what provider set; do
    in_root "$(have_check "$what")" 2>/dev/null && present+=("$what")
  done < <(table_rows '^apt:' | awk -F '\t' '$3 == "development"')
  fact development-rows-present-after "${present[*]}"

  run_timed down "bash scripts/quickstart.sh --down"

  local mounts_after; mounts_after="$(in_root 'cat /proc/self/mountinfo' | awk '{ print $5 }' | sort)"
  fact mounts-left "$(comm -13 <(echo "$mounts_before") <(echo "$mounts_after") | tr '\n' ' ')"
  local pid left=()
  for pid in /proc/[0-9]*; do
    [[ "$(readlink "$pid/root" 2>/dev/null)" == "$root" ]] && left+=("${pid#/proc/}:$(tr '\0' ' ' <"$pid/cmdline" | cut -c1-60)")
  done
  fact processes-left "${left[*]}"
  for pid in "${left[@]}"; do kill -9 "${pid%%:*}" 2>/dev/null || true; done
}

# have_check WHAT: the shell test that WHAT (a command, a path or "python3 -m MODULE") is there.
have_check() {
  case "$1" in
    /*) echo "test -e '$1'" ;;
    "python3 -m venv") echo "python3 -c 'import venv, ensurepip'" ;;
    "python3 -m "*) echo "python3 -c 'import ${1#python3 -m }'" ;;
    *) echo "command -v '$1' >/dev/null || test -x '/usr/sbin/$1'" ;;
  esac
}

fact() { echo "bare-machine: $1=$2"; }

# run_timed NAME COMMAND: COMMAND in the root, its output in DIR/logs/NAME.log.
run_timed() {
  local start=$SECONDS rc=0
  log "bare machine: $2 (log: $dir/logs/$1.log)"
  in_root "CI= $2" >"$dir/logs/$1.log" 2>&1 || rc=$?
  fact "$1-exit" "$rc"
  fact "$1-seconds" "$((SECONDS - start))"
  ((rc == 0)) || { log "bare machine: $2 failed (exit $rc); its last lines:"; tail -n 15 "$dir/logs/$1.log" >&2; }
}

links() { ip -o link show | awk -F ': ' '{ print $2 }' | cut -d@ -f1 | sort; }

prepare_root
links_before="$(links)"
netns_before="$(ip netns list 2>/dev/null | awk '{ print $1 }' | sort)"
export -f inside have_check fact run_timed table_rows log
export root dir cold checkout cache_in_root EG_CACHE GO_ROOT REPO_ROOT
status=0
unshare --mount --propagation private bash -c 'set -uo pipefail; inside' | tee "$dir/facts" || status=1
fact links-left "$(comm -13 <(echo "$links_before") <(links) | tr '\n' ' ')" | tee -a "$dir/facts"
fact netns-left "$(comm -13 <(echo "$netns_before") <(ip netns list 2>/dev/null | awk '{ print $1 }' | sort) | tr '\n' ' ')" | tee -a "$dir/facts"

if grep -qE '^bare-machine: (first|second|down)-exit=[^0]|^bare-machine: (machine-rows-missing|other-rows-present-before|development-rows-present-after|mounts-left|processes-left|links-left|netns-left)=.*[^ ]' "$dir/facts"; then
  status=1
fi
if ((status == 0 && !keep)); then rm -rf "$dir"; else log "kept $dir (logs in $dir/logs)"; fi
exit "$status"
