// New job: the document, the pipeline and its options, the voice (a bundled one with its
// sample and a preview of the document, or a reference clip to clone), then create.
// The page holds the form's state; the pipeline and voice steps are components of
// new-job/, and jobRequest turns what the form holds into the request.
import { useEffect, useRef, useState, type FormEvent, type RefObject } from 'react';
import { api, ApiError } from '../api.ts';
import { DropZone } from '../components/DropZone.tsx';
import { ErrorBox } from '../components/ui.tsx';
import { navigate } from '../router.tsx';
import { PIPELINES, type CloningStatus, type JobCreateRequest, type Language, type PipelineType, type Upload, type Voice } from '../types.ts';
import { DEFAULT_OPTIONS, PipelineFieldset, usePresenterVideo, type JobOptions, type SetOption } from './new-job/PipelineFieldset.tsx';
import { useDocumentLanguage } from './new-job/language.ts';
import { usePlayer, useVoiceChoice, useVoicePreview, voiceFields, type VoiceSelection } from './new-job/voice.ts';
import { VoiceFieldset } from './new-job/VoiceFieldset.tsx';

export { defaultVoiceFor } from './new-job/voice.ts';

const DOC_EXT = ['.pdf', '.epub', '.md', '.markdown', '.txt'];

/** What the form offers from the service: voices, whether cloning works (and why not), languages. */
function useServiceChoices() {
  const [voices, setVoices] = useState<Voice[] | null>(null);
  const [cloning, setCloning] = useState<CloningStatus | null>(null);
  const [languages, setLanguages] = useState<Language[]>([]);
  const [loadError, setLoadError] = useState<unknown>(null);
  useEffect(() => {
    api.voices().then(setVoices, setLoadError);
    // Offered only when a healthy GPU server declares voice cloning; otherwise shown disabled with why.
    api.cloning().then(setCloning, (err) => setCloning({ available: false, detail: err instanceof Error ? err.message : String(err) }));
    api.languages().then(setLanguages, setLoadError);
  }, []);
  return { voices, cloning, languages, loadError };
}

/** Everything a job request is made of, as the form holds it. */
export interface JobForm {
  doc: Upload;
  pipeline: PipelineType;
  language: string;
  options: JobOptions;
  voice: VoiceSelection;
  refVideo: Upload | null;
  recording: Upload[];
}

/** The request POST /api/jobs takes for the form: only the options and voice fields the pipeline uses. */
export function jobRequest(f: JobForm): JobCreateRequest {
  const { format, speed, width, height, fps } = f.options;
  const readalong = f.pipeline === 'readalong';
  const preset = f.options.preset.trim();
  const title = f.options.title.trim();
  // A read-along job plays the recording as it is: no voice, no speed.
  const options: NonNullable<JobCreateRequest['options']> = readalong ? { format } : { format, speed };
  if (f.pipeline !== 'audio') Object.assign(options, { width, height, fps });
  if (f.pipeline === 'lipsync' && preset) options.lipsync_preset = preset;
  const body: JobCreateRequest = { pipeline_type: f.pipeline, uploaded_file_id: f.doc.id, language: f.language, options, ...(readalong ? { audio_file_ids: f.recording.map((u) => u.id) } : voiceFields(f.voice)) };
  if (title) body.title = title;
  if (f.pipeline === 'lipsync' && f.refVideo) body.ref_video_file_id = f.refVideo.id;
  return body;
}

/** The upload the job still needs before it can be created, in the words the page shows; null when none. */
function missingUpload(f: Omit<JobForm, 'doc'> & { doc: Upload | null }): string | null {
  if (!f.doc) return 'Upload a document first.';
  if (f.pipeline === 'lipsync' && !f.refVideo) return 'Upload a presenter video first.';
  if (f.pipeline === 'readalong' && f.recording.length === 0) return 'Upload your recording first.';
  return null;
}

/** Submits the form: to the new job's page, or the error shown (and focused) where the service refused it. */
function useCreateJob() {
  const [error, setError] = useState<unknown>(null);
  const [submitting, setSubmitting] = useState(false);
  const errorRef = useRef<HTMLDivElement>(null);
  const create = async (body: JobCreateRequest) => {
    setSubmitting(true);
    setError(null);
    try {
      const job = await api.createJob(body);
      navigate(`/jobs/${job.id}`);
    } catch (err) {
      setError(err);
      setSubmitting(false);
      setTimeout(() => errorRef.current?.focus(), 0);
    }
  };
  return { error, submitting, errorRef, create };
}

export function NewJob() {
  const [doc, setDoc] = useState<Upload | null>(null);
  const [pipeline, setPipeline] = useState<PipelineType>('audio');
  const [options, setOptions] = useState<JobOptions>(DEFAULT_OPTIONS);
  const [voiceMode, setVoiceMode] = useState<VoiceSelection['mode']>('library');
  const [refAudio, setRefAudio] = useState<Upload | null>(null);
  const [refText, setRefText] = useState('');
  const [recording, setRecording] = useState<Upload[]>([]);
  const presenter = usePresenterVideo();
  const service = useServiceChoices();
  const lang = useDocumentLanguage(doc, service.languages);
  const language = lang.language;
  const choice = useVoiceChoice(service.voices, language);
  const player = usePlayer();
  const preview = useVoicePreview(player);
  const creating = useCreateJob();

  const setOption: SetOption = (key, value) => setOptions((o) => ({ ...o, [key]: value }));
  useEffect(() => setOption('format', PIPELINES[pipeline].formats[0]!), [pipeline]);
  const voice: VoiceSelection = { mode: voiceMode, voiceId: choice.voiceId, refAudio, refText };
  const form = { doc, pipeline, language, options, voice, refVideo: presenter.video, recording };
  const missing = missingUpload(form);
  const needsClip = pipeline !== 'readalong' && voiceMode === 'clone' && !refAudio;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (doc) void creating.create(jobRequest({ ...form, doc }));
  };

  return (
    <form onSubmit={submit} aria-labelledby="new-heading" className="new-job">
      <h1 id="new-heading">New job</h1>
      <ErrorBox error={service.loadError} title="Could not load the voices" />

      <fieldset>
        <legend>1. Document</legend>
        <DropZone label="Document to narrate" extensions={DOC_EXT} typesInWords="PDF, EPUB, Markdown or plain text" kind="document" value={doc} onChange={setDoc} />
      </fieldset>

      <PipelineFieldset
        pipeline={pipeline}
        setPipeline={setPipeline}
        options={options}
        setOption={setOption}
        language={language}
        setLanguage={lang.pick}
        declaredLanguage={lang.declared}
        languages={service.languages}
        doc={doc}
        presenter={presenter}
        recording={recording}
        setRecording={setRecording}
      />

      {pipeline !== 'readalong' ? (
        <VoiceFieldset
          selection={voice}
          setMode={setVoiceMode}
          setRefAudio={setRefAudio}
          setRefText={setRefText}
          choice={choice}
          voices={service.voices}
          loadError={service.loadError}
          cloning={service.cloning}
          language={language}
          doc={doc}
          player={player}
          preview={preview}
          onPreview={() => void preview.run({ language, uploaded_file_id: doc?.id, ...voiceFields(voice) })}
        />
      ) : null}

      <SubmitBar errorRef={creating.errorRef} error={creating.error} submitting={creating.submitting} disabled={missing !== null || needsClip} missing={missing} />
    </form>
  );
}

function SubmitBar({ errorRef, error, submitting, disabled, missing }: { errorRef: RefObject<HTMLDivElement | null>; error: unknown; submitting: boolean; disabled: boolean; missing: string | null }) {
  return (
    <>
      <div ref={errorRef} tabIndex={-1}>
        <ErrorBox error={error} title={error instanceof ApiError && error.status === 422 ? 'The service refused this job' : 'Could not create the job'} />
      </div>
      <div className="actions">
        <button type="submit" className="primary" disabled={disabled || submitting}>
          {submitting ? 'Creating…' : 'Create job'}
        </button>
        {missing ? <span className="muted small">{missing}</span> : null}
      </div>
    </>
  );
}
