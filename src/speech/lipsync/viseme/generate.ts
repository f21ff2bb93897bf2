// The viseme generator end to end: reference frames → face landmarks → mouth shapes from
// the narration → re-rendered mouths → H.264/AAC MP4. Runs wherever it is called (the
// provider calls it in a worker thread); `cancelled()` is polled between frame batches.
import { decodeAudio } from '../../../media/ffmpeg.ts';
import { LipsyncAbortedError } from '../types.ts';
import type { PhonemeTiming } from '../../types.ts';
import { AUDIO_RATE, mouthTrack } from './audio.ts';
import { phonemeMouthTrack } from './phonemes.ts';
import { FaceTracker, type Landmarks } from './face.ts';
import { mouthGeometry, smoothTracks } from './mouth.ts';
import { renderMouth } from './render.ts';
import { probeVideo, readFrames, scaledSize, writeMp4 } from './video.ts';

export interface VisemeSettings {
  /** Output height cap (the reference is scaled down to it, never up). */
  maxHeight: number;
  /** Face Mesh on every n-th reference frame; the frames between are interpolated. */
  landmarkStep: number;
  x264Preset: string;
  crf: number;
}

export const VISEME_PRESETS: Record<string, VisemeSettings> = {
  fast: { maxHeight: 480, landmarkStep: 3, x264Preset: 'veryfast', crf: 23 },
  quality: { maxHeight: 720, landmarkStep: 1, x264Preset: 'medium', crf: 20 },
};

/** Frames checked for cancellation together. */
export const FRAME_BATCH = 8;
/** Reference frames kept in memory for ping-pong playback; longer references are cut there. */
const REFERENCE_BUDGET_BYTES = 384 * 1024 * 1024;
export const MAX_FPS = 30;

export interface VisemeJob {
  audioPath: string;
  referenceVideoPath: string;
  outputPath: string;
  settings: VisemeSettings;
  modelsDir: string;
  cancelled: () => boolean;
  /** Phoneme timings of the narration (e.g. eSpeak's events); without them the mouth follows the audio. */
  phonemes?: PhonemeTiming[];
}

export interface VisemeStats {
  width: number;
  height: number;
  fps: number;
  frames: number;
  referenceFrames: number;
  landmarkMs: number;
  renderMs: number;
  totalMs: number;
}

/** Reference frame for output frame f: forward, backward, forward… so there is no jump at a loop. */
export function pingPong(f: number, m: number): number {
  if (m <= 1) return 0;
  const period = 2 * (m - 1);
  const k = f % period;
  return k < m ? k : period - k;
}

function checkCancel(job: VisemeJob): void {
  if (job.cancelled()) throw new LipsyncAbortedError('lip-sync generation cancelled');
}

export async function generateViseme(job: VisemeJob): Promise<VisemeStats> {
  const t0 = performance.now();
  const info = await probeVideo(job.referenceVideoPath);
  const { width, height } = scaledSize(info.width, info.height, job.settings.maxHeight);
  const fps = Math.min(MAX_FPS, info.fps);
  const samples = await decodeAudio(job.audioPath, AUDIO_RATE);
  if (samples.length === 0) throw new Error('the narration audio is empty');
  const frames = Math.max(1, Math.round((samples.length / AUDIO_RATE) * fps));
  checkCancel(job);

  const tracker = await FaceTracker.create(job.modelsDir);
  try {
    const tl = performance.now();
    const { frames: ref, tracks } = await trackReference(tracker, job.referenceVideoPath, width, height, fps, frames, job.settings.landmarkStep, () => checkCancel(job));
    const m = ref.length;
    const geoms = smoothTracks(tracks, 1).map(mouthGeometry);
    const landmarkMs = performance.now() - tl;
    checkCancel(job);

    // Pass 2: render and encode.
    const shapes = job.phonemes?.length ? phonemeMouthTrack(job.phonemes, fps, frames) : mouthTrack(samples, fps, frames);
    const tr = performance.now();
    const writer = writeMp4(job.outputPath, width, height, fps, job.audioPath, job.settings.x264Preset, job.settings.crf);
    const scratch = {};
    try {
      for (let f = 0; f < frames; f++) {
        if (f % FRAME_BATCH === 0) checkCancel(job);
        const r = pingPong(f, m);
        const out = ref[r]!.slice();
        renderMouth(out, width, height, geoms[r]!, shapes[f]!, scratch);
        await writer.write(out);
      }
      await writer.finish();
    } catch (e) {
      writer.kill();
      throw e;
    }
    const renderMs = performance.now() - tr;
    return { width, height, fps, frames, referenceFrames: m, landmarkMs, renderMs, totalMs: performance.now() - t0 };
  } finally {
    await tracker.release();
  }
}

export interface TrackedReference {
  /** RGBA frames of the reference, as many as ping-pong playback of `wanted` frames needs (within the memory budget). */
  frames: Uint8Array[];
  /** Landmarks per reference frame (interpolated between landmark frames and over frames the mesh lost). */
  tracks: Landmarks[];
}

/**
 * Pass 1 of every generator that re-renders a face: decode the reference at the output size
 * and rate, and track the face's landmarks on every `step`-th frame. Shared by the viseme and
 * onnx providers; `check` is called between frame batches (throws to cancel).
 */
export async function trackReference(tracker: FaceTracker, file: string, width: number, height: number, fps: number, wanted: number, landmarkStep: number, check: () => void): Promise<TrackedReference> {
  const maxRef = Math.max(2, Math.min(wanted, Math.floor(REFERENCE_BUDGET_BYTES / (width * height * 4))));
  const ref: Uint8Array[] = [];
  const keys: Array<Landmarks | null> = [];
  const step = Math.max(1, landmarkStep);
  for await (const fr of readFrames(file, width, height, fps, maxRef)) {
    const i = ref.length;
    ref.push(fr);
    keys.push(i % step === 0 ? await tracker.landmarks({ data: fr, width, height }) : null);
    if (i % FRAME_BATCH === FRAME_BATCH - 1) check();
  }
  const m = ref.length;
  if (m === 0) throw new Error('the reference video has no frames');
  if ((m - 1) % step !== 0) keys[m - 1] = await tracker.landmarks({ data: ref[m - 1]!, width, height });
  const found = keys.map((k, i) => (k ? i : -1)).filter((i) => i >= 0);
  if (found.length === 0) throw new Error('no face was found in the reference video');
  // Frames between landmark frames (and any the mesh lost) interpolate their neighbours.
  const tracks: Landmarks[] = [];
  let k = 0; // found[k] is the last landmark frame at or before i
  for (let i = 0; i < m; i++) {
    while (k < found.length - 1 && found[k + 1]! <= i) k++;
    const a = found[k]!;
    const b = found[Math.min(found.length - 1, a < i ? k + 1 : k)]!;
    if (a >= i || b <= i || a === b) {
      tracks.push(keys[a >= i || Math.abs(a - i) <= Math.abs(b - i) ? a : b]!);
      continue;
    }
    const w = (i - a) / (b - a);
    const ka = keys[a]!, kb = keys[b]!;
    const p = new Float32Array(ka.length);
    for (let j = 0; j < p.length; j++) p[j] = ka[j]! + (kb[j]! - ka[j]!) * w;
    tracks.push(p);
  }
  return { frames: ref, tracks };
}
