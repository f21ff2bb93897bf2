// Speech of any length through the runtime: the input is cut into sentences (each under
// the backend's max_chunk_bytes), every sentence goes through runtime.synthesize (the same
// micro-batcher, pool, metrics and back-pressure as /synthesize), and the answers come back
// in order as samples with their words. The callers join, encode or stream them.
import { engineWordsOrAligned } from '../../speech/word-timings.ts';
import { decodeAudio } from '../../media/ffmpeg.ts';
import { decodeWav, isWav } from '../../media/wav.ts';
import { resample } from '../../native/index.ts';
import { CHUNK_GAP_SECONDS, chunkSentences, splitSentences } from '../../speech/sentences.ts';
import type { WordTiming } from '../../speech/types.ts';
import { tokenizeWords } from '../../speech/words.ts';
import { MODEL_SAMPLE_RATE, type GpuRuntime } from '../runtime.ts';
import type { SynthesizedAudio } from '../tasks.ts';

/** One spoken sentence: its samples, and (when asked for) its words with times from its own start. */
export interface SpokenSentence {
  text: string;
  samples: Float32Array;
  sampleRate: number;
  words: WordTiming[] | null;
}

/** Sentences of `input`, each at most maxBytes (a longer one is cut at a pause, as the narration does). */
export function speechSentences(input: string, maxBytes: number): string[] {
  return splitSentences(input).flatMap((s) => chunkSentences([s], maxBytes));
}

async function samplesOf(out: SynthesizedAudio): Promise<{ samples: Float32Array; sampleRate: number }> {
  if (isWav(out.audio)) return decodeWav(out.audio);
  const sampleRate = 24000; // compressed engine output: any rate ffmpeg resamples to
  return { samples: await decodeAudio(Buffer.from(out.audio), sampleRate), sampleRate };
}

/** The engine's own word timings when it gave one per word, else the aligner's over the sentence's audio. */
async function sentenceWords(runtime: GpuRuntime, text: string, language: string, out: SynthesizedAudio, samples: Float32Array, sampleRate: number): Promise<WordTiming[]> {
  return engineWordsOrAligned(out.words, text, () => runtime.align(resample(samples, sampleRate, MODEL_SAMPLE_RATE), text, language));
}

export interface SpeakOptions {
  /** Word timings for every sentence. */
  timestamps: boolean;
  /**
   * Send the first sentence on its own and the rest once the consumer has taken it
   * (streaming): it is then neither one of a batch of max-batch sentences nor sharing the
   * device (on CPU, the cores) with the rest, so the first audio waits for one sentence
   * only. The rest start one sentence later, which a listener never hears while synthesis
   * runs faster than real time.
   * Without it every sentence may share a batch.
   */
  firstAlone: boolean;
  /** Sentences in flight at once for this request (bounds one long input's share of the server). */
  ahead: number;
}

/**
 * Speaks the sentences in order. Up to `ahead` are in the batcher or the pool at once;
 * a consumer that stops early (a client gone) leaves the rest unsent.
 */
export async function* speakSentences(runtime: GpuRuntime, sentences: string[], base: Omit<Parameters<GpuRuntime['synthesize']>[0], 'text'>, opts: SpeakOptions): AsyncGenerator<SpokenSentence> {
  const started: Array<Promise<SpokenSentence> | undefined> = [];
  let next = 0;
  let done = 0;
  const start = () => {
    const text = sentences[next]!;
    const p = runtime.synthesize({ ...base, text }).then(async (out) => {
      const { samples, sampleRate } = await samplesOf(out);
      const words = opts.timestamps ? await sentenceWords(runtime, text, base.language, out, samples, sampleRate) : null;
      return { text, samples, sampleRate, words };
    });
    p.catch(() => {}); // awaited in order below; one that is never awaited (client gone) must not crash the process
    started[next++] = p;
  };
  const fill = () => {
    while (next < sentences.length && next - done < opts.ahead) start();
  };
  if (opts.firstAlone && sentences.length > 1) {
    start();
    const first = await started[0]!;
    started[0] = undefined;
    done = 1;
    // The consumer starts its encoder on this one before the rest compete with it for the CPU.
    yield first;
  }
  fill();
  while (done < sentences.length) {
    const sentence = await started[done]!;
    started[done++] = undefined;
    fill();
    yield sentence;
  }
}

/** Places sentences one after another with the narration's gap between them; words get times in the whole. */
export class SentenceJoiner {
  private offset = 0;
  readonly words: WordTiming[] = [];
  sampleRate = 0;

  /** The samples to emit for this sentence (the gap before it included), its words moved to their place. */
  add(s: SpokenSentence): { samples: Float32Array; words: WordTiming[] } {
    if (this.sampleRate === 0) this.sampleRate = s.sampleRate;
    if (s.sampleRate !== this.sampleRate) throw new Error(`the backend answered at ${s.sampleRate} Hz after ${this.sampleRate} Hz`);
    const gap = this.offset === 0 ? 0 : Math.round(CHUNK_GAP_SECONDS * this.sampleRate);
    const samples = new Float32Array(gap + s.samples.length);
    samples.set(s.samples, gap);
    const t0 = (this.offset + gap) / this.sampleRate;
    const words = (s.words ?? []).map((w) => ({ word: w.word, start: t0 + w.start, end: t0 + w.end }));
    this.words.push(...words);
    this.offset += samples.length;
    return { samples, words };
  }

  get durationSeconds(): number {
    return this.sampleRate ? this.offset / this.sampleRate : 0;
  }
}

/**
 * Word timings at `speed` (the audio is time-stretched by 1/speed), one per word of
 * `input`: a word the sentence splitter had to cut (longer than max_chunk_bytes) is
 * its pieces joined back.
 */
export function inputWords(input: string, spoken: WordTiming[], speed: number): WordTiming[] {
  const out: WordTiming[] = [];
  let k = 0;
  for (const token of tokenizeWords(input)) {
    let text = '';
    const first = spoken[k];
    let last = first;
    while (k < spoken.length && text.length < token.word.length) {
      last = spoken[k++]!;
      text += last.word;
    }
    if (!first || !last) break;
    out.push({ word: token.word, start: round(first.start / speed), end: round(last.end / speed) });
  }
  return out;
}

const round = (t: number) => Math.round(t * 1000) / 1000;
