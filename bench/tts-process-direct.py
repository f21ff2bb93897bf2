#!/usr/bin/env python3
"""Baseline for bench/tts-process.bench.ts: the same model process code called directly in a
loop, with no protocol. Loads a model adapter module (its load_model + synthesize_batch),
then for each stdin line "RUN n batch" synthesizes n requests in batches of `batch`, exactly
the requests the protocol case sends, and answers "DONE <seconds>" (time inside the loop).
Usage: python3 tts-process-direct.py ADAPTER.py REQUESTS.json
"""

import importlib.util
import json
import sys
import time

adapter_path, requests_path = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("model_adapter", adapter_path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
requests = json.load(open(requests_path))
model = mod.load_model({"type": "init", "protocol": 1, "slot": 0, "slots": 1, "device": "cpu", "scratch_dir": "/tmp"})
print("READY", flush=True)
for line in sys.stdin:
    _, n, batch = line.split()
    n, batch = int(n), int(batch)
    t0 = time.perf_counter()
    for i in range(0, n, batch):
        chunk = [dict(requests[(i + k) % len(requests)], id=f"d{i + k}") for k in range(min(batch, n - i))]
        out = mod.synthesize_batch(model, chunk)
        if any(isinstance(o, Exception) for o in out):
            raise SystemExit(f"direct call failed: {out}")
    print(f"DONE {time.perf_counter() - t0:.6f}", flush=True)
