// A reading cut into files by time, mid-sentence, as a ripped audiobook CD's tracks are: the five
// LibriVox clips and jfk.wav read in a row (0.6 s between them) between two paragraphs nobody
// reads, then cut into two MP3 files after the k-th word of one clip (halfway between that word
// and the next), uploaded second file first. Each clip in turn, k = 1, 2, 3 (18 books). What it
// shows: the words either side of the cut, each in its own file, at its own time; a word timed
// in the other file, or more than 0.1 s from its reference, is listed.
// No parameter of the aligner was chosen on these books (round 31).
// Run: node --import tsx bench/cut-tracks.bench.ts [--aligner hmm|dtw]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAligner } from '../src/speech/align/aligners.ts';
import { alignRecording } from '../src/speech/align/long/recording.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { librivoxClips, unspokenParagraphs, writeChapter, type BookPart } from '../test/helpers/messy-book.ts';
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
const cases = QUICK ? [[0, 1]] : clips.flatMap((_, c) => [1, 2, 3].map((k) => [c, k]));
const total = { spoken: 0, timed: 0, unreadTimed: 0, wrong: 0, cutWrong: 0 };
try {
  console.log(`a reading of ${clips.length} real clips cut into two files mid-sentence, ${cases.length} cut(s), aligner ${alignerName}:`);
  for (const [c, k] of cases as [number, number][]) {
    // the cut clip third in the reading, so that text and audio come before and after it
    const order = [...clips.slice(c), ...clips.slice(0, c)];
    order.unshift(order.pop()!, order.pop()!);
    const parts: BookPart[] = order.flatMap((p, i) => (i ? [{ kind: 'silence', seconds: 0.6 } as BookPart, p] : [p]));
    const whole = path.join(work, `reading-${c}-${k}.wav`);
    const spans = (await writeChapter(parts, whole, ['-c:a', 'pcm_s16le'])).filter((_, i) => i % 2 === 0);
    const refs = order[2]!.refs!;
    const cut = spans[2]!.start + (refs[k - 1]!.end + refs[k]!.start) / 2;
    // upload order: the second file first (index 0), then the first (index 1)
    const files = [path.join(work, `b-${c}-${k}.mp3`), path.join(work, `a-${c}-${k}.mp3`)];
    execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-ss', String(cut), '-i', whole, '-b:a', '48k', files[0]!]);
    execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', whole, '-t', String(cut), '-b:a', '48k', files[1]!]);
    const words: string[] = [], blockEnds: number[] = [];
    const truth: ({ file: number; start: number; end: number } | null)[] = [];
    const add = (text: string, clip?: { refs: { start: number; end: number }[]; at: number }) => {
      tokenizeWords(text).forEach((t, i) => {
        words.push(t.word);
        const r = clip?.refs[i];
        const s = clip && r ? clip.at + r.start : NaN, e = clip && r ? clip.at + r.end : NaN;
        truth.push(!clip ? null : s < cut ? { file: 1, start: s, end: e } : { file: 0, start: s - cut, end: e - cut });
      });
      blockEnds.push(words.length - 1);
    };
    add(paragraphs[0]!);
    const first = words.length;
    order.forEach((p, i) => add(p.text!, { refs: p.refs!, at: spans[i]!.start }));
    const cutWord = first + order.slice(0, 2).reduce((n, p) => n + tokenizeWords(p.text!).length, 0) + k;
    add(paragraphs[1]!);
    const r = await alignRecording({ files, words, blockEnds, language: 'en-US', aligner, fallbackAligner });
    let timed = 0, unreadTimed = 0;
    const wrong: string[] = [];
    r.words.forEach((w, i) => {
      const t = truth[i];
      if (!t) return void (w && unreadTimed++);
      if (w) timed++;
      const bad = !w || w.file !== t.file || Math.abs(w.start - t.start) > OFF || Math.abs(w.end - t.end) > OFF;
      if (!bad) return;
      wrong.push(`${words[i]}${!w ? ' untimed' : `@${w.file}:${w.start.toFixed(2)}(${t.file}:${t.start.toFixed(2)})`}`);
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
