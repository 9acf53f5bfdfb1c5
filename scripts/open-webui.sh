#!/usr/bin/env bash
# The real Open WebUI for the real-peer suites, from the project's own files: install (a venv per
# release in the cache outside git, Open WebUI's own slim requirements), serve it UNMODIFIED on
# 127.0.0.1, or run the suites against every checked release. Usage and what is left out, and why:
# docs/development.md, "Open WebUI 0.12.4".
set -euo pipefail

# The route table's own release, read from its one definition (no Node needed for it).
table_release() {
  local release
  release="$(sed -n "s/^export const TABLE_RELEASE = '\\([0-9.]*\\)';$/\\1/p" "$(dirname "$0")/../policies/open-webui-releases.ts")"
  [ -n "$release" ] || { echo "open-webui.sh: TABLE_RELEASE not found in policies/open-webui-releases.ts" >&2; exit 1; }
  echo "$release"
}

OWUI_VERSION="${OWUI_VERSION:-$(table_release)}"
CACHE="${CHATGW_CACHE:-$HOME/.cache/chat-gateway}"
ROOT="$CACHE/open-webui-$OWUI_VERSION"
VENV="$ROOT/venv"
MARKER="$ROOT/.installed"
PYTHON="${PYTHON:-python3}"

install() {
  if [ -f "$MARKER" ] && [ -x "$VENV/bin/open-webui" ]; then
    echo "open-webui $OWUI_VERSION already installed in $VENV"
    return 0
  fi
  # One install of a release at a time (two test runs on a fresh machine): the second waits, then
  # finds it done.
  mkdir -p "$CACHE"
  exec 9>"$ROOT.lock"
  flock 9
  if [ -f "$MARKER" ] && [ -x "$VENV/bin/open-webui" ]; then
    echo "open-webui $OWUI_VERSION installed meanwhile in $VENV"
    return 0
  fi
  local started; started=$(date +%s)
  "$PYTHON" -c 'import sys; assert (3, 11) <= sys.version_info[:2] < (3, 13), "Open WebUI needs Python >=3.11,<3.13, this is " + sys.version' 
  rm -rf "$VENV" "$MARKER"
  mkdir -p "$ROOT"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --upgrade pip
  # The wheel alone; the pip cache keeps it for the next fresh venv.
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps "open-webui==$OWUI_VERSION"
  local slim
  slim=$("$VENV/bin/python" - <<'PY'
import importlib.metadata as m
files = m.distribution('open-webui').files or []
hits = [f.locate() for f in files if str(f).endswith('requirements-slim.txt')]
print(hits[0] if hits else '')
PY
)
  [ -n "$slim" ] && [ -f "$slim" ] || { echo "requirements-slim.txt not found in the open-webui $OWUI_VERSION wheel" >&2; exit 1; }
  # The package's own torch-free subset, exactly as pinned there. pip then lists every package of
  # the wheel's full requirements it left out (an "ERROR" line and one line each): that is the slim
  # install, on purpose, so the list is said in one line; anything else pip says is shown.
  local piplog; piplog="$(mktemp)"
  if ! "$VENV/bin/pip" install -q --disable-pip-version-check -r "$slim" 2>"$piplog"; then
    cat "$piplog" >&2; rm -f "$piplog"; exit 1
  fi
  local left
  left=$(grep -cE "^open-webui [^ ]+ requires .+, which is not installed\.$" "$piplog" || true)
  grep -vE -e "^ERROR: pip's dependency resolver does not currently take into account all the packages" \
    -e "^open-webui [^ ]+ requires .+, which is not installed\.$" "$piplog" >&2 || true
  rm -f "$piplog"
  [ "$left" -eq 0 ] || echo "open-webui $OWUI_VERSION: $left packages of its full requirements left out on purpose (local models, OCR, other vector stores and databases: the slim install, docs/development.md)"
  "$VENV/bin/python" -c 'import open_webui' >/dev/null
  echo "$OWUI_VERSION $(date -u +%FT%TZ)" > "$MARKER"
  echo "open-webui $OWUI_VERSION installed in $VENV in $(( $(date +%s) - started ))s"
}

serve() {
  local port="${1:?usage: open-webui.sh serve PORT}"
  [ -f "$MARKER" ] || { echo "open-webui $OWUI_VERSION is not installed: run npm test (its set-up installs it) or OWUI_VERSION=$OWUI_VERSION scripts/open-webui.sh install" >&2; exit 1; }
  : "${DATA_DIR:?set DATA_DIR (a temporary folder)}"
  : "${WEBUI_SECRET_KEY:?set WEBUI_SECRET_KEY}"
  # Nothing reaches the network or loads a local model at start.
  export USE_SLIM_DOCKER="${USE_SLIM_DOCKER:-true}"         # the slim image's mode: no torch, no chromadb import
  export OFFLINE_MODE="${OFFLINE_MODE:-true}"               # HF_HUB_OFFLINE, no update check, no model auto-update
  export ENABLE_VERSION_UPDATE_CHECK=false
  export ENABLE_OLLAMA_API="${ENABLE_OLLAMA_API:-false}"
  export ENABLE_OPENAI_API="${ENABLE_OPENAI_API:-false}"     # no api.openai.com unless a base URL is given
  export RAG_EMBEDDING_ENGINE="${RAG_EMBEDDING_ENGINE:-openai}"   # remote engine: no sentence-transformers model
  export BYPASS_EMBEDDING_AND_RETRIEVAL="${BYPASS_EMBEDDING_AND_RETRIEVAL:-true}"
  export ANONYMIZED_TELEMETRY=false SCARF_NO_ANALYTICS=true DO_NOT_TRACK=true
  export ENABLE_OTEL="${ENABLE_OTEL:-false}"
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  cd "$DATA_DIR"   # anything it writes beside the working folder lands in the temp folder
  exec "$VENV/bin/open-webui" serve --host 127.0.0.1 --port "$port"
}

# Every release the route table was checked against (policies/open-webui-releases.ts), the table's first.
checked_releases() {
  local here
  here="$(cd "$(dirname "$0")/.." && pwd)"
  (cd "$here" && node --import tsx --input-type=module -e "console.log((await import('./policies/open-webui-releases.ts')).CHECKED_VERSIONS.join(' '))")
}

# Each checked release in a venv of its own: what `npm test` runs against.
install_checked() {
  local releases; releases="$(checked_releases)"
  for release in $releases; do OWUI_VERSION="$release" bash "$0" install; done
}

# Every real-peer suite (npm run test:open-webui) against each checked release in turn; every
# release is run even when one fails, and the run fails when any did, with how long each took.
test_checked() {
  local releases; releases="$(checked_releases)"
  local summary=() failed=0 started
  for release in $releases; do
    started=$SECONDS
    echo "=== the real-peer suites against Open WebUI $release (test/real-open-webui/)"
    if OWUI_VERSION="$release" npm run --silent test:open-webui; then
      summary+=("Open WebUI $release: passed in $((SECONDS - started)) s")
    else
      summary+=("Open WebUI $release: FAILED after $((SECONDS - started)) s"); failed=1
    fi
  done
  printf 'real-peer suites:\n'; printf '  %s\n' "${summary[@]}"
  return $failed
}

case "${1:-}" in
  install) install ;;
  install-checked) install_checked ;;
  test-checked) test_checked ;;
  serve) shift; serve "$@" ;;
  path) echo "$VENV" ;;
  *) echo "usage: $0 install | install-checked | test-checked | serve PORT | path" >&2; exit 2 ;;
esac
