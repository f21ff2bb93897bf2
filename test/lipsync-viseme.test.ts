// The viseme lip-sync provider on the real presenter video with real narration (jfk.wav):
// real face models on onnxruntime, real ffmpeg, the real native addon, and the real GPU
// server's /lipsync. Sync is measured, not assumed: the mouth opening read back from the
// landmarks of the OUTPUT frames must follow the narration's loudness far better than the
// reference video's own mouth does.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpeg, ffprobe } from '../src/media/ffmpeg.ts';
import { createLipsyncProvider, installedLipsyncProviders } from '../src/speech/lipsync/providers.ts';
import { LipsyncAbortedError, type LipsyncProvider } from '../src/speech/lipsync/types.ts';
import { createVisemeProvider, visemeUnavailableReason } from '../src/speech/lipsync/viseme.ts';
import { FaceTracker, type Landmarks } from '../src/speech/lipsync/viseme/face.ts';
import { FRAME_BATCH, pingPong } from '../src/speech/lipsync/viseme/generate.ts';
import { mouthOpeningTrack, narrationEnvelope, pearson, type OpeningTrack } from '../src/speech/lipsync/viseme/measure.ts';
import { readFrames } from '../src/speech/lipsync/viseme/video.ts';
import { phonemeShape } from '../src/speech/lipsync/viseme/phonemes.ts';
import { createEspeakBackend } from '../src/speech/tts/espeak.ts';
import { encodeWav } from '../src/media/wav.ts';
import type { VisemeRequest } from '../src/speech/lipsync/viseme.ts';
import { startTestGpuServer, tempModelsDir } from './helpers/gpu-server-fixture.ts';

const VIDEO = 'test/fixtures/video/presenter.mp4';
const NARRATION = 'test/fixtures/speech/jfk.wav'; // 11 s of real speech with pauses
const SHORT = 'test/fixtures/speech/sense_and_sensibility_01_austen_64kb-0890.wav'; // 3 s
const W = 480;
const H = 270;

async function frames(file: string, fps: number, max: number): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const f of readFrames(file, W, H, fps, max)) out.push(f);
  return out;
}

describe('viseme lip-sync provider', () => {
  let dir: string;
  let provider: LipsyncProvider;
  let out: string;
  let outTrack: OpeningTrack;
  let refTrack: OpeningTrack;
  let envelope: Float32Array;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'lectern-viseme-'));
    provider = await createLipsyncProvider('viseme', { modelsDir: 'models', device: 'cpu' });
    out = path.join(dir, 'out.mp4');
    await provider.generate({ audioPath: NARRATION, referenceVideoPath: VIDEO, outputPath: out, preset: 'fast' }, new AbortController().signal);
    outTrack = await mouthOpeningTrack(out, 'models');
    refTrack = await mouthOpeningTrack(VIDEO, 'models');
    envelope = await narrationEnvelope(NARRATION, outTrack.fps, outTrack.opening.length);
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is installed with the face models, ffmpeg and the addon, and lists its presets', () => {
    expect(visemeUnavailableReason('models')).toBeNull();
    expect(installedLipsyncProviders({ modelsDir: 'models', device: 'cpu' })).toContain('viseme');
    expect(provider.name).toBe('viseme');
    expect(provider.presets()).toEqual(['fast', 'quality']);
  });

  it('names the missing face model instead of running without it', () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'lectern-viseme-empty-'));
    try {
      expect(visemeUnavailableReason(empty)).toMatch(/ultraface-version-RFB-320\.onnx is missing/);
      expect(installedLipsyncProviders({ modelsDir: empty, device: 'cpu' })).not.toContain('viseme');
      expect(() => createVisemeProvider({ modelsDir: empty })).toThrow(/face model .* is missing/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('writes H.264/AAC as long as the narration (within two frames)', async () => {
    const p = await ffprobe(out);
    const v = p.streams.find((s) => s.codec_type === 'video')!;
    const a = p.streams.find((s) => s.codec_type === 'audio')!;
    expect(v.codec_name).toBe('h264');
    expect(a.codec_name).toBe('aac');
    expect([v.width, v.height]).toEqual([W, H]);
    const narration = (await ffprobe(NARRATION)).durationSeconds;
    const fps = outTrack.fps;
    expect(Math.abs(Number(v.nb_frames) / fps - narration)).toBeLessThanOrEqual(2 / fps);
    expect(Math.abs(Number(v.duration) - narration)).toBeLessThanOrEqual(2 / fps);
  });

  it('keeps a face in every output frame', () => {
    expect(outTrack.opening.length).toBeGreaterThan(300);
    expect(outTrack.facesFound).toBe(outTrack.opening.length);
  });

  it("moves the mouth with the narration: output opening follows the speech envelope far better than the reference's own", () => {
    const n = outTrack.opening.length;
    const refOpen = Array.from({ length: n }, (_, f) => refTrack.opening[pingPong(f, refTrack.opening.length)]!);
    const rOut = pearson(outTrack.opening, envelope);
    const rRef = pearson(refOpen, envelope);
    expect(rOut).toBeGreaterThan(0.6);
    expect(rOut - rRef).toBeGreaterThan(0.4);
    // Open while speaking, closed in the pauses.
    const sorted = Float32Array.from(envelope).sort();
    const loud = sorted[Math.floor(n * 0.75)]!, quiet = sorted[Math.floor(n * 0.25)]!;
    const mean = (pick: (e: number) => boolean) => {
      let s = 0, k = 0;
      for (let i = 0; i < n; i++) if (pick(envelope[i]!)) { s += outTrack.opening[i]!; k++; }
      return s / k;
    };
    expect(mean((e) => e >= loud)).toBeGreaterThan(3 * mean((e) => e <= quiet));
  });

  it('changes the mouth region with speech and nothing outside the face beyond encoding noise', async () => {
    const fps = outTrack.fps;
    const ref = await frames(VIDEO, fps, 120);
    const got = await frames(out, fps, outTrack.opening.length);
    const tracker = await FaceTracker.create('models');
    try {
      // Frames in speech (loudest) and a face box from the reference frame each was made from.
      const order = Array.from(envelope.keys()).sort((a, b) => envelope[b]! - envelope[a]!);
      let inside = 0, outside = 0, nIn = 0, nOut = 0, worstOutside = 0;
      for (const f of order.slice(0, 12)) {
        const r = ref[pingPong(f, ref.length)]!;
        const o = got[f]!;
        const lm = (await tracker.landmarks({ data: r, width: W, height: H })) as Landmarks;
        let x0 = W, y0 = H, x1 = 0, y1 = 0;
        for (let i = 0; i < 468; i++) {
          x0 = Math.min(x0, lm[i * 2]!); x1 = Math.max(x1, lm[i * 2]!);
          y0 = Math.min(y0, lm[i * 2 + 1]!); y1 = Math.max(y1, lm[i * 2 + 1]!);
        }
        const mx = (x1 - x0) * 0.15, my = (y1 - y0) * 0.35; // the chin may drop below the mesh box
        const mouth = { x0: lm[61 * 2]! - 2, x1: lm[291 * 2]! + 2, y0: lm[13 * 2 + 1]! - 3, y1: lm[14 * 2 + 1]! + 8 };
        let frameOutside = 0, frameN = 0;
        for (let y = 0; y < H; y++) {
          for (let x = 0; x < W; x++) {
            const p = (y * W + x) * 4;
            const d = (Math.abs(r[p]! - o[p]!) + Math.abs(r[p + 1]! - o[p + 1]!) + Math.abs(r[p + 2]! - o[p + 2]!)) / 3;
            if (x >= mouth.x0 && x <= mouth.x1 && y >= mouth.y0 && y <= mouth.y1) { inside += d; nIn++; }
            if (x < x0 - mx || x > x1 + mx || y < y0 - my || y > y1 + my) { frameOutside += d; frameN++; }
          }
        }
        outside += frameOutside;
        nOut += frameN;
        worstOutside = Math.max(worstOutside, frameOutside / frameN);
      }
      const mIn = inside / nIn, mOut = outside / nOut;
      expect(mOut).toBeLessThan(2.5); // x264 at CRF 23 on a re-encode of the same frames
      expect(worstOutside).toBeLessThan(3.5);
      expect(mIn).toBeGreaterThan(6 * mOut);
      expect(mIn).toBeGreaterThan(12);
    } finally {
      await tracker.release();
    }
  }, 60_000);

  it('stops within one frame batch of a cancel and leaves no output', async () => {
    const cancelled = path.join(dir, 'cancelled.mp4');
    const ac = new AbortController();
    // jfk four times over (44 s): on an idle machine one jfk was made before the cancel came.
    const long = path.join(dir, 'jfk-x4.wav');
    await ffmpeg(['-y', '-stream_loop', '3', '-i', NARRATION, '-c', 'copy', long]);
    const t0 = performance.now();
    const run = provider.generate({ audioPath: long, referenceVideoPath: VIDEO, outputPath: cancelled, preset: 'quality' }, ac.signal);
    await new Promise((r) => setTimeout(r, 2500)); // into the frame loops
    const tAbort = performance.now();
    ac.abort();
    await expect(run).rejects.toBeInstanceOf(LipsyncAbortedError);
    const stopMs = performance.now() - tAbort;
    // One batch is FRAME_BATCH frames, a few tens of ms each on two shared cores.
    expect(stopMs).toBeLessThan(FRAME_BATCH * 100);
    expect(tAbort - t0).toBeLessThan(10_000); // it was still running when cancelled
    expect(existsSync(cancelled)).toBe(false);
    await expect(provider.generate({ audioPath: NARRATION, referenceVideoPath: VIDEO, outputPath: cancelled, preset: 'fast' }, AbortSignal.abort())).rejects.toBeInstanceOf(LipsyncAbortedError);
  }, 30_000);

  it("with eSpeak's phoneme timings: lips close on p/b/m and open on open vowels", async () => {
    const tts = await createEspeakBackend({} as Parameters<typeof createEspeakBackend>[0]);
    const [syn] = await tts.synthesize([{ text: 'Mama bought a big map of Panama, and a cup of apple pie.', language: 'en-US', voice: null }]);
    await (tts as { close?: () => Promise<void> }).close?.();
    const wav = path.join(dir, 'espeak.wav');
    writeFileSync(wav, encodeWav(syn!.samples, syn!.sampleRate));
    const phonemes = syn!.phonemes!;
    expect(phonemes.length).toBeGreaterThan(20);
    const file = path.join(dir, 'phonemes.mp4');
    const req: VisemeRequest = { audioPath: wav, referenceVideoPath: VIDEO, outputPath: file, preset: 'fast', phonemes };
    await provider.generate(req, new AbortController().signal);
    const track = await mouthOpeningTrack(file, 'models');
    expect(track.facesFound).toBe(track.opening.length);
    // Frames at the middle of each phoneme, grouped by its target: closed (p b m) vs open (≥ 0.75).
    const at = (p: { start: number; end: number }) => track.opening[Math.round(((p.start + p.end) / 2) * track.fps)]!;
    const closed = phonemes.filter((p) => phonemeShape(p.phoneme).open === 0 && p.end - p.start > 0.04).map(at);
    const open = phonemes.filter((p) => phonemeShape(p.phoneme).open >= 0.75 && p.end - p.start > 0.04).map(at);
    expect(closed.length).toBeGreaterThanOrEqual(5);
    expect(open.length).toBeGreaterThanOrEqual(5);
    const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
    expect(mean(open)).toBeGreaterThan(1.5 * mean(closed)); // measured: about 0.26 vs 0.13
    expect(mean(open) - mean(closed)).toBeGreaterThan(0.07);
  }, 60_000);

  it('rejects an unknown preset and a video without a face', async () => {
    await expect(provider.generate({ audioPath: SHORT, referenceVideoPath: VIDEO, outputPath: path.join(dir, 'x.mp4'), preset: 'ultra' }, new AbortController().signal)).rejects.toThrow(/unknown viseme preset "ultra"/);
    const blank = path.join(dir, 'blank.mp4');
    const { ffmpeg } = await import('../src/media/ffmpeg.ts');
    await ffmpeg(['-y', '-f', 'lavfi', '-i', 'color=c=gray:s=320x240:d=1:r=25', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', blank]);
    await expect(provider.generate({ audioPath: SHORT, referenceVideoPath: blank, outputPath: path.join(dir, 'y.mp4'), preset: 'fast' }, new AbortController().signal)).rejects.toThrow(/no face was found/);
  }, 30_000);
});

describe('viseme provider through the real GPU server /lipsync', () => {
  it('is chosen by auto when the face models are installed and returns a lip-synced MP4', async () => {
    const models = tempModelsDir();
    mkdirSync(path.join(models, 'face'));
    for (const f of ['ultraface-version-RFB-320.onnx', 'facemesh_face_landmark_barracuda.onnx']) copyFileSync(path.join('models/face', f), path.join(models, 'face', f));
    const s = await startTestGpuServer({ modelsDir: models, lipsyncProvider: 'auto', lipsyncTtlMs: 60_000 });
    try {
      const h = (await (await fetch(`${s.url}/health`)).json()) as Record<string, unknown>;
      expect(h.capabilities).toContain('lipsync');
      expect(h.lipsync_active_provider).toBe('viseme');
      expect(h.lipsync_presets).toEqual(['fast', 'quality']);

      const form = new FormData();
      form.set('audio', new Blob([readFileSync(SHORT)]), 'narration.wav');
      form.set('reference_video', new Blob([readFileSync(VIDEO)]), 'presenter.mp4');
      form.set('lipsync_preset', 'fast');
      const res = await fetch(`${s.url}/lipsync`, { method: 'POST', body: form });
      expect(res.status).toBe(202);
      const { lipsync_id: id } = (await res.json()) as { lipsync_id: string };
      let v: { status: string; error: string | null; provider: string } = { status: 'queued', error: null, provider: '' };
      for (const end = Date.now() + 60_000; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
        v = (await (await fetch(`${s.url}/lipsync/${id}`)).json()) as typeof v;
        if (v.status === 'done' || v.status === 'failed') break;
      }
      expect(v).toMatchObject({ status: 'done', error: null, provider: 'viseme' });
      const mp4 = await fetch(`${s.url}/lipsync/${id}/result`);
      expect(mp4.status).toBe(200);
      const file = path.join(s.tmp, 'fetched.mp4');
      writeFileSync(file, Buffer.from(await mp4.arrayBuffer()));
      const p = await ffprobe(file);
      expect(p.streams.map((x) => x.codec_name).sort()).toEqual(['aac', 'h264']);
      expect(Math.abs(p.durationSeconds - (await ffprobe(SHORT)).durationSeconds)).toBeLessThan(0.1);
      const track = await mouthOpeningTrack(file, 'models');
      expect(track.facesFound).toBe(track.opening.length);
      expect(pearson(track.opening, await narrationEnvelope(SHORT, track.fps, track.opening.length))).toBeGreaterThan(0.5);
    } finally {
      await s.close();
      rmSync(models, { recursive: true, force: true });
    }
  }, 90_000);
});
