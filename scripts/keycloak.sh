#!/usr/bin/env bash
# The real Keycloak for tests and for running the sandbox against it.
#   scripts/keycloak.sh install   fetch the pinned distribution with Maven (checksum checked),
#                                 unpack it and build it once (kc.sh build), into a cache folder
#                                 outside git: ${CHATGW_CACHE:-$HOME/.cache/chat-gateway}/keycloak-<ver>
#   scripts/keycloak.sh home      print the folder of the built server (installs if needed)
# Starting is done by sandbox/keycloak.ts (free ports, realm import, stops itself), used by
# `npm run test:keycloak` and `npm run sandbox:keycloak`.
set -euo pipefail

KC_VERSION=26.7.2
# The same version as the keycloak image of docker-compose.yml. sha1 of the tar.gz as served by
# .sha1 file Maven Central serves beside it at install time, too).
KC_SHA1_PINNED="9ac3db6a10172854389c19f1575b8caa0d13a9b6"
CACHE="${CHATGW_CACHE:-$HOME/.cache/chat-gateway}"
HOME_DIR="$CACHE/keycloak-$KC_VERSION"
BUILD_OPTS=(--db=dev-file --health-enabled=true)

log() { echo "[keycloak.sh] $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

install() {
  if [ -f "$HOME_DIR/.built" ]; then log "already installed and built: $HOME_DIR"; return; fi
  mkdir -p "$CACHE"
  local dl="$CACHE/download-$KC_VERSION" t
  mkdir -p "$dl"
  local tgz="$dl/keycloak-quarkus-dist-$KC_VERSION.tar.gz"
  if [ ! -f "$tgz" ]; then
    t=$(now)
    mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="org.keycloak:keycloak-quarkus-dist:$KC_VERSION:tar.gz" \
      -DoutputDirectory="$dl" -Dmdep.useBaseVersion=true >&2
    log "download: $(since "$t") s"
  fi
  # Checksum: the .sha1 Maven Central serves, and the one pinned here when set.
  local sha1 expected
  sha1=$(sha1sum "$tgz" | cut -d' ' -f1)
  expected=$(curl -fsS --max-time 20 "https://repo.maven.apache.org/maven2/org/keycloak/keycloak-quarkus-dist/$KC_VERSION/keycloak-quarkus-dist-$KC_VERSION.tar.gz.sha1" | cut -c1-40 || true)
  if [ -z "$expected" ]; then log "the served .sha1 could not be read: checked against the pinned one only"
  elif [ "$sha1" != "$expected" ]; then log "checksum mismatch: $sha1 != served $expected"; rm -f "$tgz"; exit 1; fi
  if [ -n "$KC_SHA1_PINNED" ] && [ "$sha1" != "$KC_SHA1_PINNED" ]; then log "checksum mismatch: $sha1 != pinned $KC_SHA1_PINNED"; rm -f "$tgz"; exit 1; fi
  log "sha1 ok: $sha1"
  t=$(now)
  rm -rf "$HOME_DIR.tmp" && mkdir -p "$HOME_DIR.tmp"
  tar -xzf "$tgz" -C "$HOME_DIR.tmp"
  rm -rf "$HOME_DIR" && mv "$HOME_DIR.tmp/keycloak-$KC_VERSION" "$HOME_DIR" && rmdir "$HOME_DIR.tmp"
  log "unpack: $(since "$t") s"
  t=$(now)
  JAVA_OPTS_KC_HEAP="-Xms64m -Xmx512m" "$HOME_DIR/bin/kc.sh" build "${BUILD_OPTS[@]}" >&2
  log "build: $(since "$t") s"
  echo "$KC_VERSION" > "$HOME_DIR/.built"
}

case "${1:-}" in
  install) install ;;
  home) install; echo "$HOME_DIR" ;;
  version) echo "$KC_VERSION" ;;
  *) echo "usage: $0 install|home|version" >&2; exit 2 ;;
esac
