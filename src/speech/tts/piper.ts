// Piper (VITS) voices on onnxruntime, with true batching: the sentences of every request in
// one synthesize() call are padded into shared session runs (input [B,T]).
//
// Piper's exported graph takes input/input_lengths/scales(/sid) and returns only `output`
// [B,1,1,L], padded to the longest item; it exposes no durations. So (1) word timings are
// left to the aligner, and (2) each item's own length is recovered by trimming the padded
// tail: the decoder turns the masked latent frames into near-silence, so we cut after the
// last frame with speech energy. The same trim is applied at B=1, so an item's audio does
// not depend on what it was batched with.
import type ort from 'onnxruntime-node';
import { Tensor } from 'onnxruntime-node';
import type { Language, SynthesisOutput, SynthesisRequest, TtsBackend } from '../types.ts';
import { MissingModelError, SpeechInputError } from '../types.ts';
import { getOrLoad, createSession } from '../model-cache.ts';
import type { TtsBackendOptions } from './registry.ts';
import { phonemize as espeakPhonemize } from './espeak.ts';
import { phonemesToIds } from './piper/ids.ts';
import {
  type PiperVoiceConfig,
  listPiperVoices,
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
  /** Most sentences in one session run. */
  maxBatch?: number;
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
}

interface Item {
  request: number;
  sentence: number;
  ids: number[];
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
    getOrLoad({ name: `piper:${id}`, device: opts.device, computeType: 'fp32' }, async () => {
      const files = voiceFiles(opts.modelsDir, id);
      const cfg = readVoiceConfig(files.json);
      const session = await createSession(files.onnx, { device: opts.device, intraOpThreads: opts.intraOpThreads });
      return { id, cfg, session, multiSpeaker: session.inputNames.includes('sid') };
    });

  function defaultVoiceFor(language: string): string {
    if (opts.voice) return opts.voice;
    const lang = language.toLowerCase();
    const primary = lang.split('-')[0];
    const byCode = (match: (code: string) => boolean) =>
      installed.find((v) => {
        const code = voiceLanguage(configs.get(v.id)!)?.code.toLowerCase();
        return code !== undefined && match(code);
      });
    const v = byCode((c) => c === lang) ?? byCode((c) => c.split('-')[0] === primary);
    if (!v) throw new SpeechInputError(`no Piper voice for language "${language}" (installed: ${installed.map((x) => x.id).join(', ') || 'none'})`);
    return v.id;
  }

  async function run(voice: LoadedVoice, sid: number | null, items: Item[]): Promise<Float32Array[]> {
    const inf = voice.cfg.inference ?? {};
    const scales = new Float32Array([
      opts.scales?.noiseScale ?? inf.noise_scale ?? 0.667,
      opts.scales?.lengthScale ?? inf.length_scale ?? 1,
      opts.scales?.noiseW ?? inf.noise_w ?? 0.8,
    ]);
    const B = items.length;
    const T = Math.max(...items.map((it) => it.ids.length));
    const pad = BigInt(voice.cfg.phoneme_id_map._?.[0] ?? 0);
    const input = new BigInt64Array(B * T).fill(pad);
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
    const out = (await voice.session.run(feeds)).output!;
    const data = out.data as Float32Array;
    const L = data.length / B;
    return items.map((_, b) => {
      const own = data.subarray(b * L, (b + 1) * L);
      return own.slice(0, speechEnd(own));
    });
  }

  async function synthesize(batch: SynthesisRequest[]): Promise<SynthesisOutput[]> {
    // Resolve voices and phonemes for every request first, so a bad request fails the call
    // before any model time is spent.
    const resolved = await Promise.all(
      batch.map(async (req, request) => {
        if (req.refAudio) throw new SpeechInputError('the piper backend cannot clone a voice from reference audio');
        const { id, speaker } = parseVoiceId(req.voice ?? defaultVoiceFor(req.language));
        const voice = await loadVoice(id);
        const sid = speakerIndex(voice.cfg, id, speaker);
        const sentences = await phonemize(req.text, voice.cfg.espeak?.voice ?? req.language);
        const items: Item[] = sentences.map((ipa, sentence) => ({ request, sentence, ids: phonemesToIds(ipa, voice.cfg) }));
        return { voice, sid, items };
      }),
    );

    const pieces: Float32Array[][] = resolved.map((r) => new Array<Float32Array>(r.items.length));
    const groups = new Map<string, { voice: LoadedVoice; sid: number | null; items: Item[] }>();
    for (const r of resolved) {
      const key = `${r.voice.id}#${r.sid ?? ''}`;
      const g = groups.get(key) ?? { voice: r.voice, sid: r.sid, items: [] };
      g.items.push(...r.items);
      groups.set(key, g);
    }
    for (const g of groups.values()) {
      // Similar lengths share a run, so little of each run is padding.
      const sorted = [...g.items].sort((a, b) => a.ids.length - b.ids.length);
      for (let i = 0; i < sorted.length; i += maxBatch) {
        const chunk = sorted.slice(i, i + maxBatch);
        const audio = await run(g.voice, g.sid, chunk);
        chunk.forEach((it, k) => (pieces[it.request]![it.sentence] = audio[k]!));
      }
    }

    return resolved.map((r, i) => {
      const sampleRate = r.voice.cfg.audio.sample_rate;
      const gap = Math.round(silenceS * sampleRate);
      const parts = pieces[i]!;
      const total = parts.reduce((n, p) => n + p.length, 0) + gap * Math.max(0, parts.length - 1);
      const samples = new Float32Array(total);
      let at = 0;
      parts.forEach((p, k) => {
        if (k > 0) at += gap;
        samples.set(p, at);
        at += p.length;
      });
      return { samples, sampleRate };
    });
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
