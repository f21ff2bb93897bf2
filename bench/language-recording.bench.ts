// An audiobook in another language than English aligned to its book (src/speech/align/long):
// real read speech, the prompts of Debian's asterisk-core-sounds-LANG-wav (~260–320 with
// transcripts, 17–23 min, one voice each, 8 kHz): French (fr-CA, soundswallower's fr-fr model
// locating and timing), or Spanish (es-MX), Italian (it-IT) or Russian (ru-RU), which no model
// here covers (heard with a borrowed model, long/borrowed.ts). The prompts are drawn in a
// seeded order into three chapter files (MP3, FLAC, OGG) handed over shuffled, with a spoken
// preface of prompts not in the text, two prompts per chapter in the text that the reader skips,
// music and noise between prompts; the document adds the transcripts of the prompts nobody reads
// (and, in French, French paragraphs). There are no hand-made word boundaries in these languages
// here, so timing is checked by placement: every timed word must fall inside the audio of the
// prompt that reads it.
// Needs: apt-get install asterisk-core-sounds-LANG-wav asterisk-core-sounds-LANG (not the tests);
// quick mode runs the tests' French messy book (25 prompts in test/fixtures) instead.
// Run: node --import tsx bench/language-recording.bench.ts [--language fr|es|it|ru] [--seed 11] [--aligner auto|dtw|hmm] [--details] [--scorer stock] [--recognizer stock]
//   --details: every word timed outside the prompt that reads it, or timed though never read, and the spoken words left untimed
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ffmpeg } from '../src/media/ffmpeg.ts';
import { alignRecording } from '../src/speech/align/long/recording.ts';
import { createAligner, defaultAlignerThreads } from '../src/speech/align/aligners.ts';
import { QUICK } from './quick.ts';
import { recognizerArg, scorerArg } from './recording-build.ts';
import { buildMessyBook, frenchMessyBook, FRENCH_UNSPOKEN, IVR, ivrPrompts, skipFindings, skippedWordCount, untimedRuns, type BookPart, type Skip } from '../test/helpers/messy-book.ts';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : dflt);
const seed = Number(opt('--seed', '11'));
const alignerName = opt('--aligner', 'auto');
const lang = opt('--language', 'fr') as 'fr' | 'es' | 'it' | 'ru';
if (!['fr', 'es', 'it', 'ru'].includes(lang)) throw new Error(`--language ${lang}: fr, es, it or ru`);
const LOCALE = { fr: 'fr-CA', es: 'es-MX', it: 'it-IT', ru: 'ru-RU' }[lang];
const HEADING = { fr: 'Chapitre', es: 'Capítulo', it: 'Capitolo', ru: 'Глава' }[lang];
const dir = path.join(os.tmpdir(), `lectern-bench-${lang}-${QUICK ? 'quick' : seed}`);
fs.rmSync(dir, { recursive: true, force: true });
fs.mkdirSync(dir, { recursive: true });

async function ivrBook() {
  if (!fs.existsSync(IVR[lang].text)) throw new Error(`needs the Debian packages ${IVR[lang].packages} (apt-get install them)`);
  let s = seed;
  const rand = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const prompts = (await ivrPrompts(lang)).map((p) => ({ p, k: rand() })).sort((a, b) => a.k - b.k).map((x) => x.p);
  const pause = (sec: number): BookPart => ({ kind: 'silence', seconds: sec });
  const noise = path.join(dir, 'noise.wav');
  await ffmpeg(['-y', '-f', 'lavfi', '-t', '6', '-i', 'anoisesrc=color=brown:amplitude=0.05:seed=6:r=16000', noise]);
  const chapters: BookPart[][] = [];
  const skips: Skip[] = [];
  for (let c = 0; c < 3; c++) {
    const parts: BookPart[] = [];
    if (c === 0) for (const p of prompts.slice(200, 205)) parts.push({ kind: 'preface', file: p.file }, pause(0.4));
    let clips = 0;
    prompts.slice(c * 60, c * 60 + 60).forEach((p, k) => {
      // in the text after the prompt read before it, not read
      if (k === 20 || k === 41) return void skips.push({ chapter: c, afterClip: clips - 1, text: p.text! });
      parts.push(p, pause(0.4));
      clips++;
      if (k === 30) parts.push(c === 1 ? { kind: 'music', file: 'test/fixtures/music/colobot-constructive-20s.ogg', seconds: 15 } : { kind: 'music', file: noise, seconds: 6 }, pause(0.5));
    });
    chapters.push(parts);
  }
  const unread = prompts.slice(205).map((p) => p.text!);
  return buildMessyBook(dir, chapters, {
    unspoken: lang === 'fr' ? [[FRENCH_UNSPOKEN[0]!, ...unread.slice(0, 35)], [FRENCH_UNSPOKEN[1]!], [FRENCH_UNSPOKEN[2]!, ...unread.slice(35, 70)], [FRENCH_UNSPOKEN[3]!, ...unread.slice(70)]] : [unread.slice(0, 35), [], unread.slice(35, 70), unread.slice(70)],
    skipped: skips,
    shuffle: [1, 2, 0],
    heading: HEADING,
  });
}

const book = QUICK ? await frenchMessyBook(dir) : await ivrBook();
const aligner = await createAligner(alignerName, { modelsDir: 'models', device: 'cpu', threads: defaultAlignerThreads(), hmmScorer: scorerArg(args) });
const fallbackAligner = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
const t0 = performance.now();
const r = await alignRecording({ recognizerScorer: recognizerArg(args), files: book.files, words: book.words, blockEnds: book.blockEnds, language: QUICK ? 'fr-CA' : LOCALE, aligner, fallbackAligner: alignerName === 'dtw' ? undefined : fallbackAligner });
const secs = (performance.now() - t0) / 1000;
const spoken = book.spoken.filter(Boolean).length;
const spokenTimed = r.words.filter((w, i) => w && book.spoken[i]).length;
const inSkip = (i: number) => book.skippedRanges.some(([a, b]) => i >= a && i <= b);
const skippedTimed = r.words.filter((w, i) => w && inSkip(i)).length;
const unreadTimed = r.words.filter((w, i) => w && !book.spoken[i] && !inSkip(i)).length;
let outside = 0, inside = 0;
r.words.forEach((w, i) => {
  const span = book.clipSpans[i];
  if (!w || !span) return;
  if (w.file !== span.file || w.start < span.start - 0.05 || w.end > span.end + 0.05) outside++;
  else inside++;
});
console.log(`${QUICK ? 'French' : LOCALE} messy book${QUICK ? ' (quick: the tests\' 25 prompts)' : ` (prompt seed ${seed})`}, ${alignerName} per segment: ${book.files.length} files (shuffled), ${(r.coverage.audioSeconds / 60).toFixed(1)} min, ${book.words.length} words, ${spoken} spoken; ${secs.toFixed(1)} s`);
console.log(`  spoken words timed ${spokenTimed}/${spoken} (${((100 * spokenTimed) / spoken).toFixed(1)}%), ${inside} inside the prompt that reads them, ${outside} outside; file order ${JSON.stringify(r.order) === JSON.stringify(book.trueOrder) ? 'right' : 'WRONG'}`);
console.log(`  unread words given a time: ${unreadTimed} of ${book.words.length - spoken - skippedWordCount(book)} never read, ${skippedTimed} of the ${skippedWordCount(book)} words of ${book.skippedRanges.length} skipped prompts; segments ${r.coverage.segments} (${r.coverage.segmentsFallback} by the dtw fallback), audio matching no text ${(100 * r.coverage.audioUnmatched).toFixed(1)}%`);
const sk = skipFindings(book, r.skippedSentences);
console.log(`  sentences found skipped inside matched regions: ${sk.sentences} (${sk.words} words, ${sk.readWords} of them read: false skips)`);
if (args.includes('--details')) {
  // the words timed where they should not be: never read, or outside the prompt that reads them
  r.words.forEach((w, i) => {
    const span = book.clipSpans[i];
    const ctx = `${book.words.slice(Math.max(0, i - 3), i).join(' ')} [${book.words[i]}] ${book.words.slice(i + 1, i + 4).join(' ')}`;
    if (w && !book.spoken[i]) {
      // and whose audio it took: the read prompt there, if any
      const over = book.clipSpans.findIndex((sp) => sp && sp.file === w.file && sp.start <= w.start + 0.05 && w.start < sp.end);
      const under = over >= 0 ? `, over the prompt of ${over} "${book.words.slice(over, over + 4).join(' ')}…" (timed ${r.words[over] ? 'too' : 'not'})` : '';
      console.log(`    unread, timed ${i} (file ${w.file} ${w.start.toFixed(2)} s${under}): ${ctx}`);
    }
    else if (w && span && (w.file !== span.file || w.start < span.start - 0.05 || w.end > span.end + 0.05)) console.log(`    outside ${i} (file ${w.file} ${w.start.toFixed(2)}, prompt ${span.file} ${span.start.toFixed(2)}-${span.end.toFixed(2)}): ${ctx}`);
  });
  // and the spoken words left untimed, a line per run of them
  for (const [i, j] of untimedRuns(book, r.words)) {
    const span = book.clipSpans[i];
    console.log(`    untimed ${i}-${j}${span ? ` (file ${span.file} ${span.start.toFixed(2)} s)` : ''}: ${book.words.slice(i, j + 1).join(' ')}`);
  }
}
await aligner.close();
await fallbackAligner.close();
fs.rmSync(dir, { recursive: true, force: true });
