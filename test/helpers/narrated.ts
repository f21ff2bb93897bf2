// A real narration of a test document, made the way every document pipeline makes it:
// narrateDocument (eSpeak NG, chunk cache) → renderAudio → narration.mp3 + timeline.json.
// Never hand-written timings: the EPUB tests and the export tests build from these files.
import fs from 'node:fs';
import path from 'node:path';
import { atSpeed, narrateDocument, roundTime, type DocumentNarration } from '../../src/pipelines/narrate-document.ts';
import { renderAudio, toWebVtt } from '../../src/pipelines/audio.ts';
import { fillOptions } from '../../src/pipelines/options.ts';
import type { PipelineContext } from '../../src/pipelines/types.ts';
import { createLogger } from '../../src/log.ts';
import { createLocalSpeech } from '../../src/speech/local.ts';

export const DOCS = path.join(import.meta.dirname, '..', 'fixtures', 'documents');

export interface NarratedFiles extends DocumentNarration {
  audioPath: string;
  timelinePath: string;
}

/** Narrates `file` (only `pages`, 0-based, when given) into outDir; the chunk cache lives in cacheDir. */
export async function narrateForTest(file: string, contentType: string, outDir: string, cacheDir: string, pages?: number[]): Promise<NarratedFiles> {
  fs.mkdirSync(outDir, { recursive: true });
  const speech = await createLocalSpeech('espeak', { modelsDir: path.join(import.meta.dirname, '..', '..', 'models'), device: 'cpu' });
  try {
    const ctx: PipelineContext = {
      input: {
        jobId: 'test',
        document: { path: file, originalName: path.basename(file), contentType },
        language: 'en-US',
        voiceId: null,
        options: fillOptions({ format: 'mp3', speed: 1 }),
        title: null,
      },
      outputDir: outDir,
      cacheDir,
      speech,
      log: createLogger('warn', 'test'),
      progress: () => undefined,
      cancelled: async () => false,
      signal: new AbortController().signal,
    };
    const n = await narrateDocument(ctx, pages ? { pages } : {});
    const audioPath = path.join(outDir, 'narration.mp3');
    const words = atSpeed(n.timeline, 1);
    const duration = roundTime(n.narration.length / n.narration.sampleRate);
    await renderAudio(ctx, n.narration, 1, audioPath, 'mp3', { title: n.doc.title, author: n.doc.author, chapters: [] });
    const timelinePath = path.join(outDir, 'timeline.json');
    const pagesDone = [...new Set(words.map((w) => w.page))];
    fs.writeFileSync(timelinePath, JSON.stringify({ title: n.doc.title, author: n.doc.author, duration, pages: pagesDone.length, chapters: [], words }));
    fs.writeFileSync(path.join(outDir, 'narration.vtt'), toWebVtt(words));
    return { ...n, audioPath, timelinePath };
  } finally {
    await speech.close();
  }
}
