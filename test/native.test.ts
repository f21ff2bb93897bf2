// The native addon against its TypeScript reference, plus properties both must have.
// Tolerances: resampling 1e-5 absolute, log-mel/MFCC 1e-3 absolute (float32 outputs of
// double-precision maths that differ only in FFT algorithm), DTW paths identical and
// costs within 1e-9 relative, blending and masks exact.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeWav } from '../src/media/wav.ts';
import * as N from '../src/native/index.ts';
import * as R from '../src/native/reference.ts';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function noise(n: number, seed: number, scale = 1): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => (r() * 2 - 1) * scale);
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

function sine(freq: number, rate: number, seconds: number): Float32Array {
  return Float32Array.from({ length: Math.round(rate * seconds) }, (_, i) => 0.5 * Math.sin((2 * Math.PI * freq * i) / rate));
}

/** Frequency of the strongest DFT bin near `guess` (±50 Hz, 0.5 Hz steps), by direct correlation. */
function dominantFrequency(x: Float32Array, rate: number, guess: number): number {
  let best = 0, bestF = 0;
  const seg = x.subarray(Math.floor(x.length / 4), Math.floor((3 * x.length) / 4));
  for (let f = guess - 50; f <= guess + 50; f += 0.5) {
    let re = 0, im = 0;
    for (let i = 0; i < seg.length; i++) {
      re += seg[i]! * Math.cos((2 * Math.PI * f * i) / rate);
      im += seg[i]! * Math.sin((2 * Math.PI * f * i) / rate);
    }
    const p = re * re + im * im;
    if (p > best) [best, bestF] = [p, f];
  }
  return bestF;
}

const jfk = decodeWav(readFileSync(new URL('./fixtures/speech/jfk.wav', import.meta.url)));

describe('native addon', () => {
  it('loads', () => {
    expect(N.nativeAvailable()).toBe(true);
  });

  it('names the build command when the addon is missing or not an addon', () => {
    expect(() => N.loadBinding('/nonexistent/lectern_native.node')).toThrow(/could not be loaded.*npm run build:native/);
    expect(() => N.loadBinding(new URL('./fixtures/speech/jfk.wav', import.meta.url).pathname)).toThrow(N.NativeAddonError);
  });

  describe('resample', () => {
    for (const [from, to] of [[22050, 16000], [16000, 22050], [44100, 16000], [16000, 16001]] as const) {
      it(`agrees with the reference ${from}→${to} on noise`, () => {
        const x = noise(from, from + to);
        const a = N.resample(x, from, to);
        const b = R.resample(x, from, to);
        expect(a.length).toBe(Math.ceil((x.length * to) / from));
        expect(maxAbsDiff(a, b)).toBeLessThan(1e-5);
      });
    }

    it('keeps a sine at its frequency and the length in the rate ratio, both ways', () => {
      for (const impl of [N, R]) {
        const x = sine(440, 22050, 1);
        const y = impl.resample(x, 22050, 16000);
        expect(y.length).toBe(16000);
        expect(Math.abs(dominantFrequency(y, 16000, 440) - 440)).toBeLessThanOrEqual(0.5);
        // amplitude kept in the passband (RMS of 0.5·sin is 0.354)
        const mid = y.subarray(2000, 14000);
        const rms = Math.sqrt(mid.reduce((s, v) => s + v * v, 0) / mid.length);
        expect(rms).toBeGreaterThan(0.35);
        expect(rms).toBeLessThan(0.358);
      }
    });

    it('keeps the passband and removes content above the new Nyquist (anti-aliasing)', () => {
      const rms = (y: Float32Array) => {
        const mid = y.subarray(1000, y.length - 1000);
        return Math.sqrt(mid.reduce((s, v) => s + v * v, 0) / mid.length);
      };
      expect(rms(N.resample(sine(6000, 22050, 0.5), 22050, 16000))).toBeGreaterThan(0.35); // 6 kHz kept
      // 8.5 kHz would fold to 7.5 kHz at 16 kHz: it must be at least 60 dB down
      expect(rms(N.resample(sine(8500, 22050, 0.5), 22050, 16000))).toBeLessThan(0.354e-3);
    });
  });

  describe('features', () => {
    it('MFCC and log-mel agree with the reference on noise at 16 kHz and 22.05 kHz', () => {
      for (const rate of [16000, 22050]) {
        const x = noise(rate * 2 + 123, rate, 0.3);
        const a = N.mfcc(x, rate);
        const b = R.mfcc(x, rate);
        expect([a.frames, a.dims]).toEqual([b.frames, b.dims]);
        expect(a.dims).toBe(13);
        expect(maxAbsDiff(a.data, b.data)).toBeLessThan(1e-3);
        const c = N.melSpectrogram(x, rate, { nMels: 64, fMin: 60, fMax: 7600 });
        const d = R.melSpectrogram(x, rate, { nMels: 64, fMin: 60, fMax: 7600 });
        expect(c.dims).toBe(64);
        expect(maxAbsDiff(c.data, d.data)).toBeLessThan(1e-3);
      }
    });

    it('MFCC agrees with the reference on real speech (jfk.wav)', () => {
      expect(jfk.sampleRate).toBe(16000);
      const a = N.mfcc(jfk.samples, jfk.sampleRate);
      const b = R.mfcc(jfk.samples, jfk.sampleRate);
      // frame count covers the whole clip: 1 + ceil((n - 400) / 160) at 16 kHz
      expect(a.frames).toBe(1 + Math.ceil((jfk.samples.length - 400) / 160));
      expect(maxAbsDiff(a.data, b.data)).toBeLessThan(1e-3);
      expect(maxAbsDiff(N.frameEnergy(jfk.samples, jfk.sampleRate), R.frameEnergy(jfk.samples, jfk.sampleRate))).toBeLessThan(1e-4);
    });

    it('puts a tone into the mel band that contains it', () => {
      const x = sine(1000, 16000, 0.5);
      const m = N.melSpectrogram(x, 16000, { nMels: 40, preEmphasis: 0 });
      const row = m.data.subarray(20 * 40, 21 * 40);
      const peak = row.indexOf(Math.max(...row));
      const mel = (f: number) => 2595 * Math.log10(1 + f / 700);
      // band b is centred at mel(20) + (b+1)·(mel(8000) − mel(20))/41
      const centre = (b: number) => mel(20) + ((b + 1) * (mel(8000) - mel(20))) / 41;
      expect(Math.abs(centre(peak) - mel(1000))).toBeLessThan((mel(8000) - mel(20)) / 41);
    });

    it('gives no frames for no samples and one zero-padded frame for a short clip', () => {
      expect(N.mfcc(new Float32Array(0), 16000).frames).toBe(0);
      const short = N.mfcc(noise(100, 1), 16000);
      expect(short.frames).toBe(1);
      expect(maxAbsDiff(short.data, R.mfcc(noise(100, 1), 16000).data)).toBeLessThan(1e-3);
    });
  });

  describe('dtwBanded', () => {
    it('agrees with the reference on random sequences of different lengths', () => {
      const a = noise(13 * 700, 7);
      const b = noise(13 * 1000, 8);
      for (const band of [5, 40, 2000]) {
        const x = N.dtwBanded(a, b, 13, band);
        const y = R.dtwBanded(a, b, 13, band);
        expect(Array.from(x.path)).toEqual(Array.from(y.path));
        expect(Math.abs(x.cost - y.cost) / y.cost).toBeLessThan(1e-9);
      }
    });

    it('finds the known path of a time-warped sequence', () => {
      // b is a piecewise time-warp of a: each frame of a repeated 1, 2 or 3 times
      const dims = 4, n = 400;
      const r = rng(3);
      const a = noise(dims * n, 11);
      const reps = Array.from({ length: n }, () => 1 + Math.floor(r() * 3));
      const m = reps.reduce((s, v) => s + v, 0);
      const b = new Float32Array(dims * m);
      const expected: number[] = [];
      let j = 0;
      for (let i = 0; i < n; i++) {
        for (let k = 0; k < reps[i]!; k++, j++) {
          b.set(a.subarray(i * dims, (i + 1) * dims), j * dims);
          expected.push(i, j);
        }
      }
      for (const impl of [N, R]) {
        const res = impl.dtwBanded(a, b, dims, 60);
        expect(res.cost).toBe(0);
        expect(Array.from(res.path)).toEqual(expected);
      }
    });

    it('follows an explicit centre line and stays inside its band', () => {
      const dims = 3, n = 300, m = 300;
      const a = noise(dims * n, 21);
      const b = noise(dims * m, 22);
      const centre = Int32Array.from({ length: n }, (_, i) => Math.min(m - 1, Math.round(i * 0.5 + (i > 150 ? (i - 150) * 1.0 : 0))));
      const radius = 4;
      const x = N.dtwBanded(a, b, dims, { centre, radius });
      const y = R.dtwBanded(a, b, dims, { centre, radius });
      expect(Array.from(x.path)).toEqual(Array.from(y.path));
      // path starts and ends at the corners and is monotone with unit steps
      expect([x.path[0], x.path[1]]).toEqual([0, 0]);
      expect([x.path[x.path.length - 2], x.path[x.path.length - 1]]).toEqual([n - 1, m - 1]);
      for (let k = 2; k < x.path.length; k += 2) {
        const di = x.path[k]! - x.path[k - 2]!, dj = x.path[k + 1]! - x.path[k - 1]!;
        expect(di === 0 || di === 1).toBe(true);
        expect(dj === 0 || dj === 1).toBe(true);
        expect(di + dj).toBeGreaterThan(0);
      }
      // away from the forced end corner, every cell lies within the radius of its row's centre
      for (let k = 0; k < x.path.length; k += 2) {
        const i = x.path[k]!, jj = x.path[k + 1]!;
        if (i < n - 60) expect(Math.abs(jj - centre[i]!)).toBeLessThanOrEqual(radius);
      }
    });

    it('aligns real speech with a time-stretched copy of itself close to the true warp', () => {
      // jfk.wav resampled 16000→17600 and read at 16 kHz is the same speech 10% slower
      const slow = N.resample(jfk.samples, 16000, 17600);
      const fa = N.mfcc(jfk.samples, 16000);
      const fb = N.mfcc(slow, 16000);
      const res = N.dtwBanded(fa.data, fb.data, 13, 100);
      let err = 0;
      for (let k = 0; k < res.path.length; k += 2) err += Math.abs(res.path[k + 1]! - res.path[k]! * 1.1);
      expect(err / (res.path.length / 2)).toBeLessThan(3); // frames (30 ms)
    });

    it('rejects malformed input', () => {
      expect(() => N.dtwBanded(new Float32Array(5), new Float32Array(6), 3, 2)).toThrow(/multiples of dims/);
      expect(() => N.dtwBanded(new Float32Array(6), new Float32Array(6), 3, { centre: new Int32Array(5), radius: 1 })).toThrow(/centre has 5 rows/);
      expect(() => N.dtwBanded(new Float32Array(6), new Float32Array(6), 3, -1)).toThrow(/radius/);
    });
  });

  describe('blendRgba and featherMask', () => {
    const w = 37, h = 23;
    it('is exact at α = 0 and α = 1 (Uint8 and Float32 masks)', () => {
      const dst = Uint8Array.from(noise(w * h * 4, 31), (v) => Math.floor((v + 1) * 127.9));
      const src = Uint8Array.from(noise(w * h * 4, 32), (v) => Math.floor((v + 1) * 127.9));
      for (const [zero, one] of [[new Uint8Array(w * h), new Uint8Array(w * h).fill(255)], [new Float32Array(w * h), new Float32Array(w * h).fill(1)]] as const) {
        const d0 = dst.slice();
        N.blendRgba(d0, src, zero, w, h);
        expect(Buffer.compare(d0, dst)).toBe(0);
        const d1 = dst.slice();
        N.blendRgba(d1, src, one, w, h);
        expect(Buffer.compare(d1, src)).toBe(0);
      }
    });

    it('agrees exactly with the reference for random and feathered masks', () => {
      const dst = Uint8Array.from(noise(w * h * 4, 41), (v) => Math.floor((v + 1) * 127.9));
      const src = Uint8Array.from(noise(w * h * 4, 42), (v) => Math.floor((v + 1) * 127.9));
      const u8 = Uint8Array.from(noise(w * h, 43), (v) => Math.floor((v + 1) * 127.9));
      const fm = N.featherMask(w, h, { cx: 18, cy: 12, rx: 12, ry: 7 }, 4);
      expect(maxAbsDiff(fm, R.featherMask(w, h, { cx: 18, cy: 12, rx: 12, ry: 7 }, 4))).toBeLessThan(1e-6);
      for (const mask of [u8, fm]) {
        const a = dst.slice(), b = dst.slice();
        N.blendRgba(a, src, mask, w, h);
        R.blendRgba(b, src, mask, w, h);
        expect(Buffer.compare(a, b)).toBe(0);
      }
      // half-way mask gives the rounded mean
      const a = dst.slice();
      N.blendRgba(a, src, new Float32Array(w * h).fill(0.5), w, h);
      for (let q = 0; q < a.length; q++) expect(a[q]).toBe(Math.floor((dst[q]! + src[q]!) / 2 + 0.5));
    });

    it('feathers: 1 at the centre, 0 outside, monotone in between', () => {
      const m = N.featherMask(100, 60, { cx: 50, cy: 30, rx: 40, ry: 20 }, 8);
      expect(m[30 * 100 + 50]).toBe(1);
      expect(m[0]).toBe(0);
      expect(m[30 * 100 + 95]).toBe(0);
      const row = Array.from(m.subarray(30 * 100 + 50, 30 * 100 + 100));
      for (let k = 1; k < row.length; k++) expect(row[k]!).toBeLessThanOrEqual(row[k - 1]!);
      expect(row.some((v) => v > 0 && v < 1)).toBe(true);
    });

    it('rejects mismatched sizes', () => {
      expect(() => N.blendRgba(new Uint8Array(8), new Uint8Array(8), new Uint8Array(3), 2, 1)).toThrow(/mask must have 2/);
      expect(() => N.blendRgba(new Uint8Array(7), new Uint8Array(8), new Uint8Array(2), 2, 1)).toThrow(/8 bytes/);
    });
  });
});
