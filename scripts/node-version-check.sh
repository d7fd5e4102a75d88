#!/usr/bin/env bash
# Runs the unit tests and the MCP test files under other Node versions than the machine's, each
# from the npm registry (nothing installed on the machine): 22 (test/outside-tools' `node`, which
# the outside tools run on anyway) and 24 (test/node24). Usage: scripts/node-version-check.sh [22] [24]
# (both by default).
#
# better-sqlite3 is native: a module built for one Node does not load under another
# (NODE_MODULE_VERSION), so each version gets its own install, in a copy of the checkout's tracked
# files (as they are in the working tree) in a temporary folder, with that Node first on PATH and
# its own headers for node-gyp (the registry's package ships them). The copy shares the installed
# outside tools (they run on Node 22 whatever Node runs the service).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(22 24)

# The outside tools (conformance suite, Inspector) and Node 22, installed once from their lock.
node --import tsx --input-type=module -e "await (await import('./test/support/outside-tools.ts')).outsideTools()"

node_folder() {
  case "$1" in
    22) echo "$root/test/outside-tools" ;;
    24)
      # Installed from its lock when missing or stale (npm ci is a no-op check of nothing else here).
      if [ ! -x "$root/test/node24/node_modules/.bin/node" ] || ! cmp -s "$root/test/node24/package-lock.json" "$root/test/node24/node_modules/.package-lock.json.installed" 2>/dev/null; then
        (cd "$root/test/node24" && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.package-lock.json.installed) >&2
      fi
      echo "$root/test/node24"
      ;;
    *) echo "no Node $1 here: 22 or 24" >&2; return 1 ;;
  esac
}

work="$(mktemp -d "${TMPDIR:-/tmp}/event-feed-node-versions.XXXXXX")"
trap 'rm -rf "$work"' EXIT

for version in "${versions[@]}"; do
  folder="$(node_folder "$version")"
  bin="$folder/node_modules/.bin"
  headers="$folder/node_modules/node/node_modules/node-linux-$( [ "$(uname -m)" = aarch64 ] && echo arm64 || echo x64 )"
  copy="$work/node-$version"
  mkdir -p "$copy"
  git ls-files -z | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C "$copy"
  # Its own node_modules for the service; the outside tools' are shared (installed above, same lock).
  rm -rf "$copy/test/outside-tools/node_modules"
  ln -s "$root/test/outside-tools/node_modules" "$copy/test/outside-tools/node_modules"
  (
    cd "$copy"
    export PATH="$bin:$PATH" npm_config_nodedir="$headers"
    printf '\n== Node %s (%s) in %s ==\n' "$version" "$(node --version)" "$copy"
    # Install scripts only where package.json's allowScripts says (the native module, esbuild's binary).
    npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
    npm rebuild better-sqlite3 esbuild --loglevel=error
    # The Node on PATH is the one asked for, and the native module is built for it.
    node -e "if (!process.version.startsWith('v$version.')) throw new Error('node on PATH is ' + process.version)"
    node -e "require('better-sqlite3')(':memory:').prepare('select 1').get()"
    npm run test:unit
    node --import tsx --test --test-concurrency=2 test/mcp*.test.ts
  )
  rm -rf "$copy"
done
