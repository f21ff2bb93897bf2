// Which pipelines exist, what each accepts and makes. Creation-time checks live here so a
// job this install cannot run is refused at POST /api/jobs with a reason, never queued to fail.
import type { OutputFormat, PipelineType } from './options.ts';
import type { Pipeline } from './types.ts';

/** Output formats per pipeline; the first is the default. */
export const PIPELINE_OUTPUTS: Record<PipelineType, readonly OutputFormat[]> = {
  audio: ['mp3', 'm4b'],
  highlight: ['mp4', 'reader', 'epub'],
  lipsync: ['reader', 'mp4'],
  readalong: ['epub', 'mp4', 'reader'],
};

/** Every pipeline reads every document format, through the one document model. */
const DOCUMENT_TYPES: readonly string[] = ['text/plain', 'text/markdown', 'application/pdf', 'application/epub+zip'];

type Loader = () => Promise<Pipeline>;

/** One loader per (pipeline, output format) that this version can make. */
const loaders: Record<PipelineType, Partial<Record<OutputFormat, Loader>>> = {
  audio: {
    mp3: async () => (await import('./audio.ts')).audioPipeline,
    m4b: async () => (await import('./audio.ts')).audioPipeline,
  },
  highlight: {
    mp4: async () => (await import('./highlight.ts')).highlightPipeline,
    reader: async () => (await import('./highlight.ts')).highlightPipeline,
    epub: async () => (await import('./highlight.ts')).highlightPipeline,
  },
  lipsync: {
    reader: async () => (await import('./lipsync.ts')).lipsyncPipeline,
    mp4: async () => (await import('./lipsync.ts')).lipsyncPipeline,
  },
  readalong: {
    epub: async () => (await import('./readalong.ts')).readalongPipeline,
    mp4: async () => (await import('./readalong.ts')).readalongPipeline,
    reader: async () => (await import('./readalong.ts')).readalongPipeline,
  },
};

export function defaultFormat(type: PipelineType): OutputFormat {
  return PIPELINE_OUTPUTS[type][0]!;
}

export function isOutputOf(type: PipelineType, format: string): format is OutputFormat {
  return (PIPELINE_OUTPUTS[type] as readonly string[]).includes(format);
}

/** What pipelineAccepts reads of an upload. */
export interface AcceptedUpload {
  id: string;
  content_type: string;
}

export function pipelineAccepts(type: PipelineType, doc: AcceptedUpload, format: string | undefined): true | string {
  const fmt = format ?? defaultFormat(type);
  if (!isOutputOf(type, fmt)) {
    return `options.format "${fmt}" is not an output of the ${type} pipeline (one of: ${PIPELINE_OUTPUTS[type].join(', ')})`;
  }
  if (!loaders[type][fmt]) {
    const made = availableOutputs(type);
    return made.length
      ? `the ${type} pipeline cannot make ${fmt} in this version of Lectern (it makes: ${made.join(', ')})`
      : `the ${type} pipeline is not available in this version of Lectern (available: ${availablePipelines().join(', ')})`;
  }
  const base = doc.content_type.split(';')[0]!.trim();
  if (!DOCUMENT_TYPES.includes(base)) {
    return `the ${type} pipeline reads ${DOCUMENT_TYPES.join(', ')} documents; upload ${doc.id} is ${base}`;
  }
  return true;
}

export function availableOutputs(type: PipelineType): OutputFormat[] {
  return PIPELINE_OUTPUTS[type].filter((f) => loaders[type][f]);
}

export function availablePipelines(): PipelineType[] {
  return (Object.keys(loaders) as PipelineType[]).filter((k) => availableOutputs(k).length > 0);
}

export async function loadPipeline(type: PipelineType, format: OutputFormat = defaultFormat(type)): Promise<Pipeline> {
  const load = loaders[type][format];
  if (!load) throw new Error(`the ${type} pipeline cannot make ${format} in this version of Lectern`);
  return load();
}
