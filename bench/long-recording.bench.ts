// Long recordings aligned to their book (src/speech/align/long): time, peak memory and matched
// share on an hour of real speech, and a messy audiobook against a whole novel.
//  - the hour: every spoken prompt of Debian's asterisk-core-sounds-en-wav (25 min of a real
//    voice with transcripts) and the LibriVox/jfk fixture clips, shuffled, repeated at speeds
//    1.0/1.1/0.9 (resampled: a different pace and pitch each time) up to the length asked,
//    cut into ten-minute 8 kHz MP3 chapters handed over in shuffled order. Baseline, in the same run:
//    the plain dtw aligner on the same audio in the right order with its text (no locating).
//  - the messy book: the test's messy chapters (preface, skipped sentence, music) plus three
//    chapters of prompts with a spoken preface, skipped prompts, music and noise between them,
//    against a document of their text and the whole of The War of the Worlds, which nobody reads.
// Needs: apt-get install asterisk-core-sounds-en-wav asterisk-core-sounds-en (not the tests).
// Longer than an hour it is not a longer book: the same ~25 min of units repeat (jfk's sentence
// 3 times at 60 min, 16 at 360), which makes the text ambiguous; for hours of one book use
// bench/narrated-book.bench.ts 400 --book war-of-the-worlds (README, round 33).
// Run: node --import tsx bench/long-recording.bench.ts [minutes=60 | quick] [--aligner dtw] [--seed 11] [--messy-only] [--room-tone 10] [--hum -40] [--reverb 1,0 [--keep-reverb]] [--scorer stock] [--recognizer stock] (or BENCH_QUICK=1 npm run bench long-recording)
//   --room-tone DB: the messy book's files with a real room's tone added DB under their speech (round 36)
//   --hum DB: the messy book's files with mains hum added at DB dBFS (round 42; not with --room-tone)
//   --reverb RT60,DRR: the messy book's files heard in a reverberant room (round 43; alone); --keep-reverb: the recogniser hears them as they are
//   --seed: the messy book with another draw of prompts (held-out variants; 11 is the one looked at while tuning)
//   --details: the messy book's words timed though never spoken, and its spoken words left untimed
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeAudio } from '../src/media/ffmpeg.ts';
import { encodeWav } from '../src/media/wav.ts';
import { resample } from '../src/native/index.ts';
import { alignRecording, type RecordingAlignment } from '../src/speech/align/long/recording.ts';
import { createAligner, defaultAlignerThreads } from '../src/speech/align/aligners.ts';
import { createLocalSpeech } from '../src/speech/local.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { skipQuick } from './quick.ts';
import { withRoomTone } from './room-tone.ts';
import { reverberant } from '../test/helpers/reverb.ts';
import { cpuSeconds, phaseClock, joinParts, rng, recognizerArg, scorerArg, shuffle, writeMp3 } from './recording-build.ts';
import { IVR, ivrPrompts, largeMessyBook, librivoxClips, skipFindings, skippedWordCount, smallMessyBook, untimedRuns, spotCheck, type BookPart } from '../test/helpers/messy-book.ts';

const args = process.argv.slice(2);
const quick = args.includes('quick') || process.env.BENCH_QUICK === '1';
if (!fs.existsSync(IVR.en.dir) || !fs.existsSync(IVR.en.text)) skipQuick(`needs the Debian packages ${IVR.en.packages} (not installed by scripts/setup.sh)`);
const alignerName = args[args.indexOf('--aligner') + 1] && args.includes('--aligner') ? args[args.indexOf('--aligner') + 1]! : 'dtw';
// worker threads of the per-segment aligner (as the read-along pipeline makes it); --threads 1: in the main thread
const threads = args.includes('--threads') ? Number(args[args.indexOf('--threads') + 1]) : defaultAlignerThreads();
const minutes = quick ? 3 : Number(args.find((a, i) => /^\d+(\.\d+)?$/.test(a) && !['--threads', '--seed', '--room-tone', '--hum', '--reverb'].includes(args[i - 1]!)) ?? 60);
// --seed N: the messy book with another draw of prompts (held-out variants; 11 is the one looked at while tuning)
const messySeed = args.includes('--seed') ? Number(args[args.indexOf('--seed') + 1]) : 11;
// --messy-only: the messy book alone (the held-out seeds, without the hour's two minutes)
const messyOnly = args.includes('--messy-only');
const DIR = path.join(os.tmpdir(), `lectern-bench-long8k-${minutes}`);
/** The prompts are 8 kHz recordings: the whole hour is made at 8 kHz so that its bandwidth is one (as in any real recording). */
const RATE = 8000;

interface Manifest {
  files: string[];
  trueOrder: number[];
  words: string[];
  refs: ({ file: number; start: number; end: number } | null)[];
  seconds: number;
}

/** Builds the hour (run in its own process so that its buffers do not count in the measured peak). */
async function buildHour(): Promise<void> {
  fs.mkdirSync(DIR, { recursive: true });
  const units = [...librivoxClips(), ...(await ivrPrompts())];
  // decoded when first used: a short (quick) build needs a few dozen of the 570 prompts, not all
  const audio = new Map<string, Float32Array>();
  const decoded = async (file: string) => audio.get(file) ?? audio.set(file, await decodeAudio(file, RATE)).get(file)!;
  const rand = rng(7);
  const speeds = [1, 1.1, 0.9, 1.05, 0.95];
  const target = minutes * 60 * RATE;
  const chapterLen = Math.min(10 * 60, (minutes * 60) / 3) * RATE;
  const gap = new Float32Array(Math.round(0.5 * RATE));
  const chapters: { parts: Float32Array[]; length: number; units: { unit: BookPart; at: number; speed: number }[] }[] = [{ parts: [], length: 0, units: [] }];
  let total = 0;
  for (let copy = 0; total < target; copy++) {
    const speed = speeds[copy % speeds.length]!;
    for (const u of shuffle(units, rand)) {
      if (total >= target) break;
      let ch = chapters.at(-1)!;
      if (ch.length >= chapterLen) chapters.push((ch = { parts: [], length: 0, units: [] }));
      const x = await decoded(u.file!);
      const y = speed === 1 ? x : resample(x, Math.round(RATE * speed), RATE);
      ch.units.push({ unit: u, at: ch.length / RATE, speed });
      ch.parts.push(y, gap);
      ch.length += y.length + gap.length;
      total += y.length + gap.length;
    }
  }
  const given = shuffle(chapters.map((_, i) => i), rand);
  const files: string[] = new Array(chapters.length);
  const trueOrder: number[] = [];
  const words: string[] = [];
  const refs: Manifest['refs'] = [];
  for (let c = 0; c < chapters.length; c++) {
    const ch = chapters[c]!;
    const g = given[c]!;
    files[g] = path.join(DIR, `chapter-${String.fromCharCode(97 + g)}.mp3`);
    trueOrder.push(g);
    await writeMp3(joinParts(ch.parts), RATE, '32k', files[g]!);
    for (const { unit, at, speed } of ch.units) {
      tokenizeWords(unit.text!).forEach((t, i) => {
        words.push(t.word);
        const r = unit.refs?.[i];
        refs.push(r ? { file: g, start: at + r.start / speed, end: at + r.end / speed } : null);
      });
    }
  }
  const manifest: Manifest = { files, trueOrder, words, refs, seconds: total / RATE };
  fs.writeFileSync(path.join(DIR, 'manifest.json'), JSON.stringify(manifest));
}

if (args.includes('--build')) {
  await buildHour();
  process.exit(0);
}
function score(r: RecordingAlignment, refs: Manifest['refs'], spoken?: boolean[]) {
  let err = 0, n = 0, within50 = 0;
  r.words.forEach((w, i) => {
    const ref = refs[i];
    if (!w || !ref || w.file !== ref.file) return;
    for (const e of [Math.abs(w.start - ref.start), Math.abs(w.end - ref.end)]) (err += e), n++, e <= 0.05 && within50++;
  });
  const out = { mae: n ? (1000 * err) / n : NaN, within50: n ? within50 / n : NaN, refWords: n / 2 } as Record<string, number>;
  if (spoken) {
    const total = spoken.filter(Boolean).length;
    out.spokenMatched = r.words.filter((w, i) => w && spoken[i]).length / total;
    out.unspokenTimed = r.words.filter((w, i) => w && !spoken[i]).length;
    out.unspoken = spoken.length - total;
  }
  return out;
}

let aligner = await createAligner(alignerName, { modelsDir: 'models', device: 'cpu', threads, hmmScorer: scorerArg(args) });
// as the read-along pipeline does: dtw for a segment the chosen aligner finds no path through
const fallbackAligner = await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
if (!messyOnly) {
  if (!fs.existsSync(path.join(DIR, 'manifest.json'))) {
    console.log(`building ${minutes} min of real speech in ${DIR} (once)...`);
    const r = spawnSync(process.execPath, ['--import', 'tsx', import.meta.filename, ...args, '--build'], { stdio: 'inherit' });
    if (r.status !== 0) process.exit(1);
  }
  const hour = JSON.parse(fs.readFileSync(path.join(DIR, 'manifest.json'), 'utf8')) as Manifest;
  const cpu0 = cpuSeconds();
  const rssBefore = process.memoryUsage().rss;
  let t0 = performance.now();
  const clock = phaseClock();
  const res = await alignRecording({ recognizerScorer: recognizerArg(args), files: hour.files, words: hour.words, language: 'en-US', aligner, fallbackAligner: alignerName === 'dtw' ? undefined : fallbackAligner, onProgress: clock.onProgress });
  const phases = clock.done();
  const longSecs = (performance.now() - t0) / 1000;
  const peak = process.resourceUsage().maxRSS / 1024;
  await aligner.close(); // its eSpeak helpers' CPU time counts once they have exited
  const longCpu = cpuSeconds() - cpu0;
  aligner = await createAligner(alignerName, { modelsDir: 'models', device: 'cpu', threads, hmmScorer: scorerArg(args) });
  const s = score(res, hour.refs);
  console.log(`${(hour.seconds / 60).toFixed(1)} min of real speech in ${hour.files.length} MP3 files (shuffled), ${hour.words.length} words, aligner ${alignerName} in ${threads} thread(s), ${os.availableParallelism()} cores, load ${os.loadavg()[0]!.toFixed(1)}:`);
  console.log(`  long-recording alignment: ${longSecs.toFixed(1)} s wall, ${longCpu.toFixed(1)} s CPU in all processes (goal <= 60 s wall for an hour on 2 cores), peak RSS ${peak.toFixed(0)} MiB (goal <= 1024; ${(rssBefore / 2 ** 20).toFixed(0)} MiB before; recogniser processes ~30 MiB each besides)`);
  console.log(`  phases: ${phases.map((ph) => `${ph.phase} ${ph.wall.toFixed(1)} s`).join(', ')}; decoded ${(100 * res.coverage.decodedShare).toFixed(0)}% of the audio to locate the text; ${res.coverage.segmentsFallback} of ${res.coverage.segments} segments with a piece hmm found no path through (split at anchors first): ${res.coverage.fallbackSeconds.toFixed(1)} s of audio timed by the dtw fallback`);
  console.log(`  words matched ${(100 * res.coverage.textMatched).toFixed(1)}%, sentences found skipped ${res.coverage.sentencesSkipped} (all of it is read: each one a false skip), order ${JSON.stringify(res.order) === JSON.stringify(hour.trueOrder) ? 'right' : `WRONG ${JSON.stringify(res.order)} vs ${JSON.stringify(hour.trueOrder)}`}, heard words matched ${(100 * res.coverage.heardMatched).toFixed(1)}%`);
  console.log(`  boundaries of the ${s.refWords} words with references (LibriVox/jfk clips): MAE ${s.mae!.toFixed(1)} ms, ${(100 * s.within50!).toFixed(1)}% within 50 ms`);

  // baseline: plain dtw on the same audio, files in the right order, the text known to be complete
  t0 = performance.now();
  const cpu1 = cpuSeconds();
  const parts = [];
  for (const i of hour.trueOrder) parts.push(await decodeAudio(hour.files[i]!, RATE));
  const parts0 = parts.map((p) => p.length / RATE);
  const all = joinParts(parts);
  parts.length = 0;
  // the baseline is plain dtw whatever the per-segment aligner (an HMM on one hour in one piece is impractical)
  const baseWords = await fallbackAligner.align(all, RATE, hour.words.join(' '), 'en-US');
  const baseSecs = (performance.now() - t0) / 1000;
  await aligner.close();
  const baseCpu = cpuSeconds() - cpu1;
  aligner = await createAligner(alignerName, { modelsDir: 'models', device: 'cpu', threads, hmmScorer: scorerArg(args) });
  const fileStart = new Map<number, number>();
  {
    let at = 0;
    hour.trueOrder.forEach((i, k) => (fileStart.set(i, at), (at += parts0[k]!)));
  }
  let baseErr = 0, baseN = 0;
  hour.refs.forEach((ref, i) => {
    if (!ref || !res.words[i]) return; // the words the long-recording score counts
    const w = baseWords[i]!, o = fileStart.get(ref.file)!;
    baseErr += Math.abs(w.start - o - ref.start) + Math.abs(w.end - o - ref.end);
    baseN += 2;
  });
  console.log(`  baseline, plain dtw on the same audio in order with its whole text (decode included): ${baseSecs.toFixed(1)} s wall, ${baseCpu.toFixed(1)} s CPU; long-recording / baseline = ${(longSecs / baseSecs).toFixed(2)}x wall, ${(longCpu / baseCpu).toFixed(2)}x CPU; its MAE on the same words ${((1000 * baseErr) / baseN).toFixed(1)} ms`);
}

// the messy book against a whole novel
const messyDir = path.join(os.tmpdir(), `lectern-bench-messy${quick ? '-quick' : `-${messySeed}`}`);
fs.mkdirSync(messyDir, { recursive: true });
const book = quick ? await smallMessyBook(messyDir) : await largeMessyBook(messyDir, messySeed);
const { words, spoken, refs } = book;
// --room-tone DB: every chapter file with a real room's tone added DB under its speech (bench/room-tone.ts), as a
// narrator's recording through a noisy microphone; the same noise every run
const roomDb = args.includes('--room-tone') ? Number(args[args.indexOf('--room-tone') + 1]) : null;
const roomDir = path.join(messyDir, `room-tone-${roomDb}`);
if (roomDb !== null) fs.mkdirSync(roomDir, { recursive: true });
// --hum DB: every chapter file with mains hum added (50 Hz and 150 Hz at half its amplitude, DB dBFS RMS in all), as
// a narrator's recording through a ground loop (round 42)
const humDb = args.includes('--hum') ? Number(args[args.indexOf('--hum') + 1]) : null;
const humDir = path.join(messyDir, `hum-${humDb}`);
if (humDb !== null) fs.mkdirSync(humDir, { recursive: true });
const withHum = (x: Float32Array, db: number) => {
  const a = (10 ** (db / 20) * Math.SQRT2) / Math.sqrt(1.25);
  // recorded with the voice: the book's joins of digital silence (10 ms or more of zeros) stay silent
  const silent = new Uint8Array(x.length);
  for (let i = 0; i < x.length; ) {
    let j = i;
    while (j < x.length && x[j] === 0) j++;
    if (j - i >= 160) silent.fill(1, i, j);
    i = j > i ? j : i + 1;
  }
  return x.map((v, i) => (silent[i] ? 0 : v + a * (Math.sin((2 * Math.PI * 50 * i) / 16000) + 0.5 * Math.sin((2 * Math.PI * 150 * i) / 16000 + 1))));
};
// --reverb RT60,DRR: every chapter file heard in a room of that reverberation time (s) and direct-to-reverberant
// ratio (dB) (test/helpers/reverb.ts; round 43), as a lecture recorded from the hall; --keep-reverb: the recogniser
// hears it as it is (round 42)
const room = args.includes('--reverb') ? args[args.indexOf('--reverb') + 1]!.split(',').map(Number) : null;
const reverbDir = path.join(messyDir, `reverb-${room?.join('-')}`);
if (room) fs.mkdirSync(reverbDir, { recursive: true });
const files = roomDb === null && humDb === null && !room ? book.files : await Promise.all(book.files.map(async (f, i) => {
  const out = path.join(room ? reverbDir : roomDb === null ? humDir : roomDir, path.basename(f).replace(/\.\w+$/, '.wav'));
  const pcm = await decodeAudio(f, 16000);
  fs.writeFileSync(out, encodeWav(room ? reverberant(pcm, 16000, room[0]!, room[1]!, i + 1) : roomDb === null ? withHum(pcm, humDb!) : withRoomTone(pcm, roomDb, 7919 * (i + 1)), 16000));
  return out;
}));
const skippedCount = skippedWordCount(book);
const messyT0 = performance.now();
const messy = await alignRecording({ recognizerScorer: recognizerArg(args), files, words, blockEnds: book.blockEnds, language: 'en-US', aligner, fallbackAligner: alignerName === 'dtw' ? undefined : fallbackAligner, suppressReverb: !args.includes('--keep-reverb') });
const messySecs = (performance.now() - messyT0) / 1000;
const ms = score(messy, refs, spoken);
console.log(`messy book${quick ? "" : ` (prompt seed ${messySeed})`}${roomDb === null ? '' : `, room tone ${roomDb} dB under the speech`}${humDb === null ? '' : `, mains hum at ${humDb} dBFS`}${room ? `, reverberation ${room[0]} s at ${room[1]} dB${args.includes('--keep-reverb') ? ', heard as it is' : ''}` : ''}: ${files.length} files (shuffled), ${(messy.coverage.audioSeconds / 60).toFixed(1)} min, ${words.length} words of which ${ms.unspoken} never spoken (${skippedCount} in skipped sentences), ${messySecs.toFixed(1)} s:`);
console.log(`  spoken words matched ${(100 * ms.spokenMatched!).toFixed(1)}%, unspoken words given a time: ${ms.unspokenTimed}, audio matching no text ${(100 * messy.coverage.audioUnmatched).toFixed(1)}%, file order ${JSON.stringify(messy.order) === JSON.stringify(book.trueOrder) ? 'right' : 'WRONG'}`);
const sk = skipFindings(book, messy.skippedSentences);
if (args.includes('--details')) {
  const ctx = (i: number, j = i) => `${words.slice(Math.max(0, i - 3), i).join(' ')} [${words.slice(i, j + 1).join(' ')}] ${words.slice(j + 1, j + 4).join(' ')}`;
  messy.words.forEach((w, i) => {
    if (w && !spoken[i]) console.log(`    unspoken, timed ${i} (file ${w.file} ${w.start.toFixed(2)} s): ${ctx(i)}`);
  });
  for (const [i, j] of untimedRuns(book, messy.words)) {
    const ref = refs[i];
    console.log(`    untimed ${i}-${j}${ref ? ` (file ${ref.file} ${ref.start.toFixed(2)} s)` : ''}: ${ctx(i, j)}`);
  }
}
console.log(`  sentences found skipped inside matched regions: ${sk.sentences} (${sk.words} words, ${sk.readWords} of them read: false skips)`);
console.log(`  boundaries of the ${ms.refWords} words with references: MAE ${ms.mae!.toFixed(1)} ms, ${(100 * ms.within50!).toFixed(1)}% within 50 ms`);
const speech = await createLocalSpeech('espeak', { modelsDir: 'models', device: 'cpu' });
const spot = await spotCheck(speech, words, messy.words, files, 20);
const spotRef = await spotCheck(speech, words, refs, files, 20);
await speech.close();
console.log(`  spot check (clip vs eSpeak renderings of it and its neighbours): ${spot.own}/${spot.checked} closest to their own word, ${spot.shifted}/${spot.checked} when shifted by one word; the reference boundaries score ${spotRef.own}/${spotRef.checked}`);
await aligner.close();
await fallbackAligner.close();
