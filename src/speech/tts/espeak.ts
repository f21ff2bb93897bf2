// eSpeak NG backend. eSpeak NG is GPL-3, so it runs in our separate helper program
// (native/espeak/lectern_espeak.c → build/Release/lectern-espeak) and we talk to it over
// a pipe; nothing GPL is linked into Node. Word timings come from the engine's own
// WORD events (text position + audio position), never from guesses.
import { splitMergedWords } from '../merged-words.ts';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../core/paths.ts';
import type { TtsBackendOptions } from '../types.ts';
import {
  MissingModelError,
  SpeechInputError,
  type Language,
  type PhonemeTiming,
  type SynthesisOutput,
  type SynthesisRequest,
  type TtsBackend,
  type WordTiming,
} from '../types.ts';
import { tokenizeWords } from '../words.ts';

export const ESPEAK_HELPER = path.join(PROJECT_ROOT, 'build', 'Release', 'lectern-espeak');

/** eSpeak NG's default speaking rate, words per minute. */
const DEFAULT_RATE = 175;
/** eSpeak's language-switch marks in its IPA output: "(en)", "(fr)", "(es-la)", "(hy)". */
const LANGUAGE_SWITCH = /\([a-z]{2,3}(?:-[a-z0-9]+)*\)/gu;

interface Frame {
  type: string;
  payload: Buffer;
}

/** Raw engine events of one SYNTH request. Times in ms; text positions 1-based code points. */
export interface EspeakSynthesis {
  sampleRate: number;
  pcm: Int16Array;
  words: { textPos: number; length: number; ms: number }[];
  /** Phonemes and clause ends in stream order; an empty phoneme is a pause. */
  marks: ({ kind: 'phoneme'; ms: number; phoneme: string } | { kind: 'word'; index: number } | { kind: 'end'; ms: number })[];
}

export interface EspeakVoice {
  identifier: string;
  name: string;
  /** eSpeak language names, e.g. en-us, en-gb-x-rp, with the engine's priority (lower = preferred). */
  languages: { name: string; priority: number }[];
}

class HelperError extends Error {}

/**
 * One long-lived lectern-espeak process; requests run one at a time in order, so a
 * backend keeps one per worker and never pays the engine's start-up per sentence.
 */
export class EspeakProcess {
  private child: ChildProcessWithoutNullStreams | null = null;
  private buf: Buffer = Buffer.alloc(0);
  private frames: Frame[] = [];
  private waiter: (() => void) | null = null;
  private exitError: Error | null = null;
  private stderr = '';
  private chain: Promise<unknown> = Promise.resolve();
  private pending = 0;
  sampleRate = 0;

  constructor(private readonly helper = ESPEAK_HELPER) {}

  private async start(): Promise<void> {
    if (this.child && !this.exitError) return;
    if (!existsSync(this.helper)) {
      throw new MissingModelError(
        `the eSpeak NG helper ${this.helper} is missing: build it with \`bash scripts/build-native.sh\` (needs Debian libespeak-ng-dev and espeak-ng-data)`,
      );
    }
    this.buf = Buffer.alloc(0);
    this.frames = [];
    this.exitError = null;
    this.stderr = '';
    const child = spawn(this.helper, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout.on('data', (chunk: Buffer) => this.onData(chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-2000);
    });
    const fail = (err: Error) => {
      if (this.child !== child) return;
      this.exitError = err;
      this.wake();
    };
    child.on('error', (err) => fail(new MissingModelError(`cannot run the eSpeak NG helper ${this.helper}: ${err.message}`)));
    child.on('exit', (code, signal) => {
      const why = this.stderr.trim() || `exit ${code ?? signal}`;
      // The dynamic loader's message when libespeak-ng.so.1 is absent names the library.
      const missingLib = /libespeak-ng/.test(why) ? ' (install the Debian package libespeak-ng1 / libespeak-ng-dev)' : '';
      fail(new MissingModelError(`the eSpeak NG helper stopped: ${why}${missingLib}`));
    });
    child.stdin.on('error', () => {}); // the exit handler reports why
    const hello = await this.next();
    if (hello.type !== 'I') throw new HelperError(`unexpected first frame "${hello.type}" from the eSpeak NG helper`);
    this.sampleRate = hello.payload.readInt32LE(0);
    this.setRef(false);
  }

  private setRef(on: boolean): void {
    const c = this.child;
    if (!c) return;
    // Idle helpers must not keep Node alive; busy ones must.
    for (const s of [c.stdout, c.stderr, c.stdin] as unknown as { ref(): void; unref(): void }[]) (on ? s.ref() : s.unref());
    on ? c.ref() : c.unref();
  }

  private onData(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let off = 0;
    while (this.buf.length - off >= 5) {
      const len = this.buf.readUInt32LE(off + 1);
      if (this.buf.length - off < 5 + len) break;
      this.frames.push({ type: String.fromCharCode(this.buf[off]!), payload: this.buf.subarray(off + 5, off + 5 + len) });
      off += 5 + len;
    }
    this.buf = off === this.buf.length ? Buffer.alloc(0) : Buffer.from(this.buf.subarray(off));
    this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }

  private async next(): Promise<Frame> {
    for (;;) {
      const f = this.frames.shift();
      if (f) return f;
      if (this.exitError) throw this.exitError;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  /** Sends one request and collects its frames up to 'D'. */
  private request(header: string, body?: Buffer): Promise<Frame[]> {
    const run = async () => {
      await this.start();
      this.pending++;
      this.setRef(true);
      try {
        this.child!.stdin.write(body ? Buffer.concat([Buffer.from(header + '\n'), body]) : Buffer.from(header + '\n'));
        const out: Frame[] = [];
        for (;;) {
          const f = await this.next();
          if (f.type === 'D') break;
          out.push(f);
        }
        const err = out.find((f) => f.type === 'X');
        if (err) throw new SpeechInputError(err.payload.toString('utf8'));
        return out;
      } finally {
        if (--this.pending === 0) this.setRef(false);
      }
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => {});
    return p;
  }

  async synth(voice: string, text: string, rate = DEFAULT_RATE): Promise<EspeakSynthesis> {
    const body = Buffer.from(cleanText(text), 'utf8');
    const frames = await this.request(`SYNTH ${voiceToken(voice)} ${Math.round(rate)} ${body.length}`, body);
    const audio: Buffer[] = [];
    const words: EspeakSynthesis['words'] = [];
    const marks: EspeakSynthesis['marks'] = [];
    for (const f of frames) {
      const p = f.payload;
      if (f.type === 'A') audio.push(p);
      else if (f.type === 'W') {
        // the engine ends some messages with an empty WORD event; it names no text
        if (p.readInt32LE(4) === 0) continue;
        marks.push({ kind: 'word', index: words.length });
        words.push({ textPos: p.readInt32LE(0), length: p.readInt32LE(4), ms: p.readInt32LE(8) });
      } else if (f.type === 'P') marks.push({ kind: 'phoneme', ms: p.readInt32LE(0), phoneme: p.subarray(4).toString('utf8') });
      else if (f.type === 'E') marks.push({ kind: 'end', ms: p.readInt32LE(4) });
    }
    const all = Buffer.concat(audio);
    const pcm = new Int16Array(all.length >> 1);
    for (let i = 0; i < pcm.length; i++) pcm[i] = all.readInt16LE(i * 2);
    return { sampleRate: this.sampleRate, pcm, words, marks };
  }

  /** IPA per clause: [byte offset of clause start, byte offset after it, phonemes]. */
  async phonemizeClauses(voice: string, text: string): Promise<{ text: string; ipa: string }[]> {
    const body = Buffer.from(cleanText(text), 'utf8');
    const frames = await this.request(`PHONEMIZE ${voiceToken(voice)} ${body.length}`, body);
    return frames
      .filter((f) => f.type === 'C')
      .map((f) => ({
        text: body.subarray(f.payload.readInt32LE(0), f.payload.readInt32LE(4)).toString('utf8'),
        // eSpeak marks a word it reads in another language's rules with that language, "(en)ˈɒɡɪlvi(fr)":
        // the marks are no sounds (piper-phonemize drops them too); kept, their letters became phones
        ipa: f.payload.subarray(8).toString('utf8').replace(LANGUAGE_SWITCH, ''),
      }));
  }

  async voices(): Promise<EspeakVoice[]> {
    const frames = await this.request('VOICES');
    const text = frames.filter((f) => f.type === 'V').map((f) => f.payload.toString('utf8')).join('');
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [identifier = '', name = '', langs = ''] = line.split('\t');
        const languages = langs
          .split(',')
          .filter(Boolean)
          .map((l) => {
            const i = l.lastIndexOf(':');
            return { name: l.slice(0, i), priority: Number(l.slice(i + 1)) };
          });
        return { identifier, name: name.trim(), languages };
      });
  }

  async close(): Promise<void> {
    const c = this.child;
    this.child = null;
    if (c && c.exitCode === null) {
      c.stdin.end();
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => (c.kill('SIGKILL'), resolve()), 2000);
        c.once('exit', () => (clearTimeout(t), resolve()));
      });
    }
  }
}

function voiceToken(voice: string): string {
  if (!/^[\w./+-]{1,200}$/.test(voice)) throw new SpeechInputError(`invalid eSpeak NG voice name "${voice}"`);
  return voice;
}

// NUL would end the C string early; other control characters are spoken as nothing anyway.
function cleanText(text: string): string {
  return text.replace(/\0/g, ' ');
}

/** UTF-16 offset of each code point, plus one past the end: eSpeak counts text positions in code points. */
function codePointOffsets(text: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < text.length; ) {
    out.push(i);
    i += (text.codePointAt(i)! > 0xffff ? 2 : 1);
  }
  out.push(text.length);
  return out;
}

/**
 * Engine events → one timing per source token (tokenizeWords), in order, non-overlapping.
 * A WORD event belongs to the token its text position falls in (or the next one, when it
 * falls on whitespace). When the engine splits a token ("1,200" → one thousand two
 * hundred) the token spans all its events; when it reads a token as nothing (a lone
 * dash) the token gets a zero-length time at the end of the one before.
 */
export function wordTimingsFromEvents(text: string, syn: EspeakSynthesis): { words: WordTiming[]; phonemes: PhonemeTiming[] } {
  const cps = codePointOffsets(text);
  const duration = (syn.pcm.length / syn.sampleRate) * 1000;
  // Phoneme start times come as events; each ends where the next mark begins.
  const phonemes: PhonemeTiming[] = [];
  const wordStart = syn.words.map((w) => w.ms);
  const wordEnd = syn.words.map(() => -1);
  let current = -1;
  let lastPhoneme: { start: number; phoneme: string } | null = null;
  const closePhoneme = (ms: number) => {
    if (lastPhoneme && lastPhoneme.phoneme) {
      phonemes.push({ phoneme: lastPhoneme.phoneme, start: lastPhoneme.start / 1000, end: ms / 1000 });
      if (current >= 0) wordEnd[current] = ms;
    }
    lastPhoneme = null;
  };
  for (const m of syn.marks) {
    if (m.kind === 'phoneme') {
      closePhoneme(m.ms);
      lastPhoneme = { start: m.ms, phoneme: m.phoneme };
    } else if (m.kind === 'end') {
      closePhoneme(m.ms);
    } else {
      closePhoneme(syn.words[m.index]!.ms);
      current = m.index;
    }
  }
  closePhoneme(duration);

  const tokens = tokenizeWords(text);
  const spans: { start: number; end: number }[] = tokens.map(() => ({ start: -1, end: -1 }));
  let t = 0;
  syn.words.forEach((w, k) => {
    const pos = cps[Math.min(Math.max(w.textPos - 1, 0), cps.length - 1)]!;
    while (t < tokens.length - 1 && tokens[t]!.end <= pos) t++;
    const span = spans[t]!;
    const end = wordEnd[k]! >= 0 ? wordEnd[k]! : (syn.words[k + 1]?.ms ?? duration);
    if (span.start < 0) span.start = w.ms;
    span.end = Math.max(span.end, end, w.ms);
  });

  const words: WordTiming[] = [];
  let prevEnd = 0;
  tokens.forEach((tok, i) => {
    const s = spans[i]!;
    let start = s.start < 0 ? prevEnd : Math.max(s.start, prevEnd);
    let end = s.start < 0 ? start : Math.max(s.end, start);
    // keep strictly in order even if the engine's clock ever steps back
    start = Math.max(start, prevEnd);
    end = Math.max(end, start);
    words.push({ word: tok.word, start: start / 1000, end: end / 1000 });
    prevEnd = end;
  });
  return { words, phonemes };
}

/** eSpeak language name (en-us, en-gb-x-rp, cmn-latn-pinyin) → BCP-47 casing (en-US, en-GB-x-rp). */
export function toBcp47(lang: string): string {
  const parts = lang.split('-');
  let privateUse = false;
  return parts
    .map((p, i) => {
      if (i === 0) return p.toLowerCase();
      if (p.toLowerCase() === 'x') privateUse = true;
      if (privateUse) return p.toLowerCase();
      if (/^[a-z]{2}$/i.test(p) || /^\d{3}$/.test(p)) return p.toUpperCase();
      if (/^[a-z]{4}$/i.test(p)) return p[0]!.toUpperCase() + p.slice(1).toLowerCase();
      return p.toLowerCase();
    })
    .join('-');
}

export interface VoiceTable {
  languages: Language[];
  /** lower-case BCP-47 → eSpeak voice name to select */
  byLanguage: Map<string, string>;
}

export function buildVoiceTable(voices: EspeakVoice[]): VoiceTable {
  const best = new Map<string, { code: string; voice: EspeakVoice; priority: number }>();
  for (const v of voices) {
    for (const lang of v.languages) {
      const code = toBcp47(lang.name);
      const key = code.toLowerCase();
      const seen = best.get(key);
      if (!seen || lang.priority < seen.priority) best.set(key, { code, voice: v, priority: lang.priority });
    }
  }
  const byLanguage = new Map<string, string>();
  const languages: Language[] = [];
  for (const [key, { code, voice }] of best) {
    // the voice file (gmw/en-US) picks exactly that voice; a language name could pick another
    byLanguage.set(key, voice.identifier);
    languages.push({ code, name: voice.name });
  }
  languages.sort((a, b) => a.code.localeCompare(b.code));
  return { languages, byLanguage };
}

/** BCP-47 → eSpeak voice: exact match, else the primary language (fr-CA → fr). */
export function voiceForLanguage(table: VoiceTable, language: string): string {
  const key = language.trim().toLowerCase().replace(/_/g, '-');
  const exact = table.byLanguage.get(key);
  if (exact) return exact;
  const primary = table.byLanguage.get(key.split('-')[0]!);
  if (primary && key.split('-')[0]) return primary;
  throw new SpeechInputError(`eSpeak NG has no voice for language "${language}"`);
}

let shared: { proc: EspeakProcess; table: Promise<VoiceTable> } | null = null;
function sharedProcess() {
  if (!shared) {
    const proc = new EspeakProcess();
    shared = { proc, table: proc.voices().then(buildVoiceTable) };
    shared.table.catch(() => (shared = null));
  }
  return shared;
}

/** Whether eSpeak NG has a voice for a BCP-47 language (its own region, or the primary language's). */
export async function espeakSpeaks(language: string): Promise<boolean> {
  if (!/^[a-z]{2,3}([-_][a-z0-9]{2,8})*$/i.test(language.trim())) return false;
  try {
    voiceForLanguage(await sharedProcess().table, language);
    return true;
  } catch (e) {
    if (e instanceof SpeechInputError) return false;
    throw e;
  }
}

/**
 * Each word's IPA in a language's eSpeak NG voice (one request per word, pipelined over the
 * shared helper: about 0.05 ms a word). Throws SpeechInputError when eSpeak has no voice for it.
 */
export async function phonemizeWords(words: Iterable<string>, language: string): Promise<Map<string, string>> {
  const { proc, table } = sharedProcess();
  const voice = voiceForLanguage(await table, language);
  const list = [...new Set(words)];
  const ipa = await Promise.all(list.map((w) => proc.phonemizeClauses(voice, w)));
  return new Map(list.map((w, i) => [w, ipa[i]!.map((c) => c.ipa.trim()).filter(Boolean).join(' ')]));
}

// Clause terminators piper-phonemize keeps as phonemes; . ! ? also end a sentence.
// The helper reports where each clause ends as the engine's text pointer, which has read
// one character of the next clause already; hence the optional trailing \S.
const CLAUSE_PUNCT = /([.,;:!?。、，；：！？…])["'”’»)\]]*\s*\S?$/u;
const SENTENCE_END = /[.!?。！？…]/u;

/**
 * Text → IPA phonemes the way piper-phonemize gives them: one string per sentence,
 * clauses joined by a space, each clause followed by its punctuation mark.
 * `voice` is an eSpeak voice name (en-us) or a BCP-47 language (en-US).
 */
export async function phonemize(text: string, voice: string): Promise<string[]> {
  const { proc, table } = sharedProcess();
  let espeakVoice = voice;
  try {
    espeakVoice = voiceForLanguage(await table, voice);
  } catch {
    // not a language code: pass it through as a voice name; the helper rejects unknown ones
  }
  const clauses = await proc.phonemizeClauses(espeakVoice, text);
  const sentences: string[] = [];
  let cur = '';
  for (const c of clauses) {
    const m = CLAUSE_PUNCT.exec(c.text);
    const punct = m ? m[1]! : '';
    const ipa = c.ipa.trim();
    if (!ipa && !punct) continue;
    cur += (cur && ipa ? ' ' : '') + ipa + punct;
    if (SENTENCE_END.test(punct)) {
      sentences.push(cur);
      cur = '';
    }
  }
  if (cur) sentences.push(cur);
  return sentences;
}

export async function createEspeakBackend(opts: TtsBackendOptions): Promise<TtsBackend> {
  const proc = new EspeakProcess();
  const installed = await proc.voices();
  const table = buildVoiceTable(installed);
  return {
    name: 'espeak',
    outputFormat: 'wav',
    // eSpeak streams any length, so this is about the pipeline, not the engine: ~4 KB is
    // a few minutes of speech, small enough that chunks spread over workers, resume
    // cheaply from the chunk cache and keep one chunk's samples a few MB.
    maxChunkBytes: 4096,
    canClone: false,
    batched: false,
    languages: async () => table.languages,
    voices: async () => installed.map((v) => v.identifier),
    async synthesize(batch: SynthesisRequest[]): Promise<SynthesisOutput[]> {
      const out: SynthesisOutput[] = [];
      for (const req of batch) {
        if (req.refAudio || req.refText) throw new SpeechInputError('the espeak backend cannot clone a voice (ref_audio/ref_text given)');
        const voice = req.voice ?? opts.voice ?? voiceForLanguage(table, req.language);
        const syn = await proc.synth(voice, req.text);
        const samples = new Float32Array(syn.pcm.length);
        for (let i = 0; i < samples.length; i++) samples[i] = syn.pcm[i]! / 32768;
        const { words, phonemes } = wordTimingsFromEvents(req.text, syn);
        splitMergedWords(words, phonemes);
        out.push({ samples, sampleRate: syn.sampleRate, words, phonemes });
      }
      return out;
    },
    close: () => proc.close(),
  };
}
