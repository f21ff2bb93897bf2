// A reading cut into files by time, mid-sentence, as a ripped audiobook CD's tracks are: the five
// LibriVox clips and jfk.wav read in a row (0.6 s between them) between two paragraphs nobody
// reads, then cut into two MP3 files after the k-th word of one clip (halfway between that word
// and the next), uploaded second file first. Each clip in turn, k = 1, 2, 3 (18 books). What it
// shows: the words either side of the cut, each in its own file, at its own time; a word timed
// in the other file, or more than 0.1 s from its reference, is listed.
// No parameter of the aligner was chosen on these books until round 32, whose cut sentences
// (src/speech/align/long/cut-sentences.ts) were built on them; `--ks 4,5,6 --pause 0.3` makes 18
// others (cuts later in the sentence, shorter pauses) that were only run once it was settled.
// Run: node --import tsx bench/cut-tracks.bench.ts [--aligner hmm|dtw] [--ks 1,2,3] [--pause 0.6] [--only clip:k,…]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAligner } from '../src/speech/align/aligners.ts';
import { alignRecording } from '../src/speech/align/long/recording.ts';
import { cutReading, librivoxClips, unspokenParagraphs } from '../test/helpers/messy-book.ts';
import { QUICK } from './quick.ts';

const args = process.argv.slice(2);
const alignerName = args.includes('--aligner') ? args[args.indexOf('--aligner') + 1]! : 'hmm';
const OFF = 0.1;
const clips = librivoxClips();
const paragraphs = await unspokenParagraphs(2);
const aligner = await createAligner(alignerName, { modelsDir: 'models', device: 'cpu', threads: Math.min(4, os.availableParallelism()) });
// as the read-along pipeline does: dtw for a segment hmm finds no path through
const fallbackAligner = alignerName === 'dtw' ? undefined : await createAligner('dtw', { modelsDir: 'models', device: 'cpu' });
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-bench-cut-'));
// --only 0:1,5:2 runs those cuts alone (clip:k)
const only = args.includes('--only') ? args[args.indexOf('--only') + 1]!.split(',').map((x) => x.split(':').map(Number)) : null;
const ks = (args.includes('--ks') ? args[args.indexOf('--ks') + 1]! : '1,2,3').split(',').map(Number);
const pause = args.includes('--pause') ? Number(args[args.indexOf('--pause') + 1]) : 0.6;
const cases = only ?? (QUICK ? [[0, 1]] : clips.flatMap((_, c) => ks.map((k) => [c, k])));
const total = { spoken: 0, timed: 0, unreadTimed: 0, wrong: 0, cutWrong: 0 };
try {
  console.log(`a reading of ${clips.length} real clips ${pause} s apart cut into two files mid-sentence, ${cases.length} cut(s), aligner ${alignerName}:`);
  for (const [c, k] of cases as [number, number][]) {
    const { files, words, blockEnds, truth, cutWord } = await cutReading(work, c, k, paragraphs, pause);
    const r = await alignRecording({ files, words, blockEnds, language: 'en-US', aligner, fallbackAligner });
    let timed = 0, unreadTimed = 0;
    const wrong: string[] = [];
    r.words.forEach((w, i) => {
      const t = truth[i];
      if (!t) return void (w && unreadTimed++);
      if (w) timed++;
      const bad = !w || w.file !== t.file || Math.abs(w.start - t.start) > OFF || Math.abs(w.end - t.end) > OFF;
      if (!bad) return;
      // file:start-end as timed (and as the reference has it)
      wrong.push(`${words[i]}${!w ? ' untimed' : `@${w.file}:${w.start.toFixed(2)}-${w.end.toFixed(2)}(${t.file}:${t.start.toFixed(2)}-${t.end.toFixed(2)})`}`);
      // the words either side of the cut
      if (Math.abs(i - cutWord + 0.5) <= 1.5) total.cutWrong++;
    });
    const spoken = truth.filter(Boolean).length;
    Object.assign(total, { spoken: total.spoken + spoken, timed: total.timed + timed, unreadTimed: total.unreadTimed + unreadTimed, wrong: total.wrong + wrong.length });
    const order2 = JSON.stringify(r.order) === '[1,0]' ? 'order right' : `ORDER WRONG ${JSON.stringify(r.order)}`;
    console.log(`  clip ${c}, cut after "${words.slice(cutWord - k, cutWord).join(' ')}|${words[cutWord]}": ${timed}/${spoken} spoken words timed, ${unreadTimed} unread timed, ${order2}; untimed, in the other file or over ${OFF} s off: ${wrong.join(' ') || 'none'}`);
  }
  console.log(`in all: spoken words timed ${total.timed}/${total.spoken}, unread words timed ${total.unreadTimed}, spoken words untimed, in the other file or over ${OFF} s off ${total.wrong} (${total.cutWrong} of them within two words of the cut)`);
} finally {
  await aligner.close();
  await fallbackAligner?.close();
  fs.rmSync(work, { recursive: true, force: true });
}
