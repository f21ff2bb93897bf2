// The messy book's layout drawn again and again (round 21): the tests' messy book
// (test/helpers/messy-book.ts) puts its skipped sentence, preface, music and clips in one fixed
// layout, the one the long-recording rules were checked on. Here each variant draws it anew from
// a seed: the five LibriVox clips and jfk.wav in a random order, two per chapter file; one clip's
// audio left out while its text stays in the document (the skipped sentence: first, middle or
// last of a chapter, as the draw falls; each clip in turn); a spoken preface (a real IVR
// recording) at the start of the first chapter; 8 s of music and 6 s of pink noise at random
// places between clips; pauses of 0.3-1.2 s; War of the Worlds paragraphs nobody reads before
// the chapters; the files handed over in a random order. For each: the spoken words timed, the
// unspoken words given a time (no invented time is the rule), whether the file order was found.
// No parameter of the aligner was chosen on these draws.
// Run: node --import tsx bench/messy-placements.bench.ts [--variants 12] [--first 0] [--aligner hmm|dtw] [--details]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAligner } from '../src/speech/align/aligners.ts';
import { alignRecording } from '../src/speech/align/long/recording.ts';
import { drawnMessyBook, librivoxClips, referenceErrors, unspokenParagraphs, type BookPart } from '../test/helpers/messy-book.ts';
import { QUICK } from './quick.ts';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : fallback);
const variants = QUICK ? 1 : Number(arg('--variants', '12'));
const first = Number(arg('--first', '0'));
const alignerName = arg('--aligner', 'hmm');
const details = args.includes('--details');

const name = (p: BookPart) => (p.kind === 'clip' ? (path.basename(p.file!).match(/(\d{4}|jfk)\.wav$/)?.[1] ?? 'clip') : p.kind === 'silence' ? `${p.seconds!.toFixed(1)}s` : p.kind === 'music' && p.file!.endsWith('noise.wav') ? 'noise' : p.kind);

const mae = (errors: number[]) => (errors.length ? ((1000 * errors.reduce((a, b) => a + b, 0)) / errors.length).toFixed(1) : '-');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-bench-placements-'));
const threads = Math.min(4, os.availableParallelism());
const modelsDir = path.join(import.meta.dirname, '..', 'models');
const aligner = await createAligner(alignerName, { modelsDir, device: 'cpu', threads });
// dtw for a segment hmm finds no path through, as the read-along pipeline has it (src/pipelines/readalong.ts)
const fallbackAligner = alignerName === 'dtw' ? undefined : await createAligner('dtw', { modelsDir, device: 'cpu' });
try {
  const paragraphs = await unspokenParagraphs(12);
  console.log(`${variants} draws of the messy book (${librivoxClips().length} real clips, one left unread each time), aligner ${alignerName} in ${threads} thread(s), ${os.availableParallelism()} cores:`);
  const total = { spoken: 0, spokenTimed: 0, unspokenTimed: 0, orderRight: 0, allTimed: 0, seconds: 0, fallbackSeconds: 0, errors: [] as number[] };
  for (let v = first; v < first + variants; v++) {
    const { book, chapters, skips } = await drawnMessyBook(path.join(work, `draw-${v}`), v, paragraphs);
    const t0 = performance.now();
    const r = await alignRecording({ files: book.files, words: book.words, blockEnds: book.blockEnds, language: 'en-US', aligner, fallbackAligner });
    const seconds = (performance.now() - t0) / 1000;
    const spoken = book.spoken.filter(Boolean).length;
    const spokenTimed = r.words.filter((w, i) => w && book.spoken[i]).length;
    const unspokenTimed = r.words.flatMap((w, i) => (w && !book.spoken[i] ? [`${book.words[i]}@${w.globalStart.toFixed(2)}`] : []));
    const untimed = r.words.flatMap((w, i) => (!w && book.spoken[i] ? [book.words[i]] : []));
    const orderRight = JSON.stringify(r.order) === JSON.stringify(book.trueOrder);
    // boundary error of the timed words that have reference boundaries (the clips' fixtures), and
    // the words more than 100 ms off (--details): where the outliers of the MAE are
    const referenced = referenceErrors(book, r.words);
    const errors = referenced.flatMap((e) => [e.start, e.end]);
    const off = referenced.filter((e) => Math.max(e.start, e.end) > 0.1).map(({ i }) => `${book.words[i]}@${r.words[i]!.start.toFixed(2)}(${book.refs[i]!.start.toFixed(2)})`);
    const [a, b] = book.skippedSentence;
    total.spoken += spoken;
    total.spokenTimed += spokenTimed;
    total.unspokenTimed += unspokenTimed.length;
    total.orderRight += orderRight ? 1 : 0;
    total.allTimed += spokenTimed === spoken ? 1 : 0;
    total.seconds += seconds;
    total.fallbackSeconds += r.coverage.fallbackSeconds;
    total.errors.push(...errors);
    console.log(`  draw ${v}: ${chapters.map((c) => c.map(name).join(' ')).join(' | ')}; skipped "${book.words.slice(a, b + 1).slice(0, 5).join(' ')} …" (${b - a + 1} words; chapter ${skips[0]!.chapter + 1}, ${skips[0]!.afterClip < 0 ? 'first' : `after clip ${skips[0]!.afterClip + 1}`})`);
    console.log(`    spoken words timed ${spokenTimed}/${spoken}, unspoken words given a time ${unspokenTimed.length}${unspokenTimed.length && details ? ` (${unspokenTimed.join(' ')})` : ''}, file order ${orderRight ? 'right' : 'WRONG'}, boundary MAE ${mae(errors)} ms (${errors.length / 2} words with references), ${seconds.toFixed(1)} s${r.coverage.segmentsFallback ? `, ${r.coverage.fallbackSeconds.toFixed(1)} s of audio timed by the dtw fallback` : ''}${untimed.length && details ? `; untimed: ${untimed.join(' ')}` : ''}${off.length && details ? `; more than 100 ms off, at (reference): ${off.join(' ')}` : ''}`);
  }
  console.log(`in all: spoken words timed ${total.spokenTimed}/${total.spoken} (${((100 * total.spokenTimed) / total.spoken).toFixed(1)} %), every spoken word timed in ${total.allTimed} of ${variants} draws, unspoken words given a time ${total.unspokenTimed}, file order right in ${total.orderRight} of ${variants}, boundary MAE ${mae(total.errors)} ms (${total.errors.length / 2} words, starts and ends), ${total.seconds.toFixed(1)} s aligning in all, ${total.fallbackSeconds.toFixed(1)} s of audio by the dtw fallback`);
} finally {
  await aligner.close();
  await fallbackAligner?.close();
  fs.rmSync(work, { recursive: true, force: true });
}
