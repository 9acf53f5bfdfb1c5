#!/usr/bin/env bash
# What `npm test` needs on this machine, set up once (`npm test` and .ci/run run this first): the
# Debian packages (installed when this user may, else named, exit 1) and the real peers, each only
# when missing. Needs `npm ci` first (the checked releases are read from policies/).
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: the browser tests; redis-server (and redis-cli): several instances, Sentinel, Cluster;
# python3 with venv (3.11 or 3.12): the Open WebUI venvs; maven and a JDK: Keycloak;
# docker-compose with python3-yaml: the compose file rendered and checked; nginx: a benchmark peer.
PACKAGES=(chromium redis-server python3 python3-venv maven default-jdk-headless docker-compose python3-yaml nginx)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A JDK elsewhere (the Temurin one under /usr/lib/jvm that scripts/keycloak.sh prefers) will do.
if [ ${#missing[@]} -gt 0 ] && command -v java >/dev/null; then
  kept=(); for p in "${missing[@]}"; do [ "$p" = default-jdk-headless ] || kept+=("$p"); done; missing=("${kept[@]+"${kept[@]}"}")
fi

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo"; else
      echo "setup: missing Debian packages: ${missing[*]} (install them: sudo apt-get install -y ${missing[*]}), then run npm test again" >&2
      exit 1
    fi
  fi
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  for attempt in 1 2 3; do
    if $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; then break; fi
    [ "$attempt" = 3 ] && { echo "setup: apt-get failed three times" >&2; exit 1; }
    echo "setup: apt-get failed (attempt $attempt), retrying" >&2; sleep 5
  done
fi

python3 -c 'import sys, ensurepip; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 13)))' 2>/dev/null || {
  echo "setup: Open WebUI needs Python 3.11 or 3.12 with venv as python3 (this is $(python3 --version 2>&1))" >&2
  exit 1
}

# The real peers, each installed once (a marker file says an install is complete).
bash scripts/open-webui.sh install-checked
bash scripts/keycloak.sh install
