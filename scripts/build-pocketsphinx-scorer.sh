#!/usr/bin/env bash
# Builds build/pocketsphinx-ptm.so, the long-recording recogniser's faster acoustic scorer for
# Debian's pocketsphinx_batch (native/pocketsphinx/ptm_frame_eval.c, preloaded by
# src/speech/align/long/pocketsphinx-scorer.ts), and checks it before anything uses it: real
# speech (test fixtures: 10 clips, 42 s) decoded with Debian's en-us model and language
# model, with the recogniser's search settings and with every frame scored and PocketSphinx's
# default n-best (-ds 1 -topn 4), must come out byte for byte as
# the library's own scorer gives it (words, times and acoustic scores). The stamp beside it
# (build/pocketsphinx-ptm.json) names the library it was checked against, by sha256.
# Where pocketsphinx, ffmpeg or a C compiler is missing it is not built, and the stamp says why.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/pocketsphinx-ptm.so
stamp=build/pocketsphinx-ptm.json
mkdir -p build
rm -f "$out" "$stamp"
batch="$(command -v pocketsphinx_batch || true)"
# not built: the stamp says why, and the recogniser runs the library's own scorer with a warning
unbuilt() {
  rm -f "$out.tmp"
  printf '{"verified":false,"reason":"not built: %s (npm run setup installs what is missing, then npm run build:native builds it)"}\n' "$1" > "$stamp"
  echo "lectern: the recogniser's scorer is not built: $1; pocketsphinx_batch will run its own"
  exit 0
}
[ -n "$batch" ] || unbuilt "pocketsphinx was not installed"
command -v ffmpeg >/dev/null || unbuilt "ffmpeg was not installed"
command -v cc >/dev/null || unbuilt "no C compiler was installed"
lib="$(ldd "$batch" | awk '$1 ~ /^libpocketsphinx\.so/ { print $3 }')"
[ -n "$lib" ] && lib="$(readlink -f "$lib")"
[ -n "$lib" ] && [ -f "$lib" ] || unbuilt "libpocketsphinx was not found beside pocketsphinx_batch"
model=/usr/share/pocketsphinx/model/en-us
[ -f "$model/en-us.lm.bin" ] || unbuilt "pocketsphinx-en-us was not installed"
cc -O3 -shared -fPIC -ffp-contract=off -Wall -Wextra -o "$out.tmp" native/pocketsphinx/ptm_frame_eval.c || unbuilt "it did not compile"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
verdict=verified
for wav in test/fixtures/speech/{sense_and_sensibility_*,jfk,goforward,praatio-*}.wav; do
  name="$(basename "$wav" .wav)"
  ffmpeg -v error -nostdin -i "$wav" -ac 1 -ar 16000 -f s16le "$work/$name.raw" || unbuilt "ffmpeg could not read the test speech"
  echo "$name" >> "$work/ctl"
done
decode() { # decode OUT PRELOAD ARGS...
  local hyp="$1" preload="$2"
  shift 2
  LD_PRELOAD="$preload" "$batch" -adcin yes -cepdir "$work" -cepext .raw -ctl "$work/ctl" -hypseg "$hyp" -samprate 16000 \
    -hmm "$model/en-us" -lm "$model/en-us.lm.bin" -dict "$model/cmudict-en-us.dict" -logfn /dev/null "$@"
}
fast=(-remove_silence no -fwdflat no -bestpath no -maxhmmpf 1500 -maxwpf 5 -pl_window 5)
for settings in "-ds 3 -topn 2" "-ds 1 -topn 4"; do
  args=("${fast[@]}" $settings)
  if ! decode "$work/stock.hyp" "" "${args[@]}" || ! decode "$work/built.hyp" "$PWD/$out.tmp" "${args[@]}"; then
    verdict="pocketsphinx_batch failed on the test speech (search settings $settings)"
    break
  fi
  if [ ! -s "$work/stock.hyp" ] || ! cmp -s "$work/stock.hyp" "$work/built.hyp"; then
    verdict="the recogniser's output differs from the library's own scorer (search settings $settings)"
    break
  fi
done

if [ "$verdict" = verified ]; then
  mv "$out.tmp" "$out"
  printf '{"library":"%s","library_sha256":"%s","sha256":"%s","verified":true}\n' "$lib" "$(sha256sum "$lib" | cut -d' ' -f1)" "$(sha256sum "$out" | cut -d' ' -f1)" > "$stamp"
  echo "lectern: the recogniser's scorer built ($out), the same output as $(basename "$lib")'s on the test speech"
else
  rm -f "$out.tmp"
  printf '{"library":"%s","library_sha256":"%s","verified":false,"reason":"%s"}\n' "$lib" "$(sha256sum "$lib" | cut -d' ' -f1)" "$verdict" > "$stamp"
  echo "lectern: warning: the recogniser's scorer is not used: $verdict; pocketsphinx_batch runs its own" >&2
fi
