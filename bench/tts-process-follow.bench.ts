// How closely the test model process (test/helpers/espeak-pitch-rate-adapter.py) follows a
// reference clip, through a real GPU server --backend process: for each clip, the output's
// median pitch (YIN, test/helpers/pitch.ts) against the clip's, in semitones, and its speaking
// rate against the clip's (words per second of speech). The clips: the six real recordings in
// test/fixtures/speech (the tests used jfk and austen-0870 while the adapter was written; the
// other four were not looked at), the Debian pocketsphinx-testdata "cards" speaker when that
// package is installed, and each fixture clip pitch-shifted by −3, +3 and +6 semitones with
// ffmpeg's rubberband filter (same words and tempo, another voice height).
//   node --import tsx bench/tts-process-follow.bench.ts [--quick]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Bench } from 'tinybench';
import { PROJECT_ROOT, loadGpuServerConfig, parseArgs } from '../src/config.ts';
import { startGpuServer } from '../src/gpu-server/index.ts';
import { createLogger } from '../src/log.ts';
import { ffmpeg } from '../src/media/ffmpeg.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { measureSpeech, semitones } from '../test/helpers/pitch.ts';
import { QUICK } from './quick.ts';

const { flags } = parseArgs(process.argv.slice(2));
const quick = QUICK || flags.quick === true;
const SPEECH = path.join(PROJECT_ROOT, 'test', 'fixtures', 'speech');
const CARDS = '/usr/share/pocketsphinx/test/data/cards';
const TEXT = 'The committee will meet again on Thursday to review the final budget proposal, and then it will report to the board.';
const transcripts = new Map(
  fs
    .readFileSync(path.join(SPEECH, 'transcription'), 'utf8')
    .split('\n')
    .map((l) => /^<s> (.*) <\/s> \((.*)\)$/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => !!m)
    .map((m) => [m[2]!, m[1]!]),
);

interface Clip { name: string; audio: Buffer; text: string; tuned: boolean }
const clips: Clip[] = [{ name: 'jfk', audio: fs.readFileSync(path.join(SPEECH, 'jfk.wav')), text: 'And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.', tuned: true }];
for (const [id, text] of transcripts) clips.push({ name: id.replace('sense_and_sensibility_01_', ''), audio: fs.readFileSync(path.join(SPEECH, `${id}.wav`)), text, tuned: id.endsWith('0870') });
if (fs.existsSync(CARDS)) {
  // five short clips of one speaker, joined into one 10 s reference
  const ids = ['001', '002', '003', '004', '005'];
  const list = path.join(os.tmpdir(), `cards-${process.pid}.txt`);
  fs.writeFileSync(list, ids.map((i) => `file '${CARDS}/${i}.wav'`).join('\n'));
  const { stdout } = await ffmpeg(['-f', 'concat', '-safe', '0', '-i', list, '-f', 'wav', 'pipe:1']);
  fs.rmSync(list);
  const words = fs.readFileSync(path.join(CARDS, 'cards.transcription'), 'utf8').split('\n').map((l) => /<s> (.*?) +<\/s>/.exec(l)?.[1]).filter(Boolean).join(' ');
  clips.push({ name: 'cards (pocketsphinx-testdata)', audio: stdout, text: words, tuned: false });
}
const real = quick ? clips.slice(0, 2) : clips.filter((c) => !c.name.startsWith('cards'));
for (const c of real) {
  for (const st of quick ? [6] : [-3, 3, 6]) {
    const { stdout } = await ffmpeg(['-i', 'pipe:0', '-af', `rubberband=pitch=${2 ** (st / 12)}`, '-f', 'wav', 'pipe:1'], { input: c.audio });
    clips.push({ name: `${c.name} ${st > 0 ? '+' : ''}${st} st`, audio: stdout, text: c.text, tuned: false });
  }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-follow-'));
const server = await startGpuServer(
  { ...loadGpuServerConfig({}, {}), port: 0, backend: 'process', ttsProcess: `python3 ${path.join(PROJECT_ROOT, 'test', 'helpers', 'espeak-pitch-rate-adapter.py')}`, workers: 1, dataDir: tmp, logLevel: 'silent' },
  createLogger('silent', 'follow'),
);
const rows: Array<{ name: string; tuned: boolean; clipHz: number; outHz: number; gap: number; clipRate: number; outRate: number }> = [];
try {
  const bench = new Bench({ iterations: 1, warmupIterations: 0, time: 0, warmup: false });
  bench.add('one preview-sized request per clip', async () => {
    for (const c of quick ? clips.slice(0, 3) : clips) {
      const form = new FormData();
      form.append('text', TEXT);
      form.append('language', 'en-US');
      form.append('ref_text', c.text);
      form.append('ref_audio', new Blob([c.audio]), 'ref.wav');
      const r = await fetch(`${server.url}/synthesize`, { method: 'POST', body: form });
      const body = Buffer.from(await r.arrayBuffer());
      if (r.status !== 200) throw new Error(`${c.name}: HTTP ${r.status} ${body.toString().slice(0, 200)}`);
      const [clip, out] = await Promise.all([measureSpeech(c.audio), measureSpeech(body)]);
      rows.push({
        name: c.name,
        tuned: c.tuned,
        clipHz: clip.f0!,
        outHz: out.f0!,
        gap: semitones(out.f0!, clip.f0!),
        clipRate: tokenizeWords(c.text).length / clip.speechSeconds,
        outRate: tokenizeWords(TEXT).length / out.speechSeconds,
      });
    }
  });
  await bench.run();
} finally {
  await server.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
console.log('clip                                   clip Hz  out Hz   Δ semitones  clip w/s  out w/s  rate ratio');
for (const r of rows) {
  console.log(
    `${(r.name + (r.tuned ? ' (seen while writing)' : '')).padEnd(38)} ${r.clipHz.toFixed(0).padStart(7)} ${r.outHz.toFixed(0).padStart(7)} ${r.gap.toFixed(2).padStart(12)} ${r.clipRate.toFixed(2).padStart(9)} ${r.outRate.toFixed(2).padStart(8)} ${(r.outRate / r.clipRate).toFixed(2).padStart(11)}`,
  );
}
const unseen = rows.filter((r) => !r.tuned);
const abs = unseen.map((r) => Math.abs(r.gap)).sort((a, b) => a - b);
const ratios = unseen.map((r) => Math.abs(Math.log(r.outRate / r.clipRate))).sort((a, b) => a - b);
console.log(
  `clips not seen while writing the adapter: ${unseen.length}; |Δ pitch| median ${abs[Math.floor(abs.length / 2)]!.toFixed(2)} st, max ${abs.at(-1)!.toFixed(2)} st, ` +
    `within 1.5 st: ${unseen.filter((r) => Math.abs(r.gap) < 1.5).length}/${unseen.length}; rate off by median ×${Math.exp(ratios[Math.floor(ratios.length / 2)]!).toFixed(2)}, worst ×${Math.exp(ratios.at(-1)!).toFixed(2)}`,
);
