#!/usr/bin/env bash
# Type-check Slate's pi extension (extension/**/*.ts, its tests included) with the real
# TypeScript compiler against pi 1.6's own type definitions: `tsc --noEmit`, strict.
#
# Needs ci/install-pi.sh's install (Node, pi and TypeScript in ${SLATE_PI_HOME:-~/.cache/slate-pi});
# the tsconfig is written to a temporary directory because its paths point into that install
# (pi's packages resolve there, as they do inside pi at run time).
#
# Exit 0: no type error; otherwise the errors are printed and the exit is non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
home="${SLATE_PI_HOME:-$HOME/.cache/slate-pi}"
if [ ! -f "$home/env" ]; then
  echo "typecheck-extension: $home/env is missing; run ci/install-pi.sh first" >&2
  exit 2
fi
# shellcheck source=/dev/null
. "$home/env"
if [ -z "${SLATE_TSC:-}" ] || [ ! -f "$SLATE_TSC" ]; then
  echo "typecheck-extension: no TypeScript in $home (run ci/install-pi.sh again)" >&2
  exit 2
fi
# pi's node_modules: .../node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js
modules="${SLATE_PI_CLI%%/@earendil-works/*}"
extension="$(pwd -P)/extension"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cat >"$scratch/tsconfig.json" <<JSON
{
  "compilerOptions": {
    "target": "ES2023",
    "module": "ESNext",
    "moduleResolution": "Bundler",
    "strict": true,
    "noEmit": true,
    "allowImportingTsExtensions": true,
    "erasableSyntaxOnly": true,
    "verbatimModuleSyntax": true,
    "noFallthroughCasesInSwitch": true,
    "skipLibCheck": true,
    "types": ["node"],
    "typeRoots": ["$modules/@types"],
    "paths": {
      "@earendil-works/*": ["$modules/@earendil-works/*"],
      "typebox": ["$modules/typebox"]
    }
  },
  "include": ["$extension/**/*.ts"]
}
JSON
"$SLATE_PI_NODE" "$SLATE_TSC" -p "$scratch/tsconfig.json" --pretty false
echo "typecheck-extension: extension/ type-checks ($("$SLATE_PI_NODE" "$SLATE_TSC" --version), $modules)"
