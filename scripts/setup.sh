#!/usr/bin/env bash
# One-step set-up for a fresh Debian/Ubuntu machine: system packages, npm packages
# (with the native builds done offline), and the model files Lectern can fetch itself.
# Re-running it is cheap: each step skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- system packages --------------------------------------------------------
debs=()
command -v ffmpeg >/dev/null || debs+=(ffmpeg)
command -v espeak-ng >/dev/null || debs+=(espeak-ng)
[ -f /usr/include/espeak-ng/speak_lib.h ] || debs+=(libespeak-ng-dev)
command -v pocketsphinx_batch >/dev/null && command -v pocketsphinx_continuous >/dev/null || debs+=(pocketsphinx)
[ -f /usr/share/pocketsphinx/model/en-us/en-us.lm.bin ] || debs+=(pocketsphinx-en-us)
command -v g++ >/dev/null || debs+=(g++)
command -v make >/dev/null || debs+=(make)
command -v python3 >/dev/null || debs+=(python3)
# EPUB validation in the tests, and the browser that the reader/web-app tests drive (playwright-core).
command -v epubcheck >/dev/null || debs+=(epubcheck)
command -v chromium >/dev/null || debs+=(chromium)
if ((${#debs[@]})); then
  if [ "${LECTERN_SKIP_APT:-}" = 1 ]; then
    echo "lectern: missing Debian packages: ${debs[*]} (LECTERN_SKIP_APT=1, not installing)" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      echo "lectern: please install these Debian packages as root: apt-get install ${debs[*]}" >&2
      exit 1
    fi
  fi
  echo "lectern: installing Debian packages: ${debs[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${debs[@]}" >/dev/null
fi

# --- npm packages -----------------------------------------------------------
# node-gyp builds better-sqlite3 and our addon against the installed Node's headers.
if [ -z "${npm_config_nodedir:-}" ]; then
  export npm_config_nodedir="$(dirname "$(dirname "$(command -v node)")")"
fi
# onnxruntime-node bundles its CPU binaries; its installer would otherwise download the
# CUDA provider. GPU hosts install it with ONNXRUNTIME_NODE_INSTALL unset (see README).
export ONNXRUNTIME_NODE_INSTALL="${ONNXRUNTIME_NODE_INSTALL:-skip}"
# `npm install` rather than `npm ci`: npm 11 writes lockfiles without other platforms'
# optional packages and `npm ci` then refuses them; the lockfile still pins every version.
npm install --no-audit --no-fund --loglevel=error
[ -f build/Release/lectern_native.node ] && [ -f build/soundswallower-simd.wasm ] || bash scripts/build-native.sh

# --- the web app (web/, its own npm package) ----------------------------------
# Installed only when its lockfile changed since the last install; always rebuilt (a few
# seconds) so web/dist matches the checkout that `lectern serve` serves at /.
if [ ! -f web/node_modules/.package-lock.json ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  npm --prefix web install --no-audit --no-fund --loglevel=error
fi
npm --prefix web run build --silent

# --- models -----------------------------------------------------------------
bash scripts/fetch-models.sh
echo "lectern: set-up done"
