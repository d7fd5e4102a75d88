#!/usr/bin/env bash
# Runs the unit tests and the service's own MCP test files under other Node versions than the machine's, each
# from the npm registry (nothing installed on the machine): 22 (test/outside-tools' `node`, which
# the outside tools run on anyway) and 24 (test/node24). Usage: scripts/node-version-check.sh [22] [24]
# (both by default).
#
# better-sqlite3 is native: a module built for one Node does not load under another
# (NODE_MODULE_VERSION), so each version gets its own install, in a copy of the checkout's tracked
# files (as they are in the working tree) in a temporary folder, with that Node first on PATH. Its
# native module is built against C++ headers from the registry's `node` package (node-gyp would
# download them): Node 22's own; for 24, those of 24.18 (test/node24/headers says why). A build is
# kept in ~/.cache/event-feed/native by better-sqlite3 version, ABI and headers, so a second run
# compiles nothing. The copy shares the installed outside tools (they run on Node 22 whatever Node
# runs the service).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(22 24)
arch="$( [ "$(uname -m)" = aarch64 ] && echo arm64 || echo x64 )"
native_cache="${XDG_CACHE_HOME:-$HOME/.cache}/event-feed/native"

# The outside tools (conformance suite, Inspector) and Node 22, installed once from their lock.
node --import tsx --input-type=module -e "await (await import('./test/support/outside-tools.ts')).outsideTools()"

# Installs a folder's pinned `node` from its lock unless already there (its install output to stderr).
install_node() {
  local folder="$1"
  if ! cmp -s "$folder/package-lock.json" "$folder/node_modules/.installed-from-lock" 2>/dev/null; then
    (cd "$folder" && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.installed-from-lock) >&2
  fi
}

# The folder whose node_modules/.bin/node runs the tests, and the one whose headers build the native module.
runtime_folder() {
  case "$1" in
    22) echo "$root/test/outside-tools" ;;
    24) install_node "$root/test/node24" && echo "$root/test/node24" ;;
    *) echo "no Node $1 here: 22 or 24" >&2; return 1 ;;
  esac
}
headers_folder() {
  case "$1" in
    22) echo "$root/test/outside-tools" ;;
    24) install_node "$root/test/node24/headers" && echo "$root/test/node24/headers" ;;
  esac
}

work="$(mktemp -d "${TMPDIR:-/tmp}/event-feed-node-versions.XXXXXX")"
trap 'rm -rf "$work"' EXIT

for version in "${versions[@]}"; do
  bin="$(runtime_folder "$version")/node_modules/.bin"
  headers="$(headers_folder "$version")/node_modules/node/node_modules/node-linux-$arch"
  copy="$work/node-$version"
  mkdir -p "$copy"
  git ls-files -z | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C "$copy"
  # Its own node_modules for the service; the outside tools' are shared (installed above, same lock).
  rm -rf "$copy/test/outside-tools/node_modules"
  ln -s "$root/test/outside-tools/node_modules" "$copy/test/outside-tools/node_modules"
  (
    cd "$copy"
    export PATH="$bin:$PATH" npm_config_nodedir="$headers"
    node -e "if (!process.version.startsWith('v$version.')) throw new Error('node on PATH is ' + process.version)"
    printf '\n== Node %s in %s ==\n' "$(node --version)" "$copy"
    # No install script runs but those package.json's allowScripts names, and those by hand below.
    npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
    npm rebuild esbuild --loglevel=error
    sqlite="$(node -p "require('better-sqlite3/package.json').version")"
    header_version="$(sed -n 's/^#define NODE_\(MAJOR\|MINOR\|PATCH\)_VERSION \([0-9]*\)$/\2/p' "$headers/include/node/node_version.h" | paste -sd.)"
    built="$native_cache/better-sqlite3-$sqlite-abi$(node -p process.versions.modules)-headers$header_version-linux-$arch/better_sqlite3.node"
    if [ -f "$built" ]; then
      mkdir -p node_modules/better-sqlite3/build/Release
      cp "$built" node_modules/better-sqlite3/build/Release/
      echo "better-sqlite3 $sqlite: the build for these headers ($header_version), from $built"
    else
      npm rebuild better-sqlite3 --loglevel=error
      mkdir -p "$(dirname "$built")"
      cp node_modules/better-sqlite3/build/Release/better_sqlite3.node "$built.partial" && mv "$built.partial" "$built"
    fi
    # Loads under this Node, and survives garbage-collected statements (what Node 24.19+'s headers break).
    node --expose-gc -e "
      const db = require('better-sqlite3')(':memory:');
      for (let i = 0; i < 2000; i++) db.prepare('select ? as x').get(i);
      global.gc();
      console.log('better-sqlite3 works under', process.version);"
    npm run test:unit
    # The service's own MCP tests. Those that drive an outside tool (the conformance suite,
    # Inspector) run it on Node 22 in `npm test` already; here they would only repeat that.
    node --import tsx --test --test-concurrency=2 test/mcp.test.ts test/mcp-stateless.test.ts test/mcp-origin.test.ts test/mcp-limits.test.ts test/mcp-tools-list.test.ts
  )
  rm -rf "$copy"
done
