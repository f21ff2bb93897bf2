// Intelligibility round trip: synthesize the 5 LibriVox sentences with each TTS backend,
// transcribe with PocketSphinx, print WER. The baseline in the same run is the recogniser on
// the real LibriVox recordings (and jfk.wav), so a backend's WER reads against human speech.
// Run: node --import tsx bench/roundtrip.bench.ts
import fs from 'node:fs';
import path from 'node:path';
import { decodeAudio } from '../src/media/ffmpeg.ts';
import { createTranscriber } from '../src/speech/asr/transcribers.ts';
import { wordErrorRate } from '../src/speech/asr/wer.ts';
import { TTS_BACKENDS, createTtsBackend } from '../src/speech/tts/backends.ts';
import { QUICK } from './quick.ts';

const SPEECH = path.resolve('test/fixtures/speech');
const MODELS = path.resolve('models');
const JFK = 'And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.';

const sentences = fs
  .readFileSync(path.join(SPEECH, 'transcription'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => {
    const m = /<s>(.*)<\/s>\s*\(([^)]+)\)/.exec(line)!;
    return { id: m[2]!, text: m[1]!.trim() };
  })
  .slice(0, QUICK ? 1 : undefined);

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

async function main() {
  const asr = await createTranscriber('pocketsphinx', { modelsDir: MODELS, device: 'cpu' });
  const rows: string[] = [];
  const score = async (label: string, pairs: { audio: Float32Array; rate: number; reference: string }[]) => {
    const t0 = performance.now();
    const scored = [];
    for (const p of pairs) scored.push({ reference: p.reference, hypothesis: await asr.transcribe(p.audio, p.rate, 'en-US') });
    const r = wordErrorRate(scored);
    rows.push(`${label.padEnd(34)} WER ${pct(r.wer).padStart(6)} (${r.errors}/${r.referenceWords})  asr ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return r;
  };

  const real = await Promise.all(sentences.map(async (s) => ({ audio: await decodeAudio(path.join(SPEECH, `${s.id}.wav`), 16000), rate: 16000, reference: s.text })));
  const base = await score('real LibriVox recordings (baseline)', real);
  if (!QUICK) await score('real jfk.wav', [{ audio: await decodeAudio(path.join(SPEECH, 'jfk.wav'), 16000), rate: 16000, reference: JFK }]);

  // Quick mode: eSpeak only (Piper has its own benches, tts-piper and voices).
  for (const name of QUICK ? ['espeak'] : TTS_BACKENDS) {
    try {
      const tts = await createTtsBackend(name, { modelsDir: MODELS, device: 'cpu' });
      const outs = await tts.synthesize(sentences.map((s) => ({ text: `${s.text}.`, language: 'en-US' })));
      const r = await score(`${name} -> pocketsphinx`, outs.map((o, i) => ({ audio: o.samples, rate: o.sampleRate, reference: sentences[i]!.text })));
      rows.push(`${''.padEnd(34)} ratio vs real speech ${(r.wer / base.wer).toFixed(2)}x`);
      await tts.close();
    } catch (e) {
      rows.push(`${name.padEnd(34)} skipped: ${(e as Error).message}`);
    }
  }
  console.log(rows.join('\n'));
  process.exit(0);
}
await main();
