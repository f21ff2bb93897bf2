// Which pipelines exist, what each accepts and makes. Creation-time checks live here so a
// job this install cannot run is refused at POST /api/jobs with a reason, never queued to fail.
import type { PipelineType, UploadRecord } from '../jobs/types.ts';
import type { Pipeline } from './types.ts';

/** Output formats per pipeline; the first is the default. */
export const PIPELINE_OUTPUTS: Record<PipelineType, readonly string[]> = {
  audio: ['mp3', 'm4b'],
  highlight: ['mp4', 'reader', 'epub'],
  lipsync: ['reader', 'mp4'],
};

const DOCUMENT_TYPES: Record<PipelineType, readonly string[]> = {
  audio: ['text/plain', 'text/markdown', 'application/pdf', 'application/epub+zip'],
  highlight: [],
  lipsync: [],
};

const loaders: Partial<Record<PipelineType, () => Promise<Pipeline>>> = {
  audio: async () => (await import('./audio.ts')).audioPipeline,
};

export function pipelineAccepts(type: PipelineType, doc: UploadRecord, format: string | undefined): true | string {
  if (!loaders[type]) return `the ${type} pipeline is not available in this version of Lectern (available: ${availablePipelines().join(', ')})`;
  const base = doc.content_type.split(';')[0]!.trim();
  if (!DOCUMENT_TYPES[type].includes(base)) {
    return `the ${type} pipeline reads ${DOCUMENT_TYPES[type].join(' and ')} documents in this version; upload ${doc.id} is ${base}`;
  }
  if (format !== undefined && !PIPELINE_OUTPUTS[type].includes(format)) {
    return `options.format "${format}" is not an output of the ${type} pipeline (one of: ${PIPELINE_OUTPUTS[type].join(', ')})`;
  }
  return true;
}

export function availablePipelines(): PipelineType[] {
  return (Object.keys(loaders) as PipelineType[]).filter((k) => loaders[k]);
}

export async function loadPipeline(type: PipelineType): Promise<Pipeline> {
  const load = loaders[type];
  if (!load) throw new Error(`the ${type} pipeline is not available in this version of Lectern`);
  return load();
}
