// Reverberation for the tests and the level bench (round 43): a lecture hall or a bare room heard through a
// microphone some way off. The clip is convolved with a room's impulse response made the way
// room acousticians model its late part: a direct path, then Gaussian noise under an
// exponential decay that falls 60 dB in RT60 seconds, scaled to a direct-to-reverberant ratio.
// The labels still mark the direct sound, which the response leaves where it was.
import { fft } from '../../src/native/reference.ts';

/** A room's impulse response at `rate`: 1 at 0, then the decaying tail (`drrDb` under the direct path in energy), noise from `seed`. */
export function roomResponse(rate: number, rt60: number, drrDb: number, seed: number): Float64Array {
  const len = Math.round(rt60 * rate);
  const h = new Float64Array(len);
  let s = seed >>> 0 || 1;
  const uniform = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) + 0.5) / 4294967296;
  const gauss = () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  // the first reflections arrive a few ms after the direct sound
  const first = Math.round(0.002 * rate);
  let energy = 0;
  for (let i = first; i < len; i++) {
    h[i] = gauss() * 10 ** ((-3 * i) / (rt60 * rate));
    energy += h[i]! * h[i]!;
  }
  const g = Math.sqrt(10 ** (-drrDb / 10) / energy);
  for (let i = first; i < len; i++) h[i] = h[i]! * g;
  h[0] = 1;
  return h;
}

/** `x` convolved with `h` (FFT), cut to x's length, scaled to x's peak. */
export function convolve(x: Float32Array, h: Float64Array): Float32Array {
  let n = 1;
  while (n < x.length + h.length) n <<= 1;
  const ar = new Float64Array(n), ai = new Float64Array(n), br = new Float64Array(n), bi = new Float64Array(n);
  ar.set(x);
  br.set(h);
  fft(ar, ai);
  fft(br, bi);
  // the product, conjugated, transformed again: the inverse transform up to 1/n
  for (let k = 0; k < n; k++) {
    const re = ar[k]! * br[k]! - ai[k]! * bi[k]!;
    const im = ar[k]! * bi[k]! + ai[k]! * br[k]!;
    ar[k] = re;
    ai[k] = -im;
  }
  fft(ar, ai);
  const peakIn = x.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  let peakOut = 0;
  for (let i = 0; i < x.length; i++) peakOut = Math.max(peakOut, Math.abs(ar[i]!));
  const g = peakOut > 0 ? peakIn / peakOut : 0;
  return Float32Array.from({ length: x.length }, (_, i) => ar[i]! * g);
}

/** The clip as heard in a room of reverberation time `rt60` (s) at a direct-to-reverberant ratio `drrDb`. */
export const reverberant = (x: Float32Array, rate: number, rt60: number, drrDb: number, seed = 1) => convolve(x, roomResponse(rate, rt60, drrDb, seed));
