// The draw tests' check (test/recording-align.test.ts): drawn messy books (bench/messy-placements.bench.ts's
// draws) aligned with hmm. Apart from messy-book.ts, which the benches import without vitest.
import path from 'node:path';
import { expect } from 'vitest';
import { alignRecording, type RecordingAlignment } from '../../src/speech/align/long/recording.ts';
import { createAligner } from '../../src/speech/align/aligners.ts';
import { drawnMessyBook, referenceErrors, unspokenParagraphs, type MessyBook } from './messy-book.ts';

/**
 * Aligns drawn messy books with hmm (two threads; `fallback`: dtw behind it) and checks what the
 * draw tests ask of each: every spoken word timed, no unread word timed (unless `spokenUntimed`
 * or `unreadTimed` lets through a known failure the test is not about), and when asked, every
 * start with a reference within `maxStart` seconds of it and the files in their reading order.
 */
export async function expectDrawsAligned(
  dir: string,
  draws: number[],
  check: { maxStart?: number; order?: boolean; fallback?: boolean; unreadTimed?: boolean; spokenUntimed?: boolean },
  more?: (r: RecordingAlignment, book: MessyBook) => void,
): Promise<void> {
  const paragraphs = await unspokenParagraphs(12);
  const aligner = await createAligner('hmm', { modelsDir: 'models', device: 'cpu', threads: 2 });
  const dtw = check.fallback ? await createAligner('dtw', { modelsDir: 'models', device: 'cpu' }) : undefined;
  try {
    for (const draw of draws) {
      const { book } = await drawnMessyBook(path.join(dir, `draw-${draw}`), draw, paragraphs);
      const r = await alignRecording({ files: book.files, words: book.words, blockEnds: book.blockEnds, language: 'en-US', aligner, ...(dtw ? { fallbackAligner: dtw } : {}) });
      const named = (pick: (i: number) => boolean) => r.words.flatMap((w, i) => (w && pick(i) ? [`${book.words[i]}@${w.start.toFixed(2)}`] : []));
      if (!check.unreadTimed) expect(named((i) => !book.spoken[i]), `draw ${draw}: unread words timed`).toEqual([]);
      if (!check.spokenUntimed) expect(book.words.filter((_, i) => book.spoken[i] && !r.words[i]), `draw ${draw}: spoken words untimed`).toEqual([]);
      if (check.maxStart !== undefined) {
        const off = new Set(referenceErrors(book, r.words).filter((e) => e.start > check.maxStart!).map((e) => e.i));
        expect(named((i) => off.has(i)), `draw ${draw}: starts more than ${check.maxStart} s off`).toEqual([]);
      }
      if (check.order) expect(r.order, `draw ${draw}: file order`).toEqual(book.trueOrder);
      more?.(r, book);
    }
  } finally {
    await aligner.close();
    await dtw?.close();
  }
}
