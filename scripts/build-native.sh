#!/usr/bin/env bash
# Builds the native addon and the eSpeak NG helper program with node-gyp, offline: the
# headers come from the installed Node (its prefix's include/node), never a download. Then
# the hmm aligner's SIMD build of soundswallower and the long-recording recogniser's acoustic scorer (last lines).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${npm_config_nodedir:-}" ]; then
  export npm_config_nodedir="$(dirname "$(dirname "$(command -v node)")")"
fi
if [ ! -f "$npm_config_nodedir/include/node/node_api.h" ]; then
  echo "lectern: Node's headers are not at $npm_config_nodedir/include/node; set npm_config_nodedir to the Node prefix that has them" >&2
  exit 1
fi
gyp="node_modules/.bin/node-gyp"
[ -x "$gyp" ] || gyp="$(command -v node-gyp || true)"
if [ -z "$gyp" ]; then echo "lectern: node-gyp is missing; run npm install first" >&2; exit 1; fi
# configure + build (not rebuild): incremental, and never wipes build/ under a running process
"$gyp" configure --nodedir="$npm_config_nodedir" --loglevel=error >/dev/null
"$gyp" build --jobs=max --loglevel=error >/dev/null
echo "lectern: native addon built (build/Release)"
# soundswallower's decoder with its Gaussian scorer in WebAssembly SIMD (the hmm aligner's; see the script)
node scripts/build-soundswallower-simd.mjs
# the long-recording recogniser's acoustic scorer for Debian's pocketsphinx_batch, checked against the library's own (see the script)
bash scripts/build-pocketsphinx-scorer.sh
