#!/usr/bin/env python3
"""Test model process for the `process` speech backend: eSpeak NG that follows the
reference clip's measured pitch and speaking rate.

It is not a voice-cloning model (none can be installed here): it measures the clip's median
fundamental frequency (normalised autocorrelation over voiced frames) and its speaking rate
(words of ref_text per second of speech), then picks eSpeak NG's voice variant, pitch (-p)
and speed (-s) whose own measured output matches them. The mapping from -p/-s to Hz and
words per minute is measured at start-up by synthesizing a calibration sentence, so the
adapter does real work on both sides and the tests can check that the audio follows the clip.
It declares voice_cloning because that is what makes Lectern send it reference clips.

It speaks protocol 1 through the reference adapter's loop (examples/tts-process/adapter.py),
so the tests run that code too. A batch runs its eSpeak NG processes in parallel.

Environment (all optional, for tests):
  LECTERN_TEST_ADAPTER_WORDS=1      build the audio word by word and return exact word timings
  LECTERN_TEST_ADAPTER_BASE64=1     return audio inline (audio_base64) instead of files
  LECTERN_TEST_ADAPTER_FAULTS=1     obey [[crash]] [[hang]] [[fail]] [[slow:MS]] [[log:TEXT]] in the text
  LECTERN_TEST_ADAPTER_START=...    exit | error | protocol | slow:MS  (misbehave before the hello)
  LECTERN_TEST_ADAPTER_BATCH_LOG=F  append each batch's size and milliseconds inside synthesize_batch to file F
  LECTERN_TEST_ADAPTER_MAX_BATCH=N  declared max_batch (default 8)
"""

import array
import importlib.util
import json
import math
import operator
import os
import re
import subprocess
import sys
import tempfile
import time
import wave
from itertools import accumulate

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("adapter", os.path.join(HERE, "..", "..", "examples", "tts-process", "adapter.py"))
adapter = importlib.util.module_from_spec(spec)
spec.loader.exec_module(adapter)

ENV = os.environ
FAULTS = ENV.get("LECTERN_TEST_ADAPTER_FAULTS") == "1"
WORDS = ENV.get("LECTERN_TEST_ADAPTER_WORDS") == "1"
SAMPLE_RATE = 22050  # eSpeak NG's output rate
VOICES = {"en": "en-us", "de": "de", "fr": "fr-fr", "es": "es"}
CALIBRATION = "The quick brown fox jumps over the lazy dog while the children watch from the window."
DEFAULT_SPEED = 175

CAPABILITIES = {
    "name": "espeak-pitch-rate",
    "languages": [{"code": "en-US", "name": "English (US)"}, {"code": "de", "name": "German"}, {"code": "fr-FR", "name": "French"}, {"code": "es", "name": "Spanish"}],
    "voice_cloning": True,
    "max_chunk_bytes": 600,
    "sample_rate": SAMPLE_RATE,
    "word_timings": WORDS,
    "max_batch": int(ENV.get("LECTERN_TEST_ADAPTER_MAX_BATCH", "8")),
    # The pitch tracker runs at 8 kHz: ask Lectern for clips at that rate.
    "reference_sample_rate": 8000,
}


# --------------------------------------------------------------------------- measurement


def read_wav(data_or_path):
    """16-bit PCM WAV (path or bytes) → (samples as ints, sample rate). Reads to the end of
    the data even when a streamed header gives a bogus length."""
    import io

    src = io.BytesIO(data_or_path) if isinstance(data_or_path, (bytes, bytearray)) else data_or_path
    with wave.open(src, "rb") as w:
        if w.getsampwidth() != 2:
            raise adapter.InputError("reference clip is not 16-bit PCM")
        ch, sr = w.getnchannels(), w.getframerate()
        raw = w.readframes(w.getnframes())
    a = array.array("h")
    a.frombytes(raw[: len(raw) // 2 * 2])
    if sys.byteorder == "big":
        a.byteswap()
    return (a[::ch] if ch > 1 else a), sr


def analyse(samples, sr, fmin=65.0, fmax=420.0):
    """Median F0 (Hz) over voiced frames and the speech span (s: first to last frame above
    2 % of the loudest frame's energy). Normalised autocorrelation on 30 ms frames every
    20 ms, at about 8 kHz; the shortest lag within 15 % of the best peak wins, which keeps
    the tracker off sub-octaves."""
    step = max(1, int(sr // 8000))
    x = [float(sum(samples[i : i + step])) for i in range(0, len(samples) - step + 1, step)] if step > 1 else [float(v) for v in samples]
    sr = sr / step
    n, hop = int(0.03 * sr), int(0.02 * sr)
    lo, hi = int(sr / fmax), int(sr / fmin) + 1
    sq = [0.0] + list(accumulate(v * v for v in x))
    starts = range(0, max(0, len(x) - n - hi - 1), hop)
    energy = [sq[s + n] - sq[s] for s in starts]
    if not energy or max(energy) <= 0:
        return None, 0.0
    thr = max(energy) * 0.02
    loud = [s for s, e in zip(starts, energy) if e >= thr]
    span = (loud[-1] - loud[0] + n) / sr if loud else 0.0
    f0s = []
    mul = operator.mul
    for s, e0 in zip(starts, energy):
        if e0 < thr:
            continue
        frame = x[s : s + n]
        r = [0.0] * (hi + 2)
        for lag in range(lo - 1, hi + 2):
            el = sq[s + lag + n] - sq[s + lag]
            r[lag] = sum(map(mul, frame, x[s + lag : s + lag + n])) / math.sqrt(e0 * el) if el > 0 else 0.0
        best = max(r[lo : hi + 1])
        if best < 0.6:
            continue
        peaks = [lag for lag in range(lo, hi + 1) if r[lag] >= 0.85 * best and r[lag] >= r[lag - 1] and r[lag] >= r[lag + 1]]
        if not peaks:  # the best is at the edge of the search range: no reliable pitch here
            continue
        pick = peaks[0]
        a, b, c = r[pick - 1], r[pick], r[pick + 1]
        d = a - 2 * b + c
        f0s.append(sr / (pick + (0.5 * (a - c) / d if d else 0.0)))
    f0s.sort()
    return (f0s[len(f0s) // 2] if f0s else None), span


def count_words(text):
    return len([w for w in re.split(r"\s+", text or "") if re.search(r"\w", w)])


# --------------------------------------------------------------------------- eSpeak NG


def espeak_args(voice, pitch=50, speed=DEFAULT_SPEED):
    return ["espeak-ng", "-v", voice, "-p", str(int(round(pitch))), "-s", str(int(round(speed))), "--stdout"]


def run_all(jobs):
    """Runs eSpeak NG once per (args, text), all at once; returns the WAV bytes of each."""
    procs = [subprocess.Popen(args + [text], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for args, text in jobs]
    out = []
    for p in procs:
        data, err = p.communicate()
        if p.returncode != 0:
            raise adapter.InputError(err.decode("utf-8", "replace").strip() or f"espeak-ng exited {p.returncode}")
        out.append(data)
    return out


def calibrate():
    """Measured output pitch of eSpeak NG's male (default) and female (+f3) variants at
    -p 0/33/66/99, and its words per minute at the default speed."""
    points = [0, 33, 66, 99]
    jobs = [(espeak_args(v, p), CALIBRATION) for v in ("en-us", "en-us+f3") for p in points]
    wavs = run_all(jobs)
    table = {"": [], "+f3": []}
    span_default = None
    for (args, _), data in zip(jobs, wavs):
        f0, span = analyse(*read_wav(data))
        variant = "+f3" if args[2].endswith("+f3") else ""
        table[variant].append((f0, int(args[4])))
        if variant == "" and args[4] == "33":
            span_default = span
    wpm_at_default = count_words(CALIBRATION) / span_default * 60.0
    print(f"espeak-pitch-rate: calibrated {json.dumps(table)}; {wpm_at_default:.0f} words/min at -s {DEFAULT_SPEED}", file=sys.stderr)
    return {"pitch": table, "speed_factor": wpm_at_default / DEFAULT_SPEED}


def pitch_setting(cal, target_hz):
    """(variant, -p) whose calibrated output pitch is target_hz, interpolated in log Hz. The
    male variant serves up to where the two ranges meet, the female one above."""
    male, female = cal["pitch"][""], cal["pitch"]["+f3"]
    variant, table = ("", male) if target_hz <= math.sqrt(male[-1][0] * female[0][0]) else ("+f3", female)
    t = math.log(target_hz)
    pts = [(math.log(f), p) for f, p in table]
    if t <= pts[0][0]:
        return variant, 0
    if t >= pts[-1][0]:
        return variant, 99
    for (f1, p1), (f2, p2) in zip(pts, pts[1:]):
        if f1 <= t <= f2:
            return variant, p1 + (p2 - p1) * (t - f1) / (f2 - f1)
    return variant, 50


# --------------------------------------------------------------------------- the model


def load_model(init):
    start = ENV.get("LECTERN_TEST_ADAPTER_START", "")
    if start == "exit":
        print("espeak-pitch-rate: exiting before the hello, as asked", file=sys.stderr)
        sys.stderr.flush()
        os._exit(3)
    if start == "error":
        raise RuntimeError("model file /models/missing.pt not found")
    if start.startswith("slow:"):
        time.sleep(int(start[5:]) / 1000)
    if start == "protocol":
        CAPABILITIES["protocol"] = 99
    subprocess.run(["espeak-ng", "--version"], check=True, capture_output=True)
    return {"calibration": calibrate(), "references": {}}


def follow(model, ref_path, ref_text):
    """The (variant, pitch, speed) that make eSpeak NG follow this clip, measured once per clip."""
    key = (ref_path, ref_text)
    if key not in model["references"]:
        samples, sr = read_wav(ref_path)
        f0, span = analyse(samples, sr)
        words = count_words(ref_text)
        cal = model["calibration"]
        variant, pitch = pitch_setting(cal, f0) if f0 else ("", 50)
        speed = (words / span * 60.0) / cal["speed_factor"] if words and span > 0 else DEFAULT_SPEED
        speed = max(80, min(450, speed))
        print(f"espeak-pitch-rate: clip {os.path.basename(ref_path)}: {f0 or 0:.0f} Hz, {words} words in {span:.2f} s → variant '{variant}' -p {pitch:.0f} -s {speed:.0f}", file=sys.stderr)
        model["references"][key] = (variant, pitch, speed)
    return model["references"][key]


def fault(text):
    if not FAULTS:
        return None
    if "[[crash]]" in text:
        print("espeak-pitch-rate: crashing, as asked", file=sys.stderr)
        sys.stderr.flush()
        os._exit(7)
    if "[[hang]]" in text:
        time.sleep(3600)
    if "[[fail]]" in text:
        return RuntimeError("the model failed, as asked")  # this request only
    m = re.search(r"\[\[slow:(\d+)\]\]", text)
    if m:
        time.sleep(int(m.group(1)) / 1000)
    m = re.search(r"\[\[log:([^\]]*)\]\]", text)
    if m:
        print(f"espeak-pitch-rate: {m.group(1)}", file=sys.stderr)
    return None


def clean(text):
    return re.sub(r"\[\[[^\]]*\]\]", "", text).strip() if FAULTS else text


def pcm_wav(samples, sr):
    """16-bit samples (array 'h') → WAV bytes, with the header's sizes right."""
    import io

    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sr)
        data = array.array("h", samples)
        if sys.byteorder == "big":
            data.byteswap()
        w.writeframes(data.tobytes())
    return buf.getvalue()


def trimmed(samples, sr):
    """(first, last) sample above a small threshold: the word's sounding part."""
    thr = 300
    first = next((i for i, v in enumerate(samples) if abs(v) > thr), 0)
    last = next((i for i in range(len(samples) - 1, -1, -1) if abs(samples[i]) > thr), len(samples) - 1)
    return first, last


def synthesize_batch(model, requests):
    t0 = time.perf_counter()
    results = timed_batch(model, requests)
    log = ENV.get("LECTERN_TEST_ADAPTER_BATCH_LOG")
    if log:  # the batch's size and the time spent here, in the model call
        with open(log, "a") as f:
            f.write(f"{len(requests)} {1000 * (time.perf_counter() - t0):.3f}\n")
    return results


def timed_batch(model, requests):
    results = [fault(r["text"]) for r in requests]
    jobs, owners = [], []
    for i, r in enumerate(requests):
        if results[i] is not None:
            continue
        voice = r["voice"] or VOICES.get(r["language"].split("-")[0].lower())
        if not voice:
            results[i] = adapter.InputError(f"espeak-pitch-rate speaks {', '.join(VOICES)}, not {r['language']}")
            continue
        variant, pitch, speed = follow(model, r["ref_audio"], r["ref_text"]) if r["ref_audio"] else ("", 50, DEFAULT_SPEED)
        args = espeak_args(voice + variant, pitch, speed)
        text = clean(r["text"])
        pieces = text.split() if WORDS else [text]
        for piece in pieces:
            jobs.append((args, piece))
            owners.append(i)
    wavs = run_all(jobs) if jobs else []
    per_request = {}
    for i, data in zip(owners, wavs):
        per_request.setdefault(i, []).append(read_wav(data)[0])
    for i, parts in per_request.items():
        if not WORDS:
            results[i] = adapter.Speech(wav_bytes=pcm_wav(parts[0], SAMPLE_RATE))
            continue
        # Word by word: each word's sounding part, 80 ms apart; its timing is where it landed.
        gap = array.array("h", [0] * int(0.08 * SAMPLE_RATE))
        pcm, words = array.array("h"), []
        for word, samples in zip(clean(requests[i]["text"]).split(), parts):
            a, b = trimmed(samples, SAMPLE_RATE)
            start = len(pcm)
            pcm.extend(samples[a : b + 1])
            words.append({"word": word, "start": start / SAMPLE_RATE, "end": len(pcm) / SAMPLE_RATE})
            pcm.extend(gap)
        results[i] = adapter.Speech(wav_bytes=pcm_wav(pcm, SAMPLE_RATE), words=words)
    return results


if __name__ == "__main__":
    sys.exit(adapter.serve(CAPABILITIES, load_model, synthesize_batch, audio_base64=ENV.get("LECTERN_TEST_ADAPTER_BASE64") == "1"))
