// The hmm aligner's SIMD scorer (scripts/build-soundswallower-simd.mjs): soundswallower's decoder
// with its Gaussian scoring rewritten in WebAssembly SIMD must time every word exactly as the
// package's own build does, on real English and French speech (a grammar with skippable
// sentences included); the build is reproducible, and a missing or stale one is a clear error.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHmmAligner, loadModule, type HmmAligner, type SsDecoder, type SsModule } from '../src/speech/align/hmm.ts';
import { loadSimdBuild, simdBuildPath, soundswallowerBinary } from '../src/speech/align/soundswallower-wasm.ts';
import { decodeRecordingFile, readSamples } from '../src/speech/align/long/audio.ts';
import { decodeWav } from '../src/media/wav.ts';
import { NativeAddonError } from '../src/native/index.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import type { AlignedWord } from '../src/speech/types.ts';
// @ts-expect-error: a plain ES module script without types
import { buildSimd } from '../scripts/build-soundswallower-simd.mjs';

const speech = path.join(import.meta.dirname, 'fixtures', 'speech');
const work = mkdtempSync(path.join(tmpdir(), 'lectern-simd-'));
const timings = (words: AlignedWord[]) => words.map((w) => `${w.word} ${w.start} ${w.end}${w.skipped ? ' skipped' : ''}`);

describe('hmm aligner: soundswallower with its SIMD scorer against its stock build', () => {
  let simd: HmmAligner, stock: HmmAligner;
  beforeAll(async () => {
    [simd, stock] = await Promise.all([createHmmAligner(), createHmmAligner({ scorer: 'stock' })]);
  });
  afterAll(async () => {
    await Promise.all([simd?.close(), stock?.close()]);
    rmSync(work, { recursive: true, force: true });
  });

  it('runs the SIMD build on this machine (or the comparison below would compare the stock build with itself)', () => {
    const chosen = soundswallowerBinary('simd');
    expect(chosen.scorer).toBe('simd');
    expect(chosen.binary?.length).toBeGreaterThan(100_000);
  });

  it('English: the LibriVox clips and jfk.wav get the same word times to the last digit', async () => {
    const lines = readFileSync(path.join(speech, 'transcription'), 'utf8').trim().split('\n');
    const clips = lines.map((l) => /<s> (.*) <\/s> \((.*)\)/.exec(l)!).map((m) => ({ file: `${m[2]}.wav`, text: m[1]! }));
    clips.push({ file: 'jfk.wav', text: 'And so, my fellow Americans, ask not what your country can do for you, ask what you can do for your country.' });
    let words = 0;
    for (const clip of clips) {
      const { samples } = decodeWav(readFileSync(path.join(speech, clip.file)));
      const [a, b] = await Promise.all([simd.align(samples, 16000, clip.text, 'en-US'), stock.align(samples, 16000, clip.text, 'en-US')]);
      expect(timings(a), clip.file).toEqual(timings(b));
      words += a.length;
    }
    expect(words).toBeGreaterThan(60);
  });

  it('French: 30 s of telephone prompts, every sentence skippable, the same times and the same skips', async () => {
    const meta = JSON.parse(readFileSync(path.join(speech, 'fr-ca-prompts.json'), 'utf8')) as { prompts: { text: string }[] };
    const prompts = meta.prompts.map((p) => p.text);
    const file = await decodeRecordingFile(path.join(speech, 'fr-ca-prompts.flac'), 0, work);
    const samples = readSamples(file, 0, file.duration);
    // one prompt nobody reads, in the middle: the grammar may leave it out, and both builds must agree that it does
    const text = [...prompts.slice(0, 4), 'Le train de nuit pour Marseille part du quai numéro sept à minuit.', ...prompts.slice(4)].join(' ');
    const skippable: [number, number][] = [];
    let at = 0;
    for (const p of text.split(/(?<=[.!?])\s+/)) {
      const n = tokenizeWords(p).length;
      if (n >= 4) skippable.push([at, at + n - 1]);
      at += n;
    }
    const [a, b] = await Promise.all([simd.align(samples, 16000, text, 'fr-FR', { skippable }), stock.align(samples, 16000, text, 'fr-FR', { skippable })]);
    expect(timings(a)).toEqual(timings(b));
    expect(a.filter((w) => w.skipped).map((w) => w.word)).toContain('Marseille');
  });

  it("keeps a model's column copy while the model lives and frees it with the model", async () => {
    // the copy is found by the model's address: one kept past ptm_mgau_free would score a model
    // later allocated there with the freed one's means and variances
    const module = (await loadModule('simd')) as SsModule & { asm: { lectern_column_models(): number } };
    const models = () => module.asm.lectern_column_models();
    const { samples } = decodeWav(readFileSync(path.join(speech, 'jfk.wav')));
    const decode = async () => {
      const hmm = path.join(path.dirname(createRequire(import.meta.url).resolve('soundswallower')), 'model', 'en-us');
      const d = new module.Decoder({ hmm, dict: path.join(hmm, 'dict.txt'), samprate: 16000, loglevel: 'FATAL' });
      await d.initialize();
      d.set_align_text('and so my fellow americans ask not what your country can do for you ask what you can do for your country');
      d.start();
      d.process_audio(samples, false, true);
      d.stop();
      return d;
    };
    expect(models()).toBe(0);
    const first = await decode();
    expect(models()).toBe(1);
    const second = await decode();
    expect(models()).toBe(2);
    first.delete();
    expect(models()).toBe(1);
    second.delete();
    expect(models()).toBe(0);
    (await decode()).delete();
    expect(models()).toBe(0);
    // a fifth model finds the slots full and is scored as before, from the model's own rows: the same alignment
    const five = [await decode(), await decode(), await decode(), await decode(), await decode()];
    expect(models()).toBe(4);
    const alignment = (d: SsDecoder) => JSON.stringify(d.get_alignment({ align_level: 0 }));
    expect(alignment(five[4]!)).toBe(alignment(five[0]!));
    expect(alignment(five[0]!)).toContain('americans');
    for (const d of five) d.delete();
    expect(models()).toBe(0);
  });

  it('the build script makes the same binary again, and a missing or stale build is refused', async () => {
    const out = path.join(work, 'again.wasm');
    await buildSimd(path.join(path.dirname(simdBuildPath), '..', 'node_modules', 'soundswallower', 'soundswallower.node.wasm'), out);
    expect(readFileSync(out).equals(readFileSync(simdBuildPath))).toBe(true);
    expect(loadSimdBuild(out).length).toBe(readFileSync(out).length);

    expect(() => loadSimdBuild(path.join(work, 'absent.wasm'))).toThrow(NativeAddonError);
    const stale = path.join(work, 'stale.wasm');
    copyFileSync(out, stale);
    writeFileSync(path.join(work, 'stale.json'), JSON.stringify({ source_sha256: '0'.repeat(64), sha256: JSON.parse(readFileSync(path.join(work, 'again.json'), 'utf8')).sha256 }));
    expect(() => loadSimdBuild(stale)).toThrow(/not built from the installed soundswallower/);
  });
});
