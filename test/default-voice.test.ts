// The default voice through the real service (HTTP, worker, Piper model, ffmpeg), with
// LECTERN_TTS_BACKEND unset (= auto): an English job with no voice_id is narrated by the
// installed Piper voice with its own word timings, a French one (no Piper voice for French
// here) by eSpeak NG, and /api/voices marks each language's default.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffprobe } from '../src/media/ffmpeg.ts';
import type { RunningService } from '../src/service.ts';
import { createLocalSpeech } from '../src/speech/local.ts';
import { listPiperVoices, readVoiceConfig, voiceLanguage } from '../src/speech/tts/piper/voices.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { localVoice, localVoiceResolver } from '../src/voices/resolve.ts';
import { json, testEnv, upload, waitFor, type TestEnv } from './helpers/service.ts';

const MODELS = path.join(import.meta.dirname, '..', 'models');
const hasJoe = fs.existsSync(path.join(MODELS, 'voices', 'piper', 'en_US-joe-medium.onnx'));
const piperLanguages = listPiperVoices(MODELS).map((v) => voiceLanguage(readVoiceConfig(v.json))?.code.split('-')[0]);

const EN = '# The Eve of the War\n\nNo one would have believed in the last years of the nineteenth century that this world was being watched keenly and closely by intelligences greater than man\'s.\n\nYet across the gulf of space, minds regarded this earth with envious eyes.\n';
const FR = '# Le port\n\nLe navire quitta le port de bonne heure, sous un ciel gris.\n';

describe.runIf(hasJoe)('default voice (LECTERN_TTS_BACKEND unset: auto)', () => {
  let t: TestEnv;
  let svc: RunningService;
  let url: string;

  beforeAll(async () => {
    expect(piperLanguages).not.toContain('fr'); // the French case below is the "no Piper voice" one
    t = testEnv('embedded', 'default-voice');
    svc = await t.start({ LECTERN_TTS_BACKEND: '' });
    url = svc.url;
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    await t?.cleanup();
  }, 60_000);

  const run = async (body: Record<string, unknown>) => {
    const created = await json(url, 'POST', '/api/jobs', body);
    expect(created.status).toBe(201);
    return waitFor(async () => {
      const j = await json(url, 'GET', `/api/jobs/${created.body.id}`);
      return ['completed', 'failed', 'stopped'].includes(j.body.status) ? j.body : null;
    }, 150_000, `job ${created.body.id}`);
  };
  const timelineWords = (id: string) => (JSON.parse(fs.readFileSync(path.join(t.dataDir, 'outputs', id, 'timeline.json'), 'utf8')) as { words: Array<{ word: string; start: number; end: number }> }).words;

  it('narrates an English job with no voice_id in the Piper voice, its timeline the source words', async () => {
    const doc = await upload(url, 'war.md', EN, 'text/markdown');
    const job = await run({ pipeline_type: 'audio', uploaded_file_id: doc.body.id, language: 'en-US' });
    expect(job.error).toBeNull();
    expect(job.status).toBe('completed');
    expect(job.config_json.result.engine).toBe('piper');
    const words = timelineWords(job.id);
    const source = ['The Eve of the War', EN.split('\n\n')[1]!, EN.split('\n\n')[2]!].flatMap((p) => tokenizeWords(p).map((w) => w.word));
    expect(words.map((w) => w.word)).toEqual(source);
    const mp3 = path.join(t.dataDir, 'outputs', job.id, 'narration.mp3');
    const duration = (await ffprobe(mp3)).durationSeconds;
    expect(Math.abs(duration - job.config_json.result.duration_seconds)).toBeLessThan(0.1);
    for (let i = 0; i < words.length; i++) {
      expect(words[i]!.end).toBeGreaterThan(words[i]!.start);
      if (i > 0) expect(words[i]!.start).toBeGreaterThanOrEqual(words[i - 1]!.end - 1e-6);
    }
    expect(words.at(-1)!.end).toBeLessThanOrEqual(duration + 0.05);
    // 40 words of read speech: ~0.3 s a word; a run of eSpeak would be quicker, silence much longer.
    expect(duration / words.length).toBeGreaterThan(0.2);
    expect(duration / words.length).toBeLessThan(0.6);
  }, 180_000);

  it('narrates a French job (no Piper voice for French installed) with eSpeak NG', async () => {
    const doc = await upload(url, 'port.md', FR, 'text/markdown');
    const job = await run({ pipeline_type: 'audio', uploaded_file_id: doc.body.id, language: 'fr-FR' });
    expect(job.status).toBe('completed');
    expect(job.config_json.result.engine).toBe('espeak');
    expect(timelineWords(job.id).map((w) => w.word)).toEqual(['Le', 'port', ...tokenizeWords(FR.split('\n\n')[1]!).map((w) => w.word)]);
  }, 120_000);

  it('a bundled eSpeak voice still narrates with eSpeak NG under auto', async () => {
    const doc = await upload(url, 'short.md', 'The ship left the harbour early.\n', 'text/markdown');
    const job = await run({ pipeline_type: 'audio', uploaded_file_id: doc.body.id, language: 'en-US', voice_id: 'espeak-en-us' });
    expect(job.status).toBe('completed');
    expect(job.config_json.result.engine).toBe('espeak');
  }, 120_000);

  it('GET /api/voices marks the default voice of each language', async () => {
    const r = await json(url, 'GET', '/api/voices');
    expect(r.status).toBe(200);
    const byId = Object.fromEntries((r.body as Array<{ id: string; default: boolean }>).map((v) => [v.id, v]));
    expect(byId['piper-en-us-joe']!.default).toBe(true);
    expect(byId['espeak-en-us']!.default).toBe(false);
    expect(byId['espeak-fr-fr']!.default).toBe(true);
    expect(byId['espeak-de']!.default).toBe(true);
    expect(byId['librivox-austen-reader-a']!.default).toBe(false);
    // at most one per language
    const perLanguage = new Map<string, number>();
    for (const v of r.body as Array<{ language: string; default: boolean }>) if (v.default) perLanguage.set(v.language, (perLanguage.get(v.language) ?? 0) + 1);
    for (const n of perLanguage.values()) expect(n).toBe(1);
  });

  it('with the eSpeak backend pinned, the eSpeak voices are the defaults', async () => {
    const t2 = testEnv('embedded', 'default-voice-espeak');
    const s2 = await t2.start({ LECTERN_TTS_BACKEND: 'espeak' });
    try {
      const r = await json(s2.url, 'GET', '/api/voices');
      const byId = Object.fromEntries((r.body as Array<{ id: string; default: boolean }>).map((v) => [v.id, v]));
      expect(byId['espeak-en-us']!.default).toBe(true);
      expect(byId['piper-en-us-joe']!.default).toBe(false);
    } finally {
      await s2.close();
      await t2.cleanup();
    }
  }, 60_000);
});

describe.runIf(hasJoe)('auto local speech: engine per voice', () => {
  it('resolves no voice, bundled voices, Piper model ids and eSpeak voices to their engines', async () => {
    expect(await localVoice(null, 'en-US', MODELS)).toEqual({ engine: 'piper', voice: 'en_US-joe-medium' });
    expect(await localVoice(null, 'en-GB', MODELS)).toEqual({ engine: 'piper', voice: 'en_US-joe-medium' }); // same language, other region
    expect((await localVoice(null, 'fr-FR', MODELS)).engine).toBe('espeak');
    expect(await localVoice('piper-en-us-joe', 'en-US', MODELS)).toEqual({ engine: 'piper', voice: 'en_US-joe-medium' });
    expect(await localVoice('en_US-joe-medium#0', 'en-US', MODELS)).toEqual({ engine: 'piper', voice: 'en_US-joe-medium#0' });
    expect(await localVoice('en-us', 'en-US', MODELS)).toEqual({ engine: 'espeak', voice: 'en-us' });
    expect((await localVoice('espeak-en-gb', 'en-GB', MODELS)).engine).toBe('espeak');
    await expect(localVoice('librivox-austen-reader-a', 'en-US', MODELS)).rejects.toThrow(/local speech cannot clone/);
  });

  it('a bound speech reports its engine; synthesize() picks the engine per request; an unknown aligner is refused', async () => {
    const speech = await createLocalSpeech('auto', { modelsDir: MODELS, device: 'cpu', resolveVoice: localVoiceResolver(MODELS) });
    try {
      expect(speech.engine).toBe('auto');
      const en = await speech.forVoice!(null, 'en-US');
      expect(en).toMatchObject({ voiceId: 'en_US-joe-medium' });
      expect(en.speech.engine).toBe('piper');
      const fr = await speech.forVoice!(null, 'fr-FR');
      expect(fr.speech.engine).toBe('espeak');
      const out = await speech.synthesize({ text: 'Bonjour tout le monde.', language: 'fr-FR' });
      expect(out.words!.map((w) => w.word)).toEqual(['Bonjour', 'tout', 'le', 'monde.']);
    } finally {
      await speech.close();
    }
    await expect(createLocalSpeech('auto', { modelsDir: MODELS, device: 'cpu', aligner: 'nope', resolveVoice: localVoiceResolver(MODELS) })).rejects.toThrow(/unknown aligner "nope"/);
  });

  it('aligns a chunk whose Piper phoneme words cannot be matched (LECTERN_ALIGNER)', async () => {
    // A text the phonemizer reads as far more words than it has tokens: the mapping is refused and the hmm aligner times it.
    const text = 'Call 0123456789 then.';
    const { createPiperBackend } = await import('../src/speech/tts/piper.ts');
    const [raw] = await (await createPiperBackend({ modelsDir: MODELS, device: 'cpu' })).synthesize([{ text, language: 'en-US' }]);
    expect(raw!.words).toBeUndefined();
    const speech = await createLocalSpeech('piper', { modelsDir: MODELS, device: 'cpu', aligner: 'hmm' });
    try {
      const out = await speech.synthesize({ text, language: 'en-US' });
      expect(out.words!.map((w) => w.word)).toEqual(['Call', '0123456789', 'then.']);
      const seconds = out.samples.length / out.sampleRate;
      for (const w of out.words!) expect(w.end).toBeLessThanOrEqual(seconds + 1e-6);
    } finally {
      await speech.close();
    }
  }, 120_000);
});
