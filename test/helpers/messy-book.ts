// A messy audiobook made from real read speech, for the long-recording aligner's tests and
// bench: the LibriVox clips and jfk.wav joined into chapter files (MP3, FLAC, OGG), handed over
// in shuffled order, with a spoken preface that is not in the text (a real IVR recording), a
// sentence of the text the reader skips, and a stretch of music between two sentences. The
// document holds the spoken text plus paragraphs of The War of the Worlds nobody reads.
// Every spoken word whose clip has reference boundaries (test/fixtures/alignment) gets them,
// moved to where the clip sits in its chapter file.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ffmpeg, ffprobe } from '../../src/media/ffmpeg.ts';
import { readEpub } from '../../src/documents/epub.ts';
import { tokenizeWords } from '../../src/speech/words.ts';
import { clipDistances, cutClip } from './clip-check.ts';

const FIX = path.join(import.meta.dirname, '..', 'fixtures');

export interface BookPart {
  /** Audio: a speech clip with its text and references, silence, music, or speech not in the text. */
  kind: 'clip' | 'silence' | 'music' | 'preface';
  file?: string;
  seconds?: number;
  text?: string;
  refs?: { start: number; end: number }[];
}

export interface MessyBook {
  /** Chapter files in the order given to the aligner (shuffled). */
  files: string[];
  /** files[trueOrder[k]] is chapter k. */
  trueOrder: number[];
  words: string[];
  /** Per word: was it read aloud? */
  spoken: boolean[];
  /** Per word: reference boundaries in its file (spoken words of clips with references). */
  refs: ({ file: number; start: number; end: number } | null)[];
  /** Per word: the span in its file of the clip that reads it (spoken words). */
  clipSpans: ({ file: number; start: number; end: number } | null)[];
  /** Words of the sentence the reader skipped (within the spoken chapters; the first, where several). */
  skippedSentence: [number, number];
  /** Words of every skipped sentence. */
  skippedRanges: [number, number][];
  /** The document's text, paragraph by paragraph (their words, in order, are `words`). */
  paragraphs: string[];
  /** Index of each paragraph's last word (AlignRecordingOptions.blockEnds, as the read-along pipeline passes them). */
  blockEnds: number[];
}

/** Words of the text in all skipped sentences. */
export const skippedWordCount = (book: Pick<MessyBook, 'skippedRanges'>): number => book.skippedRanges.reduce((n, [a, b]) => n + b - a + 1, 0);

/** Runs [first, last] of spoken words the alignment left untimed (the benches' --details). */
export function untimedRuns(book: Pick<MessyBook, 'spoken'>, timed: readonly unknown[]): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < timed.length; i++) {
    if (timed[i] || !book.spoken[i]) continue;
    let j = i;
    while (j + 1 < timed.length && !timed[j + 1] && book.spoken[j + 1]) j++;
    out.push([i, j]);
    i = j;
  }
  return out;
}

/** The aligner's skipped sentences (RecordingAlignment.skippedSentences) against the truth: how many, and how many of their words were read (false skips). */
export function skipFindings(book: Pick<MessyBook, 'spoken'>, found: [number, number][]): { sentences: number; words: number; readWords: number } {
  let words = 0, readWords = 0;
  for (const [a, b] of found) for (let i = a; i <= b; i++) (words++, (readWords += book.spoken[i] ? 1 : 0));
  return { sentences: found.length, words, readWords };
}

/** The messy book's document as a plain-text file (one paragraph per part), for jobs and `lectern run`. */
export function writeMessyBookText(book: MessyBook, file: string): string {
  writeFileSync(file, `${book.paragraphs.join('\n\n')}\n`);
  return file;
}

export function librivoxClips(): BookPart[] {
  const clips: BookPart[] = [];
  for (const line of readFileSync(path.join(FIX, 'speech', 'transcription'), 'utf8').split('\n')) {
    const m = /^<s> (.*) <\/s> \((.*)\)$/.exec(line.trim());
    if (!m) continue;
    const ref = JSON.parse(readFileSync(path.join(FIX, 'alignment', `${m[2]}.json`), 'utf8')) as { words: { start: number; end: number }[] };
    const text = m[1]!.charAt(0).toUpperCase() + m[1]!.slice(1) + '.';
    clips.push({ kind: 'clip', file: path.join(FIX, 'speech', `${m[2]}.wav`), text, refs: ref.words });
  }
  const jfk = JSON.parse(readFileSync(path.join(FIX, 'alignment', 'jfk.json'), 'utf8')) as { text: string; words: { start: number; end: number }[] };
  clips.push({ kind: 'clip', file: path.join(FIX, 'speech', 'jfk.wav'), text: jfk.text, refs: jfk.words });
  return clips;
}

/** Paragraphs of The War of the Worlds (the fixture EPUB) from its first chapter on. */
export async function unspokenParagraphs(count: number): Promise<string[]> {
  const doc = await readEpub(path.join(FIX, 'documents', 'war-of-the-worlds.epub'));
  const paras = doc.pages.flatMap((p) => p.blocks.filter((b) => b.kind === 'paragraph' && b.words.length > 40).map((b) => b.text));
  const first = paras.findIndex((p) => p.startsWith('No one would have believed'));
  return paras.slice(first, first + count);
}

/** Writes one chapter file from its parts; returns each part's span in the file (seconds). */
export async function writeChapter(parts: BookPart[], out: string, codec: string[]): Promise<{ start: number; end: number }[]> {
  const inputs: string[] = [];
  const filters: string[] = [];
  parts.forEach((p, k) => {
    if (p.kind === 'silence') inputs.push('-f', 'lavfi', '-t', String(p.seconds), '-i', 'anullsrc=r=16000:cl=mono');
    else if (p.kind === 'music') inputs.push('-t', String(p.seconds), '-i', p.file!);
    else inputs.push('-i', p.file!);
    filters.push(`[${k}:a]aresample=16000,aformat=sample_fmts=fltp:channel_layouts=mono[a${k}]`);
  });
  filters.push(`${parts.map((_, k) => `[a${k}]`).join('')}concat=n=${parts.length}:v=0:a=1[out]`);
  await ffmpeg(['-y', ...inputs, '-filter_complex', filters.join(';'), '-map', '[out]', ...codec, out]);
  const spans: { start: number; end: number }[] = [];
  let t = 0;
  for (const p of parts) {
    const d = p.kind === 'silence' || p.kind === 'music' ? p.seconds! : (await ffprobe(p.file!)).durationSeconds;
    spans.push({ start: t, end: t + d });
    t += d;
  }
  return spans;
}

const CODECS: { ext: string; args: string[] }[] = [
  { ext: 'mp3', args: ['-c:a', 'libmp3lame', '-b:a', '96k'] },
  { ext: 'flac', args: ['-c:a', 'flac'] },
  { ext: 'ogg', args: ['-c:a', 'libvorbis', '-q:a', '5'] },
  { ext: 'm4a', args: ['-c:a', 'aac', '-b:a', '96k'] },
  { ext: 'wav', args: ['-c:a', 'pcm_s16le'] },
];

/**
 * Chapters (true order) as lists of parts, and the document's text around them: `before[k]`
 * is text nobody reads placed before chapter k's text; `skip` = [chapter, clip index] of a
 * sentence inserted into the text that the reader skips.
 */
/** A sentence of the text the reader skips: it follows clip `afterClip` of `chapter` (-1: it comes before the chapter's first clip). */
export interface Skip {
  chapter: number;
  afterClip: number;
  text: string;
}

export async function buildMessyBook(dir: string, chapters: BookPart[][], opts: { unspoken: string[][]; skipped: Skip | Skip[]; shuffle: number[]; heading?: string }): Promise<MessyBook> {
  const textParts: { text: string; spoken: boolean; file?: number; refs?: { start: number; end: number }[]; span?: { start: number; end: number }; skipped?: boolean }[] = [];
  const skips = Array.isArray(opts.skipped) ? opts.skipped : [opts.skipped];
  const files: string[] = new Array(chapters.length);
  const trueOrder: number[] = new Array(chapters.length);
  for (let c = 0; c < chapters.length; c++) {
    const given = opts.shuffle[c]!; // chapter c is handed over as file number `given`
    const codec = CODECS[c % CODECS.length]!;
    const out = path.join(dir, `part-${String.fromCharCode(97 + given)}.${codec.ext}`);
    const spans = await writeChapter(chapters[c]!, out, codec.args);
    files[given] = out;
    trueOrder[c] = given;
    textParts.push({ text: `${opts.heading ?? 'Chapter'} ${c + 1}.`, spoken: false });
    for (const p of opts.unspoken[c] ?? []) textParts.push({ text: p, spoken: false });
    let clipNo = 0;
    for (const sk of skips) if (sk.chapter === c && sk.afterClip === -1) textParts.push({ text: sk.text, spoken: false, skipped: true });
    chapters[c]!.forEach((p, k) => {
      if (p.kind !== 'clip') return;
      textParts.push({ text: p.text!, spoken: true, file: given, refs: p.refs, span: spans[k] });
      for (const sk of skips) if (sk.chapter === c && sk.afterClip === clipNo) textParts.push({ text: sk.text, spoken: false, skipped: true });
      clipNo++;
    });
  }
  for (const p of opts.unspoken[chapters.length] ?? []) textParts.push({ text: p, spoken: false });
  const words: string[] = [];
  const spoken: boolean[] = [];
  const refs: MessyBook['refs'] = [];
  const clipSpans: MessyBook['clipSpans'] = [];
  const skippedRanges: [number, number][] = [];
  const blockEnds: number[] = [];
  for (const part of textParts) {
    const toks = tokenizeWords(part.text).map((t) => t.word);
    if (toks.length) blockEnds.push(words.length + toks.length - 1);
    if (part.skipped) skippedRanges.push([words.length, words.length + toks.length - 1]);
    toks.forEach((w, i) => {
      words.push(w);
      spoken.push(part.spoken);
      const r = part.refs?.[i];
      refs.push(part.spoken && r ? { file: part.file!, start: part.span!.start + r.start, end: part.span!.start + r.end } : null);
      clipSpans.push(part.spoken ? { file: part.file!, ...part.span! } : null);
    });
  }
  return { files, trueOrder, words, spoken, refs, clipSpans, skippedSentence: skippedRanges[0] ?? [0, -1], skippedRanges, paragraphs: textParts.map((p) => p.text), blockEnds };
}

/** The small messy book of the tests: three chapter files, ~100 s, given in the order c, a, b. */
export async function smallMessyBook(dir: string): Promise<MessyBook> {
  const [c870, c880, c890, c920, c930, jfk] = librivoxClips();
  const preface: BookPart = { kind: 'preface', file: path.join(FIX, 'speech', 'ivr-preamble.flac') };
  const music: BookPart = { kind: 'music', file: path.join(FIX, 'music', 'colobot-constructive-20s.ogg'), seconds: 8 };
  const pause = (s: number): BookPart => ({ kind: 'silence', seconds: s });
  const paras = await unspokenParagraphs(4);
  return buildMessyBook(dir, [
    [preface, pause(1), c870!, pause(0.5), c880!, pause(0.4), c890!],
    [c920!, pause(0.6), music, pause(0.6), c930!],
    [pause(1.5), jfk!, pause(2)],
  ], {
    unspoken: [[paras[0]!], [], [paras[1]!], [paras[2]!, paras[3]!]],
    skipped: { chapter: 0, afterClip: 1, text: 'He was very young, and he had a wife whom he loved more than his own good name.' },
    shuffle: [1, 2, 0],
  });
}

/**
 * The small messy book's layout drawn anew from a seed (bench/messy-placements.bench.ts, round 21):
 * the LibriVox clips and jfk in a random order, two per chapter file, clip `draw % 6` of that
 * order left unread (its text kept), the IVR preface first, 8 s of music and 6 s of pink noise at
 * random places between clips, pauses of 0.3-1.2 s, 0-2 unread paragraphs before each chapter
 * (`unread`: how many), the files handed over in a random order. Pure: no file is made.
 */
function drawPlan(draw: number, clips: BookPart[], noise: string): { chapters: BookPart[][]; skips: Skip[]; unread: number[]; shuffle: number[] } {
  const preface: BookPart = { kind: 'preface', file: path.join(FIX, 'speech', 'ivr-preamble.flac') };
  const music: BookPart = { kind: 'music', file: path.join(FIX, 'music', 'colobot-constructive-20s.ogg'), seconds: 8 };
  const noiseGap: BookPart = { kind: 'music', file: noise, seconds: 6 };
  const rand = seeded(2100 + draw);
  const shuffled = <T>(xs: T[]): T[] => xs.map((x) => ({ x, k: rand() })).sort((a, b) => a.k - b.k).map((e) => e.x);
  const order = shuffled(clips);
  const skipAt = draw % order.length;
  const chapters: BookPart[][] = [[], [], []];
  const skips: Skip[] = [];
  order.forEach((clip, i) => {
    const chapter = Math.floor(i / 2);
    const before = chapters[chapter]!.filter((p) => p.kind === 'clip').length;
    if (i === skipAt) return void skips.push({ chapter, afterClip: before - 1, text: clip.text! });
    if (chapters[chapter]!.length) chapters[chapter]!.push({ kind: 'silence', seconds: 0.3 + 0.9 * rand() });
    chapters[chapter]!.push(clip);
  });
  for (const gap of [music, noiseGap]) {
    const c = chapters[Math.floor(rand() * 3)]!;
    c.splice(Math.floor(rand() * (c.length + 1)), 0, gap);
  }
  chapters[0]!.unshift(preface, { kind: 'silence', seconds: 1 });
  const unread = [0, 1, 2, 3].map(() => Math.floor(rand() * 3));
  const perm = shuffled([0, 1, 2]);
  return { chapters, skips, unread, shuffle: perm.join('') === '012' ? [2, 0, 1] : perm };
}

/** Each timed word with a reference boundary in the file it was timed in: its index and its start and end errors (seconds). */
export function referenceErrors(book: Pick<MessyBook, 'refs'>, words: ({ file: number; start: number; end: number } | null)[]): { i: number; start: number; end: number }[] {
  return words.flatMap((w, i) => {
    const ref = book.refs[i];
    return w && ref && ref.file === w.file ? [{ i, start: Math.abs(w.start - ref.start), end: Math.abs(w.end - ref.end) }] : [];
  });
}

/**
 * Draw `draw` of the messy book (drawPlan), made in `dir`. Its unread paragraphs come from
 * `paragraphs` taken in turn, cyclically, after those of every earlier draw, so a draw is the
 * same book whether the draws before it are made or not.
 */
export async function drawnMessyBook(dir: string, draw: number, paragraphs: string[]): Promise<{ book: MessyBook; chapters: BookPart[][]; skips: Skip[] }> {
  mkdirSync(dir, { recursive: true });
  const noise = path.join(dir, 'noise.wav');
  await ffmpeg(['-y', '-f', 'lavfi', '-t', '6', '-i', 'anoisesrc=color=pink:amplitude=0.05:seed=3:r=16000', noise]);
  const clips = librivoxClips();
  let at = 0;
  for (let d = 0; d < draw; d++) at += drawPlan(d, clips, noise).unread.reduce((a, b) => a + b, 0);
  const { chapters, skips, unread, shuffle } = drawPlan(draw, clips, noise);
  const unspoken = unread.map((n) => Array.from({ length: n }, () => paragraphs[at++ % paragraphs.length]!));
  const book = await buildMessyBook(dir, chapters, { unspoken, skipped: skips, shuffle });
  return { book, chapters, skips };
}

/** Text nobody reads in the French messy book (written for these tests). */
export const FRENCH_UNSPOKEN = [
  "Au village, personne ne parlait plus de cette histoire depuis longtemps. Les anciens se taisaient quand on leur posait des questions, et les enfants avaient appris à ne plus en poser. On disait seulement que la maison du meunier était restée fermée tout un hiver.",
  "Le chemin qui menait au col traversait une forêt de sapins si serrés que la lumière n'y entrait presque jamais. Les bûcherons évitaient cet endroit, où les bruits semblaient venir de partout à la fois.",
  "Des années plus tard, on retrouva dans un tiroir un carnet couvert d'une écriture fine et régulière. Il y était question de routes, de gares et de visages croisés, mais jamais de la raison du départ.",
  "Marie ouvrit la fenêtre de sa chambre et regarda longtemps les toits mouillés. Elle pensait à la lettre qu'elle avait reçue la veille, et qu'elle n'avait pas encore osé relire.",
];

/**
 * Real speech with its text: 25 prompts of Debian's asterisk-core-sounds-fr-wav (June Wallack,
 * Canadian French, CC-BY-SA-3.0) or -ru-wav (Maxim Topal, Russian, CC-BY-3.0), 8 kHz studio
 * recordings joined in fixtures/speech/{fr-ca,ru-ru}-prompts.flac, cut here into one WAV each.
 * Their transcripts are copied unchanged from asterisk-core-sounds-{fr,ru}, spelling slips
 * included ("vérouillée").
 */
export async function fixturePrompts(dir: string, fixture: 'fr-ca' | 'ru-ru' = 'fr-ca'): Promise<(BookPart & { name: string })[]> {
  const { prompts } = JSON.parse(readFileSync(path.join(FIX, 'speech', `${fixture}-prompts.json`), 'utf8')) as { prompts: { name: string; text: string; start: number; end: number }[] };
  const src = path.join(FIX, 'speech', `${fixture}-prompts.flac`);
  return Promise.all(prompts.map(async (p) => {
    const file = path.join(dir, `${fixture}-${p.name}.wav`);
    await ffmpeg(['-y', '-i', src, '-af', `atrim=start=${p.start}:end=${p.end}`, '-c:a', 'pcm_s16le', file]);
    return { kind: 'clip' as const, name: p.name, file, text: p.text, refs: [] };
  }));
}

/**
 * The French messy book: three chapter files of real French prompts (MP3, FLAC, OGG) handed over
 * as c, a, b, a spoken preface not in the text (two prompts), a prompt of the text the reader
 * skips, eight seconds of music, and French paragraphs nobody reads.
 */
export async function frenchMessyBook(dir: string): Promise<MessyBook> {
  const p = await fixturePrompts(dir);
  const pause = (s: number): BookPart => ({ kind: 'silence', seconds: s });
  const music: BookPart = { kind: 'music', file: path.join(FIX, 'music', 'colobot-constructive-20s.ogg'), seconds: 8 };
  const withPauses = (parts: BookPart[]) => parts.flatMap((x) => [x, pause(0.4)]);
  const chapters = [
    [{ kind: 'preface' as const, file: p[0]!.file }, pause(0.5), { kind: 'preface' as const, file: p[1]!.file }, pause(1), ...withPauses(p.slice(2, 9))],
    [...withPauses(p.slice(9, 12)), music, pause(0.5), ...withPauses(p.slice(12, 16))],
    withPauses(p.slice(17, 25)),
  ];
  return buildMessyBook(dir, chapters, {
    unspoken: [[FRENCH_UNSPOKEN[0]!], [], [FRENCH_UNSPOKEN[1]!], [FRENCH_UNSPOKEN[2]!, FRENCH_UNSPOKEN[3]!]],
    skipped: { chapter: 1, afterClip: 4, text: p[16]!.text! },
    shuffle: [1, 2, 0],
    heading: 'Chapitre',
  });
}

/**
 * The Russian messy book, a language no acoustic model here covers (heard and timed with a
 * borrowed one): the French messy book's layout with the Russian prompts, and the transcripts
 * of other prompts as the text nobody reads.
 */
export async function russianMessyBook(dir: string): Promise<MessyBook> {
  mkdirSync(dir, { recursive: true });
  const p = await fixturePrompts(dir, 'ru-ru');
  const { unread } = JSON.parse(readFileSync(path.join(FIX, 'speech', 'ru-ru-prompts.json'), 'utf8')) as { unread: string[] };
  const pause = (s: number): BookPart => ({ kind: 'silence', seconds: s });
  const music: BookPart = { kind: 'music', file: path.join(FIX, 'music', 'colobot-constructive-20s.ogg'), seconds: 8 };
  const withPauses = (parts: BookPart[]) => parts.flatMap((x) => [x, pause(0.4)]);
  const chapters = [
    [{ kind: 'preface' as const, file: p[0]!.file }, pause(0.5), { kind: 'preface' as const, file: p[1]!.file }, pause(1), ...withPauses(p.slice(2, 9))],
    [...withPauses(p.slice(9, 12)), music, pause(0.5), ...withPauses(p.slice(12, 16))],
    withPauses(p.slice(17, 25)),
  ];
  return buildMessyBook(dir, chapters, {
    unspoken: [unread.slice(0, 2), [], unread.slice(2, 5), unread.slice(5)],
    skipped: { chapter: 1, afterClip: 4, text: p[16]!.text! },
    shuffle: [1, 2, 0],
    heading: 'Глава',
  });
}

/**
 * A French chapter in which the reader has a second go at two prompts (a retake: the prompt
 * read whole, a pause, then read again; the text has it once), among 16 others. `retaken`: the
 * words of those two prompts, which should get the second reading's times.
 */
export async function frenchRetakeBook(dir: string): Promise<MessyBook & { retaken: [number, number][] }> {
  mkdirSync(dir, { recursive: true });
  const p = await fixturePrompts(dir);
  const pause = (s: number): BookPart => ({ kind: 'silence', seconds: s });
  const parts: BookPart[] = [];
  const again = [6, 15];
  for (let i = 2; i < 20; i++) {
    if (again.includes(i)) parts.push({ kind: 'preface', file: p[i]!.file }, pause(0.5));
    parts.push(p[i]!, pause(0.4));
  }
  const book = await buildMessyBook(dir, [parts], { unspoken: [[], []], skipped: [], shuffle: [0], heading: 'Chapitre' });
  // each prompt's words, in order after the heading's
  const retaken: [number, number][] = [];
  let w = tokenizeWords('Chapitre 1.').length;
  for (let i = 2; i < 20; i++) {
    const n = tokenizeWords(p[i]!.text!).length;
    if (again.includes(i)) retaken.push([w, w + n - 1]);
    w += n;
  }
  return { ...book, retaken };
}

/**
 * The spot check of the EPUB tests on an aligned recording: `count` timed words picked by a
 * seeded generator (four letters or more, two timed neighbours each side, five distinct words),
 * each cut from its file and matched against eSpeak renderings of itself and its neighbours
 * (test/helpers/clip-check.ts). `own`: clips closest to their own word; `shifted`: the same
 * check on the next word's clip, which should fail.
 */
export async function spotCheck(
  speech: Parameters<typeof clipDistances>[0],
  words: string[],
  timed: ({ file: number; start: number; end: number } | null)[],
  files: string[],
  count: number,
): Promise<{ checked: number; own: number; shifted: number }> {
  const norm = (w: string) => w.toLowerCase().replace(/[^a-z]/g, '');
  // every index once, in a seeded random order (ends when the book has fewer good words than asked)
  const rand = seeded(4242);
  const order = words.map((_, i) => i);
  for (let k = order.length - 1; k > 0; k--) {
    const j = Math.floor(rand() * (k + 1));
    [order[k], order[j]] = [order[j]!, order[k]!];
  }
  let checked = 0, own = 0, shifted = 0;
  for (const i of order) {
    if (checked >= count) break;
    const here = timed[i];
    if (!here || [-2, -1, 1, 2].some((d) => timed[i + d]?.file !== here.file)) continue;
    const cand = [-2, -1, 0, 1, 2].map((d) => norm(words[i + d]!));
    if (cand[2]!.length < 4 || new Set(cand).size < 5 || cand.some((w) => w.length < 2)) continue;
    const t = here, next = timed[i + 1]!;
    const d = await clipDistances(speech, await cutClip(files[t.file]!, t.start, t.end), cand);
    if (d.indexOf(Math.min(...d)) === 2) own++;
    const ds = await clipDistances(speech, await cutClip(files[next.file]!, next.start, next.end), cand);
    if (ds.indexOf(Math.min(...ds)) === 2) shifted++;
    checked++;
  }
  return { checked, own, shifted };
}

/** mulberry32: a seeded generator in 32-bit integer arithmetic (a float LCG loses bits and cycles). */
function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The prompts' folder and transcripts of Debian's asterisk-core-sounds-{en,fr}(-wav). */
export const IVR = {
  en: { dir: '/usr/share/asterisk/sounds/en_US_f_Allison', text: '/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz', packages: 'asterisk-core-sounds-en-wav asterisk-core-sounds-en' },
  fr: { dir: '/usr/share/asterisk/sounds/fr_CA_f_June', text: '/usr/share/doc/asterisk-core-sounds-fr/core-sounds-fr.txt.gz', packages: 'asterisk-core-sounds-fr-wav asterisk-core-sounds-fr' },
  es: { dir: '/usr/share/asterisk/sounds/es_MX_f_Allison', text: '/usr/share/doc/asterisk-core-sounds-es/core-sounds-es.txt.gz', packages: 'asterisk-core-sounds-es-wav asterisk-core-sounds-es' },
  it: { dir: '/usr/share/asterisk/sounds/it_IT_m_Carlo', text: '/usr/share/doc/asterisk-core-sounds-it/core-sounds-it.txt.gz', packages: 'asterisk-core-sounds-it-wav asterisk-core-sounds-it' },
  ru: { dir: '/usr/share/asterisk/sounds/ru_RU_f_IvrvoiceRU', text: '/usr/share/doc/asterisk-core-sounds-ru/core-sounds-ru.txt.gz', packages: 'asterisk-core-sounds-ru-wav asterisk-core-sounds-ru' },
} as const;

/**
 * The spoken prompts of Debian's asterisk-core-sounds-en-wav (~570: Allison Smith, CC-BY-SA-3.0;
 * 8 kHz studio recordings, about 25 minutes) or asterisk-core-sounds-fr-wav (~310: June Wallack,
 * Canadian French, CC-BY-SA-3.0, about 20 minutes) with their transcripts from
 * asterisk-core-sounds-{en,fr}: the widest real read speech with its text that installs here.
 * Prompts whose transcript describes a sound ("[beep]", "(tone plays)") are left out, and so are
 * second recordings of the same words.
 */
export async function ivrPrompts(language: keyof typeof IVR = 'en'): Promise<BookPart[]> {
  const { gunzipSync } = await import('node:zlib');
  const { existsSync } = await import('node:fs');
  const { dir, text, packages } = IVR[language];
  if (!existsSync(text)) throw new Error(`the IVR prompts need the Debian packages ${packages} (apt-get install them)`);
  const out: BookPart[] = [];
  const seen = new Set<string>();
  for (const line of gunzipSync(readFileSync(text)).toString('utf8').split('\n')) {
    const m = /^([\w-]+): (.+)$/.exec(line.trim());
    if (!m || /[[\]()]/.test(m[2]!)) continue;
    // several prompts say the same words ("invalid", "pbx-invalid"): one recording each, or a
    // text read once would be both spoken and unspoken in the messy book
    const key = m[2]!.toLowerCase().replace(/[^\p{L}0-9]+/gu, ' ').trim();
    if (seen.has(key)) continue;
    seen.add(key);
    const file = path.join(dir, `${m[1]}.wav`);
    if (!existsSync(file)) continue;
    out.push({ kind: 'clip', file, text: m[2]!.replace(/\s+/g, ' ').trim() });
  }
  return out;
}


/**
 * The bench's messy book: the small one's chapters, plus three chapters of IVR prompts (M4A,
 * MP3, FLAC) with a spoken preface of prompts not in the text, two prompts each in the text
 * that the reader skips, and music or noise between prompts; the document adds a third of The
 * War of the Worlds nobody reads before each prompt chapter (60,000 words).
 */
export async function largeMessyBook(dir: string, seed = 11): Promise<MessyBook> {
  const small = await smallMessyBook(dir);
  const files = [...small.files];
  const words = [...small.words];
  const spoken = [...small.spoken];
  const refs = [...small.refs];
  const clipSpans = [...small.clipSpans];
  const trueOrder = [...small.trueOrder];
  const skippedRanges = [...small.skippedRanges];
  const blockEnds = [...small.blockEnds];
  const rand = seeded(seed);
  const prompts = (await ivrPrompts()).map((p) => ({ p, k: rand() })).sort((a, b) => a.k - b.k).map((x) => x.p);
  const noise = path.join(dir, 'noise.wav');
  await ffmpeg(['-y', '-f', 'lavfi', '-t', '6', '-i', 'anoisesrc=color=brown:amplitude=0.05:seed=6:r=16000', noise]);
  const novel = await readEpub(path.join(FIX, 'documents', 'war-of-the-worlds.epub'));
  const novelWords = novel.pages.flatMap((p) => p.blocks.flatMap((b) => b.words.map((w) => w.text)));
  const novelEnds = new Set<number>();
  let n = 0;
  for (const b of novel.pages.flatMap((p) => p.blocks)) if (b.words.length) novelEnds.add((n += b.words.length) - 1);
  for (let c = 0; c < 3; c++) {
    const take = prompts.slice(c * 60, c * 60 + 60);
    const parts: BookPart[] = [];
    if (c === 0) for (const p of prompts.slice(400, 408)) parts.push({ kind: 'preface', file: p.file! }); // spoken, not in the text
    const textParts: { text: string; spoken: boolean; part?: number }[] = [];
    take.forEach((p, k) => {
      if (k === 20 || k === 41) {
        textParts.push({ text: p.text!, spoken: false }); // in the text, skipped by the reader
        return;
      }
      textParts.push({ text: p.text!, spoken: true, part: parts.length });
      parts.push(p, { kind: 'silence', seconds: 0.4 });
      if (k === 30) parts.push(c === 1 ? { kind: 'music', file: path.join(FIX, 'music', 'colobot-constructive-20s.ogg'), seconds: 15 } : { kind: 'music', file: noise, seconds: 6 });
    });
    const codec = CODECS[(c + 3) % CODECS.length]!;
    const out = path.join(dir, `prompts-${c}.${codec.ext}`);
    const spans = await writeChapter(parts, out, codec.args);
    // handed over first, read last: every earlier file moves up one place
    files.unshift(out);
    for (const list of [refs, clipSpans]) list.forEach((r, i) => r && (list[i] = { ...r, file: r.file + 1 }));
    for (let k = 0; k < trueOrder.length; k++) trueOrder[k]! += 1;
    trueOrder.push(0);
    novelWords.slice(c * 20000, c * 20000 + 20000).forEach((w, i) => {
      if (novelEnds.has(c * 20000 + i)) blockEnds.push(words.length);
      words.push(w), spoken.push(false), refs.push(null), clipSpans.push(null);
    });
    for (const t of textParts) {
      const toks = tokenizeWords(t.text);
      blockEnds.push(words.length + toks.length - 1);
      if (!t.spoken) skippedRanges.push([words.length, words.length + toks.length - 1]);
      for (const w of toks) (words.push(w.word), spoken.push(t.spoken), refs.push(null), clipSpans.push(t.spoken ? { file: 0, ...spans[t.part!]! } : null));
    }
  }
  return { files, trueOrder, words, spoken, refs, clipSpans, skippedSentence: small.skippedSentence, skippedRanges, paragraphs: [], blockEnds };
}

/** A reading cut into two files mid-sentence (cutReading). */
export interface CutReading {
  /** Upload order: the second file first (index 0), then the first (index 1). */
  files: string[];
  words: string[];
  blockEnds: number[];
  /** Per word: the file and the seconds in it where the reference puts it; null for unread words. */
  truth: ({ file: number; start: number; end: number } | null)[];
  /** The first word after the cut. */
  cutWord: number;
}

/**
 * A reading cut into files by time, mid-sentence, as a ripped audiobook CD's tracks are
 * (bench/cut-tracks.bench.ts): the five LibriVox clips and jfk.wav read in a row, `pause` apart,
 * clip `clip` third, between two paragraphs nobody reads, cut into two MP3 files after the k-th
 * word of clip `clip` (halfway between that word and the next).
 */
export async function cutReading(dir: string, clip: number, k: number, paragraphs: string[], pause = 0.6): Promise<CutReading> {
  const clips = librivoxClips();
  // the cut clip third in the reading, so that text and audio come before and after it
  const order = [...clips.slice(clip), ...clips.slice(0, clip)];
  order.unshift(order.pop()!, order.pop()!);
  const parts: BookPart[] = order.flatMap((p, i) => (i ? [{ kind: 'silence', seconds: pause } as BookPart, p] : [p]));
  const whole = path.join(dir, `reading-${clip}-${k}.wav`);
  const spans = (await writeChapter(parts, whole, ['-c:a', 'pcm_s16le'])).filter((_, i) => i % 2 === 0);
  const refs = order[2]!.refs!;
  const cut = spans[2]!.start + (refs[k - 1]!.end + refs[k]!.start) / 2;
  const files = [path.join(dir, `b-${clip}-${k}.mp3`), path.join(dir, `a-${clip}-${k}.mp3`)];
  await ffmpeg(['-y', '-ss', String(cut), '-i', whole, '-b:a', '48k', files[0]!]);
  await ffmpeg(['-y', '-i', whole, '-t', String(cut), '-b:a', '48k', files[1]!]);
  const words: string[] = [], blockEnds: number[] = [];
  const truth: CutReading['truth'] = [];
  const add = (text: string, c?: { refs: { start: number; end: number }[]; at: number }) => {
    tokenizeWords(text).forEach((t, i) => {
      words.push(t.word);
      const r = c?.refs[i];
      const s = c && r ? c.at + r.start : NaN, e = c && r ? c.at + r.end : NaN;
      truth.push(!c ? null : s < cut ? { file: 1, start: s, end: e } : { file: 0, start: s - cut, end: e - cut });
    });
    blockEnds.push(words.length - 1);
  };
  add(paragraphs[0]!);
  const first = words.length;
  order.forEach((p, i) => add(p.text!, { refs: p.refs!, at: spans[i]!.start }));
  const cutWord = first + order.slice(0, 2).reduce((n, p) => n + tokenizeWords(p.text!).length, 0) + k;
  add(paragraphs[1]!);
  return { files, words, blockEnds, truth, cutWord };
}
