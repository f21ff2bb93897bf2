// `lectern run`: the same pipeline code as the worker, on a local file, without the API.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.ts';
import { DEFAULT_LANGUAGE, declaredLanguage } from '../documents/model.ts';
import { sniff, SNIFF_BYTES } from '../media/sniff.ts';
import { createLocalSpeech } from '../speech/local.ts';
import { scratchName } from '../storage.ts';
import { localVoiceResolver, speechForVoice } from '../voices/resolve.ts';
import { LocalStorage } from '../storage/local.ts';
import { fillOptions, PIPELINE_TYPES, type PipelineType } from './options.ts';
import type { RecordingFile } from './types.ts';
import { probeRecordingFile } from '../speech/align/long/audio.ts';
import { RECORDING_LANGUAGES, recordingLanguageSupported } from '../speech/align/long/languages.ts';
import { createAligner, defaultAlignerThreads, type ClosableAligner } from '../speech/align/aligners.ts';
import { defaultFormat, isOutputOf, loadPipeline, pipelineAccepts } from './catalogue.ts';

export interface RunFileOptions {
  /** The service config's fields of these names. */
  config: { dataDir: string; modelsDir: string; tts: { backend: string; voice: string | null; aligner: string } };
  log: Logger;
  pipeline: string;
  file: string;
  /** Where the main output goes; default: beside the input, named after it. */
  out: string | null;
  /** null: the language the document declares (EPUB, PDF), else en-US. */
  language: string | null;
  voice: string | null;
  speed: number;
  format?: string;
  /** readalong: the recording's audio files (any order; the pipeline finds it). */
  audio?: string[];
  /** Highlight video size and frame rate (defaults 1280×720, 24 fps). */
  video?: { width?: number; height?: number; fps?: number };
  signal: AbortSignal;
  onProgress?: (phase: string, current: number, total: number) => void;
}

export interface RunFileOutcome {
  files: string[];
  duration: number;
  engine: string;
  voice: string | null;
  /** readalong: how much of the text the recording was found to read (the narration is the recording, not the engine). */
  recording: { wordsTimed: number; words: number } | null;
}

export async function runPipelineOnFile(o: RunFileOptions): Promise<RunFileOutcome> {
  if (!(PIPELINE_TYPES as readonly string[]).includes(o.pipeline)) throw new Error(`unknown pipeline "${o.pipeline}" (one of ${PIPELINE_TYPES.join(', ')})`);
  const type = o.pipeline as PipelineType;
  if (!Number.isFinite(o.speed) || o.speed < 0.5 || o.speed > 2) throw new Error('--speed must be between 0.5 and 2');
  const fh = await fs.promises.open(o.file, 'r').catch(() => {
    throw new Error(`cannot read ${o.file}`);
  });
  const head = Buffer.alloc(SNIFF_BYTES);
  const { bytesRead } = await fh.read(head, 0, SNIFF_BYTES, 0);
  await fh.close();
  const kind = sniff(head.subarray(0, bytesRead), o.file);
  if (!kind) throw new Error(`${o.file}: unsupported file type`);
  const accepted = pipelineAccepts(type, { id: 'file', content_type: kind.contentType }, o.format);
  if (accepted !== true) throw new Error(accepted);
  const format = o.format ?? defaultFormat(type);
  if (!isOutputOf(type, format)) throw new Error(`--format ${format} is not an output of the ${type} pipeline`); // pipelineAccepts said so already

  const language = o.language ?? (await declaredLanguage(o.file, kind.contentType).catch(() => null)) ?? DEFAULT_LANGUAGE;
  const recording: RecordingFile[] = [];
  if (type === 'readalong') {
    if (!o.audio?.length) throw new Error('lectern run readalong needs the recording: --audio FILE (once per file, any order)');
    if (!(await recordingLanguageSupported(language))) throw new Error(`--language ${language}${o.language === null ? ' (the document declares it; pass --language to override)' : ''}: read-along from a recording supports ${RECORDING_LANGUAGES}; eSpeak NG has no voice for it`);
    if (o.speed !== 1) throw new Error('--speed: a read-along plays the recording as it is (speed 1)');
    for (const [k, file] of o.audio.entries()) {
      await probeRecordingFile(file, k);
      recording.push({ path: file, name: path.basename(file), sha256: await fileSha256(file) });
    }
  } else if (o.audio?.length) throw new Error(`--audio: only the readalong pipeline is narrated by a recording`);

  // `lectern run` works on local files: the data dir holds only its scratch folder and chunk cache.
  const storage = new LocalStorage(o.config.dataDir);
  await storage.init();
  const workDir = path.join(storage.tmpDir, scratchName('run'));
  await fs.promises.mkdir(workDir, { recursive: true });
  const speech = await createLocalSpeech(o.config.tts.backend, { modelsDir: o.config.modelsDir, device: 'cpu', voice: o.config.tts.voice, aligner: o.config.tts.aligner, resolveVoice: localVoiceResolver(o.config.modelsDir) });
  const made: { aligner?: Promise<ClosableAligner> } = {};
  try {
    // The engine and voice this file is narrated with (auto: --voice's engine, or the language's default voice).
    const bound = await speechForVoice(speech, o.voice, language);
    const pipeline = await loadPipeline(type, format);
    const result = await pipeline.run({
      input: {
        jobId: 'cli',
        document: { path: o.file, originalName: path.basename(o.file), contentType: kind.contentType },
        language,
        voiceId: bound.voiceId,
        options: fillOptions({ format, speed: o.speed, ...o.video }),
        title: null,
        recording,
      },
      outputDir: workDir,
      cacheDir: storage.cacheDir,
      speech: bound.speech,
      log: o.log,
      progress: (phase, current, total) => o.onProgress?.(phase, current, total),
      cancelled: async () => false,
      signal: o.signal,
      aligner: () => (made.aligner ??= createAligner('auto', { modelsDir: o.config.modelsDir, device: 'cpu', threads: defaultAlignerThreads() })),
    });
    const stem = path.join(path.dirname(o.file), path.parse(o.file).name);
    const main = o.out ?? `${stem}${path.extname(result.output)}`;
    const files: string[] = [];
    for (const f of result.files) {
      // Companions are named after the main output: notes.mp3 → notes.json, notes.vtt.
      const dest = f === result.output ? main : `${main.slice(0, main.length - path.extname(main).length)}${path.extname(f)}`;
      await fs.promises.copyFile(path.join(workDir, f), dest);
      files.push(dest);
    }
    const found = o.pipeline === 'readalong' ? { wordsTimed: Number(result.words_timed ?? 0), words: Number(result.words ?? 0) } : null;
    return { files, duration: result.duration_seconds ?? 0, engine: bound.speech.engine, voice: bound.voiceId, recording: found };
  } finally {
    if (made.aligner) await (await made.aligner.catch(() => null))?.close();
    await speech.close();
    await fs.promises.rm(workDir, { recursive: true, force: true });
  }
}

async function fileSha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
