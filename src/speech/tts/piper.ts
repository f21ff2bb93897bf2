// Piper (VITS) voices on onnxruntime, with true batching: the sentences of every request in
// one synthesize() call are padded into shared session runs (input [B,T]).
//
// Piper's exported graph returns only `output` [B,1,1,L], padded to the longest item. The
// voice is loaded with its phoneme-duration tensor added as a second output
// (piper/durations.ts), which gives (1) each item's own length in a padded run exactly
// (its frames × 256 samples) and (2) word timings: each word's phonemes' frames. Words are
// returned when the phoneme string has one word per source token (tokenizeWords);
// otherwise (eSpeak read "1,200" as three words, a lone dash as none) none are, and the
// caller aligns the audio. A voice whose graph has no durations node is run as exported:
// its padding is trimmed by energy (speechEnd) and it gives no words.
import fs from 'node:fs';
import type ort from 'onnxruntime-node';
import { Tensor } from 'onnxruntime-node';
import type { Language, SynthesisOutput, SynthesisRequest, TtsBackend, TtsBackendOptions } from '../types.ts';
import { MissingModelError, SpeechInputError } from '../types.ts';
import { getOrLoad, createSession, type Device } from '../model-cache.ts';
import { tokenizeWords } from '../words.ts';
import { phonemize as espeakPhonemize } from './espeak.ts';
import { spanIds, withDurationsOutput, wordSpans, type WordSpan } from './piper/durations.ts';
import { phonemesToIds } from './piper/ids.ts';
import { mapWordsToTokens } from './piper/word-map.ts';
import {
  type PiperVoiceConfig,
  listPiperVoices,
  matchLanguage,
  parseVoiceId,
  piperVoiceDir,
  readVoiceConfig,
  speakerIndex,
  voiceFiles,
  voiceLanguage,
} from './piper/voices.ts';

export interface PiperScales {
  noiseScale: number;
  lengthScale: number;
  noiseW: number;
}

export interface PiperBackendOptions extends TtsBackendOptions {
  /** Overrides the voice config's `inference` section (0 noise gives repeatable output). */
  scales?: Partial<PiperScales>;
  /** Pause inserted between sentences, as Piper's sentence_silence. */
  sentenceSilenceS?: number;
  /** Text → one IPA string per sentence; eSpeak NG through its helper program by default. */
  phonemize?: (text: string, espeakVoice: string) => Promise<string[]>;
  /** CPU threads per session run; 0/absent → onnxruntime's default (every core). The GPU
   * server sets cores ÷ workers so its pool workers do not fight over the same cores. */
  intraOpThreads?: number;
}

interface LoadedVoice {
  id: string;
  cfg: PiperVoiceConfig;
  session: ort.InferenceSession;
  multiSpeaker: boolean;
  /** Name of the phoneme-durations output; null for a graph without one (no words, energy trim). */
  durations: string | null;
}

interface Item {
  request: number;
  sentence: number;
  ids: number[];
}

/** One item's audio from a run, with its words (times in this audio) when the voice gives durations. */
export interface Piece {
  audio: Float32Array;
  spans: WordSpan[] | null;
}

interface ResolvedRequest {
  voice: LoadedVoice;
  sid: number | null;
  items: Item[];
}

const HOP = 256; // VITS decoder samples per latent frame (all Piper qualities)

/**
 * End of speech in one item of a padded output. The masked frames decode to near-silence
 * (~1e-4 of full scale) except for one short, quiet burst that the decoder leaves some
 * frames after the item's real end (measured on en_US-joe-medium: 7-11 silent frames, then
 * ~6 frames at 2-6% of the peak). So a short trailing segment that follows a near-silent run and
 * stays under 10% of the item's peak is padding, not speech. We cut after the last frame
 * whose peak reaches 2% of the item's peak, plus two frames so final consonants survive.
 */
export function speechEnd(samples: Float32Array): number {
  const nF = Math.ceil(samples.length / HOP);
  const peaks = new Float32Array(nF);
  let peak = 0;
  for (let f = 0; f < nF; f++) {
    let m = 0;
    for (let i = f * HOP, e = Math.min(samples.length, (f + 1) * HOP); i < e; i++) m = Math.max(m, Math.abs(samples[i]!));
    peaks[f] = m;
    peak = Math.max(peak, m);
  }
  const thr = Math.max(1e-3, peak * 0.02);
  const near0 = thr * 0.05;
  const SILENT_RUN = 4;
  const MAX_BURST = 10;
  let last = nF - 1;
  for (;;) {
    while (last >= 0 && peaks[last]! < thr) last--;
    if (last < 0) return 0;
    let s = last;
    while (s > 0 && peaks[s - 1]! >= near0) s--;
    let burstPeak = 0;
    for (let f = s; f <= last; f++) burstPeak = Math.max(burstPeak, peaks[f]!);
    let quiet = 0;
    for (let f = s - 1; f >= 0 && peaks[f]! < near0; f--) quiet++;
    if (quiet < SILENT_RUN || last - s + 1 > MAX_BURST || burstPeak >= peak * 0.1 || s - quiet <= 0) break;
    last = s - 1;
  }
  return Math.min(samples.length, (last + 1) * HOP + 2 * HOP);
}

/** Loads a voice with its durations output added; a graph without one is loaded as it is. */
async function openVoice(id: string, modelsDir: string, device: Device, intraOpThreads?: number): Promise<LoadedVoice> {
  const files = voiceFiles(modelsDir, id);
  const cfg = readVoiceConfig(files.json);
  const bytes = await fs.promises.readFile(files.onnx);
  let edited: { model: Uint8Array; output: string } | null = null;
  try {
    edited = withDurationsOutput(bytes);
  } catch {
    // not the usual VITS export: run it as it is
  }
  const session = await createSession(edited?.model ?? bytes, { device, intraOpThreads });
  return { id, cfg, session, multiSpeaker: session.inputNames.includes('sid'), durations: edited?.output ?? null };
}

function scalesFor(cfg: PiperVoiceConfig, over: Partial<PiperScales> | undefined): Float32Array {
  const inf = cfg.inference ?? {};
  return new Float32Array([over?.noiseScale ?? inf.noise_scale ?? 0.667, over?.lengthScale ?? inf.length_scale ?? 1, over?.noiseW ?? inf.noise_w ?? 0.8]);
}

/** The padded [B,T] feeds of one session run. */
function feedsFor(voice: LoadedVoice, sid: number | null, items: Item[], scales: Float32Array): Record<string, ort.Tensor> {
  const B = items.length;
  const T = Math.max(...items.map((it) => it.ids.length));
  const input = new BigInt64Array(B * T).fill(BigInt(voice.cfg.phoneme_id_map._?.[0] ?? 0));
  const lengths = new BigInt64Array(B);
  items.forEach((it, b) => {
    for (let t = 0; t < it.ids.length; t++) input[b * T + t] = BigInt(it.ids[t]!);
    lengths[b] = BigInt(it.ids.length);
  });
  const feeds: Record<string, ort.Tensor> = {
    input: new Tensor('int64', input, [B, T]),
    input_lengths: new Tensor('int64', lengths, [B]),
    scales: new Tensor('float32', scales, [3]),
  };
  if (voice.multiSpeaker) feeds.sid = new Tensor('int64', new BigInt64Array(B).fill(BigInt(sid ?? 0)), [B]);
  return feeds;
}

/**
 * One session run → each item's own audio. With durations, an item is exactly its frames
 * (the padded rest is cut) and its word spans come from its own durations; without, the
 * padded tail is trimmed by energy.
 */
async function runItems(voice: LoadedVoice, sid: number | null, items: Item[], scales: Float32Array): Promise<Piece[]> {
  const results = await voice.session.run(feedsFor(voice, sid, items, scales));
  const data = results.output!.data as Float32Array;
  const L = data.length / items.length;
  const durs = voice.durations ? (results[voice.durations]?.data as Float32Array | undefined) : undefined;
  const T = durs ? durs.length / items.length : 0;
  const sampleRate = voice.cfg.audio.sample_rate;
  return items.map((it, b) => {
    const own = data.subarray(b * L, (b + 1) * L);
    if (!durs) return { audio: own.slice(0, speechEnd(own)), spans: null };
    const d = durs.subarray(b * T, b * T + it.ids.length);
    let frames = 0;
    for (const x of d) frames += Math.max(0, Math.round(x));
    return { audio: own.slice(0, Math.min(L, frames * HOP)), spans: wordSpans(it.ids, d, { hop: HOP, sampleRate, ...spanIds(voice.cfg.phoneme_id_map) }) };
  });
}

/** Requests that share a voice and speaker share session runs. */
function groupByVoice(resolved: ResolvedRequest[]): Array<{ voice: LoadedVoice; sid: number | null; items: Item[] }> {
  const groups = new Map<string, { voice: LoadedVoice; sid: number | null; items: Item[] }>();
  for (const r of resolved) {
    const key = `${r.voice.id}#${r.sid ?? ''}`;
    const g = groups.get(key) ?? { voice: r.voice, sid: r.sid, items: [] };
    g.items.push(...r.items);
    groups.set(key, g);
  }
  return [...groups.values()];
}

/**
 * A request's sentences joined with `silenceS` between them, and its words: every sentence's
 * spans moved by where the sentence starts, matched to the source tokens (mapWordsToTokens);
 * none when a sentence has no spans or the match is not trusted (the caller aligns).
 */
export function joinSentences(text: string, pieces: Piece[], sampleRate: number, silenceS: number): SynthesisOutput {
  const gap = Math.round(silenceS * sampleRate);
  const total = pieces.reduce((n, p) => n + p.audio.length, 0) + gap * Math.max(0, pieces.length - 1);
  const samples = new Float32Array(total);
  const spans: WordSpan[] = [];
  let at = 0;
  let timedAll = true;
  pieces.forEach((p, k) => {
    if (k > 0) at += gap;
    samples.set(p.audio, at);
    const t0 = at / sampleRate;
    if (p.spans) for (const s of p.spans) spans.push({ word: spans.length, start: t0 + s.start, end: t0 + s.end, phonemeStarts: s.phonemeStarts.map((x) => t0 + x) });
    else timedAll = false;
    at += p.audio.length;
  });
  const words = timedAll ? mapWordsToTokens(tokenizeWords(text).map((t) => t.word), spans) : null;
  if (!words) return { samples, sampleRate };
  const end = total / sampleRate;
  return { samples, sampleRate, words: words.map((w) => ({ word: w.word, start: Math.min(w.start, end), end: Math.min(w.end, end) })) };
}

export async function createPiperBackend(opts: PiperBackendOptions): Promise<TtsBackend> {
  const installed = listPiperVoices(opts.modelsDir);
  if (opts.voice) voiceFiles(opts.modelsDir, parseVoiceId(opts.voice).id);
  else if (installed.length === 0) {
    throw new MissingModelError(
      `no Piper voice installed: put a voice's .onnx and .onnx.json in ${piperVoiceDir(opts.modelsDir)} (scripts/fetch-models.sh fetches en_US-joe-medium)`,
    );
  }
  const configs = new Map(installed.map((v) => [v.id, readVoiceConfig(v.json)]));
  const maxBatch = Math.max(1, opts.maxBatch ?? 16);
  const silenceS = opts.sentenceSilenceS ?? 0.2;
  const phonemize = opts.phonemize ?? espeakPhonemize;

  const loadVoice = (id: string): Promise<LoadedVoice> =>
    getOrLoad({ name: `piper:${id}`, device: opts.device, computeType: 'fp32+durations' }, () => openVoice(id, opts.modelsDir, opts.device, opts.intraOpThreads));

  function defaultVoiceFor(language: string): string {
    if (opts.voice) return opts.voice;
    const codes = installed.flatMap((v) => {
      const code = voiceLanguage(configs.get(v.id)!)?.code;
      return code ? [{ id: v.id, code }] : [];
    });
    const v = matchLanguage(codes, language);
    if (!v) throw new SpeechInputError(`no Piper voice for language "${language}" (installed: ${installed.map((x) => x.id).join(', ') || 'none'})`);
    return v.id;
  }

  /** Voice, speaker and phoneme ids of one request; a bad request fails before any model time is spent. */
  async function resolve(req: SynthesisRequest, request: number): Promise<ResolvedRequest> {
    if (req.refAudio) throw new SpeechInputError('the piper backend cannot clone a voice from reference audio');
    const { id, speaker } = parseVoiceId(req.voice ?? defaultVoiceFor(req.language));
    const voice = await loadVoice(id);
    const sid = speakerIndex(voice.cfg, id, speaker);
    const sentences = await phonemize(req.text, voice.cfg.espeak?.voice ?? req.language);
    return { voice, sid, items: sentences.map((ipa, sentence) => ({ request, sentence, ids: phonemesToIds(ipa, voice.cfg) })) };
  }

  async function synthesize(batch: SynthesisRequest[]): Promise<SynthesisOutput[]> {
    const resolved = await Promise.all(batch.map(resolve));
    const pieces: Piece[][] = resolved.map((r) => new Array<Piece>(r.items.length));
    for (const g of groupByVoice(resolved)) {
      const scales = scalesFor(g.voice.cfg, opts.scales);
      // Similar lengths share a run, so little of each run is padding.
      const sorted = [...g.items].sort((a, b) => a.ids.length - b.ids.length);
      for (let i = 0; i < sorted.length; i += maxBatch) {
        const chunk = sorted.slice(i, i + maxBatch);
        const out = await runItems(g.voice, g.sid, chunk, scales);
        chunk.forEach((it, k) => (pieces[it.request]![it.sentence] = out[k]!));
      }
    }
    return resolved.map((r, i) => joinSentences(batch[i]!.text, pieces[i]!, r.voice.cfg.audio.sample_rate, silenceS));
  }

  return {
    name: 'piper',
    outputFormat: 'wav',
    maxChunkBytes: 1000,
    canClone: false,
    batched: true,
    async languages(): Promise<Language[]> {
      const seen = new Map<string, Language>();
      for (const cfg of configs.values()) {
        const l = voiceLanguage(cfg);
        if (l && !seen.has(l.code)) seen.set(l.code, l);
      }
      return [...seen.values()];
    },
    voices: async () => [...configs.keys()],
    synthesize,
    async close() {
      // Sessions belong to the shared model cache; other backends in this thread may use them.
    },
  };
}
