// The lip-sync job table through HTTP, driven by the real `command` provider: a small shell
// script that muxes the narration onto the looped reference video with ffmpeg (preset
// "mux"), or sleeps in steps first (preset "slow") so running-state cancellation is observable.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffprobe } from '../src/media/ffmpeg.ts';
import { startTestGpuServer, type RunningGpuServer } from './helpers/gpu-server-fixture.ts';

const AUDIO = 'test/fixtures/speech/sense_and_sensibility_01_austen_64kb-0880.wav';
const VIDEO = 'test/fixtures/video/presenter.mp4';

interface View {
  lipsync_id: string;
  status: string;
  elapsed: number;
  error: string | null;
  cancel_requested: boolean;
  preset: string;
  provider: string;
}

describe('GPU server lip-sync job table (command provider)', () => {
  let s: RunningGpuServer;
  let marker: string;
  let scripts: string;

  beforeAll(async () => {
    scripts = mkdtempSync(path.join(os.tmpdir(), 'lectern-lipsync-cmd-'));
    marker = path.join(scripts, 'slow-started');
    const script = path.join(scripts, 'lipsync.sh');
    writeFileSync(
      script,
      [
        '#!/bin/sh',
        'audio="$1"; video="$2"; out="$3"; preset="$4"',
        `if [ "$preset" = slow ]; then touch '${marker}'; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; fi`,
        'exec ffmpeg -hide_banner -loglevel error -nostdin -y -stream_loop -1 -i "$video" -i "$audio" -map 0:v -map 1:a -c:v copy -c:a aac -shortest "$out"',
      ].join('\n'),
    );
    s = await startTestGpuServer({
      lipsyncCommand: `sh '${script}' {audio} {video} {output} {preset}`,
      lipsyncCommandPresets: ['mux', 'slow'],
      lipsyncTtlMs: 60_000,
    });
  });
  afterAll(async () => {
    await s?.close();
    rmSync(scripts, { recursive: true, force: true });
  });

  const submit = async (preset: string, audio = AUDIO, video = VIDEO) => {
    const form = new FormData();
    form.set('audio', new Blob([readFileSync(audio)]), path.basename(audio));
    form.set('reference_video', new Blob([readFileSync(video)]), path.basename(video));
    form.set('lipsync_preset', preset);
    return fetch(`${s.url}/lipsync`, { method: 'POST', body: form });
  };
  const get = async (id: string) => (await (await fetch(`${s.url}/lipsync/${id}`)).json()) as View;
  const until = async (id: string, pred: (v: View) => boolean, ms = 20_000) => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await get(id);
      if (pred(v)) return v;
      if (Date.now() > end) throw new Error(`timed out; last ${JSON.stringify(v)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const jobDir = (id: string) => path.join(s.tmp, 'data', 'lipsync', id);

  it('advertises lipsync and its presets in /health', async () => {
    const h = (await (await fetch(`${s.url}/health`)).json()) as Record<string, unknown>;
    expect(h.capabilities).toContain('lipsync');
    expect(h.lipsync_presets).toEqual(['mux', 'slow']);
    expect(h.lipsync_active_provider).toBe('command');
  });

  it('queues at once, runs, returns the MP4, and DELETE removes record and file', async () => {
    const t0 = performance.now();
    const res = await submit('mux');
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(res.status).toBe(202);
    const handle = (await res.json()) as { lipsync_id: string; status: string };
    expect(handle.status).toBe('queued');
    const done = await until(handle.lipsync_id, (v) => v.status === 'done' || v.status === 'failed');
    expect(done.error).toBeNull();
    expect(done.status).toBe('done');
    expect(done.elapsed).toBeGreaterThan(0);
    expect(done).toMatchObject({ provider: 'command', preset: 'mux' });

    const mp4 = await fetch(`${s.url}/lipsync/${handle.lipsync_id}/result`);
    expect(mp4.status).toBe(200);
    expect(mp4.headers.get('content-type')).toBe('video/mp4');
    const out = path.join(s.tmp, 'fetched.mp4');
    writeFileSync(out, Buffer.from(await mp4.arrayBuffer()));
    const probe = await ffprobe(out);
    expect(probe.streams.map((x) => x.codec_type).sort()).toEqual(['audio', 'video']);
    expect(probe.durationSeconds).toBeGreaterThan(2.5);

    expect(existsSync(path.join(jobDir(handle.lipsync_id), 'result.mp4'))).toBe(true);
    const del = await fetch(`${s.url}/lipsync/${handle.lipsync_id}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(existsSync(jobDir(handle.lipsync_id))).toBe(false);
    expect((await fetch(`${s.url}/lipsync/${handle.lipsync_id}`)).status).toBe(404);
    expect((await fetch(`${s.url}/lipsync/${handle.lipsync_id}`, { method: 'DELETE' })).status).toBe(404);
  });

  it('409 on an early result; cancel: queued → cancelled at once, running → recorded, result discarded when the generator exits', async () => {
    const slow = (await (await submit('slow')).json()) as { lipsync_id: string };
    const queued = (await (await submit('mux')).json()) as { lipsync_id: string }; // concurrency 1: waits behind slow
    await until(slow.lipsync_id, (v) => v.status === 'running');
    for (let i = 0; i < 100 && !existsSync(marker); i++) await new Promise((r) => setTimeout(r, 50));

    const early = await fetch(`${s.url}/lipsync/${slow.lipsync_id}/result`);
    expect(early.status).toBe(409);
    expect(((await early.json()) as { detail: string }).detail).toMatch(/running, not done/);
    expect((await get(queued.lipsync_id)).status).toBe('queued');
    expect((await fetch(`${s.url}/lipsync/${queued.lipsync_id}/result`)).status).toBe(409);

    const cq = (await (await fetch(`${s.url}/lipsync/${queued.lipsync_id}/cancel`, { method: 'POST' })).json()) as View;
    expect(cq.status).toBe('cancelled');

    const t0 = performance.now();
    const cr = (await (await fetch(`${s.url}/lipsync/${slow.lipsync_id}/cancel`, { method: 'POST' })).json()) as View;
    expect(cr.cancel_requested).toBe(true);
    const after = await until(slow.lipsync_id, (v) => v.status !== 'running', 5000);
    expect(after.status).toBe('cancelled');
    expect(performance.now() - t0).toBeLessThan(3000); // the process group was killed, not waited out (30 s)
    expect(existsSync(path.join(jobDir(slow.lipsync_id), 'result.mp4'))).toBe(false);
    expect((await fetch(`${s.url}/lipsync/${slow.lipsync_id}/result`)).status).toBe(409);
    // the queued job never ran
    expect((await get(queued.lipsync_id)).status).toBe('cancelled');

    const m = await s.metric('lectern_gpu_lipsync_jobs', { state: 'cancelled' });
    expect(m).toBeGreaterThanOrEqual(2);
  });

  it('rejects bad submissions with 4xx and unknown ids with 404', async () => {
    const notVideo = await submit('mux', AUDIO, AUDIO);
    expect(notVideo.status).toBe(415);
    expect(((await notVideo.json()) as { detail: string }).detail).toMatch(/reference_video/);
    const badPreset = await submit('ultra');
    expect(badPreset.status).toBe(422);
    const form = new FormData();
    form.set('audio', new Blob([readFileSync(AUDIO)]), 'a.wav');
    const missing = await fetch(`${s.url}/lipsync`, { method: 'POST', body: form });
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { detail: string }).detail).toMatch(/reference_video/);
    const other = new FormData();
    other.set('audio', new Blob([readFileSync(AUDIO)]), 'a.wav');
    other.set('reference_video', new Blob([readFileSync(VIDEO)]), 'v.mp4');
    other.set('provider', 'wav2lip');
    expect((await fetch(`${s.url}/lipsync`, { method: 'POST', body: other })).status).toBe(422);
    expect((await fetch(`${s.url}/lipsync/nope`)).status).toBe(404);
    expect((await fetch(`${s.url}/lipsync/nope/cancel`, { method: 'POST' })).status).toBe(404);
    expect((await fetch(`${s.url}/lipsync/nope/result`)).status).toBe(404);
  });
});

describe('lip-sync TTL eviction', () => {
  it('removes a finished, unfetched job and its files after the TTL', async () => {
    const s = await startTestGpuServer({ lipsyncCommand: 'cp {video} {output}', lipsyncTtlMs: 400 });
    try {
      const form = new FormData();
      form.set('audio', new Blob([readFileSync(AUDIO)]), 'a.wav');
      form.set('reference_video', new Blob([readFileSync(VIDEO)]), 'v.mp4');
      const { lipsync_id } = (await (await fetch(`${s.url}/lipsync`, { method: 'POST', body: form })).json()) as { lipsync_id: string };
      let status = '';
      for (let i = 0; i < 100 && status !== 'done'; i++) {
        status = ((await (await fetch(`${s.url}/lipsync/${lipsync_id}`)).json()) as View).status;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(status).toBe('done');
      const dir = path.join(s.tmp, 'data', 'lipsync', lipsync_id);
      expect(existsSync(dir)).toBe(true);
      await new Promise((r) => setTimeout(r, 700));
      expect((await fetch(`${s.url}/lipsync/${lipsync_id}`)).status).toBe(404);
      expect(existsSync(dir)).toBe(false);
    } finally {
      await s.close();
    }
  });
});
