// The long-recording recogniser's acoustic scorer (native/pocketsphinx/ptm_frame_eval.c,
// preloaded into Debian's pocketsphinx_batch): real English and French speech must be heard
// exactly as the library's own scorer hears it, word for word and time for time; a missing,
// stale or unchecked build is a clear error or a warned fallback, never a silent one.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBookRecognizer, type HeardWord } from '../src/speech/align/long/recognize.ts';
import { recognizerScorer, scorerLibraryPath } from '../src/speech/align/long/pocketsphinx-scorer.ts';
import { decodeRecordingFile, type DecodedFile } from '../src/speech/align/long/audio.ts';
import { spokenWords } from '../src/speech/align/long/book-lm.ts';
import { NativeAddonError } from '../src/native/index.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { librivoxClips } from './helpers/messy-book.ts';

const speech = path.join(import.meta.dirname, 'fixtures', 'speech');
const work = mkdtempSync(path.join(tmpdir(), 'lectern-recogniser-scorer-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const heard = (words: HeardWord[][]) => words.flat().map((w) => `${w.word} ${w.start} ${w.end}`);

/** The files heard whole, one window each, by a recogniser of `text` with either scorer. */
async function hearBoth(files: DecodedFile[], text: string, language: string) {
  const words = tokenizeWords(text).flatMap((t) => spokenWords(t.word, language)).filter(Boolean);
  const windows = files.map((f, file) => ({ file, start: 0, end: f.duration }));
  const [simd, stock] = await Promise.all(
    (['simd', 'stock'] as const).map(async (scorer) => {
      const dir = mkdtempSync(path.join(work, `${scorer}-`));
      const rec = createBookRecognizer(words, { workDir: dir, language, sentences: [words], processes: 1, scorer });
      return heard(await rec.recognize(files, windows, {}));
    }),
  );
  return { simd: simd!, stock: stock! };
}

describe("long-recording recogniser: Lectern's acoustic scorer against the library's own", () => {
  it('runs the preloaded scorer on this machine (or the comparisons below would compare the library with itself)', () => {
    const chosen = recognizerScorer('simd');
    expect(chosen.scorer).toBe('simd');
    expect(chosen.env.LD_PRELOAD).toBe(scorerLibraryPath);
  });

  it('English: the LibriVox clips and jfk.wav are heard word for word at the same times', async () => {
    const clips = librivoxClips();
    const files = await Promise.all(clips.map((c, i) => decodeRecordingFile(c.file!, i, work)));
    const { simd, stock } = await hearBoth(files, clips.map((c) => c.text!).join(' '), 'en-US');
    expect(simd).toEqual(stock);
    expect(simd.length).toBeGreaterThan(60);
  });

  it('French: 30 s of telephone prompts (the fr-fr model) are heard the same', async () => {
    const meta = JSON.parse(readFileSync(path.join(speech, 'fr-ca-prompts.json'), 'utf8')) as { prompts: { text: string }[] };
    const file = await decodeRecordingFile(path.join(speech, 'fr-ca-prompts.flac'), 0, work);
    const { simd, stock } = await hearBoth([file], meta.prompts.map((p) => p.text).join(' '), 'fr-FR');
    expect(simd).toEqual(stock);
    expect(simd.length).toBeGreaterThan(30);
  });

  it('refuses a missing build, one checked against another library, and one changed since its check; an unchecked one runs the library with a warning', () => {
    const so = path.join(work, 'ptm.so'), stamp = path.join(work, 'ptm.json');
    expect(() => recognizerScorer('simd', so)).toThrow(NativeAddonError);
    expect(() => recognizerScorer('simd', so)).toThrow(/npm run build:native/);
    copyFileSync(scorerLibraryPath, so);
    const made = JSON.parse(readFileSync(scorerLibraryPath.replace(/\.so$/, '.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(stamp, JSON.stringify(made));
    expect(recognizerScorer('simd', so)).toEqual({ env: { LD_PRELOAD: so }, scorer: 'simd' });
    writeFileSync(stamp, JSON.stringify({ ...made, library_sha256: '0'.repeat(64) }));
    expect(() => recognizerScorer('simd', so)).toThrow(/another libpocketsphinx/);
    writeFileSync(stamp, JSON.stringify(made));
    writeFileSync(so, Buffer.concat([readFileSync(so), Buffer.from([0])]));
    expect(() => recognizerScorer('simd', so)).toThrow(/not the build that was checked/);
    writeFileSync(stamp, JSON.stringify({ verified: false, reason: 'not built: pocketsphinx was not installed (npm run setup installs what is missing, then npm run build:native builds it)' }));
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => warnings.push(`${w.code}: ${w.message}`);
    process.on('warning', onWarning);
    expect(recognizerScorer('simd', so)).toEqual({ env: {}, scorer: 'stock' });
    // warnings are emitted on the next tick
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        process.off('warning', onWarning);
        expect(warnings.join('\n')).toMatch(/LECTERN_RECOGNIZER_STOCK_SCORER: .*not installed/);
        resolve();
      }),
    );
  });
});
