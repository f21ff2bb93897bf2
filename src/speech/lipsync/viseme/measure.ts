// Lip-sync measurement: mouth opening per frame from the landmarks of a video, and its
// correlation with the narration's loudness. Used by the tests and the bench to judge
// a generated video against its reference.
import { decodeAudio } from '../../../media/ffmpeg.ts';
import { AUDIO_RATE, speechEnvelope } from './audio.ts';
import { FaceTracker } from './face.ts';
import { mouthOpening } from './mouth.ts';
import { probeVideo, readFrames } from './video.ts';

export interface OpeningTrack {
  fps: number;
  /** Inner-lip gap over mouth width per frame; NaN where no face was found. */
  opening: Float32Array;
  facesFound: number;
}

/** Runs the face tracker on every frame (up to `maxFrames`) of `videoPath`. */
export async function mouthOpeningTrack(videoPath: string, modelsDir: string, maxFrames = 100_000): Promise<OpeningTrack> {
  const info = await probeVideo(videoPath);
  const tracker = await FaceTracker.create(modelsDir);
  const opening: number[] = [];
  let facesFound = 0;
  try {
    for await (const fr of readFrames(videoPath, info.width - (info.width % 2), info.height - (info.height % 2), info.fps, maxFrames)) {
      const lm = await tracker.landmarks({ data: fr, width: info.width - (info.width % 2), height: info.height - (info.height % 2) });
      if (lm) facesFound++;
      opening.push(lm ? mouthOpening(lm) : NaN);
    }
  } finally {
    await tracker.release();
  }
  return { fps: info.fps, opening: Float32Array.from(opening), facesFound };
}

/** Pearson correlation over the entries where both are finite. */
export function pearson(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let sa = 0, sb = 0, k = 0;
  for (let i = 0; i < n; i++) if (Number.isFinite(a[i]) && Number.isFinite(b[i])) { sa += a[i]!; sb += b[i]!; k++; }
  if (k < 3) return NaN;
  const ma = sa / k, mb = sb / k;
  let cov = 0, va = 0, vb = 0;
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(a[i]) || !Number.isFinite(b[i])) continue;
    const x = a[i]! - ma, y = b[i]! - mb;
    cov += x * y;
    va += x * x;
    vb += y * y;
  }
  return va > 0 && vb > 0 ? cov / Math.sqrt(va * vb) : 0;
}

/** The narration's per-frame loudness (dB) at `fps`, `frames` long. */
export async function narrationEnvelope(audioPath: string, fps: number, frames: number): Promise<Float32Array> {
  const samples = await decodeAudio(audioPath, AUDIO_RATE);
  return speechEnvelope(samples, AUDIO_RATE, fps, frames);
}
