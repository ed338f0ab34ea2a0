#!/usr/bin/env bash
# Fetches the Redis 7.0.15 source (with its test suite) from Debian's source archive into
# e2e/.cache/redis-src, idempotently. Prints the path of the unpacked tree on stdout.
#
# `apt-get source` needs a deb-src entry. We derive one at run time from the machine's own
# apt configuration (deb822 `debian.sources` or one-line `sources.list`), turning `deb` into
# `deb-src`, so no archive host name is ever written into the repository.
# Also installs what running the suite needs: dpkg-dev (dpkg-source), tcl (runtest) and python3
# (e2e/compat/run.py).
set -euo pipefail

WANT_VERSION="7.0.15"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="$ROOT/e2e/.cache/redis-src"
TREE="$CACHE/redis-$WANT_VERSION"
DEB_SRC_FILE="/etc/apt/sources.list.d/cairn-deb-src.sources"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

log() { printf 'fetch-redis-src: %s\n' "$*" >&2; }

tree_is_ready() {
  [ -x "$TREE/runtest" ] && [ -f "$TREE/tests/test_helper.tcl" ] &&
    grep -q "\"$WANT_VERSION\"" "$TREE/src/version.h" 2>/dev/null
}

install_tools() {
  local need=()
  dpkg -s dpkg-dev >/dev/null 2>&1 || need+=(dpkg-dev)
  command -v tclsh >/dev/null 2>&1 || need+=(tcl)
  command -v python3 >/dev/null 2>&1 || need+=(python3)
  [ ${#need[@]} -eq 0 ] && return 0
  log "installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >&2
}

have_deb_src() {
  grep -rqsE '^[[:space:]]*(Types:.*deb-src|deb-src[[:space:]])' \
    /etc/apt/sources.list /etc/apt/sources.list.d/
}

# deb822 stanzas from debian.sources, with `Types: deb` turned into `Types: deb-src`.
deb_src_from_deb822() {
  sed -E 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources
}

# One-line `deb URI SUITE COMPONENTS...` entries turned into deb822 deb-src stanzas.
deb_src_from_sources_list() {
  awk '$1 == "deb" {
         i = 2; opts = ""
         if ($2 ~ /^\[/) { while ($i !~ /\]$/) { opts = opts " " $i; i++ } opts = opts " " $i; i++ }
         comps = ""; for (j = i + 2; j <= NF; j++) comps = comps " " $j
         printf "Types: deb-src\nURIs: %s\nSuites: %s\nComponents:%s\n\n", $i, $(i + 1), comps
       }' /etc/apt/sources.list
}

ensure_deb_src() {
  have_deb_src && return 0
  local entries
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    entries="$(deb_src_from_deb822)"
  elif [ -f /etc/apt/sources.list ]; then
    entries="$(deb_src_from_sources_list)"
  else
    log "no apt sources found to derive a deb-src entry from"; exit 1
  fi
  [ -n "$entries" ] || { log "no deb entries found in the apt sources"; exit 1; }
  log "adding $DEB_SRC_FILE"
  printf '%s\n' "$entries" | $SUDO tee "$DEB_SRC_FILE" >/dev/null
  $SUDO apt-get update -qq
}

download_and_unpack() {
  local work
  work="$(mktemp -d)"
  # apt downloads as the _apt user when it can; let it write there.
  [ "$(id -u)" -ne 0 ] || ! id _apt >/dev/null 2>&1 || chown _apt "$work"
  log "downloading the redis source package"
  if ! (cd "$work" && apt-get source --download-only -qq redis >&2); then
    log "retrying after apt-get update"   # a deb-src entry whose indices were never fetched
    $SUDO apt-get update -qq
    (cd "$work" && apt-get source --download-only -qq redis >&2)
  fi
  local dsc
  dsc="$(ls "$work"/redis_"$WANT_VERSION"-*.dsc 2>/dev/null | head -n1)"
  [ -n "$dsc" ] || { log "the archive has no redis $WANT_VERSION source: $(ls "$work")"; exit 1; }
  rm -rf "$TREE"
  dpkg-source --no-check -x "$dsc" "$TREE" >&2
  chmod +x "$TREE/runtest"
  rm -rf "$work" "$CACHE"/redis_*.orig.tar.*
}

main() {
  if tree_is_ready; then echo "$TREE"; return 0; fi
  mkdir -p "$CACHE"
  install_tools
  ensure_deb_src
  download_and_unpack
  tree_is_ready || { log "unpacked tree at $TREE is incomplete"; exit 1; }
  log "ready: $TREE"
  echo "$TREE"
}

main "$@"
