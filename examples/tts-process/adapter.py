#!/usr/bin/env python3
"""Lectern speech model process: the reference adapter (protocol 1).

`lectern gpu-server --backend process --tts-process 'python3 adapter.py'` starts this program
once per pool slot and talks to it over stdin/stdout (examples/tts-process/PROTOCOL.md).

To host your own model, copy this file and edit the block marked EDIT HERE:
  - CAPABILITIES: what your model can do (languages, voice cloning, batch size, ...);
  - load_model(init): called once, before the hello, to load the weights;
  - synthesize_batch(model, requests): THE MODEL CALL. One batch of compatible requests in,
    one result per request out.
Everything below the block is the protocol; you should not need to touch it.

As shipped, the model is eSpeak NG (the `espeak-ng` command), so the wiring can be checked
on any machine: it speaks, but it does not clone (voice_cloning is false).
Standard library only.
"""

import base64
import collections
import io
import json
import os
import select
import subprocess
import sys
import tempfile
import traceback
import wave

PROTOCOL = 1


class InputError(Exception):
    """Raise (or return) this for a request the model cannot take as sent: Lectern answers 422."""


# ===================================================================== EDIT HERE: your model

CAPABILITIES = {
    # A short name: /health shows it, and narration caches are keyed by it.
    "name": "espeak",
    # BCP-47 codes (or {"code", "name"} objects) the model speaks; [] means any.
    "languages": ["en", "de", "fr", "es", "it", "nl", "pt", "pl"],
    # True when the model clones the voice of a reference clip (ref_audio + ref_text).
    "voice_cloning": False,
    # Longest text, in UTF-8 bytes, one request may carry (Lectern splits text at sentences below it).
    "max_chunk_bytes": 1000,
    # Sample rate of the audio the model returns.
    "sample_rate": 22050,
    # True when results carry word timings; else Lectern times the words with its aligner.
    "word_timings": False,
    # Most requests per synthesize_batch() call; >1 only if the model really runs them together.
    "max_batch": 1,
    # Sample rate Lectern converts reference clips to (mono 16-bit WAV) before handing them over.
    "reference_sample_rate": 24000,
}


def load_model(init):
    """Load the weights once. `init` has "device" ("cpu" or "cuda"), "slot" and "slots"
    (this process's index among the server's processes: pick a GPU with it), "scratch_dir".
    Whatever this returns is passed to synthesize_batch.

    F5-TTS, for example:
        from f5_tts.api import F5TTS
        return F5TTS(device="cuda" if init["device"] == "cuda" else "cpu")
    XTTS v2 (Coqui TTS):
        from TTS.api import TTS
        return TTS("tts_models/multilingual/multi-dataset/xtts_v2").to(init["device"])
    """
    listing = subprocess.run(["espeak-ng", "--voices"], check=True, capture_output=True, text=True).stdout
    known = set()
    for line in listing.splitlines()[1:]:  # Pty Language Age/Gender VoiceName File ...
        cols = line.split()
        if len(cols) >= 5:
            known.update(c.lower() for c in (cols[1], cols[3], cols[4]))
    return {"voices": known, "voice_for": {"en": "en-us", "de": "de", "fr": "fr-fr", "es": "es", "it": "it", "nl": "nl", "pt": "pt", "pl": "pl"}}


def synthesize_batch(model, requests):
    """THE MODEL CALL. `requests` is a list of dicts, all compatible (same language, voice
    and reference clip):
        text       the text to speak (at most max_chunk_bytes UTF-8 bytes)
        language   BCP-47 code, e.g. "en-US"
        voice      a voice id the client asked for, or None
        ref_audio  path of the reference clip (mono 16-bit WAV at reference_sample_rate), or None
        ref_text   the exact transcript of the reference clip, or None
    Return one result per request, in order. A result is a Speech, an InputError (only that
    request fails, with 422), or any other Exception (that request fails with 500).
    Raising fails the whole batch. A model that loops over the requests may skip one whose
    client went away: `if is_cancelled(r["id"]): out.append(InputError("cancelled"))`.

    F5-TTS, for example (one request at a time; F5-TTS batches internally per text):
        out = []
        for r in requests:
            wav, sr, _ = model.infer(ref_file=r["ref_audio"], ref_text=r["ref_text"] or "", gen_text=r["text"])
            out.append(Speech(wav, sr))
        return out
    XTTS v2:
        return [Speech(model.tts(text=r["text"], speaker_wav=r["ref_audio"], language=r["language"][:2]), 24000)
                for r in requests]
    """
    out = []
    for r in requests:
        primary = r["language"].split("-")[0].lower()
        voice = r["voice"] or model["voice_for"].get(primary)
        if not voice:
            out.append(InputError(f"no eSpeak NG voice for language {r['language']}"))
            continue
        if voice.split("+")[0].lower() not in model["voices"]:
            out.append(InputError(f"eSpeak NG has no voice {voice!r}"))
            continue
        with tempfile.NamedTemporaryFile(suffix=".wav") as f:
            p = subprocess.run(["espeak-ng", "-v", voice, "-w", f.name, r["text"]], capture_output=True)
            if p.returncode != 0:
                out.append(InputError(p.stderr.decode("utf-8", "replace").strip() or f"espeak-ng exited {p.returncode}"))
                continue
            out.append(Speech(wav_bytes=f.read()))
    return out


# ===================================================================== the protocol (no edits needed)


class Speech:
    """One request's audio: float samples in -1..1 (a list, or a numpy/torch 1-D array) at
    `sample_rate`, or `wav_bytes` (a whole WAV file). `words`, when the model knows them:
    [{"word", "start", "end"}] in seconds, one per whitespace-separated word of the text."""

    def __init__(self, samples=None, sample_rate=None, words=None, wav_bytes=None):
        self.samples = samples
        self.sample_rate = sample_rate
        self.words = words
        self.wav_bytes = wav_bytes


def wav_bytes(samples, sample_rate):
    """Mono float samples → a 16-bit PCM WAV file's bytes."""
    if hasattr(samples, "detach"):  # torch tensor
        samples = samples.detach().cpu().numpy()
    if hasattr(samples, "astype"):  # numpy array
        import numpy as np

        pcm = (np.clip(np.asarray(samples, dtype=np.float32).reshape(-1), -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
    else:
        import array

        a = array.array("h", (int(max(-1.0, min(1.0, float(s))) * 32767.0) for s in samples))
        if sys.byteorder == "big":
            a.byteswap()
        pcm = a.tobytes()
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(int(sample_rate))
        w.writeframes(pcm)
    return buf.getvalue()


class Protocol:
    """stdin/stdout JSON lines. Stdout is kept for protocol messages only: anything else that
    writes to file descriptor 1 (print, a library's progress bar, C code) goes to stderr,
    which Lectern copies into its log with the request ids of the batch in flight.
    Stdin is read on this thread (no reader thread: one hand-off less per batch); cancel
    messages that arrived meanwhile are picked up before each batch starts."""

    def __init__(self, audio_base64=False):
        self.audio_base64 = audio_base64
        self.out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        self.fd = sys.stdin.fileno()
        self.buf = b""
        self.eof = False
        self.ahead = collections.deque()
        self.cancelled = set()

    def _read(self, block):
        if self.eof or (not block and not select.select([self.fd], [], [], 0)[0]):
            return False
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def _parse(self):
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                print(f"adapter: ignoring a line that is not JSON: {line[:200]!r}", file=sys.stderr)
                continue
            if msg.get("type") == "cancel":
                self.cancelled.update(msg.get("ids", []))
            else:
                self.ahead.append(msg)

    def next_message(self):
        """The next message (blocking); shutdown once stdin is closed: Lectern is gone or stopping."""
        self._parse()
        while not self.ahead:
            if not self._read(True):
                return {"type": "shutdown"}
            self._parse()
        return self.ahead.popleft()

    def is_cancelled(self, request_id):
        """Whether Lectern cancelled this request (its client went away); reads what has arrived."""
        while self._read(False):
            pass
        self._parse()
        return request_id in self.cancelled

    def send(self, msg):
        self.out.write(json.dumps(msg, separators=(",", ":")) + "\n")

    def answer(self, req, result):
        if isinstance(result, Exception):
            self.send({"type": "error", "id": req["id"], "message": str(result) or type(result).__name__, "input": isinstance(result, InputError)})
            return
        if not isinstance(result, Speech):
            self.send({"type": "error", "id": req["id"], "message": f"synthesize_batch returned {type(result).__name__}, not Speech"})
            return
        data = result.wav_bytes if result.wav_bytes is not None else wav_bytes(result.samples, result.sample_rate)
        if self.audio_base64:
            msg = {"type": "result", "id": req["id"], "audio_base64": base64.b64encode(data).decode("ascii")}
        else:
            with open(req["output"], "wb") as f:
                f.write(data)
            msg = {"type": "result", "id": req["id"], "audio": req["output"]}
        if result.words is not None:
            msg["words"] = result.words
        self.send(msg)


_proto = None


def is_cancelled(request_id):
    """For a long synthesize_batch: whether Lectern cancelled this request (its client went
    away) since the batch started; a cancelled request may be answered with an Exception."""
    return _proto is not None and _proto.is_cancelled(request_id)


def serve(capabilities=None, load=None, synthesize=None, audio_base64=False):
    """Runs the protocol until Lectern sends shutdown or closes stdin. The test adapter
    (test/helpers/espeak-pitch-rate-adapter.py) calls this with its own functions.
    audio_base64: send audio inline instead of writing the output file (for a process that
    cannot write to Lectern's scratch folder, e.g. in another container)."""
    capabilities = capabilities or CAPABILITIES
    load = load or load_model
    synthesize = synthesize or synthesize_batch
    global _proto
    proto = _proto = Protocol(audio_base64)
    init = proto.next_message()
    if init.get("type") != "init":
        proto.send({"type": "error", "message": f"expected init, got {init.get('type')}"})
        return 1
    if init.get("protocol") != PROTOCOL:
        proto.send({"type": "error", "message": f"this adapter speaks protocol {PROTOCOL}, Lectern sent {init.get('protocol')}"})
        return 1
    try:
        model = load(init)
    except Exception as e:  # a missing model file, no GPU, ...: say why at start-up
        traceback.print_exc()
        proto.send({"type": "error", "message": f"loading the model failed: {type(e).__name__}: {e}"})
        return 1
    proto.send({"type": "hello", "protocol": PROTOCOL, **capabilities})
    while True:
        msg = proto.next_message()
        kind = msg.get("type")
        if kind == "shutdown":
            return 0
        if kind != "synthesize":
            print(f"adapter: ignoring message type {kind!r}", file=sys.stderr)
            continue
        live = []
        for req in msg["requests"]:
            if proto.is_cancelled(req["id"]):
                proto.send({"type": "error", "id": req["id"], "message": "cancelled"})
            else:
                live.append(req)
        if not live:
            continue
        try:
            results = synthesize(model, live)
            if len(results) != len(live):
                raise RuntimeError(f"synthesize_batch returned {len(results)} results for {len(live)} requests")
        except Exception as e:
            traceback.print_exc()
            results = [e] * len(live)
        for req, result in zip(live, results):
            proto.answer(req, result)
        proto.cancelled.difference_update(r["id"] for r in msg["requests"])


if __name__ == "__main__":
    sys.exit(serve())
