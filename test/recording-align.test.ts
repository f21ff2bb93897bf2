// Long recordings people bring, aligned to their book (src/speech/align/long): real read
// speech, real ffmpeg, PocketSphinx and the dtw aligner. The messy book: three chapter files
// (MP3, FLAC, OGG) handed over in the wrong order, a spoken preface not in the text, a sentence
// the reader skipped, eight seconds of music, and paragraphs nobody reads.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpeg, ffprobe } from '../src/media/ffmpeg.ts';
import { alignRecording, anchorsAgree, chanceUtterancesCut, claimRegions, edgeSentences, firstWindows, keepSentencesWhole, joinRuns, readingOrder, segmentStart, skippableSentences, speechBetween, trimEdges, unconfirmedEdges, RecordingAlignmentStopped, RecordingInputError, RecordingMismatchError, type RecordingAlignment, type RecordingProgress } from '../src/speech/align/long/recording.ts';
import { createAligner, type ClosableAligner } from '../src/speech/align/aligners.ts';
import { balancedBatches, bookDictionary, cepstralMean, createBookRecognizer, recognizerModel, segmentedWords, speechStretches } from '../src/speech/align/long/recognize.ts';
import { decodeRecordingFile, hearThroughRoom, HEARD_REVERB_S, pcmSamples, readHeardPcm, readPcm } from '../src/speech/align/long/audio.ts';
import { lateReverbMargin, reverbTime, withoutLateReverb } from '../src/speech/align/reverb.ts';
import { reverberant } from './helpers/reverb.ts';
import { spokenWords } from '../src/speech/align/long/book-lm.ts';
import { ISLAND_SECONDS, islandsToHear } from '../src/speech/align/long/islands.ts';
import { MAX_TITLE_GAP_KEYS, titleClaims } from '../src/speech/align/long/titles.ts';
import { cutSentences, splitAtCut } from '../src/speech/align/long/cut-sentences.ts';
import { buildTextIndex, DEFAULT_PACE } from '../src/speech/align/long/anchors.ts';
import { readEpub } from '../src/documents/epub.ts';
import { createLocalSpeech, type Speech } from '../src/speech/local.ts';
import { SpeechInputError, type Aligner } from '../src/speech/types.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { createTtsBackend } from '../src/speech/tts/backends.ts';
import { spokenForms } from '../src/speech/spoken-forms.ts';
import { encodeWav } from '../src/media/wav.ts';
import { cutReading, drawnMessyBook, referenceErrors, frenchMessyBook, frenchRetakeBook, russianMessyBook, librivoxClips, skipFindings, smallMessyBook, spotCheck, unspokenParagraphs, writeChapter, type MessyBook } from './helpers/messy-book.ts';
import { expectDrawsAligned } from './helpers/draws.ts';

const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-recording-'));
const FIX = path.join(import.meta.dirname, 'fixtures');
afterAll(() => fs.rmSync(TMP, { recursive: true, force: true }));

describe('long recordings: recogniser runs', () => {
  it('cuts a pass\'s windows into runs of equal seconds, a multiple of the processes, so that no process decodes the last run alone', () => {
    const windows = (n: number) => Array.from({ length: n }, (_, i) => ({ file: 0, start: i * 40, end: i * 40 + (i % 7 === 6 ? 3 : 10) }));
    const seconds = (ws: ReturnType<typeof windows>, b: number[]) => b.reduce((s, i) => s + ws[i]!.end - ws[i]!.start, 0);
    for (const [n, p] of [[94, 2], [30, 2], [61, 2], [200, 4], [5, 2], [1, 2], [3, 4]] as const) {
      const ws = windows(n);
      const b = balancedBatches(ws, p);
      expect(b.flat()).toEqual(ws.map((_, i) => i)); // every window once, in order
      if (n >= p) expect(b.length % p).toBe(0);
      expect(Math.max(...b.map((x) => x.length))).toBeLessThanOrEqual(Math.max(30, Math.ceil(n / p)));
      const secs = b.map((x) => seconds(ws, x));
      if (n >= 2 * p) expect(Math.max(...secs) - Math.min(...secs)).toBeLessThanOrEqual(10);
    }
    expect(balancedBatches([], 2)).toEqual([]);
  });
  it('reads pocketsphinx_batch\'s segmentation: times from each utterance\'s start, a word ending where the next segment starts, fillers and alternates\' marks dropped', () => {
    const out = [
      'run0-warm S 0 T -100 A -90 L -10 0 -5 0 <s> 3 -50 -5 ignored 40 -20 0 </s> 52',
      'run0-7-0 S 0 T -23598 A -17753 L -5845 0 -65 0 <s> 23 -1504 -547 doing 49 -737 -156 so 66 -1077 -284 will(2) 79 -998 -162 [NOISE] 96 -10 0 <sil> 117 -1386 -433 harm 151 -486 -467 </s> 168',
      'run0-8-0 S 0 T 0 A 0 L 0 0 0 0 <s> 12',
    ].join('\n');
    const heard = segmentedWords(out);
    expect([...heard.keys()]).toEqual(['run0-warm', 'run0-7-0', 'run0-8-0']);
    expect(heard.get('run0-7-0')).toEqual([
      { word: 'doing', start: 0.23, end: 0.49 },
      { word: 'so', start: 0.49, end: 0.66 },
      { word: 'will', start: 0.66, end: 0.79 },
      { word: 'harm', start: 1.17, end: 1.51 },
    ]);
    expect(heard.get('run0-8-0')).toEqual([]);
  });

  it('puts a reader\'s utterances near each other and far from another voice or music, whatever their loudness (cepstralMean, the islands\' narrator rule)', async () => {
    const pcm = async (file: string, gain = 1) => (await ffmpeg(['-i', file, '-af', `volume=${gain}`, '-ac', '1', '-ar', '16000', '-f', 's16le', '-'])).stdout;
    const d = (a: Float32Array, b: Float32Array) => Math.hypot(...a.map((x, i) => x - b[i]!));
    const reader = (n: number) => path.join(FIX, 'speech', `sense_and_sensibility_01_austen_64kb-0${n}.wav`);
    const clips = await Promise.all([870, 880, 890, 920, 930].map(async (n) => cepstralMean(await pcm(reader(n)))));
    const ivr = cepstralMean(await pcm(path.join(FIX, 'speech', 'ivr-preamble.flac')));
    const music = cepstralMean(await pcm(path.join(FIX, 'music', 'colobot-constructive-20s.ogg')));
    // measured: the reader's clips 1.6-4.8 apart, 19-21 from the telephone preface, 16-18 from the music
    const apart = clips.flatMap((a, i) => clips.slice(i + 1).map((b) => d(a, b)));
    const away = clips.flatMap((a) => [d(a, ivr), d(a, music)]);
    expect(Math.max(...apart)).toBeLessThan(Math.min(...away) / 2);
    // a gain moves c0 alone, which the mean leaves out (the rest: rounding to 16 bits; 0.8 measured)
    expect(d(cepstralMean(await pcm(reader(870), 0.25)), clips[0]!)).toBeLessThan(Math.min(...apart));
  });

  it('cuts a window into utterances at its pauses, by its sound over its own floor', () => {
    // room tone, 0.6 s of tone, a 0.2 s dip (inside an utterance), 0.5 s of tone, 1 s of room tone, 0.4 s of tone, a click
    const rate = 16000;
    const parts: [number, number][] = [[0.5, 0.002], [0.6, 0.3], [0.2, 0.002], [0.5, 0.3], [1, 0.002], [0.4, 0.3], [0.5, 0.002], [0.03, 0.3], [0.5, 0.002]];
    const total = parts.reduce((x, [d]) => x + d, 0);
    const pcm = Buffer.alloc(2 * Math.round(total * rate));
    let i = 0;
    let seed = 7;
    const noise = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
    for (const [d, amp] of parts) for (let k = 0; k < Math.round(d * rate); k++, i++) pcm.writeInt16LE(Math.round(32767 * amp * (amp < 0.01 ? noise() : Math.sin(k * 0.3))), 2 * i);
    const got = speechStretches(pcm).map(([x, y]) => [+x.toFixed(2), +y.toFixed(2)]);
    // sound from 0.5 to 1.8 s and from 2.8 to 3.2 s, with 0.2 s kept before and 0.3 s after; the click is no utterance
    expect(got).toEqual([[0.3, 2.1], [2.6, 3.5]]);
  });

  // A DC offset near the speech's level, or a room under -80 dBFS in a quiet recording, became
  // the detector's floor and its threshold lay over nearly all the speech: before round 41 both
  // of these gave no utterance at all, and the read-along refused jfk's file as "not speech".
  it('cuts a quiet window with a DC offset, and a very quiet one, into the utterances it has at its own level (refine.ts detectorEnergy)', async () => {
    const pcmOf = async (file: string, filter: string) => (await ffmpeg(['-i', path.join(FIX, 'speech', file), '-af', filter, '-ac', '1', '-ar', '16000', '-f', 's16le', '-'])).stdout;
    const near = (a: [number, number][], b: [number, number][]) => {
      expect(a.length).toBe(b.length);
      a.forEach(([x, y], i) => (expect(Math.abs(x - b[i]![0])).toBeLessThanOrEqual(0.1), expect(Math.abs(y - b[i]![1])).toBeLessThanOrEqual(0.1)));
    };
    const jfk = speechStretches(await pcmOf('jfk.wav', 'anull'));
    expect(jfk.length).toBe(4);
    near(speechStretches(await pcmOf('jfk.wav', 'volume=-24dB,dcshift=0.01')), jfk);
    near(speechStretches(await pcmOf('jfk.wav', 'volume=-30dB,dcshift=0.005')), jfk);
    const reader = 'sense_and_sensibility_01_austen_64kb-0880.wav';
    near(speechStretches(await pcmOf(reader, 'volume=-45dB')), speechStretches(await pcmOf(reader, 'anull')));
  });

  it('hears a window\'s words at their own times, whatever else its recogniser run holds (pocketsphinx_continuous reported some utterances seconds late)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-late-'));
    try {
      const decoded = await decodeRecordingFile(path.join(FIX, 'speech', 'jfk.wav'), 0, dir);
      const text = 'and so my fellow americans ask not what your country can do for you ask what you can do for your country'.split(' ');
      const rec = createBookRecognizer(text, { workDir: dir, sentences: [text], processes: 1 });
      // the clip heard once as a whole window, and once after another window of itself that ends in speech
      const [alone] = await rec.recognize([decoded], [{ file: 0, start: 0, end: decoded.duration }], {});
      const [, after] = await rec.recognize([decoded], [{ file: 0, start: 3, end: 8 }, { file: 0, start: 0, end: decoded.duration }], {});
      expect(alone!.length).toBeGreaterThan(15);
      // every word heard in both is heard at the same time, within a frame or two, and inside the clip
      const at = new Map(alone!.map((w) => [`${w.word}@${w.start.toFixed(1)}`, w.start]));
      let same = 0;
      for (const w of after!) {
        const t = at.get(`${w.word}@${w.start.toFixed(1)}`);
        if (t !== undefined) (same++, expect(Math.abs(w.start - t)).toBeLessThan(0.03));
        expect(w.end).toBeLessThanOrEqual(decoded.duration + 1e-6);
      }
      expect(same).toBeGreaterThan(0.8 * alone!.length);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('pronounces the book\'s words its model\'s dictionary lacks (names, numbers, a URL\'s letters) by eSpeak, in that model\'s phones, and keeps the dictionary\'s own', async () => {
    const en = await bookDictionary(['mars', 'ogilvy', '1894', 'www', '—'], 'en-US');
    // CMUdict's entry, alternates kept
    expect(en.get('mars')).toEqual(['M AA R Z']);
    // eSpeak's readings mapped to CMUdict's phones: the recogniser can hear them (until round 13 it could not)
    expect(en.get('ogilvy')![0]).toMatch(/G AH L V IY$/);
    expect(en.get('1894')![0]).toMatch(/N AY N T IY F (AO|OW) R$/);
    // and a year's reading beside eSpeak's count ("eighteen ninety-four"), as narrators say it
    expect(en.get('1894')![1]).toMatch(/^EY T IY N N AY N T IY F (AO|OW) R$/);
    expect(en.get('mars')).toHaveLength(1);
    expect(en.get('www')![0]).toMatch(/^(D AH B AH L Y UW ?){3}$/);
    for (const p of [...en.values()].flat()) expect(p).toMatch(/^[A-Z]+( [A-Z]+)*$/);
    // a symbol eSpeak reads as nothing is left out: aligned, never recognised
    expect(en.has('—')).toBe(false);
    const fr = await bookDictionary(['maison', 'ogilvy'], 'fr-CA');
    expect(fr.get('maison')).toBeDefined();
    // eSpeak reads the name by English rules, "(en)ˈɒɡɪlvi(fr)": the marks' letters are no phones (they were "ei nn … ff rr")
    expect(fr.get('ogilvy')![0]).toMatch(/^oo gg ii ll vv ii$/);
  });

  it('hears years as narrators read them ("in 1898" said "in eighteen ninety-eight"), where eSpeak\'s count alone mishears them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-years-'));
    try {
      const src = 'The first edition appeared in 1898, a second in 1906, and the film came out in 1953. By 1938 the radio play had frightened a nation, and in 2005 another film followed. Wells died in 1946.';
      const tts = await createTtsBackend('piper', { modelsDir: 'models', device: 'cpu' });
      const [out] = await tts.synthesize([{ text: spokenForms(src, 'en-US').text, language: 'en-US' }]);
      fs.writeFileSync(path.join(dir, 'years.wav'), encodeWav(out!.samples, out!.sampleRate));
      const decoded = await decodeRecordingFile(path.join(dir, 'years.wav'), 0, dir);
      const words = tokenizeWords(src).flatMap((t) => spokenWords(t.word, 'en-US'));
      const years = words.filter((w) => /^\d{4}$/.test(w));
      const dictionary = await bookDictionary(words, 'en-US');
      // the same book with eSpeak's count alone for its numbers (the recogniser until round 19)
      const countOnly = new Map([...dictionary].map(([w, p]) => [w, /^\d+$/.test(w) ? p.slice(0, 1) : p]));
      const heardYears = async (dict: Map<string, string[]>) => {
        const rec = createBookRecognizer(words, { workDir: dir, sentences: [words], processes: 1, dictionary: dict });
        const [heard] = await rec.recognize([decoded], [{ file: 0, start: 0, end: decoded.duration }], {});
        return heard!.map((w) => w.word).filter((w) => /^\d{4}$/.test(w));
      };
      const withReadings = await heardYears(dictionary);
      const counted = await heardYears(countOnly);
      const found = (heard: string[]) => years.filter((y) => heard.includes(y)).length;
      // all but at most one, in the text's order, and none heard that the text does not hold there
      expect(found(withReadings)).toBeGreaterThanOrEqual(years.length - 1);
      expect(withReadings).toEqual(years.filter((y) => withReadings.includes(y)));
      expect(found(counted)).toBeLessThan(found(withReadings));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('recognises French with soundswallower\'s fr-fr model, its front-end settings on the command line; French elisions are words of their own', () => {
    const fr = recognizerModel('fr-CA');
    expect(fr.hmm).toMatch(/soundswallower\/model\/fr-fr$/);
    expect(fr.args).toEqual(expect.arrayContaining(['-upperf', '3700', '-feat', '1s_c_d_dd', '-fdict']));
    expect(recognizerModel('en-GB').args).toEqual([]);
    // any other language borrows soundswallower's en-us model, with eSpeak's pronunciations (bookDictionary)
    expect(recognizerModel('de').hmm).toMatch(/soundswallower\/model\/en-us$/);
    expect(recognizerModel('ru-RU').args).toEqual(expect.arrayContaining(['-upperf', '3700', '-fdict']));
    expect(spokenWords("l'homme", 'fr')).toEqual(["l'", 'homme']);
    expect(spokenWords("Jusqu'à", 'fr-CA')).toEqual(["jusqu'", 'à']);
    expect(spokenWords("aujourd'hui", 'fr')).toEqual(["aujourd'hui"]);
    expect(spokenWords("l'homme", 'en')).toEqual(["l'homme"]);
  });
});

describe('long recordings: the first pass\'s windows', () => {
  const file = (index: number, duration: number) => ({ decoded: { index, duration } });
  const covered = (ws: { start: number; end: number }[]) => ws.reduce((s, w) => s + w.end - w.start, 0);

  it('decodes a recording of up to 15 minutes in full, in windows of 10 s (11.5 s at a file\'s end rather than a last piece under 1.5 s)', () => {
    const ws = firstWindows([file(0, 500), file(1, 43), file(2, 41.2)], 584.2);
    expect(covered(ws)).toBeCloseTo(584.2);
    expect(Math.max(...ws.filter((w) => w.file < 2).map((w) => w.end - w.start))).toBeLessThanOrEqual(10);
    expect(ws.filter((w) => w.file === 2).map((w) => [w.start, w.end])).toEqual([[0, 10], [10, 20], [20, 30], [30, 41.2]]);
  });

  it('decodes one window in 40 s of a long file, and a short file (up to 2 minutes: an intro, a short chapter) in full', () => {
    const ws = firstWindows([file(0, 1200), file(1, 43), file(2, 125)], 1368);
    const of = (i: number) => ws.filter((w) => w.file === i);
    expect(of(0).map((w) => w.start)).toEqual(Array.from({ length: 30 }, (_, k) => 40 * k));
    expect(covered(of(0))).toBeCloseTo(300);
    expect(covered(of(1))).toBeCloseTo(43);
    expect(of(1).map((w) => [w.start, w.end])).toEqual([[0, 10], [10, 20], [20, 30], [30, 40], [40, 43]]);
    expect(of(2).map((w) => w.start)).toEqual([0, 40, 80, 120]);
  });
});

describe('long recordings: the edges of a run of anchors', () => {
  // anchors: [book key, seconds, decoded stretch]; heard words apart, so no edge looks compressed
  const run = (xs: [number, number, number][]) => xs.map(([key, start, stretch], i) => ({ key, start, end: start + 0.3, stretch, heard: 3 * i }));
  const keys = (r: { key: number }[]) => r.map((a) => a.key);
  const predicted = (a: { key: number }, b: { key: number }) => 0.5 * (b.key - a.key);
  const dense = (k0: number, t0: number, stretch: number, n = 6) => Array.from({ length: n }, (_, i): [number, number, number] => [k0 + i, t0 + 0.5 * i, stretch]);

  it('cuts one or two anchors joined to the rest only across undecoded audio and many book words (a repeated phrase heard at a window\'s edge)', () => {
    // Spanish bench: "mudo" heard at 241.45 s anchored to the text's second "modo mudo." (key 1277), 199 words before the next anchor
    expect(keys(trimEdges(run([[1277, 241.45, 5], ...dense(1476, 359.8, 8)]), predicted))).toEqual(keys(run(dense(1476, 359.8, 8))));
    expect(keys(trimEdges(run([[1200, 230, 4], [1277, 241.45, 5], ...dense(1476, 359.8, 8)]), predicted))).toEqual(keys(run(dense(1476, 359.8, 8))));
    expect(keys(trimEdges(run([...dense(100, 10, 1), [400, 160, 2]]), predicted))).toEqual(keys(run(dense(100, 10, 1))));
  });

  it('asks to hear the window beside an edge of fewer than five anchors joined to its run only across unheard audio, and no other', () => {
    // Spanish bench: "de numero. Para" heard 30 s of unheard audio after the region's last window, at another copy of the phrase: the window before it
    expect(unconfirmedEdges(run([...dense(490, 85, 4, 10), ...dense(569, 124.2, 5, 3)]))).toEqual([[114.2, 124.2]]);
    // four anchors at a run's head: the window after them
    expect(unconfirmedEdges(run([...dense(100, 0, 1, 4), ...dense(140, 40, 2, 10)]))).toEqual([[1.8, 11.8]]);
    expect(unconfirmedEdges(run([...dense(100, 0, 1, 4), ...dense(140, 5, 2, 10)]))).toEqual([[1.8, 5]]);
    // five anchors or more on both sides, or nothing unheard between: confirmed
    expect(unconfirmedEdges(run([...dense(100, 0, 1, 5), ...dense(140, 40, 2, 10)]))).toEqual([]);
    expect(unconfirmedEdges(run([...dense(100, 0, 1, 2), ...dense(103, 1.5, 1, 10)]))).toEqual([]);
    // a short run on both sides of one unheard gap: one window, once
    expect(unconfirmedEdges(run([...dense(100, 0, 1, 3), ...dense(140, 40, 2, 3)]))).toEqual([[1.3, 11.3]]);
  });

  it('asks to hear both sides of a stretch inside a run with three anchors or fewer between unheard audio', () => {
    // Spanish bench, seed 29: "no hay mas" (3 anchors, another copy of the phrase) linked in step 40 s after the anchors before it
    const ms = (xs: [number, number][]) => xs.map(([s, e]) => [Math.round(s * 1000), Math.round(e * 1000)]);
    expect(ms(unconfirmedEdges(run([...dense(1360, 120, 3, 10), ...dense(1419, 166.05, 4, 3), ...dense(1469, 200, 5, 10)])))).toEqual([[156050, 166050], [167350, 177350]]);
    // two such stretches 15 s apart: both windows of each (locate hears the overlap once)
    expect(ms(unconfirmedEdges(run([...dense(100, 0, 1, 10), ...dense(150, 30, 2, 2), ...dense(160, 45, 3, 2), ...dense(200, 80, 4, 10)])))).toEqual([[20000, 30000], [30800, 40800], [35000, 45000], [45800, 55800]]);
    // four anchors (two trigrams) are confirmed
    expect(unconfirmedEdges(run([...dense(100, 0, 1, 10), ...dense(150, 30, 2, 4), ...dense(200, 80, 3, 10)]))).toEqual([]);
  });

  it('keeps edges of three anchors or more, and gaps a misheard phrase leaves (up to 8 book words)', () => {
    const three = run([...dense(1275, 240.5, 5, 3), ...dense(1476, 359.8, 8)]);
    expect(trimEdges(three, predicted)).toEqual(three);
    const near = run([[1267, 236, 5], ...dense(1276, 241, 5)]);
    expect(trimEdges(near, predicted)).toEqual(near);
  });
});

describe('long recordings: runs joined into regions', () => {
  const run = (xs: [number, number, number][]) => xs.map(([key, start, stretch], i) => ({ key, start, end: start + 0.3, stretch, heard: 3 * i }));
  const predicted = (a: { key: number }, b: { key: number }) => Math.max(0.2, 0.35 * (b.key - a.key));
  const dense = (k0: number, t0: number, stretch: number, n = 6) => Array.from({ length: n }, (_, i): [number, number, number] => [k0 + i, t0 + 0.35 * i, stretch]);
  // keys 0..99 are one token each, but for keys 50..54: the five words of one URL (http www gnu org licenses)
  const keyToken = Int32Array.from({ length: 100 }, (_, k) => (k < 50 ? k : k <= 54 ? 50 : k - 4));

  it('joins two runs that meet inside one token read out for seconds (a URL), in audio heard without a break', () => {
    // the Live Systems Manual read aloud: "gnu" at 709.4 s, "licenses" 3.3 s later, far more than their letters take
    const a = run([...dense(45, 707, 3), [52, 709.4, 3]]), b = run([[54, 712.7, 3], ...dense(55, 713.5, 3)]);
    expect(joinRuns([a, b], predicted, keyToken)).toHaveLength(1);
  });

  it('keeps them apart across a break in the decoded audio, past MAX_TOKEN_SECONDS, or when the text between is other tokens out of step', () => {
    const a = run([...dense(45, 707, 3), [52, 709.4, 3]]);
    expect(joinRuns([a, run([[54, 712.7, 4], ...dense(55, 713.5, 4)])], predicted, keyToken)).toHaveLength(2);
    expect(joinRuns([a, run([[54, 725, 3], ...dense(55, 726, 3)])], predicted, keyToken)).toHaveLength(2);
    expect(joinRuns([run(dense(10, 100, 1)), run(dense(17, 110, 1))], predicted, keyToken)).toHaveLength(2);
    // in step: joined as before (a misheard word between)
    expect(joinRuns([run(dense(10, 100, 1)), run(dense(17, 102.45, 1))], predicted, keyToken)).toHaveLength(1);
  });

  it('joins them across book words heard as nothing in the time those words take (misheard), not across a pause (skipped)', () => {
    const a = run(dense(10, 100, 1)); // keys 10..15, the last at 101.75 s, heard words 0..15
    const next = (t0: number) => run(dense(21, t0, 1)).map((x) => ({ ...x, heard: x.heard + 16 }));
    // five book words between, no heard word: 2.1 s at the pace
    expect(joinRuns([a, next(101.75 + 2.0)], predicted, keyToken)).toHaveLength(1);
    expect(joinRuns([a, next(101.75 + 0.6)], predicted, keyToken)).toHaveLength(2);
  });
});

describe('long recordings: sentences a segment may have skipped', () => {
  it('are inside the segment, of 4 words or 16 letters, and mostly unheard', () => {
    const words = ['Read', 'this.', 'С', 'неопределенного', 'номера.', 'Yes,', 'it', 'is.', 'Then', 'one', 'more', 'here.', 'And', 'the', 'end.'];
    const sentences: [number, number][] = [[0, 1], [2, 4], [5, 7], [8, 11], [12, 14]];
    const none = new Uint8Array(words.length);
    // the edges were heard where the segment starts and ends; "Yes, it is." is too short a sound to tell from noise
    expect(skippableSentences(words, none, sentences)).toEqual([[2, 4], [8, 11]]);
    // half its words heard as the book has them: read
    const heard = Uint8Array.from(words, (_, i) => (i === 9 || i === 10 ? 1 : 0));
    expect(skippableSentences(words, heard, sentences)).toEqual([[2, 4]]);
  });

  it('the region\'s first and last sentences too, when under 3 of their words are anchors and the rest of the region holds 5 or more (round 31)', () => {
    // tokens 100..: "He was not an ill disposed young man. And so", a sentence ending at token 107
    const ends = new Uint8Array(200);
    ends[107] = 1;
    // per token of a region from token 100 to its last anchor
    const marks = (...tokens: number[]) => Uint8Array.from({ length: Math.max(...tokens) - 99 }, (_, i) => (tokens.includes(100 + i) ? 1 : 0));
    // music after the reading heard as the next sentence's "and so": they may be left out
    expect(edgeSentences(ends, 100, marks(100, 101, 103, 104, 106, 107, 108, 109))).toEqual({ lead: 0, tail: 2 });
    // three of them heard: read on (a track cut mid-sentence)
    expect(edgeSentences(ends, 100, marks(100, 101, 103, 104, 106, 107, 108, 109, 110))).toEqual({ lead: 0, tail: 0 });
    // the unread sentence's last word heard before the reading ("them. He was not …"): the first sentence
    ends.fill(0);
    ends[100] = 1;
    expect(edgeSentences(ends, 100, marks(100, 101, 102, 103, 105, 106, 107))).toEqual({ lead: 1, tail: 0 });
    // under 5 anchors besides: the region is its edges, and keeps them
    expect(edgeSentences(ends, 100, marks(100, 101, 102, 103, 105))).toEqual({ lead: 0, tail: 0 });
    // no sentence ends inside the region: no edge sentence
    ends.fill(0);
    expect(edgeSentences(ends, 100, marks(100, 101, 108))).toEqual({ lead: 0, tail: 0 });
  });

  it('takes an aligner\'s path only when it keeps most of the segment\'s anchors within 1.5 s of where they were heard (messy-placements draw 171)', () => {
    // "He was not an ill disposed young man." heard from 8.26 s, one word per 0.3 s; every word an anchor but "ill"
    const n = 8;
    const heardAt = Float64Array.from({ length: n }, (_, i) => (i === 4 ? NaN : 8.26 + 0.3 * i));
    const seg = { start: 0.95, anchored: Uint8Array.from(heardAt, (t) => (Number.isNaN(t) ? 0 : 1)), heardAt, retaken: new Uint8Array(n) };
    const path = (late: (i: number) => number) => Array.from({ length: n }, (_, i) => ({ word: `w${i}`, start: 8.26 + 0.3 * i + late(i), end: 8.5 + 0.3 * i + late(i) }));
    expect(anchorsAgree(seg, path(() => 0.05))).toBe(true);
    // one word 1.4 s late (jfk's "Americans," after the crowd): still the reading
    expect(anchorsAgree(seg, path((i) => (i === 2 ? 1.4 : 0)))).toBe(true);
    // the draw's path: an unread sentence took the first seconds, the reading squeezed after it
    expect(anchorsAgree(seg, path((i) => 4.1 - 0.45 * i))).toBe(false);
    // what the path left out, and retaken tokens (the anchor may be the other reading), are not counted
    const skipped = path((i) => 4.1 - 0.45 * i).map((w, i) => (i < 4 ? { ...w, skipped: true as const } : w));
    expect(anchorsAgree(seg, skipped)).toBe(true);
    expect(anchorsAgree({ ...seg, retaken: Uint8Array.from({ length: n }, (_, i) => (i < 4 ? 1 : 0)) }, path((i) => 4.1 - 0.45 * i))).toBe(true);
    // under 5 anchors: too few to judge by
    expect(anchorsAgree({ ...seg, anchored: seg.anchored.map((a, i) => (i < 4 ? a : 0)) }, path(() => 3))).toBe(true);
  });
});

describe('long recordings: a sentence cut by a file\'s end (round 32)', () => {
  // "… country. He was not an ill disposed young man." read across two tracks: file 1 ends
  // after "He", file 0 goes on with "was not …"; book tokens are the keys (one token a key)
  const text = 'for your country. He was not an ill disposed young man. He might even have been made amiable himself.'.split(' ');
  const book = (durations: number[]) => ({ words: text, keyToken: text.map((_, i) => i), endsSentence: text.map((w) => (/\.$/.test(w) ? 1 : 0)), durations, secondsPerChar: 0.07 });
  const at = (file: number, start: number, end: number) => ({ file, start, end, globalStart: start, globalEnd: end });
  const anchor = (key: number, start: number, end = start + 0.2) => ({ heard: key, key, start, end, stretch: 0 });
  // the first file's region ends with "country." at 10.0-10.5 s of its 11.0 s; the next file's
  // first heard word is "not" at 0.3 s, "He was" its head, squeezed into its first 0.3 s
  const timed = () => {
    const w: (ReturnType<typeof at> | null)[] = text.map(() => null);
    [[0, 9.2, 9.5], [1, 9.5, 9.8], [2, 9.9, 10.5]].forEach(([t, s, e]) => (w[t!] = at(1, s!, e!)));
    [[3, 0.0, 0.05], [4, 0.05, 0.3]].forEach(([t, s, e]) => (w[t!] = at(0, s!, e!)));
    for (let t = 5; t < text.length; t++) w[t] = at(0, 0.3 + 0.35 * (t - 5), 0.3 + 0.35 * (t - 4));
    return w;
  };
  const claims = [
    { file: 1, anchors: [anchor(0, 9.2), anchor(1, 9.5), anchor(2, 9.9, 10.5)] },
    { file: 0, anchors: [{ ...anchor(3, 0, 0) }, ...[5, 6, 7, 8, 9, 10, 11, 12, 13].map((k) => anchor(k, 0.3 + 0.35 * (k - 5)))], head: { key: 3, from: 0, grownFrom: null } },
  ];

  it('cutSentences: the words between the last word timed before the cut and the first heard after it, with context on both sides, when both files\' audio beside the cut is short', () => {
    const words = timed();
    const [c, ...more] = cutSentences([1, 0], claims, words, book([30, 11]));
    expect(more).toEqual([]);
    // from "for" (within 2 s before the cut) to the anchor 2 s after "not"; "He was" anew, and the next file's words before 1.3 s
    expect(c).toMatchObject({ before: 1, after: 0, first: 0, lastBefore: 2, last: 11, from: 9.2, until: 1.3 });
    expect(c!.to).toBeCloseTo(words[11]!.end);
    // the files in the other order: no cut sentence (the text does not go on from one to the other)
    expect(cutSentences([0, 1], claims, words, book([30, 11]))).toEqual([]);
    // music after the first file's last word (8 s more audio): not a cut
    expect(cutSentences([1, 0], claims, words, book([30, 19]))).toEqual([]);
    // a gap word timed in a third file: not this cut's
    const third = timed();
    third[3] = at(2, 1, 1.2);
    expect(cutSentences([1, 0], claims, third, book([30, 11, 5]))).toEqual([]);
  });

  it('cutSentences: none across a whole sentence (a heading nobody read, a sentence the segments left out), only a sentence\'s end and the next one\'s start', () => {
    const words = timed();
    // the next file's first heard word is "He" of the second sentence: "He was … man." lies between
    const later = [{ ...claims[0]! }, { file: 0, anchors: [anchor(11, 0.4), anchor(12, 0.7), anchor(13, 1.0), anchor(14, 3.5)] }];
    for (let t = 3; t <= 10; t++) words[t] = null;
    [[11, 0.4, 0.6], [12, 0.7, 0.9], [13, 1.0, 1.2], [14, 3.5, 3.7]].forEach(([t, s, e]) => (words[t!] = at(0, s!, e!)));
    expect(cutSentences([1, 0], later, words, book([30, 11]))).toEqual([]);
    // the first file's last heard word "your": "country." ends its sentence, "He was" start the next
    const early = [{ file: 1, anchors: claims[0]!.anchors.slice(0, 2) }, claims[1]!];
    words.splice(0, words.length, ...timed());
    words[2] = null;
    expect(cutSentences([1, 0], early, words, book([30, 11]))).toMatchObject([{ lastBefore: 1, last: 11 }]);
  });

  it('splitAtCut: each word to the file that holds most of it, ending before the first word kept after it, the last word before the cut shortened, not lengthened; nothing when the context words moved or a timed word was left out', () => {
    const words = timed();
    const [c] = cutSentences([1, 0], claims, words, book([30, 11]));
    // the join: 9.2 s to 11.0 s of the first file (1.8 s), then the second file
    const cutAt = 1.8;
    const join = (he: [number, number], was: [number, number]) => [
      { start: 0, end: 0.3 }, { start: 0.3, end: 0.6 }, { start: 0.7, end: 1.3 }, // for your country.
      { start: he[0], end: he[1] }, { start: was[0], end: was[1] },
      ...text.slice(5, 12).map((_, i) => ({ start: cutAt + 0.3 + 0.35 * i, end: cutAt + 0.3 + 0.35 * (i + 1) })),
    ];
    const split = splitAtCut(c!, join([1.55, 1.75], [1.8, 2.05]), cutAt, words, [30, 11])!;
    // "He" before the cut, in the first file at 10.75-10.95 s; "was" after it, 0-0.25 s of the next
    const near = (w: { file: number; start: number; end: number } | undefined, file: number, start: number, end: number) => {
      expect(w!.file).toBe(file);
      expect(w!.start).toBeCloseTo(start);
      expect(w!.end).toBeCloseTo(end);
    };
    near(split.get(3), 1, 10.75, 10.95);
    near(split.get(4), 0, 0, 0.25);
    // the next file's words before 1.3 s are timed anew (as they were here), the later ones keep their times
    expect([...split.keys()].sort((a, b) => a - b)).toEqual([3, 4, 5, 6, 7]);
    // "country." starts 0.4 s from where its segment started it: another reading; no change
    const moved = join([1.55, 1.75], [1.8, 2.05]);
    moved[2] = { start: 1.1, end: 1.3 };
    expect(splitAtCut(c!, moved, cutAt, words, [30, 11])).toBeUndefined();
    // its segment had stretched "country." over "He" (to 10.5 s): the join ends it sooner, and "He" follows
    const stretched = splitAtCut(c!, join([1.1, 1.3], [1.8, 2.05]).map((w, k) => (k === 2 ? { start: 0.7, end: 1.0 } : w)), cutAt, words, [30, 11])!;
    near(stretched.get(2), 1, 9.9, 10.2);
    near(stretched.get(3), 1, 10.3, 10.5);
    // but never later than its segment ended it
    expect(splitAtCut(c!, join([1.55, 1.75], [1.8, 2.05]).map((w, k) => (k === 2 ? { start: 0.7, end: 1.5 } : w)), cutAt, words, [30, 11])!.has(2)).toBe(false);
    // a word that had a time left out: no change
    const left = join([1.55, 1.75], [1.8, 2.05]);
    left[4] = { ...left[4]!, skipped: true } as (typeof left)[number];
    expect(splitAtCut(c!, left, cutAt, words, [30, 11])).toBeUndefined();
  });

  it('times the words beside a cut in the file and at the time they were read (a reading cut into two MP3 tracks after 1 and 3 words of a sentence; bench/cut-tracks.bench.ts)', async () => {
    const paragraphs = await unspokenParagraphs(2);
    const aligner = await createAligner('hmm', { modelsDir: 'models', device: 'cpu' });
    try {
      for (const [clip, k] of [[2, 1], [5, 3]] as const) {
        const r = await cutReading(TMP, clip, k, paragraphs);
        const out = await alignRecording({ files: r.files, words: r.words, blockEnds: r.blockEnds, language: 'en-US', aligner });
        expect(out.order).toEqual([1, 0]);
        // every spoken word timed, none unread
        r.truth.forEach((t, i) => expect(!!out.words[i], `${r.words[i]} (${i})`).toBe(!!t));
        // the words either side of the cut: before round 32 "Unless" went to 0.05 s of the next
        // file and jfk's "And so my" to its first 0.2 s
        for (let i = r.cutWord - k; i <= r.cutWord + 1; i++) {
          const w = out.words[i]!, t = r.truth[i]!;
          expect({ word: r.words[i], file: w.file }).toEqual({ word: r.words[i], file: t.file });
          expect(Math.abs(w.start - t.start), `${r.words[i]} start`).toBeLessThan(0.1);
          expect(Math.abs(w.end - t.end), `${r.words[i]} end`).toBeLessThan(0.1);
        }
        // the region of the first file ends with the cut's words, that of the next starts after them
        const [a, b] = [out.regions.find((x) => x.file === 1 && x.lastWord >= r.cutWord - k - 1), out.regions.find((x) => x.file === 0)];
        expect(a!.lastWord).toBe(r.cutWord - 1);
        expect(b!.firstWord).toBe(r.cutWord);
      }
    } finally {
      await aligner.close();
    }
  }, 120_000);
});

describe('long recordings: reading order of files that match no text', () => {
  const files = (n: number) => Array.from({ length: n }, (_, i) => ({ decoded: { index: i, duration: 10 + i } }));
  const claim = (file: number, key: number) => ({ file, anchors: [{ key }] }) as never;

  it('places them by the names when the names sort the matched files in their reading order (numbered tracks uploaded in any order)', () => {
    // uploaded: chapter 3, an opening tune, chapter 1, chapter 2, the credits
    const names = ['03 Chapter three.mp3', '00 Opening.ogg', '01 Chapter one.mp3', '02 Chapter two.mp3', '99 Credits.mp3'];
    const r = readingOrder(files(5), [claim(0, 900), claim(2, 10), claim(3, 400)], names);
    expect(r.order).toEqual([1, 2, 3, 0, 4]);
    // the timeline plays them in that order
    expect(r.offsets.get(1)).toBe(0);
    expect(r.offsets.get(2)).toBe(11);
    expect(r.offsets.get(4)).toBe(11 + 12 + 13 + 10);
    // "track 10" after "track 9", not after "track 1"
    const ten = ['track 10.mp3', 'track 9.mp3', 'track 1.mp3', 'track 2.mp3'];
    expect(readingOrder(files(4), [claim(1, 800), claim(2, 0)], ten).order).toEqual([2, 3, 1, 0]);
  });

  it('keeps them after their upload-order predecessor when the names do not sort the matched files as their words do, or repeat', () => {
    // the names sort chapter 2 first: they are not track numbers
    const names = ['b second.mp3', 'c music.ogg', 'a first.mp3'];
    expect(readingOrder(files(3), [claim(0, 500), claim(2, 0)], names).order).toEqual([2, 0, 1]);
    // every file named alike (a phone's "audio.m4a"): upload order
    expect(readingOrder(files(3), [claim(0, 500), claim(2, 0)], ['audio.m4a', 'audio.m4a', 'audio.m4a']).order).toEqual([2, 0, 1]);
    // with no matched file the names contradict nothing: they decide
    expect(readingOrder(files(2), [], ['b.mp3', 'a.mp3']).order).toEqual([1, 0]);
  });
});

describe('long recordings: title tracks (a heading read as a track of its own)', () => {
  // the text: chapter one's last words, three headings, chapter two's first words
  const keys = 'it was the end of the first part live systems manual about about this manual the second part begins here with more words'.split(' ');
  const index = buildTextIndex(keys);
  const pace = { ...DEFAULT_PACE, secondsPerChar: 0.07 };
  const heardAs = (words: string, stretch = 0) => {
    let t = 0.05;
    return words.split(' ').filter(Boolean).map((word) => ({ word, stretch, start: t, end: (t += 0.07 * (word.length + 1)) }));
  };
  const region = (file: number, k0: number, k1: number) => ({ file, anchors: Array.from({ length: k1 - k0 + 1 }, (_, i) => ({ heard: i, key: k0 + i, start: i, end: i + 0.5, stretch: 0 })) });
  // files: 0 = chapter one (keys 0..7), 1..3 = the headings' tracks, 4 = chapter two (keys 15..)
  const claims = [region(0, 0, 7), region(4, 15, 22)];
  const sequence = [0, 1, 2, 3, 4];
  const keysOf = (c: { anchors: { key: number }[] }) => c.anchors.map((a) => keys[a.key]).join(' ');

  it('matches each track\'s heard words, in turn, in the text between the matched files around it', () => {
    const heard = [[], heardAs('live systems manual'), heardAs('about'), heardAs('about this manual'), []];
    const got = titleClaims(sequence, heard, claims, index, pace);
    expect(got.map((c) => [c.file, keysOf(c)])).toEqual([[1, 'live systems manual'], [2, 'about'], [3, 'about this manual']]);
    // anchored at the heard words (their index in the track's heard list, their times)
    expect(got[2]!.anchors.map((a) => [a.key, a.heard, +a.start.toFixed(2)])).toEqual([[12, 0, 0.05], [13, 1, 0.47], [14, 2, 0.82]]);
  });

  it('claims nothing where the place is unknown, the words are not the gap\'s, or too few to be more than chance', () => {
    const heard = [[], heardAs('live systems manual'), heardAs('about'), heardAs('about this manual'), []];
    // the names do not sort the matched files (no sequence): no track\'s place is known
    expect(titleClaims(null, heard, claims, index, pace)).toEqual([]);
    // a tune heard as "the", credits heard as other words, a title misheard ("user" as "use a")
    const other = [[], heardAs('the'), heardAs('read by a volunteer for the public domain'), heardAs('use a'), []];
    expect(titleClaims(sequence, other, claims, index, pace)).toEqual([]);
    // the words heard, but in far less time than they take at the reader\'s pace (a chance match)
    const quick = [[], [{ word: 'live', start: 0, end: 0.05, stretch: 0 }, { word: 'systems', start: 0.05, end: 0.1, stretch: 0 }, { word: 'manual', start: 0.1, end: 0.15, stretch: 0 }], [], [], []];
    expect(titleClaims(sequence, quick, claims, index, pace)).toEqual([]);
    // a gap of more text than a few headings: the tracks between are chapters the recogniser missed, not titles
    const long = buildTextIndex([...keys.slice(0, 8), ...Array.from({ length: MAX_TITLE_GAP_KEYS }, (_, i) => `filler${i}`), ...keys.slice(8)]);
    const far = [region(0, 0, 7), region(4, 15 + MAX_TITLE_GAP_KEYS, 22 + MAX_TITLE_GAP_KEYS)];
    expect(titleClaims(sequence, heard, far, long, pace)).toEqual([]);
  });

  it('finds a track before the first matched file in the text just before it', () => {
    // an opening track reads the book's title; chapter one (keys 8..) is matched
    const heard = [heardAs('live systems manual'), [], [], [], []];
    const got = titleClaims([0, 4], heard, [region(4, 15, 22)], index, pace);
    expect(got.map((c) => [c.file, keysOf(c)])).toEqual([[0, 'live systems manual']]);
  });
});

describe('long recordings in French and in a language with no acoustic model of its own (real Canadian-French and Russian speech)', () => {
  it('finds the reading order, times the spoken words inside the prompts that read them, and leaves the unread paragraphs and headings untimed', async () => {
    const book = await frenchMessyBook(TMP);
    const auto = await createAligner('auto', { modelsDir: 'models', device: 'cpu' });
    const dtw = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
    try {
      const r = await alignRecording({ files: book.files, words: book.words, blockEnds: book.blockEnds, language: 'fr-CA', aligner: auto, fallbackAligner: dtw });
      expect(book.trueOrder).not.toEqual([0, 1, 2]);
      expect(r.order).toEqual(book.trueOrder);
      const spoken = book.spoken.filter(Boolean).length;
      const spokenTimed = r.words.filter((w, i) => w && book.spoken[i]).length;
      const [a, b] = book.skippedSentence;
      const unreadTimed = r.words.filter((w, i) => w && !book.spoken[i] && (i < a || i > b)).length;
      const skippedTimed = r.words.slice(a, b + 1).filter(Boolean).length;
      let outside = 0;
      r.words.forEach((w, i) => {
        const span = book.clipSpans[i];
        if (w && span && (w.file !== span.file || w.start < span.start - 0.05 || w.end > span.end + 0.05)) outside++;
      });
      console.log(`French messy book: ${spokenTimed}/${spoken} spoken words timed, ${outside} outside their prompt; ${unreadTimed} unread words and ${skippedTimed} of the ${b - a + 1} skipped prompt's given a time; ${r.coverage.segments} segments, ${r.coverage.segmentsFallback} by the fallback, ${r.coverage.sentencesSkipped} sentences found skipped`);
      // measured 174/178 (173 until round 13), none outside its prompt, no unread paragraph or heading timed
      expect(spokenTimed / spoken).toBeGreaterThanOrEqual(0.9);
      expect(outside).toBe(0);
      expect(unreadTimed).toBe(0);
      // the skipped prompt sits between two read ones: until round 13 inside a matched region
      // (the recogniser heard some of its words in the next prompt's audio), where until the
      // per-segment alignment could leave a sentence out (skippable ranges) the aligner spread
      // all 7 of its words; since the book's words outside the fr-fr dictionary are heard too
      // (eSpeak's pronunciations), the region splits there and it is not even a segment's
      expect(skippedTimed).toBe(0);
      // no read sentence is found skipped (0 or 1: the skipped one, where a region still holds it)
      expect(r.coverage.sentencesSkipped).toBeLessThanOrEqual(1);
    } finally {
      await auto.close();
      await dtw.close();
    }
  }, 120_000);

  it('aligns a Russian audiobook, a language no acoustic model here covers, with a borrowed model: order, spoken words in their prompt, nothing unread timed', async () => {
    const book = await russianMessyBook(path.join(TMP, 'ru'));
    const auto = await createAligner('auto', { modelsDir: 'models', device: 'cpu' });
    const dtw = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
    try {
      const r = await alignRecording({ files: book.files, words: book.words, blockEnds: book.blockEnds, language: 'ru-RU', aligner: auto, fallbackAligner: dtw });
      expect(book.trueOrder).not.toEqual([0, 1, 2]);
      expect(r.order).toEqual(book.trueOrder);
      const spoken = book.spoken.filter(Boolean).length;
      const spokenTimed = r.words.filter((w, i) => w && book.spoken[i]).length;
      const unreadTimed = r.words.filter((w, i) => w && !book.spoken[i]).length;
      let outside = 0;
      r.words.forEach((w, i) => {
        const span = book.clipSpans[i];
        if (w && span && (w.file !== span.file || w.start < span.start - 0.05 || w.end > span.end + 0.05)) outside++;
      });
      console.log(`Russian messy book: ${spokenTimed}/${spoken} spoken words timed, ${outside} outside their prompt; ${unreadTimed} unread words given a time; ${r.coverage.segments} segments, ${r.coverage.segmentsFallback} by the fallback`);
      // measured 114/132 (a run of three prompts unheard), 1 outside its prompt, no unread word timed
      expect(spokenTimed / spoken).toBeGreaterThanOrEqual(0.8);
      expect(outside).toBeLessThanOrEqual(4);
      expect(unreadTimed).toBe(0);
      // a sentence found skipped is one nobody read (here the skipped prompt splits its region: none inside a segment)
      expect(skipFindings(book, r.skippedSentences).readWords).toBe(0);
      // the same audio against Russian text it does not read fails as another text
      const { unread } = JSON.parse(fs.readFileSync(path.join(FIX, 'speech', 'ru-ru-prompts.json'), 'utf8')) as { unread: string[] };
      const other = tokenizeWords(unread.join(' ')).map((t) => t.word);
      await expect(alignRecording({ files: book.files, words: other, language: 'ru-RU', aligner: auto })).rejects.toThrow(/the recording is not a reading of this text/);
    } finally {
      await auto.close();
      await dtw.close();
    }
  }, 120_000);

  it('gives a sentence the reader read twice (a retake) the times of its second reading, and its neighbours their own', async () => {
    const book = await frenchRetakeBook(path.join(TMP, 'retake'));
    const auto = await createAligner('auto', { modelsDir: 'models', device: 'cpu' });
    const dtw = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
    try {
      const r = await alignRecording({ files: book.files, words: book.words, blockEnds: book.blockEnds, language: 'fr-CA', aligner: auto, fallbackAligner: dtw });
      const outside = (i: number) => {
        const w = r.words[i], span = book.clipSpans[i]!;
        return !w || w.start < span.start - 0.05 || w.end > span.end + 0.05;
      };
      const spokenIdx = book.spoken.flatMap((s, i) => (s ? [i] : []));
      const inRetaken = (i: number) => book.retaken.some(([a, b]) => i >= a && i <= b);
      const badRetaken = spokenIdx.filter((i) => inRetaken(i) && outside(i)).length;
      const badOther = spokenIdx.filter((i) => !inRetaken(i) && outside(i)).length;
      console.log(`French retakes: ${badRetaken} of the retaken prompts' words untimed or outside their second reading, ${badOther} of the other ${spokenIdx.length - book.retaken.reduce((n, [a, b]) => n + b - a + 1, 0)} spoken words untimed or outside their prompt`);
      // measured 0 and 4; before retakes were looked for, each retaken prompt was timed on its
      // first reading and the next prompt's first words stretched over the second: 13 and 9
      expect(badRetaken).toBe(0);
      expect(badOther).toBeLessThanOrEqual(8);
    } finally {
      await auto.close();
      await dtw.close();
    }
  }, 120_000);
});

describe('long recordings: a messy audiobook aligned to its book', () => {
  let aligner: ClosableAligner;
  let book: MessyBook;
  let result: RecordingAlignment;
  const progress: RecordingProgress[] = [];
  beforeAll(async () => {
    aligner = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
    book = await smallMessyBook(TMP);
    result = await alignRecording({ files: book.files, words: book.words, blockEnds: book.blockEnds, language: 'en-US', aligner, onProgress: (p) => progress.push(p) });
  }, 180_000);
  afterAll(async () => aligner?.close());

  it('finds the order of the chapter files from their words', () => {
    expect(book.trueOrder).not.toEqual([0, 1, 2]); // handed over shuffled
    expect(result.order).toEqual(book.trueOrder);
    for (const f of result.files) expect(f.position).toBe(book.trueOrder.indexOf(f.index));
    // the global timeline plays the files in that order
    const first = result.files.find((f) => f.position === 0)!;
    expect(first.offset).toBe(0);
    const second = result.files.find((f) => f.position === 1)!;
    expect(second.offset).toBeCloseTo(first.duration, 6);
  });

  it('times most spoken words and gives no time to any word nobody read (preface text, skipped sentence, unread paragraphs)', () => {
    const spoken = book.spoken.filter(Boolean).length;
    const spokenTimed = result.words.filter((w, i) => w && book.spoken[i]).length;
    const unspokenTimed = result.words.filter((w, i) => w && !book.spoken[i]).length;
    console.log(`messy book: ${spokenTimed}/${spoken} spoken words timed, ${unspokenTimed} of ${book.words.length - spoken} unspoken words given a time; coverage ${JSON.stringify(result.coverage)}`);
    // measured 93/93 (86/93 before each recogniser run was warmed up: jfk's first words were misheard)
    expect(spokenTimed / spoken).toBeGreaterThanOrEqual(0.85);
    expect(unspokenTimed).toBe(0);
    const [a, b] = book.skippedSentence;
    for (let i = a; i <= b; i++) expect(result.words[i]).toBeNull();
    expect(result.coverage.wordsTimed).toBe(spokenTimed);
    expect(result.coverage.textMatched).toBeCloseTo(spokenTimed / book.words.length, 9);
    // the preface (25 s) and the music (8 s) are audio that matched no text
    expect(result.coverage.audioUnmatched).toBeGreaterThan(33 / result.coverage.audioSeconds);
  });

  it('keeps each file\'s timings in order, inside the file, and close to the reference boundaries', () => {
    for (const f of result.files) {
      let prev = 0;
      for (const w of result.words) {
        if (!w || w.file !== f.index) continue;
        expect(w.start).toBeGreaterThanOrEqual(prev - 1e-9);
        expect(w.end).toBeGreaterThan(w.start);
        expect(w.end).toBeLessThanOrEqual(f.duration + 1e-6);
        expect(w.globalStart).toBeCloseTo(f.offset + w.start, 9);
        prev = w.end;
      }
    }
    let err = 0, n = 0;
    result.words.forEach((w, i) => {
      const ref = book.refs[i];
      if (!w || !ref) return;
      expect(w.file).toBe(ref.file);
      err += Math.abs(w.start - ref.start) + Math.abs(w.end - ref.end);
      n += 2;
    });
    console.log(`messy book: mean boundary error ${((1000 * err) / n).toFixed(1)} ms over ${n / 2} words with references`);
    expect(n / 2).toBeGreaterThanOrEqual(86);
    // measured 77.0 ms over all 93 words with dtw: jfk's first sentence (heard since each
    // recogniser run is warmed up) has pauses of up to a second that dtw spreads its words
    // into (up to 0.9 s off); the other 86 words were at 34.6 ms. hmm's bound is the next test
    expect(err / n).toBeLessThan(0.09);
  });

  it('times the words with the best aligner for the language when given `auto` (hmm for English): boundary error under 25 ms', async () => {
    const auto = await createAligner('auto', { modelsDir: 'models', device: 'cpu' });
    try {
      const r = await alignRecording({ files: book.files, words: book.words, blockEnds: book.blockEnds, language: 'en-US', aligner: auto });
      expect(r.order).toEqual(book.trueOrder);
      expect(r.words.filter((w, i) => w && !book.spoken[i]).length).toBe(0);
      let err = 0, n = 0;
      r.words.forEach((w, i) => {
        const ref = book.refs[i];
        if (w && ref) (err += Math.abs(w.start - ref.start) + Math.abs(w.end - ref.end)), (n += 2);
      });
      console.log(`messy book with auto (hmm): mean boundary error ${((1000 * err) / n).toFixed(1)} ms over ${n / 2} words`);
      expect(n / 2).toBeGreaterThanOrEqual(86);
      // measured 19.8 ms over 93 words since round 37's 10 ms shift (24.9 ms with round 36's 15 ms and 5 ms snap offset;
      // 24.2 ms with Debian's 16 kHz model;
      // 22.6 ms over 86 words before jfk's first sentence was heard; 20.1 ms without the snap to
      // spectral change, 16.5 ms with a 10 ms shift). The references were made by PocketSphinx
      // with the 16 kHz model, so every move off its boundaries costs here, including the moves
      // that bring hmm closer to hand labels (test/align-hmm.test.ts, bench/align-accuracy.bench.ts)
      expect(err / n).toBeLessThan(0.03);
    } finally {
      await auto.close();
    }
  }, 120_000);

  it('reports progress for every phase, within bounds', () => {
    for (const phase of ['decode', 'locate', 'align'] as const) {
      const ps = progress.filter((p) => p.phase === phase);
      expect(ps.length).toBeGreaterThan(0);
      for (const p of ps) expect(p.done).toBeLessThanOrEqual(p.total);
      expect(ps.at(-1)!.done).toBe(ps.at(-1)!.total);
    }
  });

  it('passes the spot check of the EPUB tests as well as the reference boundaries do', async () => {
    // Clips cut at 20 random timed words, matched against eSpeak renderings of the word and its
    // neighbours. On a real voice this check is weaker than on eSpeak narration: with the
    // reference boundaries themselves 13/20 clips come out closest to their own word (13/20 for
    // the aligner's), so the aligner's clips are held to that, not to the EPUB tests' 18/20.
    const speech: Speech = await createLocalSpeech('espeak', { modelsDir: 'models', device: 'cpu' });
    try {
      const r = await spotCheck(speech, book.words, result.words, book.files, 20);
      const ref = await spotCheck(speech, book.words, book.refs, book.files, 20);
      console.log(`messy book spot check: ${r.own}/${r.checked} clips closest to their own word (reference boundaries: ${ref.own}/${ref.checked}); shifted by one word: ${r.shifted}/${r.checked}`);
      expect(r.checked).toBe(20);
      expect(r.own).toBeGreaterThanOrEqual(ref.own - 3);
      expect(r.shifted).toBeLessThanOrEqual(4);
    } finally {
      await speech.close();
    }
  }, 180_000);

  it('aligns as many segments at once as the aligner runs (its concurrency), longest first, each word where one at a time puts it', async () => {
    // a stand-in aligner that spreads a segment's words evenly over its audio, after a wait:
    // deterministic, so the two runs must agree word for word
    let inFlight = 0, most = 0;
    const seconds: number[] = [];
    const even = (concurrency: number) => ({
      name: 'even',
      concurrency,
      async align(samples: Float32Array, rate: number, text: string) {
        most = Math.max(most, ++inFlight);
        seconds.push(samples.length / rate);
        await new Promise((r) => setTimeout(r, 20));
        inFlight--;
        const words = tokenizeWords(text), d = samples.length / rate;
        return words.map((t, k) => ({ word: t.word, start: (k * d) / words.length, end: ((k + 1) * d) / words.length }));
      },
    });
    const one = await alignRecording({ files: book.files, words: book.words, language: 'en-US', aligner: even(1) });
    expect(most).toBe(1);
    seconds.length = 0;
    const two = await alignRecording({ files: book.files, words: book.words, language: 'en-US', aligner: even(2) });
    expect(two.coverage.segments).toBeGreaterThan(1);
    expect(most).toBe(2);
    // the first two started are the two longest
    const sorted = [...seconds].sort((a, b) => b - a);
    expect(seconds.slice(0, 2).sort((a, b) => b - a)).toEqual(sorted.slice(0, 2));
    expect(two.words).toEqual(one.words);
    expect(two.words.map((w) => w !== null)).toEqual(result.words.map((w) => w !== null));
  }, 180_000);

  it('times a segment the aligner finds no path through with the fallback aligner, and counts it (an aligner that refuses every segment stands in for an HMM losing its beam)', async () => {
    const refusing = { name: 'refuses', align: async () => Promise.reject(new SpeechInputError('no alignment of the text to the audio')) };
    await expect(alignRecording({ files: book.files, words: book.words, language: 'en-US', aligner: refusing })).rejects.toThrow(SpeechInputError);
    const r = await alignRecording({ files: book.files, words: book.words, language: 'en-US', aligner: refusing, fallbackAligner: aligner });
    expect(r.coverage.segments).toBeGreaterThan(0);
    expect(r.coverage.segmentsFallback).toBe(r.coverage.segments);
    expect(r.words.map((w) => w !== null)).toEqual(result.words.map((w) => w !== null));
    expect(result.coverage.segmentsFallback).toBe(0);
  }, 180_000);

  it('splits a segment the aligner finds no path through at its anchors, so that only the piece holding the trouble is timed by the fallback', async () => {
    // an aligner that loses its path on any text holding "Americans" (jfk's first sentence) stands in for an HMM losing its beam on one line
    const refused: string[] = [];
    const picky = { name: 'picky', align: async (samples: Float32Array, rate: number, text: string, lang: string) => {
      if (/Americans/.test(text)) (refused.push(text), await Promise.reject(new SpeechInputError('no alignment of the text to the audio')));
      return aligner.align(samples, rate, text, lang);
    } };
    const fellBack: string[] = [];
    const fallback = { name: 'fallback', align: async (samples: Float32Array, rate: number, text: string, lang: string) => (fellBack.push(text), aligner.align(samples, rate, text, lang)) };
    const r = await alignRecording({ files: book.files, words: book.words, language: 'en-US', aligner: picky, fallbackAligner: fallback });
    expect(r.coverage.segmentsFallback).toBe(1);
    expect(refused.length).toBeGreaterThan(1); // the whole segment, then pieces of it
    expect(fellBack).toHaveLength(1);
    expect(fellBack[0]).toMatch(/Americans/);
    const words = (t: string) => t.split(/\s+/).length;
    expect(words(fellBack[0]!)).toBeLessThan(words(refused[0]!) / 2);
    expect(r.coverage.fallbackSeconds).toBeGreaterThan(0);
    expect(r.words.map((w) => w !== null)).toEqual(result.words.map((w) => w !== null));
    // pieces join up: the words stay in order within each file
    for (let i = 1; i < r.words.length; i++) {
      const a = r.words[i - 1], b = r.words[i];
      if (a && b && a.file === b.file) expect(b.start).toBeGreaterThanOrEqual(a.start - 1e-6);
    }
  }, 180_000);

  it('stops when asked, between steps, and when the signal aborts', async () => {
    let calls = 0;
    await expect(alignRecording({ files: book.files, words: book.words, language: 'en-US', aligner, shouldStop: async () => ++calls > 2 })).rejects.toThrow(RecordingAlignmentStopped);
    const ac = new AbortController();
    const run = alignRecording({ files: book.files, words: book.words, language: 'en-US', aligner, signal: ac.signal, onProgress: (p) => p.phase === 'locate' && ac.abort() });
    await expect(run).rejects.toThrow();
  }, 60_000);

  // a run of fewer than 5 anchors is chance (the recogniser hears any speech as the book's words),
  // so goforward's "go forward ten meters" was heard and refused as "does not sound like speech"
  it('refuses a text of under 5 spoken words, saying why, before decoding anything', async () => {
    const err = await alignRecording({ files: [path.join(FIX, 'speech', 'goforward.wav')], words: ['go', 'forward', 'ten', 'meters'], language: 'en-US', aligner }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpeechInputError);
    expect((err as Error).message).toBe('the text holds 4 spoken words: a recording is located in its text by runs of 5 words heard in order, so a read-along needs a text of at least 5 words');
  });

  it('fails with the matched share when the recording is of another text', async () => {
    const other = tokenizeWords((await unspokenParagraphs(30)).slice(4).join(' ')).map((t) => t.word);
    const err = await alignRecording({ files: book.files, words: other, language: 'en-US', aligner }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecordingMismatchError);
    expect((err as RecordingMismatchError).reason).toBe('other-text');
    expect((err as RecordingMismatchError).coverage.heardMatched).toBeLessThan(0.05);
    expect((err as Error).message).toMatch(/not a reading of this text: only \d+\.\d% of the words heard/);
  }, 60_000);

  it('reads a quiet recording with a DC offset (jfk 24 dB down, a 1 % offset): every word timed, as at its own level', async () => {
    const quiet = path.join(TMP, 'jfk-quiet-offset.flac');
    await ffmpeg(['-y', '-i', path.join(FIX, 'speech', 'jfk.wav'), '-af', 'volume=-24dB,dcshift=0.01', quiet]);
    const words = tokenizeWords('And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.').map((t) => t.word);
    const own = await alignRecording({ files: [path.join(FIX, 'speech', 'jfk.wav')], words, language: 'en-US', aligner });
    const got = await alignRecording({ files: [quiet], words, language: 'en-US', aligner });
    expect(got.words.filter((w) => w !== null)).toHaveLength(22);
    got.words.forEach((w, i) => expect(Math.abs(w!.start - own.words[i]!.start)).toBeLessThan(0.1));
  }, 60_000);

  it('locates a reading in a ringing room (jfk in a synthetic hall: RT60 1 s, 0 dB direct-to-reverberant), which the recogniser hears with its late reverberation suppressed; as recorded it heard none of the text', async () => {
    const words = tokenizeWords('And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.').map((t) => t.word);
    const dry = path.join(FIX, 'speech', 'jfk.wav');
    const hall = path.join(TMP, 'jfk-hall.wav');
    const samples = pcmSamples(fs.readFileSync((await decodeRecordingFile(dry, 0, TMP)).pcm));
    fs.writeFileSync(hall, encodeWav(reverberant(samples, 16000, 1, 0), 16000));
    const heard = await alignRecording({ files: [hall], words, language: 'en-US', aligner, suppressReverb: false }).catch((e: unknown) => e);
    expect(heard).toBeInstanceOf(RecordingMismatchError);
    const own = await alignRecording({ files: [dry], words, language: 'en-US', aligner });
    const got = await alignRecording({ files: [hall], words, language: 'en-US', aligner });
    expect(got.words.filter((w) => w !== null)).toHaveLength(22);
    // timed near the dry reading's times, but for the words after jfk's 1.1 s pause, which the
    // segment aligner reads in the reverberant audio as it is: measured 16 of 22 starts within
    // 0.1 s of the dry reading's, "ask not what your country can do" 0.06-0.99 s off (README,
    // *Reverberation*)
    const off = got.words.map((w, i) => Math.abs(w!.start - own.words[i]!.start));
    console.log(`jfk in a hall: starts ${(1000 * off.reduce((a, b) => a + b, 0) / 22).toFixed(0)} ms from the dry reading's on average: ${off.map((o) => (1000 * o).toFixed(0)).join(' ')}`);
    expect(off.filter((o) => o < 0.1).length).toBeGreaterThanOrEqual(14);
  }, 60_000);

  it('fails saying so when the audio is music or noise, not speech', async () => {
    const music = path.join(TMP, 'music.mp3');
    await ffmpeg(['-y', '-stream_loop', '2', '-i', path.join(FIX, 'music', 'colobot-constructive-20s.ogg'), '-t', '60', '-c:a', 'libmp3lame', music]);
    const noise = path.join(TMP, 'noise.wav');
    await ffmpeg(['-y', '-f', 'lavfi', '-t', '30', '-i', 'anoisesrc=color=pink:amplitude=0.1:seed=6:r=16000', noise]);
    for (const f of [music, noise]) {
      const err = await alignRecording({ files: [f], words: book.words, language: 'en-US', aligner }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RecordingMismatchError);
      expect((err as RecordingMismatchError).reason).toBe('not-speech');
      expect((err as Error).message).toMatch(/does not sound like speech/);
    }
  }, 90_000);
});

describe('long recordings: a ringing room (reverb.ts, audio.ts hearThroughRoom)', () => {
  const jfk = () => decodeRecordingFile(path.join(FIX, 'speech', 'jfk.wav'), 0, fs.mkdtempSync(path.join(TMP, 'room-')));

  it('estimates a dry reading under the line and the same reading in a room of RT60 0.6 s (5 dB) or 1 s (0 dB) over it; a clip of a few words says nothing', async () => {
    const x = pcmSamples(fs.readFileSync((await jfk()).pcm));
    // measured 0.21, 0.44, 0.64 s
    expect(reverbTime(x, 16000).rt60).toBeLessThan(0.3);
    expect(reverbTime(reverberant(x, 16000, 0.6, 5), 16000).rt60).toBeGreaterThan(HEARD_REVERB_S);
    expect(reverbTime(reverberant(x, 16000, 1, 0), 16000).rt60).toBeGreaterThan(0.55);
    expect(reverbTime(x.subarray(0, 16000), 16000)).toEqual({ rt60: 0, decays: expect.any(Number) });
  });

  it('suppresses late reverberation block by block as over the whole recording, and leaves a dry room\'s file as decoded', async () => {
    const file = await jfk();
    expect((await hearThroughRoom(file)).heardPcm).toBeUndefined();
    const x = reverberant(pcmSamples(fs.readFileSync(file.pcm)), 16000, 1, 0);
    const whole = withoutLateReverb(x, 16000, 1);
    const margin = lateReverbMargin(16000);
    for (const [a, b] of [[0, 40000], [40000, 123457], [123457, x.length]] as const) {
      const from = Math.max(0, a - margin);
      const part = withoutLateReverb(x.subarray(from, Math.min(x.length, b + margin)), 16000, 1, from, a - from, b - from);
      expect(Math.max(...part.map((v, i) => Math.abs(v - whole[a + i]!)))).toBeLessThan(1e-6);
    }
    // a noise burst in the hall: its late reverberation falls (measured 6.2 dB over 0.3-0.8 s), the burst stays (-1.5 dB)
    let seed = 7;
    const burst = Float32Array.from({ length: 24000 }, (_, i) => (i < 3200 ? (((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32) - 0.5) * 0.5 : 0));
    const ringing = reverberant(burst, 16000, 1, 0);
    const suppressed = withoutLateReverb(ringing, 16000, 1);
    const db = (v: Float32Array, a: number, z: number) => 10 * Math.log10(v.subarray(a * 16000, z * 16000).reduce((t, y) => t + y * y, 0));
    expect(db(suppressed, 0.3, 0.8) - db(ringing, 0.3, 0.8)).toBeLessThan(-4.5);
    expect(db(suppressed, 0, 0.2) - db(ringing, 0, 0.2)).toBeGreaterThan(-2.5);
    fs.writeFileSync(file.pcm, Buffer.from(Int16Array.from(x, (v) => Math.round(v * 32767)).buffer));
    const hall = await hearThroughRoom(file);
    expect(hall.heardPcm).toBeDefined();
    expect(hall.reverbTime).toBeGreaterThan(HEARD_REVERB_S);
    expect(readHeardPcm(hall, 0, hall.duration).length).toBe(readPcm(hall, 0, hall.duration).length);
  });
});

describe('long recordings: islands heard again with their own text', () => {
  it('islandsToHear: the gaps beside each file\'s runs, each with the free text next to its runs, as much as the gap holds at the pace', () => {
    const keys = Array.from({ length: 400 }, (_, k) => `w${k % 50}`); // 3 characters + a space each
    const index = buildTextIndex(keys);
    const pace = { ...DEFAULT_PACE, secondsPerChar: 0.07 };
    const run = (k0: number, k1: number, t0: number) => Array.from({ length: k1 - k0 + 1 }, (_, i) => ({ heard: i, key: k0 + i, start: t0 + 0.3 * i, end: t0 + 0.3 * i + 0.25, stretch: 0 }));
    const islands = islandsToHear([
      // file 0: speech before its run, a gap between two runs, a long tail after the last
      { duration: 500, runs: [run(100, 119, 10), run(130, 149, 20.5)] },
      // file 1: one run whose text follows file 0's runs; free text after it up to nothing taken
      { duration: 20, runs: [run(160, 179, 5)] },
      // file 2: nothing matched: heard with the text around every run (a chapter starts where one ends)
      { duration: 60, runs: [] },
      // file 3: nothing matched, long: its start with the text after every run, its end with the text before
      { duration: 600, runs: [] },
    ], index, pace);
    const byFile = (f: number) => islands.filter((i) => i.file === f);
    const [f2] = byFile(2);
    expect(f2).toMatchObject({ start: 0, end: 60 });
    const holds = (text: [number, number][], k: number) => text.some(([a, b]) => k >= a && k <= b);
    for (const k of [99, 120, 129, 150, 159, 180]) expect(holds(f2!.text, k)).toBe(true); // beside each run, both sides
    for (const k of [100, 119, 130, 160, 179]) expect(holds(f2!.text, k)).toBe(false); // never a run's own text
    const [head3, tail3] = byFile(3);
    expect(head3).toMatchObject({ start: 0, end: ISLAND_SECONDS });
    expect(tail3).toMatchObject({ start: 600 - ISLAND_SECONDS, end: 600 });
    expect(holds(head3!.text, 180) && !holds(head3!.text, 99)).toBe(true); // after runs only
    expect(holds(tail3!.text, 99) && !holds(tail3!.text, 180)).toBe(true); // before runs only
    const [head, between, tail] = byFile(0);
    // the 10 s before the run hold at most 1.5 × 10 / 0.07 + 40 characters: as many keys back as fit
    expect(head).toMatchObject({ start: 0, end: 10 });
    const [k0, k1] = head!.text[0]!;
    const chars = (a: number, b: number) => index.charsBefore[b + 1]! - index.charsBefore[a]!;
    expect(k1).toBe(99);
    expect(chars(k0, 99)).toBeLessThanOrEqual((1.5 * 10) / 0.07 + 40);
    expect(chars(k0 - 1, 99)).toBeGreaterThan((1.5 * 10) / 0.07 + 40);
    // between the runs: the free text after the first and before the second (keys 120–129)
    expect(between!.start).toBeCloseTo(10 + 0.3 * 19 + 0.25, 6);
    expect(between!.end).toBe(20.5);
    expect(between!.text).toEqual([[120, 129]]);
    // a long tail is heard only next to the run, and its text stops where file 1's run begins
    expect(tail!.end - tail!.start).toBeCloseTo(ISLAND_SECONDS, 6);
    expect(tail!.text).toEqual([[150, 159]]);
    const f1 = byFile(1);
    expect(f1[0]).toMatchObject({ start: 0, end: 5, text: [[150, 159]] });
    expect(f1[1]!.text[0]![0]).toBe(180);

    // inside a run: two anchors 5 s apart with 10 book words between them, in decoded audio, are
    // an island with those words; the same jump across audio nobody decoded is not (it fits the pace)
    const jump = (stretchB: number) => [...run(200, 209, 0), ...run(220, 229, 8.2).map((a) => ({ ...a, stretch: stretchB }))];
    const inner = islandsToHear([{ duration: 12, runs: [jump(0)] }], index, pace).filter((i) => i.start > 0 && i.end < 12);
    expect(inner).toEqual([{ file: 0, start: 0.3 * 9 + 0.25, end: 8.2, text: [[210, 219]] }]);
    expect(islandsToHear([{ duration: 12, runs: [jump(1)] }], index, pace).filter((i) => i.start > 0 && i.end < 12)).toEqual([]);
  });

  it('islandsToHear: a file that matched nothing is heard with each free stretch of text whole, up to a short chapter\'s length, and with the edges of a longer one', () => {
    const keys = Array.from({ length: 3000 }, (_, k) => `w${k % 50}`); // 4 characters each, with the space
    const index = buildTextIndex(keys);
    const pace = { ...DEFAULT_PACE, secondsPerChar: 0.07 };
    const run = (k0: number, k1: number, t0: number) => Array.from({ length: k1 - k0 + 1 }, (_, i) => ({ heard: i, key: k0 + i, start: t0 + 0.3 * i, end: t0 + 0.3 * i + 0.25, stretch: 0 }));
    const [island, ...more] = islandsToHear([
      { duration: 30, runs: [run(100, 119, 5)] },
      // free text 120-999 (3,520 characters) and 1020-2899 (7,520)
      { duration: 60, runs: [run(1000, 1019, 5), run(2900, 2919, 40)] },
      // 10 s that matched nothing: the pace's share is 1.5 × 10 / 0.07 + 40 + 800 characters, about 263 keys
      { duration: 10, runs: [] },
    ], index, pace).filter((i) => i.file === 2);
    expect(more).toEqual([]);
    const holds = (k: number) => island!.text.some(([a, b]) => k >= a && k <= b);
    // the shorter stretch whole: a sentence read after unread paragraphs lies in its middle
    for (const k of [120, 560, 999]) expect(holds(k)).toBe(true);
    // the longer one at its edges only, as before
    for (const k of [1020, 1250, 2650, 2899]) expect(holds(k)).toBe(true);
    for (const k of [1300, 1960, 2600]) expect(holds(k)).toBe(false);
  });

  it('claimRegions: a run of 3 anchors counts beside a region of its file whose text it continues (a sentence after music), not alone nor beside another file\'s', () => {
    const run = (k0: number, n: number, t0: number) => Array.from({ length: n }, (_, i) => ({ heard: i, key: k0 + i, start: t0 + 0.3 * i, end: t0 + 0.3 * i + 0.25, stretch: 0 }));
    const claims = claimRegions([
      { runs: [run(0, 20, 0), run(24, 3, 15), run(100, 3, 30)] },
      { runs: [run(200, 20, 0)] },
      { runs: [run(223, 3, 5)] },
    ]);
    const spans = claims.map((c) => [c.file, c.anchors[0]!.key, c.anchors.at(-1)!.key]).sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
    expect(spans).toEqual([[0, 0, 19], [0, 24, 26], [1, 200, 219]]);
  });

  it('keepSentencesWhole: two regions of a file that meet inside a sentence across more than 3 s of audio do not share it; the one with fewer anchors there gives them up, and goes when under 3 are left', () => {
    const run = (k0: number, n: number, t0: number) => Array.from({ length: n }, (_, i) => ({ heard: i, key: k0 + i, start: t0 + 0.3 * i, end: t0 + 0.3 * i + 0.25, stretch: 0 }));
    // sentences end at tokens 9, 19 and 29 (keys are tokens here)
    const book = { keyToken: Int32Array.from({ length: 40 }, (_, k) => k), endsSentence: Uint8Array.from({ length: 40 }, (_, t) => (t % 10 === 9 ? 1 : 0)) };
    const spans = (claims: { file: number; anchors: { key: number }[] }[]) => claims.map((c) => [c.file, c.anchors[0]!.key, c.anchors.at(-1)!.key]);
    // "was. And so" heard in music 9 s before the rest of the sentence: the run before gives up "And so"
    expect(spans(keepSentencesWhole(book, [{ file: 0, anchors: run(4, 8, 0) }, { file: 0, anchors: run(12, 10, 12) }]))).toEqual([[0, 4, 9], [0, 12, 21]]);
    // "Chapter 1. He" heard in a preface, "might even have been" 8 s later: the short run goes
    expect(spans(keepSentencesWhole(book, [{ file: 0, anchors: run(8, 3, 0) }, { file: 0, anchors: run(11, 12, 11) }]))).toEqual([[0, 11, 22]]);
    // a region that gives up all its anchors is gone, and the next one meets the region before
    // it (round 29: the next pair read the emptied region's last anchor and the alignment crashed)
    expect(spans(keepSentencesWhole(book, [{ file: 0, anchors: run(4, 12, 0) }, { file: 0, anchors: run(16, 3, 12) }, { file: 0, anchors: run(25, 5, 20) }]))).toEqual([[0, 4, 15], [0, 25, 29]]);
    // left alone: a pause of 3 s or less, text that meets at a sentence's end, two files
    for (const claims of [
      [{ file: 0, anchors: run(4, 8, 0) }, { file: 0, anchors: run(12, 10, 5.1) }],
      [{ file: 0, anchors: run(4, 6, 0) }, { file: 0, anchors: run(10, 10, 12) }],
      [{ file: 0, anchors: run(4, 8, 0) }, { file: 1, anchors: run(12, 10, 12) }],
    ]) expect(spans(keepSentencesWhole(book, claims))).toEqual(spans(claims));
  });

  it('the messy book inside the whole novel: words the book-wide model misheard (jfk\'s pauses, a sentence after music) are found again, and no unread word gets a time', async () => {
    // As the bench's messy book: 60,000 unread words of The War of the Worlds around the text
    // make the recogniser's model a novel's, under which jfk and the chapter starts are heard as
    // other words (measured: 85 of 93 spoken words timed without islands, all 93 with them)
    const dir = path.join(TMP, 'novel');
    fs.mkdirSync(dir, { recursive: true });
    const book = await smallMessyBook(dir);
    const novel = (await readEpub(path.join(FIX, 'documents', 'war-of-the-worlds.epub'))).pages.flatMap((p) => p.blocks.flatMap((b) => b.words.map((w) => w.text)));
    const words = [...book.words, ...novel], spoken = [...book.spoken, ...novel.map(() => false)];
    const aligner = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
    try {
      const r = await alignRecording({ files: book.files, words, language: 'en-US', aligner });
      const spokenTimed = r.words.filter((w, i) => w && spoken[i]).length;
      const total = spoken.filter(Boolean).length;
      console.log(`messy book in the novel: ${spokenTimed}/${total} spoken words timed; coverage ${JSON.stringify(r.coverage)}`);
      expect(spokenTimed / total).toBeGreaterThanOrEqual(0.95);
      expect(r.words.filter((w, i) => w && !spoken[i]).length).toBe(0);
      expect(r.order).toEqual(book.trueOrder);
    } finally {
      await aligner.close();
    }
  }, 180_000);
});

describe('long recordings: inputs', () => {
  let aligner: ClosableAligner;
  beforeAll(async () => {
    aligner = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
  });
  afterAll(async () => aligner?.close());

  it('puts a file that matches no text (an opening tune) where its track number says, given the upload names', async () => {
    const clips = librivoxClips();
    const dir = fs.mkdtempSync(path.join(TMP, 'names-'));
    const jfk = path.join(dir, 'upload-1'), dashwood = path.join(dir, 'upload-2'), tune = path.join(dir, 'upload-3');
    await writeChapter([clips[5]!], jfk, ['-c:a', 'libvorbis', '-f', 'ogg']);
    await writeChapter([clips[0]!, clips[1]!], dashwood, ['-c:a', 'flac', '-f', 'flac']);
    await writeChapter([{ kind: 'music', file: path.join(FIX, 'music', 'colobot-constructive-20s.ogg'), seconds: 8 }], tune, ['-c:a', 'libvorbis', '-f', 'ogg']);
    const words = tokenizeWords([clips[0]!, clips[1]!, clips[5]!].map((c) => c.text).join(' ')).map((t) => t.word);
    const files = [jfk, dashwood, tune];
    const named = await alignRecording({ files, names: ['02 Ask not.ogg', '01 Dashwood.flac', '00 Theme.ogg'], words, language: 'en', aligner });
    expect(named.order).toEqual([2, 1, 0]);
    expect(named.files[2]!.offset).toBe(0);
    // without names that sort the chapters, the tune stays after its upload-order predecessor
    const unnamed = await alignRecording({ files, words, language: 'en', aligner });
    expect(unnamed.order).toEqual([1, 2, 0]);
    await expect(alignRecording({ files, names: ['one'], words, language: 'en', aligner })).rejects.toThrow(/1 names for 3 audio files/);
  }, 120_000);

  it('reads an M4B with chapter marks, a FLAC and an OGG, and reports the chapters', async () => {
    const clips = librivoxClips();
    const dir = fs.mkdtempSync(path.join(TMP, 'formats-'));
    // an M4B audiobook of three clips with a chapter mark per clip
    const parts = clips.slice(0, 3);
    const starts = (await writeChapter(parts, path.join(dir, 'plain.m4a'), ['-c:a', 'aac', '-b:a', '96k'])).map((p) => p.start);
    const total = (await ffprobe(path.join(dir, 'plain.m4a'))).durationSeconds;
    const meta = [';FFMETADATA1', ...starts.map((s, k) => `[CHAPTER]\nTIMEBASE=1/1000\nSTART=${Math.round(s * 1000)}\nEND=${Math.round((starts[k + 1] ?? total) * 1000)}\ntitle=Part ${k + 1}`)].join('\n');
    fs.writeFileSync(path.join(dir, 'chapters.txt'), meta + '\n');
    const m4b = path.join(dir, 'book.m4b');
    await ffmpeg(['-y', '-i', path.join(dir, 'plain.m4a'), '-i', path.join(dir, 'chapters.txt'), '-map', '0', '-map_chapters', '1', '-c', 'copy', '-f', 'mp4', m4b]);
    const flac = path.join(dir, 'two.flac');
    await writeChapter([clips[3]!, clips[4]!], flac, ['-c:a', 'flac']);
    const ogg = path.join(dir, 'three.ogg');
    await writeChapter([clips[5]!], ogg, ['-c:a', 'libvorbis']);
    const words = tokenizeWords(clips.map((c) => c.text).join(' ')).map((t) => t.word);
    const r = await alignRecording({ files: [ogg, m4b, flac], words, language: 'en', aligner });
    expect(r.order).toEqual([1, 2, 0]);
    expect(r.files[1]!.chapters.map((c) => c.title)).toEqual(['Part 1', 'Part 2', 'Part 3']);
    expect(r.files[1]!.chapters[1]!.start).toBeCloseTo(starts[1]!, 1);
    expect(r.coverage.textMatched).toBeGreaterThanOrEqual(0.85);
    for (const f of [0, 1, 2]) expect(r.words.some((w) => w?.file === f)).toBe(true);
  }, 120_000);

  it('refuses a file that is not audio, a language eSpeak does not speak, and empty inputs, with clear errors', async () => {
    const bad = path.join(TMP, 'not-audio.mp3');
    fs.writeFileSync(bad, 'this is text, not an MP3');
    const words = ['hello', 'there,', 'my', 'good', 'friend.'];
    await expect(alignRecording({ files: [bad], words, language: 'en', aligner })).rejects.toThrow(RecordingInputError);
    await expect(alignRecording({ files: [bad], words, language: 'en', aligner })).rejects.toThrow(/audio file 1 \(not-audio\.mp3\) cannot be read/);
    await expect(alignRecording({ files: [path.join(FIX, 'speech', 'jfk.wav')], words: ['nuqneH'], language: 'tlh', aligner })).rejects.toThrow(SpeechInputError);
    await expect(alignRecording({ files: [path.join(FIX, 'speech', 'jfk.wav')], words: ['nuqneH'], language: 'tlh', aligner })).rejects.toThrow(/cannot locate the text in a recording in language "tlh": long recordings can be aligned in every language eSpeak NG speaks .*; eSpeak NG has no voice for it/);
    await expect(alignRecording({ files: [], words: ['a'], language: 'en', aligner })).rejects.toThrow(/no audio files/);
    await expect(alignRecording({ files: [path.join(FIX, 'speech', 'jfk.wav')], words: [], language: 'en', aligner })).rejects.toThrow(/no words/);
  });
});

describe('long recordings: sentences read in one go, heads found by their words (messy-placements draws 33 and 21)', () => {
  it('times neither a heading nor a sentence\'s first word that an island heard in the preface, nor jfk\'s words in the music or noise before him', async () => {
    // draw 33: an island heard the preface's end as "chapter one he" ("He" timed 8.4 s before
    // "might even have been", "Chapter 1." over the preface); jfk after 6 s of pink noise had "And
    // so my fellow Americans, ask not" squeezed 3 s late. Draw 21: jfk's seven first words 2 s late
    // (his pause after "Americans," is 1.2 s long, and his pace slower than the book's)
    // (starts 0.5-8.4 s off before round 22: 8 words of draw 33, 6 of draw 21)
    await expectDrawsAligned(TMP, [33, 21], { maxStart: 0.3 });
  }, 180_000);
});

describe('long recordings: a head found by the most of its words (messy-placements draws 230 and 19)', () => {
  it('starts jfk\'s head at the "And" most of his missing words follow, not at a nearer "and" the island heard in his pause', async () => {
    // after the preface, the island heard "and as wrought my fellow not as and ask the ask" before
    // "what your country": the head's search took the nearest "and" (29.51 s, in his 1.1 s pause
    // after "Americans,") for the sentence's first word, and "And so my fellow Americans, ask"
    // were squeezed 2.5 s late (boundary MAE 175.3 ms) until round 27; the "And" at 26.55 s is
    // followed by "my fellow" and "ask", the later one by "ask" alone (reference: 26.71 s). Draw
    // 19: "and americans [2.5 s] and not and what": the first "and" lies past the pause, and the
    // second is "ask" misheard; matched in order with no limit on the words passed over, "and
    // … not" made it the head, 3 s late (MAE 212.3 ms), where the aligner finds "And" itself
    await expectDrawsAligned(TMP, [230, 19], { maxStart: 0.3, order: true });
  }, 120_000);

  it('segmentStart: a region\'s segment starts 0.35 s before its first anchor, not before the heard word before it ends; a head found by its words may start inside that word, not before its start', () => {
    const heard = (start: number, end: number) => ({ word: 'x', start, end, stretch: 0 });
    const f = { heard: [heard(7.2, 7.9), heard(8.5, 8.8), heard(9.0, 9.3)] };
    const first = { heard: 1, key: 0, start: 8.5, end: 8.8, stretch: 0 };
    expect(segmentStart(f, first)).toBeCloseTo(8.15, 6); // PAD before the anchor
    const late = { heard: 1, key: 0, start: 8.0, end: 8.3, stretch: 0 };
    expect(segmentStart({ heard: [heard(7.2, 7.9), heard(8.0, 8.3)] }, late)).toBeCloseTo(7.9, 6); // the word before ends at 7.9
    expect(segmentStart({ heard: [heard(7.2, 7.9), heard(8.0, 8.3)] }, late, true)).toBeCloseTo(7.65, 6); // inside it, PAD before the head
    expect(segmentStart({ heard: [heard(7.8, 7.9), heard(8.0, 8.3)] }, late, true)).toBeCloseTo(7.8, 6); // not before its start
    expect(segmentStart({ heard: [heard(0.1, 0.2)] }, { heard: 0, key: 0, start: 0.1, end: 0.2, stretch: 0 })).toBe(0);
  });

  it('starts jfk\'s head after the music within 0.15 s of where he says it (messy-placements draw 122)', async () => {
    // after the music, jfk's "And" was heard 0.24 s late, run into the misheard word before it,
    // whose end bounded the segment: "And" was timed 0.24 s late until round 28 (reference 8.32 s).
    // Since round 29 the island hears that stretch after the narrator's speech and no longer finds
    // the head by its words; the aligner finds it (Claim.head). segmentStart's rule: its unit above
    await expectDrawsAligned(TMP, [122], { maxStart: 0.15, order: true });
  }, 120_000);
});

describe('long recordings: a head its words do not find, left to the aligner (messy-placements draws 26, 75 and 15)', () => {
  it('times jfk\'s first words after the preface or music where he says them, though the recogniser heard them as other words', async () => {
    // draw 26: after the preface, "And so my fellow Americans, ask not" heard as "it at all might
    // all that is ask that": one word matched, so the head went untimed (7 words). Draw 75: after
    // noise and music, a stray "and" near the anchor passed for the sentence's first word and the
    // head was grown by sounding time, 3 s late (boundary MAE 225.7 ms). Draw 15: a sentence's
    // "And" after the preface, looked for from 2 s back, was timed over the preface's last word
    // until a head is looked for no further back than a pause longer than a reader makes in a sentence
    // (draw 75 times the first word of its skipped sentence, "Had", next to the read one: README, round 24).
    // Since round 29 the islands hear these three heads after the narrator's speech and find them
    // by their words; of the draws whose head was left to the aligner in round 25 (these, 19, 98,
    // 122, 137, 273, 27, 28), 122 and 273 still leave it there (122: its test above, and below)
    await expectDrawsAligned(TMP, [26, 75, 15], { maxStart: 0.2, unreadTimed: true });
  }, 180_000);
});

describe('long recordings: a head the aligner put in the wrong place', () => {
  it('leaves the head untimed and keeps the words after it where they were heard, when the head\'s search moves the first anchor (an aligner that puts every word of a segment with a head 2 s early stands in for one that took another prompt for the head)', async () => {
    // Russian book, seed 29: a head looked for from 9 s back took the prompt before it, and 16
    // words of three sentences were timed 5 s early. Draw 122: jfk's head after the music, which
    // the island does not hear as its words, could not be grown by sounding time either, so
    // without the aligner's answer it has no time (draw 26 until round 29, whose island now hears
    // that head after the narrator's speech and finds it by its words)
    const hmm = await createAligner('hmm', { modelsDir: 'models', device: 'cpu', threads: 2 });
    const heads: number[] = [];
    const early: Aligner = {
      name: 'early', concurrency: hmm.concurrency, skips: (l) => hmm.skips!(l),
      align: async (samples, rate, text, language, options) => {
        const words = await hmm.align(samples, rate, text, language, options);
        // a head is the one skippable range that starts a segment (a segment's first sentence is never one)
        if (options?.skippable?.[0]?.[0] !== 0) return words;
        heads.push(options.skippable[0][1] + 1);
        return words.map((w) => ({ ...w, start: Math.max(0, w.start - 2), end: Math.max(0, w.end - 2) }));
      },
    };
    try {
      const { book } = await drawnMessyBook(path.join(TMP, 'draw-122'), 122, await unspokenParagraphs(12));
      const r = await alignRecording({ files: book.files, words: book.words, blockEnds: book.blockEnds, language: 'en-US', aligner: early });
      expect(heads).toEqual([7]); // "And so my fellow Americans, ask not"
      expect(book.words.filter((_, i) => book.spoken[i] && !r.words[i])).toEqual(['And', 'so', 'my', 'fellow', 'Americans,', 'ask', 'not']);
      expect(referenceErrors(book, r.words).filter((e) => e.start > 0.2)).toEqual([]);
      expect(r.words.filter((w, i) => w && !book.spoken[i])).toEqual([]);
    } finally {
      await hmm.close();
    }
  }, 180_000);
});

describe('long recordings: a one-sentence chapter file (messy-placements draws 30, 31 and 114)', () => {
  it('times the sentence of a file that holds only the preface or music and one read sentence, and puts the file in its place', async () => {
    // draw 30: chance trigrams of the unread paragraphs, heard in step over the preface ("it has
    // air", "up to the", "that are to our"), outscored the sentence's 6 anchors until links in
    // step that are not one continuous reading cost something (round 23): 8 words untimed, order
    // wrong. Draws 31 and 114: the sentence heard as "the black even as been made amiable himself"
    // (4 anchors) was chance until a short run that reads its whole sentence in one utterance
    // counted (round 24): 8 words untimed and the file order wrong
    await expectDrawsAligned(TMP, [30, 31, 114], { order: true });
  }, 180_000);
});

describe('long recordings: a one-sentence file after a preface or music, heard with its own cepstral mean (messy-placements draws 66, 186, 37 and 49)', () => {
  it('cuts a run\'s first or last utterance when an island heard it across a long pause from the rest, and it is one anchor or few of its words are', () => {
    // heard words 0.3 s apart, utterances split by pauses; `island` as an island hears them; sentences end at keys 299 and 109
    const ends = (k: number) => k === 299 || k === 109;
    const heardAt = (starts: number[], island = true) => starts.map((t) => ({ word: 'w', start: t, end: t + 0.2, stretch: 0, ...(island ? { island } : {}) }));
    const anchor = (heard: number, key: number, start: number) => ({ heard, key, start, end: start + 0.2, stretch: 0 });
    // draw 37: the preface's last utterance (9 words) gave one anchor, 1.8 s before the sentence's 8
    const preface = [...Array.from({ length: 9 }, (_, i) => 22 + 0.3 * i), ...Array.from({ length: 8 }, (_, i) => 26.6 + 0.3 * i)];
    const run = [anchor(8, 299, 24.4), ...Array.from({ length: 8 }, (_, i) => anchor(9 + i, 300 + i, 26.6 + 0.3 * i))];
    expect(chanceUtterancesCut(run, heardAt(preface), ends).map((a) => a.key)).toEqual(run.slice(1).map((a) => a.key));
    // the book-wide recogniser's words are not an island's guesses: kept
    expect(chanceUtterancesCut(run, heardAt(preface, false), ends)).toEqual(run);
    // two anchors of 9 heard words are over the share: kept
    const two = [anchor(7, 298, 24.1), ...run];
    expect(chanceUtterancesCut(two, heardAt(preface), ends)).toEqual(two);
    // under the share but 1 s from the rest, as a borrowed model's island hears a prompt read on: kept
    const near = [...Array.from({ length: 9 }, (_, i) => 23 + 0.3 * i), ...Array.from({ length: 8 }, (_, i) => 26.6 + 0.3 * i)];
    const nearRun = [anchor(8, 299, 25.4), ...run.slice(1)];
    expect(chanceUtterancesCut(nearRun, heardAt(near), ends)).toEqual(nearRun);
    // draw 49: one word heard alone 2 s after the sentence (in music) is cut; 1 s after, kept
    const sentence = Array.from({ length: 8 }, (_, i) => 26.6 + 0.3 * i);
    const words = sentence.map((t, i) => anchor(i, 102 + i, t));
    expect(chanceUtterancesCut([...words, anchor(8, 110, 30.9)], heardAt([...sentence, 30.9]), ends).map((a) => a.key)).toEqual(words.map((a) => a.key));
    expect(chanceUtterancesCut([...words, anchor(8, 110, 29.9)], heardAt([...sentence, 29.9]), ends).length).toBe(9);
    // one word read on inside the sentence after a long pause (a short prompt): kept
    expect(chanceUtterancesCut([...words, anchor(8, 110, 30.9)], heardAt([...sentence, 30.9]), () => false).length).toBe(9);
  });

  it('times the sentence and puts the file in its place, though what comes before it in the file would skew a mean carried over, and times no unread word over the preface or music beside it', async () => {
    // draw 66: a chapter file of the preface (a telephone recording, another voice) and "He might
    // even have been made amiable himself."; draw 186: music and "He was not an ill disposed young
    // man.". The island of a file that matched nothing heard the sentence with the cepstral mean of
    // what came before it, as other words ("the by gave end of animated"): 8 words untimed and the
    // file order wrong in both, until round 26. Heard better, the preface gave the island one word
    // of the unread sentence before (draw 37: 19 words timed over it) and the music one of the
    // skipped sentence after (draw 49: its "And"), until an island's chance edge utterance is cut
    await expectDrawsAligned(TMP, [66, 186, 37, 49], { order: true });
  }, 180_000);
});

describe('long recordings: a chapter file that matched nothing, whose one sentence follows unread text (messy-placements draws 32, 74, 36)', () => {
  it('times the sentence and puts the file in its place', async () => {
    // a chapter file of noise (draw 32), music (74) or the preface (36) and then "He might even
    // have been made amiable himself.", whose text comes after a heading, unread paragraphs and a
    // skipped sentence: the island of a file that matched nothing held the free text within the
    // pace's share and 800 characters of each region's edge, which did not reach the sentence, so
    // it was heard as other words ("he by he been it them dated"), 8 words untimed and the file
    // order wrong in 74 and 36, until round 28 heard a free stretch of up to 5,000 characters whole
    await expectDrawsAligned(TMP, [32, 74, 36], { order: true });
  }, 180_000);
});

describe('long recordings: a sentence after music in a file with runs, heard with the narrator\'s cepstral mean (messy-placements draws 86, 281, 42, 216)', () => {
  it('times the sentence, and times no unread sentence over a preface in another voice', async () => {
    // draws 86 and 281: a one-sentence clip after 8 s of music or the preface, in the island
    // before its file's next run; heard with the live cepstral mean the music or preface left, it
    // came out as other words and went untimed until round 29 heard an utterance that sounds
    // like the narrator after the narrator's own anchored speech. Draws 42 and 216: the narrator's
    // mean before every utterance of that island instead heard the telephone preface as the
    // skipped first sentence (22 and 8 unread words timed); their preface is left the mean it had
    await expectDrawsAligned(TMP, [86, 281, 42, 216], { order: true });
  }, 180_000);
});

describe('long recordings: a region whose anchors overlap in time (messy-placements draw 171)', () => {
  it('aligns the book instead of failing the job when a cut would leave a piece with no audio', async () => {
    // a region over the preface took an island's word and one heard before it that overlap in
    // time ("He" at 8.60 s, the next word at 8.34 s); the cuts between them made a piece from
    // 8.60 to 8.34 s, which the dtw fallback refused ("cannot align text to empty audio") and the
    // whole alignment failed
    // (an unread paragraph is timed here: README, round 24; its heading too until round 31)
    await expectDrawsAligned(TMP, [171], { order: true, fallback: true, unreadTimed: true }, (r) => {
      for (const w of r.words) if (w) expect(w.end).toBeGreaterThanOrEqual(w.start);
    });
  }, 120_000);
});

describe('long recordings: music or noise after a reading heard as the next sentence\'s first words (messy-placements draws 2, 64 and 193, round 31)', () => {
  it('leaves out an edge sentence of a region that only one or two anchors reach: the next chapter\'s heading in jfk\'s crowd noise, "and" in the music after a sentence, the unread sentence\'s last word before one', async () => {
    // until round 31: "Chapter 2." timed over the 0.6 s of crowd noise after jfk (draw 2), the
    // skipped sentence's "And" over the noise after "… young man." (draw 64), and the unread
    // sentence's "them." just before "He was not …" (draw 193)
    await expectDrawsAligned(TMP, [2, 64, 193], { order: true });
  }, 120_000);
});

describe('long recordings: island runs that are chance', () => {
  it('counts the words heard between two runs beyond those the text between them holds', () => {
    const run = (k0: number, n: number, t0: number) => Array.from({ length: n }, (_, i) => ({ heard: i, key: k0 + i, start: t0 + 0.3 * i, end: t0 + 0.3 * i + 0.25, stretch: 0 }));
    const heardAt = (t0: number, n: number) => Array.from({ length: n }, (_, i) => ({ word: 'w', start: t0 + 0.3 * i, end: t0 + 0.3 * i + 0.25, stretch: 0 }));
    // draw 12: "… power to do" (key 21) 5.9 s before the next sentence's run (key 25), 15 words heard between for 3 of the book
    expect(speechBetween(run(13, 9, 18.35), run(25, 20, 26.94), heardAt(21.2, 15))).toBe(true);
    // the words between read (8 heard for 8 of the book), or a pause and music heard as a couple of words: not
    expect(speechBetween(run(13, 9, 18.35), run(30, 20, 26.94), heardAt(21.2, 8))).toBe(false);
    expect(speechBetween(run(13, 9, 18.35), run(22, 20, 28), heardAt(22, 5))).toBe(false);
    expect(speechBetween(run(13, 9, 18.35), run(22, 20, 28), heardAt(22, 6))).toBe(true);
  });

  it('does not time a skipped first sentence or an unread paragraph over the preface before the next sentence read (messy-placements draws 12 and 44)', async () => {
    // an island heard the preface with a model of the text before the chapter's first run and
    // came out with a few of its words in order ("there might be … power to do", "out of a
    // gun"), seconds of speech before the run its text runs on into; the regions grown from them
    // timed the 22 words of the skipped sentence (draw 12) and the 25 of the unread paragraph
    // (draw 44, through the dtw fallback: hmm found no path for them) over the preface
    await expectDrawsAligned(TMP, [12, 44], { order: true, fallback: true });
  }, 180_000);

  it('does not time an unread paragraph over the preface where an island heard two chance runs that continue each other (messy-placements draw 168)', async () => {
    // the island before the first chapter's run heard the preface as "it to a" and, 3 s later,
    // "out of the … a gun he": 3 and 6 anchors, together 0.17 of the words heard within 3 s of
    // them; each continues the other's text, so neither was alone and both were kept, and the
    // region grown from them timed the colossal-puff paragraph and the skipped sentence (33
    // unread words) until round 27 judged such a group as one run. (The chapter's sentence after
    // the music, "He might even have been made amiable himself.", is heard as other words and
    // left untimed: README, round 27)
    await expectDrawsAligned(TMP, [168], { order: true, spokenUntimed: true });
  }, 120_000);

  it('does not time an unread paragraph over a spoken preface that an island heard as a few of its words in order (messy-placements draw 0)', async () => {
    // the island before the first chapter's first run hears the IVR preface with a model of the
    // unread paragraph before it, and came out with "to the temperature at which" in the book's
    // order among 30 words that match nothing: the region grown from it timed 43 unread words
    const dir = path.join(TMP, 'draw-0');
    const { book } = await drawnMessyBook(dir, 0, await unspokenParagraphs(12));
    const aligner = await createAligner('hmm', { modelsDir: 'models', device: 'cpu', threads: 2 });
    try {
      const r = await alignRecording({ files: book.files, words: book.words, blockEnds: book.blockEnds, language: 'en-US', aligner });
      expect(r.words.filter((w, i) => w && !book.spoken[i])).toEqual([]);
      const spoken = book.spoken.filter(Boolean).length;
      expect(r.words.filter((w, i) => w && book.spoken[i]).length / spoken).toBeGreaterThanOrEqual(0.95); // measured 85/85 (81/85 until round 22: "to do for them." in a file's last 1.2 s was never decoded)
      expect(r.order).toEqual(book.trueOrder);
    } finally {
      await aligner.close();
    }
  }, 120_000);
});
