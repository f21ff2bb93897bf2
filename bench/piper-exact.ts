// A synthetic reference set with exact word boundaries: sentences of a real book read by a
// Piper voice (en_US-joe-medium, its own noise scales, so timing varies as in natural
// speech), each word's start/end taken from the durations the voice itself computed
// (src/speech/tts/piper/durations.ts). Synthetic speech, exact labels: reported apart from
// the real hand-labelled sets, never mixed with them.
// Convention differences from the hand labels: a word starts where its first phoneme's
// frames start — for a stop after a pause that includes the (silent) closure, where the
// hand labels start at the burst — and frames are 256/22050 s = 11.6 ms.
// Sentences whose eSpeak phoneme words do not match the text's words one to one (eSpeak
// joins "was a" into one phoneme word; numbers expand; "feet—a" is two) are left out
// (oneToOne: since round 13 token by token, not only by count).
// Made on first use into bench/.cache/piper-exact (git-ignored): WAVs + refs.json.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { readEpub } from '../src/documents/epub.ts';
import { decodeWav, encodeWav } from '../src/media/wav.ts';
import { splitSentences } from '../src/speech/sentences.ts';
import { phonemize, phonemizeWords } from '../src/speech/tts/espeak.ts';
import { spanIds, withDurationsOutput, wordSpans } from '../src/speech/tts/piper/durations.ts';
import { phonemesToIds } from '../src/speech/tts/piper/ids.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import type { HandReference, HandWord } from '../test/fixtures/alignment/hand/references.ts';

const root = path.join(import.meta.dirname, '..');
const VOICE = path.join(root, 'models/voices/piper/en_US-joe-medium.onnx');
const BOOK = path.join(root, 'test/fixtures/documents/war-of-the-worlds.epub');
export const PIPER_EXACT_DIR = path.join(import.meta.dirname, '.cache', 'piper-exact');
const HOP = 256;

export interface ExactClip extends HandReference {
  samples: Float32Array;
  sampleRate: number;
}

/**
 * Whether eSpeak reads each token as exactly one phoneme word, so that equal counts mean word i
 * is phoneme word i. Counts alone are not enough: a token read as two ("feet—a", "(1904)") and
 * two tokens read as one ("of the") elsewhere in the sentence add up, and every word between
 * gets its neighbour's edges.
 */
export async function oneToOne(tokens: string[]): Promise<boolean> {
  const ipa = await phonemizeWords(tokens, 'en-us');
  return tokens.every((t) => (ipa.get(t) ?? '').split(/\s+/u).filter(Boolean).length === 1);
}

/** Sentences of 5-25 words from the book, spread over it, deterministic. */
async function bookSentences(n: number): Promise<string[]> {
  const doc = await readEpub(BOOK);
  const all: string[] = [];
  for (const page of doc.pages) for (const b of page.blocks) if (b.kind === 'paragraph') all.push(...splitSentences(b.text));
  const ok = all.filter((s) => {
    const k = tokenizeWords(s).length;
    return k >= 5 && k <= 25 && !/\d/.test(s);
  });
  const step = Math.max(1, Math.floor(ok.length / (n * 2)));
  return ok.filter((_, i) => i % step === 0);
}

/**
 * The bench voice with its durations output: `speak(ipa)` gives the audio (at `rate`) and each
 * phoneme word's exact span in seconds, with the voice's own noise scales.
 */
export async function exactVoice(): Promise<{ rate: number; speak: (ipa: string) => Promise<{ audio: Float32Array; spans: ReturnType<typeof wordSpans> }> }> {
  const cfg = JSON.parse(readFileSync(`${VOICE}.json`, 'utf8')) as { audio: { sample_rate: number }; inference: { noise_scale: number; length_scale: number; noise_w: number }; phoneme_id_map: Record<string, number[]> };
  const { model, output } = withDurationsOutput(readFileSync(VOICE));
  const session = await ort.InferenceSession.create(model);
  const ids0 = spanIds(cfg.phoneme_id_map);
  const rate = cfg.audio.sample_rate;
  return {
    rate,
    async speak(ipa) {
      const ids = phonemesToIds(ipa, cfg as never);
      const r = await session.run({
        input: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
        input_lengths: new ort.Tensor('int64', BigInt64Array.from([BigInt(ids.length)]), [1]),
        scales: new ort.Tensor('float32', new Float32Array([cfg.inference.noise_scale, cfg.inference.length_scale, cfg.inference.noise_w]), [3]),
      });
      return { audio: r.output!.data as Float32Array, spans: wordSpans(ids, r[output]!.data as Float32Array, { hop: HOP, sampleRate: rate, ...ids0 }) };
    },
  };
}

async function make(n: number): Promise<void> {
  mkdirSync(PIPER_EXACT_DIR, { recursive: true });
  const voice = await exactVoice();
  const refs: Omit<HandReference, 'part'>[] = [];
  let skipped = 0;
  for (const sentence of await bookSentences(n)) {
    if (refs.length >= n) break;
    const ipa = await phonemize(sentence, 'en-us');
    if (ipa.length !== 1) {
      skipped++;
      continue;
    }
    const tokens = tokenizeWords(sentence);
    const { audio, spans } = await voice.speak(ipa[0]!);
    if (spans.length !== tokens.length || !(await oneToOne(tokens.map((t) => t.word)))) {
      skipped++;
      continue;
    }
    const file = `piper-${String(refs.length).padStart(3, '0')}.wav`;
    writeFileSync(path.join(PIPER_EXACT_DIR, file), encodeWav(audio, voice.rate));
    refs.push({ audio: file, text: sentence, words: tokens.map((t, i) => ({ word: t.word, start: spans[i]!.start, end: spans[i]!.end, sure: [true, true] })) });
  }
  writeFileSync(path.join(PIPER_EXACT_DIR, 'refs.json'), JSON.stringify({ n, skipped, voice: path.basename(VOICE), refs }, null, 1));
}

/**
 * Between two words with no punctuation, Piper's space token lasts 6 frames (70 ms median)
 * and carries sound (the voice renders the transition there), so neither phoneme edge is
 * "the" boundary: both words meet at the middle of the space. Edges at punctuation (a
 * pause) and at the sentence's ends stay the phoneme edges.
 */
export function spaceMidpoints(words: HandWord[]): HandWord[] {
  const out = words.map((w) => ({ ...w }));
  for (let i = 0; i + 1 < out.length; i++) {
    if (/[,.;:!?]["'”’)]*$/u.test(out[i]!.word)) continue;
    const mid = (out[i]!.end + out[i + 1]!.start) / 2;
    out[i]!.end = mid;
    out[i + 1]!.start = mid;
  }
  return out;
}

/** The set (made on first use): the first half is `tuning`, the second `held-out`. */
export async function piperExactClips(n: number): Promise<ExactClip[]> {
  const refsFile = path.join(PIPER_EXACT_DIR, 'refs.json');
  const have = existsSync(refsFile) ? (JSON.parse(readFileSync(refsFile, 'utf8')) as { n: number; refs: Omit<HandReference, 'part'>[] }) : null;
  if (!have || have.n < n) await make(n);
  const { refs } = JSON.parse(readFileSync(refsFile, 'utf8')) as { refs: Omit<HandReference, 'part'>[] };
  return refs.slice(0, n).map((r, i) => {
    const { samples, sampleRate } = decodeWav(readFileSync(path.join(PIPER_EXACT_DIR, r.audio)));
    return { ...r, words: spaceMidpoints(r.words), part: i < n / 2 ? 'tuning' : 'held-out', samples, sampleRate };
  });
}

if (process.argv[1] === import.meta.filename) {
  const clips = await piperExactClips(Number(process.argv[2] ?? 200));
  const refs = JSON.parse(readFileSync(path.join(PIPER_EXACT_DIR, 'refs.json'), 'utf8')) as { skipped: number };
  console.log(`${clips.length} sentences, ${clips.reduce((a, c) => a + c.words.length, 0)} words, ${clips.reduce((a, c) => a + c.samples.length / c.sampleRate, 0).toFixed(0)} s (skipped ${refs.skipped}) in ${PIPER_EXACT_DIR}`);
  process.exit(0); // the shared eSpeak helper would keep the process alive
}
