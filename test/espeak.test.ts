import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEspeakBackend, EspeakProcess, phonemize } from '../src/speech/tts/espeak.ts';
import { MissingModelError, SpeechInputError, type TtsBackend } from '../src/speech/types.ts';
import { tokenizeWords } from '../src/speech/words.ts';

describe('espeak backend (lectern-espeak helper, real libespeak-ng)', () => {
  let tts: TtsBackend;
  beforeAll(async () => {
    tts = await createEspeakBackend({ modelsDir: 'models', device: 'cpu' });
  });
  afterAll(async () => tts?.close());

  it('describes itself and lists the engine languages as BCP-47', async () => {
    expect(tts.name).toBe('espeak');
    expect(tts.outputFormat).toBe('wav');
    expect(tts.canClone).toBe(false);
    const langs = await tts.languages();
    const codes = langs.map((l) => l.code);
    expect(codes).toContain('en-US');
    expect(codes).toContain('de');
    expect(codes).toContain('en-GB-x-rp');
    expect(langs.length).toBeGreaterThan(50);
    expect(langs.find((l) => l.code === 'en-US')!.name).toMatch(/English/);
  });

  it('gives the same audio for the same request, whatever the helper said before (each synthesis is forked from the state before any)', async () => {
    const text = 'The chance of anything coming from Mars, they said, was a million to one.';
    const used = new EspeakProcess(), fresh = new EspeakProcess();
    try {
      const a = await used.synth('en-us', text, 175);
      await used.synth('en-us', 'And yet they came, across the gulf of space.', 240);
      const b = await used.synth('en-us', text, 175);
      const c = await fresh.synth('en-us', text, 175);
      for (const x of [b, c]) {
        expect(x.pcm.length).toBe(a.pcm.length);
        expect(Buffer.from(x.pcm.buffer, x.pcm.byteOffset, x.pcm.byteLength).equals(Buffer.from(a.pcm.buffer, a.pcm.byteOffset, a.pcm.byteLength))).toBe(true);
        expect(x.marks).toEqual(a.marks);
      }
    } finally {
      await used.close();
      await fresh.close();
    }
  });

  it('gives every source token an engine timing, in order, including numbers and abbreviations', async () => {
    const text = 'Hello wörld, it costs 1,200 U.S. dollars — really. Ask not!';
    const [out] = await tts.synthesize([{ text, language: 'en-US' }]);
    expect(out!.sampleRate).toBe(22050);
    const dur = out!.samples.length / out!.sampleRate;
    expect(dur).toBeGreaterThan(3);
    const words = out!.words!;
    expect(words.map((w) => w.word)).toEqual(tokenizeWords(text).map((t) => t.word));
    let prev = 0;
    for (const w of words) {
      expect(w.start).toBeGreaterThanOrEqual(prev);
      expect(w.end).toBeGreaterThanOrEqual(w.start);
      expect(w.end).toBeLessThanOrEqual(dur + 1e-6);
      prev = w.end;
    }
    const byWord = Object.fromEntries(words.map((w) => [w.word, w]));
    // "1,200" is read as three engine words (one thousand two hundred): the token spans them all
    expect(byWord['1,200']!.end - byWord['1,200']!.start).toBeGreaterThan(byWord['costs']!.end - byWord['costs']!.start);
    // the comma's pause lies between "wörld," and "it"
    expect(byWord['it']!.start - byWord['wörld,']!.end).toBeGreaterThan(0.05);
    // the dash is read as nothing: a zero-length time between its neighbours
    expect(byWord['—']!.end).toBe(byWord['—']!.start);
    // words really carry sound: RMS inside a word is well above the pause after the comma
    const rms = (a: number, b: number) => {
      const s = out!.samples.subarray(Math.round(a * 22050), Math.round(b * 22050));
      return Math.sqrt(s.reduce((acc, x) => acc + x * x, 0) / Math.max(1, s.length));
    };
    expect(rms(byWord['costs']!.start, byWord['costs']!.end)).toBeGreaterThan(5 * rms(byWord['wörld,']!.end + 0.01, byWord['it']!.start - 0.01));
    const ph = out!.phonemes!;
    expect(ph.length).toBeGreaterThan(30);
    expect(ph.map((p) => p.phoneme)).toContain('θ');
  });

  it('synthesizes a batch in order and picks voices by language', async () => {
    const outs = await tts.synthesize([
      { text: 'Guten Tag.', language: 'de' },
      { text: 'Good morning to you all.', language: 'en-GB' },
    ]);
    expect(outs).toHaveLength(2);
    expect(outs[0]!.words!.map((w) => w.word)).toEqual(['Guten', 'Tag.']);
    expect(outs[1]!.words).toHaveLength(5);
    expect(outs[1]!.samples.length).toBeGreaterThan(outs[0]!.samples.length);
  });

  it('rejects an unknown language or voice with a SpeechInputError naming it', async () => {
    await expect(tts.synthesize([{ text: 'x', language: 'zz-QQ' }])).rejects.toThrow(SpeechInputError);
    await expect(tts.synthesize([{ text: 'x', language: 'zz-QQ' }])).rejects.toThrow(/zz-QQ/);
    await expect(tts.synthesize([{ text: 'x', language: 'en', voice: 'no-such-voice' }])).rejects.toThrow(/no-such-voice/);
    // the helper stays usable after a failed request
    const [ok] = await tts.synthesize([{ text: 'still here', language: 'en-US' }]);
    expect(ok!.words).toHaveLength(2);
  });

  it('phonemizes to IPA per sentence with clause punctuation, as piper-phonemize does', async () => {
    const s = await phonemize('Hello world, it costs 1,200 dollars. Another sentence here! Is it?', 'en-US');
    expect(s).toHaveLength(3);
    expect(s[0]).toMatch(/^həlˈoʊ wˈɜːld, ɪt kˈɔsts .*θˈaʊzənd.*\.$/u);
    expect(s[1]!.endsWith('!')).toBe(true);
    expect(s[2]).toBe('ɪz ɪt?');
    const fr = await phonemize('Bonjour le monde.', 'fr');
    expect(fr).toHaveLength(1);
    expect(fr[0]).toMatch(/ʒ/u);
    // a word eSpeak reads by another language's rules comes without its "(en)…(fr)" marks, which are no sounds
    const name = await phonemize('Bonjour monsieur Ogilvy.', 'fr');
    expect(name[0]).toMatch(/ɡɪlvi/u);
    expect(name[0]).not.toMatch(/[()]/u);
  });

  it('says clearly when the helper program is missing', async () => {
    const p = new EspeakProcess('/nonexistent/lectern-espeak');
    await expect(p.voices()).rejects.toThrow(MissingModelError);
    await expect(p.voices()).rejects.toThrow(/build-native\.sh/);
  });
});
