// The onnx lip-sync provider's pre- and post-processing, run end to end with a tiny
// Wav2Lip-shaped ONNX graph the test builds itself ("tiny test lip-sync model": no real
// neural model exists on this machine), on the real presenter clip and real speech; and the
// provider's absence: not listed, and a clear error naming the file (422 at the GPU server).
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeAudio } from '../src/media/ffmpeg.ts';
import { createLipsyncProvider, installedLipsyncProviders, LipsyncUnavailableError } from '../src/speech/lipsync/providers.ts';
import { faceInput, melWindow, MEL_BINS, ONNX_PRESETS, wav2lipMel } from '../src/speech/lipsync/onnx/generate.ts';
import { speechEnvelope } from '../src/speech/lipsync/viseme/audio.ts';
import { readFrames } from '../src/speech/lipsync/viseme/video.ts';
import { FaceTracker } from '../src/speech/lipsync/viseme/face.ts';
import { startTestGpuServer, tempModelsDir } from './helpers/gpu-server-fixture.ts';
import { tinyLipsyncModel } from './helpers/lipsync-tiny-onnx.ts';

const VIDEO = 'test/fixtures/video/presenter.mp4';
const SPEECH = 'test/fixtures/speech/jfk.wav';
const W = 480, H = 270;

function modelsDir(withModel: boolean): string {
  const dir = tempModelsDir(); // with the GPU server's tiny speech test model
  mkdirSync(path.join(dir, 'face'));
  for (const f of ['ultraface-version-RFB-320.onnx', 'facemesh_face_landmark_barracuda.onnx']) copyFileSync(path.join('models/face', f), path.join(dir, 'face', f));
  if (withModel) {
    mkdirSync(path.join(dir, 'lipsync/tiny'), { recursive: true });
    writeFileSync(path.join(dir, 'lipsync/tiny/tiny.onnx'), tinyLipsyncModel());
    writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ models: [{ name: 'tiny-test-lipsync', task: 'lipsync', files: ['lipsync/tiny/tiny.onnx'], lipsync: { channel_order: 'rgb' } }] }));
  }
  return dir;
}

const corr = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  const n = Math.min(a.length, b.length);
  let ma = 0, mb = 0;
  for (let i = 0; i < n; i++) (ma += a[i]!), (mb += b[i]!);
  ma /= n;
  mb /= n;
  let sab = 0, saa = 0, sbb = 0;
  for (let i = 0; i < n; i++) (sab += (a[i]! - ma) * (b[i]! - mb)), (saa += (a[i]! - ma) ** 2), (sbb += (b[i]! - mb) ** 2);
  return sab / Math.sqrt(saa * sbb);
};

describe('onnx lip-sync provider (tiny test lip-sync model)', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('mel windows: silence reads −4, speech rises; windows start at 80·f/fps and clamp at the end', async () => {
    const silence = wav2lipMel(new Float32Array(16000));
    expect(silence.frames).toBeGreaterThanOrEqual(80);
    expect(Math.max(...silence.data)).toBe(-4);
    const speech = wav2lipMel(await decodeAudio(SPEECH, 16000));
    expect(Math.max(...speech.data)).toBeGreaterThan(0);
    const out = new Float32Array(MEL_BINS * 16);
    melWindow(speech, 25, 25, 16, out, 0); // 1 s in → mel frame 80
    expect(out[3 * 16 + 5]).toBe(speech.data[(80 + 5) * MEL_BINS + 3]);
    melWindow(speech, 1e6, 25, 16, out, 0); // past the end → the last full window
    expect(out[16 - 1]).toBe(speech.data[(speech.frames - 1) * MEL_BINS]);
  });

  it('face input: crop of the face box, lower half blanked in channels 0–2, whole in 3–5', () => {
    const frame = new Uint8Array(8 * 8 * 4).map((_, i) => (i % 4 === 3 ? 255 : 200));
    const out = new Float32Array(6 * 4 * 4);
    faceInput(frame, 8, { x0: 2, y0: 2, x1: 6, y1: 6 }, 4, 'rgb', out, 0);
    const plane = 16;
    expect(out[0 * plane + 0]).toBeCloseTo(200 / 255); // upper half kept
    expect(out[0 * plane + 2 * 4 + 1]).toBe(0); // lower half blank
    expect(out[3 * plane + 3 * 4 + 3]).toBeCloseTo(200 / 255); // reference whole
  });

  it('is listed and auto-picked only when installed; absent, it names the file and where it goes (GPU server: 422)', async () => {
    const without = modelsDir(false);
    dirs.push(without);
    expect(installedLipsyncProviders({ modelsDir: without, device: 'cpu' })).toEqual(['viseme']);
    await expect(createLipsyncProvider('onnx', { modelsDir: without, device: 'cpu' })).rejects.toThrow(LipsyncUnavailableError);
    await expect(createLipsyncProvider('onnx', { modelsDir: without, device: 'cpu' })).rejects.toThrow(path.join(without, 'lipsync/wav2lip/wav2lip.onnx'));
    const withModel = modelsDir(true);
    dirs.push(withModel);
    expect(installedLipsyncProviders({ modelsDir: withModel, device: 'cpu' })).toEqual(['onnx', 'viseme']);

    const s = await startTestGpuServer({ modelsDir: without, lipsyncProvider: 'auto' });
    try {
      const form = new FormData();
      form.set('audio', new Blob([readFileSync(SPEECH)]), 'a.wav');
      form.set('reference_video', new Blob([readFileSync(VIDEO)]), 'v.mp4');
      form.set('provider', 'onnx');
      const res = await fetch(`${s.url}/lipsync`, { method: 'POST', body: form });
      expect(res.status).toBe(422);
      const body = (await res.json()) as { detail: string };
      expect(body.detail).toContain(path.join(without, 'lipsync/wav2lip/wav2lip.onnx'));
      expect(body.detail).toMatch(/manifest\.json/);
    } finally {
      await s.close();
    }
  });

  it('generates: the face box is re-rendered from the model output, the mouth follows the mel, nothing else changes', async () => {
    const dir = modelsDir(true);
    dirs.push(dir);
    const provider = await createLipsyncProvider('onnx', { modelsDir: dir, device: 'cpu' });
    expect(provider.name).toBe('onnx');
    expect(provider.presets()).toEqual(Object.keys(ONNX_PRESETS));
    const out = path.join(dir, 'out.mp4');
    await provider.generate({ audioPath: SPEECH, referenceVideoPath: VIDEO, outputPath: out, preset: 'fast' }, new AbortController().signal);

    const fps = 30000 / 1001;
    const gen: Uint8Array[] = [];
    for await (const f of readFrames(out, W, H, fps, 120)) gen.push(f);
    const ref: Uint8Array[] = [];
    for await (const f of readFrames(VIDEO, W, H, fps, 120)) ref.push(f);
    expect(gen.length).toBe(120);
    // Where the face is, from the reference frame itself.
    const tracker = await FaceTracker.create(dir);
    const lm = (await tracker.landmarks({ data: ref[0]!, width: W, height: H }))!;
    await tracker.release();
    let x0 = W, x1 = 0, y0 = H, y1 = 0;
    for (let i = 0; i < lm.length; i += 2) (x0 = Math.min(x0, lm[i]!)), (x1 = Math.max(x1, lm[i]!)), (y0 = Math.min(y0, lm[i + 1]!)), (y1 = Math.max(y1, lm[i + 1]!));
    const luma = (f: Uint8Array, ax: number, ay: number, bx: number, by: number) => {
      let s = 0, n = 0;
      for (let y = Math.floor(ay); y < by; y++) for (let x = Math.floor(ax); x < bx; x++, n++) s += 0.3 * f[(y * W + x) * 4]! + 0.59 * f[(y * W + x) * 4 + 1]! + 0.11 * f[(y * W + x) * 4 + 2]!;
      return s / n;
    };
    const fw = x1 - x0, fh = y1 - y0;
    // Mouth region (lower middle of the face box) per frame vs the speech level.
    const mouth = gen.map((f) => luma(f, x0 + 0.35 * fw, y0 + 0.68 * fh, x0 + 0.65 * fw, y0 + 0.85 * fh));
    const env = speechEnvelope(await decodeAudio(SPEECH, 16000), 16000, fps, gen.length);
    expect(corr(mouth, env)).toBeGreaterThan(0.5);
    // Outside the face box: the reference, within encoding noise (frames ping-pong, 120 < reference length).
    const far = gen.map((f, i) => Math.abs(luma(f, 0, 0, Math.max(8, x0 - 20), H) - luma(ref[i]!, 0, 0, Math.max(8, x0 - 20), H)));
    expect(Math.max(...far)).toBeLessThan(2);
  }, 120_000);
});
