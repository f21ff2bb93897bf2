// New job: the document, the pipeline and its options, the voice (a bundled one with its
// sample and a preview of the document, or a reference clip to clone), then create.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { api, ApiError } from '../api.ts';
import { DropZone } from '../components/DropZone.tsx';
import { RecordingPicker } from '../components/RecordingPicker.tsx';
import { ErrorBox } from '../components/ui.tsx';
import { navigate } from '../router.tsx';
import { FORMAT_LABELS, PIPELINES, type CloningStatus, type JobCreateRequest, type Language, type OutputFormat, type PipelineType, type Upload, type Voice } from '../types.ts';

const DOC_EXT = ['.pdf', '.epub', '.md', '.markdown', '.txt'];
const AUDIO_EXT = ['.wav', '.mp3', '.m4a', '.flac', '.ogg'];
const VIDEO_EXT = ['.mp4', '.mov', '.webm'];

/** Plays one clip at a time: a blob: URL fetched with the token, or the store's presigned link. */
function usePlayer() {
  const audio = useRef<HTMLAudioElement | null>(null);
  const [playing, setPlaying] = useState<string | null>(null);
  const stop = () => {
    audio.current?.pause();
    if (audio.current?.src) URL.revokeObjectURL(audio.current.src);
    audio.current = null;
    setPlaying(null);
  };
  useEffect(() => stop, []);
  const play = async (key: string, url: string) => {
    stop();
    const a = new Audio(url);
    audio.current = a;
    setPlaying(key);
    a.onended = () => setPlaying(null);
    await a.play();
  };
  return { playing, play, stop };
}

/**
 * The voice the service narrates `language` with when a job names none: the voice marked
 * default for that exact language, else for the same primary language (en-GB → en-US),
 * as the service chooses it.
 */
export function defaultVoiceFor(voices: Voice[], language: string): Voice | undefined {
  const lang = language.toLowerCase();
  const base = lang.split('-')[0];
  const marked = voices.filter((v) => v.default && v.available);
  return marked.find((v) => v.language.toLowerCase() === lang) ?? marked.find((v) => v.language.toLowerCase().split('-')[0] === base);
}

export function NewJob() {
  const [doc, setDoc] = useState<Upload | null>(null);
  const [pipeline, setPipeline] = useState<PipelineType>('audio');
  const [format, setFormat] = useState<OutputFormat>('mp3');
  const [speed, setSpeed] = useState(1);
  const [title, setTitle] = useState('');
  const [language, setLanguage] = useState('en-US');
  const [width, setWidth] = useState(1280);
  const [height, setHeight] = useState(720);
  const [fps, setFps] = useState(25);
  const [preset, setPreset] = useState('');
  const [voiceMode, setVoiceMode] = useState<'library' | 'clone'>('library');
  const [voiceId, setVoiceId] = useState('');
  /** Once the user picks a voice, a language change no longer moves the selection. */
  const [voicePicked, setVoicePicked] = useState(false);
  const [refAudio, setRefAudio] = useState<Upload | null>(null);
  const [refText, setRefText] = useState('');
  const [refVideo, setRefVideo] = useState<Upload | null>(null);
  const [refVideoUrl, setRefVideoUrl] = useState<string | null>(null);
  const [recording, setRecording] = useState<Upload[]>([]);
  const [voices, setVoices] = useState<Voice[] | null>(null);
  const [cloning, setCloning] = useState<CloningStatus | null>(null);
  const [languages, setLanguages] = useState<Language[]>([]);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [submitError, setSubmitError] = useState<unknown>(null);
  const [submitting, setSubmitting] = useState(false);
  const [previewText, setPreviewText] = useState<string | null>(null);
  const [previewError, setPreviewError] = useState<unknown>(null);
  const [previewBusy, setPreviewBusy] = useState(false);
  const player = usePlayer();
  const errorRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    api.voices().then(setVoices, setLoadError);
    // Offered only when a healthy GPU server declares voice cloning; otherwise shown disabled with why.
    api.cloning().then(setCloning, (err) => setCloning({ available: false, detail: err instanceof Error ? err.message : String(err) }));
    api.languages().then(setLanguages, setLoadError);
  }, []);
  useEffect(() => setFormat(PIPELINES[pipeline].formats[0]!), [pipeline]);
  // Preselect the language's default voice (the service marks it: the neural voice where one is installed).
  useEffect(() => {
    if (!voicePicked && voices) setVoiceId(defaultVoiceFor(voices, language)?.id ?? '');
  }, [voices, language, voicePicked]);
  const pickVoice = (id: string) => {
    setVoicePicked(true);
    setVoiceId(id);
  };

  const langBase = language.split('-')[0]!.toLowerCase();
  const [allVoices, setAllVoices] = useState(false);
  const sortedVoices = [...(voices ?? [])].sort((a, b) => Number(b.language.toLowerCase().startsWith(langBase)) - Number(a.language.toLowerCase().startsWith(langBase)) || Number(b.available) - Number(a.available) || a.name.localeCompare(b.name));

  const voiceFields = () =>
    voiceMode === 'clone' ? { ref_audio_file_id: refAudio?.id, ref_text: refText.trim() || undefined } : { voice_id: voiceId || undefined };

  const preview = async () => {
    setPreviewBusy(true);
    setPreviewError(null);
    setPreviewText(null);
    try {
      const { url, res } = await api.preview({ language, uploaded_file_id: doc?.id, ...voiceFields() });
      const spoken = res.headers.get('x-preview-text');
      setPreviewText(spoken ? decodeURIComponent(spoken) : null);
      await player.play('preview', url);
    } catch (err) {
      setPreviewError(err);
    } finally {
      setPreviewBusy(false);
    }
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!doc) return;
    setSubmitting(true);
    setSubmitError(null);
    const readalong = pipeline === 'readalong';
    // A read-along job plays the recording as it is: no voice, no speed.
    const options: NonNullable<JobCreateRequest['options']> = readalong ? { format } : { format, speed };
    if (pipeline !== 'audio') Object.assign(options, { width, height, fps });
    if (pipeline === 'lipsync' && preset.trim()) options.lipsync_preset = preset.trim();
    const body: JobCreateRequest = { pipeline_type: pipeline, uploaded_file_id: doc.id, language, options, ...(readalong ? { audio_file_ids: recording.map((u) => u.id) } : voiceFields()) };
    if (title.trim()) body.title = title.trim();
    if (pipeline === 'lipsync' && refVideo) body.ref_video_file_id = refVideo.id;
    try {
      const job = await api.createJob(body);
      navigate(`/jobs/${job.id}`);
    } catch (err) {
      setSubmitError(err);
      setSubmitting(false);
      setTimeout(() => errorRef.current?.focus(), 0);
    }
  };

  return (
    <form onSubmit={submit} aria-labelledby="new-heading" className="new-job">
      <h1 id="new-heading">New job</h1>
      <ErrorBox error={loadError} title="Could not load the voices" />

      <fieldset>
        <legend>1. Document</legend>
        <DropZone label="Document to narrate" extensions={DOC_EXT} typesInWords="PDF, EPUB, Markdown or plain text" kind="document" value={doc} onChange={setDoc} />
      </fieldset>

      <fieldset>
        <legend>2. Pipeline</legend>
        <div className="choices">
          {(Object.keys(PIPELINES) as PipelineType[]).map((p) => (
            <label key={p} className="choice">
              <input type="radio" name="pipeline" value={p} checked={pipeline === p} onChange={() => setPipeline(p)} />
              <span>
                <strong>{PIPELINES[p].label}</strong>
                <span className="muted small block">{PIPELINES[p].description}</span>
              </span>
            </label>
          ))}
        </div>
        <div className="grid">
          <label>
            Output format
            <select value={format} onChange={(e) => setFormat(PIPELINES[pipeline].formats.find((f) => f === e.target.value) ?? format)}>
              {PIPELINES[pipeline].formats.map((f) => (
                <option key={f} value={f}>
                  {FORMAT_LABELS[f] ?? f}
                </option>
              ))}
            </select>
          </label>
          {pipeline !== 'readalong' ? (
            <label>
              Speed ({speed.toFixed(2)}×)
              <input type="range" min={0.5} max={2} step={0.05} value={speed} onChange={(e) => setSpeed(Number(e.target.value))} />
            </label>
          ) : null}
          <label>
            Language
            <select value={language} onChange={(e) => setLanguage(e.target.value)}>
              {!languages.some((l) => l.code === language) ? <option value={language}>{language}</option> : null}
              {languages.map((l) => (
                <option key={l.code} value={l.code}>
                  {l.name} ({l.code})
                </option>
              ))}
            </select>
          </label>
          <label>
            Title (optional)
            <input type="text" maxLength={300} value={title} onChange={(e) => setTitle(e.target.value)} placeholder={doc?.original_name ?? ''} />
          </label>
          {pipeline !== 'audio' ? (
            <>
              <label>
                Width (px)
                <input type="number" min={320} max={3840} value={width} onChange={(e) => setWidth(Number(e.target.value))} required />
              </label>
              <label>
                Height (px)
                <input type="number" min={240} max={2160} value={height} onChange={(e) => setHeight(Number(e.target.value))} required />
              </label>
              <label>
                Frames per second
                <input type="number" min={1} max={60} value={fps} onChange={(e) => setFps(Number(e.target.value))} required />
              </label>
            </>
          ) : null}
          {pipeline === 'lipsync' ? (
            <label>
              Lip-sync preset (optional)
              <input type="text" maxLength={64} value={preset} onChange={(e) => setPreset(e.target.value)} />
            </label>
          ) : null}
        </div>
        {pipeline === 'lipsync' ? (
          <div className="presenter-choice">
            <DropZone label="Presenter video (required: a person facing the camera, who will speak the narration)" extensions={VIDEO_EXT} typesInWords="MP4, MOV or WebM video" kind="video"
              value={refVideo}
              onChange={(u) => {
                setRefVideo(u);
                if (!u) setRefVideoUrl(null);
              }}
              onFile={(f) => setRefVideoUrl((old) => (old && URL.revokeObjectURL(old), f ? URL.createObjectURL(f) : null))}
            />
            <LayoutPreview video={refVideo} videoUrl={refVideoUrl} width={width} height={height} />
          </div>
        ) : null}
        {pipeline === 'readalong' ? (
          <>
            <p className="muted small" id="readalong-language">
              Read-along from a recording supports English only for now. Words you do not read are shown but not highlighted; a recording of another text, or one that is not speech, fails the job saying so.
            </p>
            <RecordingPicker value={recording} onChange={setRecording} />
          </>
        ) : null}
      </fieldset>

      {pipeline !== 'readalong' ? (
      <fieldset>
        <legend>3. Voice</legend>
        <div className="choices row">
          <label className="choice">
            <input type="radio" name="voice-mode" checked={voiceMode === 'library'} onChange={() => setVoiceMode('library')} /> A voice from the library
          </label>
          <label className={`choice${cloning?.available ? '' : ' unavailable'}`}>
            <input type="radio" name="voice-mode" checked={voiceMode === 'clone'} disabled={!cloning?.available} aria-describedby={cloning && !cloning.available ? 'cloning-status' : undefined} onChange={() => setVoiceMode('clone')} /> Clone a voice from a clip
          </label>
        </div>
        {cloning && !cloning.available ? (
          <p id="cloning-status" className="muted small">
            Cloning is not available on this install: {cloning.detail}
          </p>
        ) : null}
        {voiceMode === 'library' ? (
          <div role="radiogroup" aria-label="Voices" className="voices">
            <div className="voice">
              <label>
                <input type="radio" name="voice" value="" checked={voiceId === ''} onChange={() => pickVoice('')} />
                <span>
                  <strong>Default voice</strong> <span className="muted small">the service's engine default for the language</span>
                </span>
              </label>
            </div>
            {voices === null && !loadError ? <p aria-live="polite">Loading voices…</p> : null}
            {sortedVoices.filter((v) => allVoices || v.id === voiceId || v.language.toLowerCase().startsWith(langBase)).map((v) => (
              <div key={v.id} className={`voice${v.available ? '' : ' unavailable'}`}>
                <label>
                  <input type="radio" name="voice" value={v.id} checked={voiceId === v.id} disabled={!v.available} onChange={() => pickVoice(v.id)} />
                  <span>
                    <strong>{v.name}</strong> <span className="muted small">{v.language}</span>
                    {v.default ? <span className="muted small"> (default)</span> : null}
                    {!v.available ? <span className="muted small"> (not available on this install)</span> : null}
                    <span className="muted small block">{v.description}</span>
                  </span>
                </label>
                {v.available ? (
                  <button
                    type="button"
                    aria-label={player.playing === v.id ? `Stop the sample of ${v.name}` : `Play a sample of ${v.name}`}
                    onClick={() => (player.playing === v.id ? player.stop() : api.voiceSample(v.id).then(({ url }) => player.play(v.id, url)).catch(setPreviewError))}
                  >
                    {player.playing === v.id ? '■ Stop' : '▶ Sample'}
                  </button>
                ) : null}
              </div>
            ))}
            {voices && voices.length ? (
              <button type="button" className="link" aria-expanded={allVoices} onClick={() => setAllVoices(!allVoices)}>
                {allVoices ? `Show only voices for ${language}` : `Show all ${voices.length} voices`}
              </button>
            ) : null}
          </div>
        ) : (
          <div>
            <DropZone label="Reference clip of the voice (5–30 s of clear speech)" extensions={AUDIO_EXT} typesInWords="WAV, MP3, M4A, FLAC or OGG audio" kind="audio" value={refAudio} onChange={setRefAudio} />
            <label className="block-label">
              Transcript of the clip (optional; transcribed automatically without one)
              <textarea maxLength={4000} rows={3} value={refText} onChange={(e) => setRefText(e.target.value)} />
            </label>
          </div>
        )}
        <div className="actions">
          <button type="button" onClick={() => void preview()} disabled={previewBusy || (voiceMode === 'clone' && !refAudio)}>
            {previewBusy ? 'Preparing the preview…' : player.playing === 'preview' ? 'Preview again' : doc ? 'Preview with the document' : 'Preview the voice'}
          </button>
          {player.playing === 'preview' ? (
            <button type="button" onClick={player.stop}>
              Stop preview
            </button>
          ) : null}
        </div>
        {previewText ? (
          <p className="muted small" aria-live="polite">
            Speaking: “{previewText}”
          </p>
        ) : null}
        <ErrorBox error={previewError} title="Preview failed" />
      </fieldset>
      ) : null}

      <div ref={errorRef} tabIndex={-1}>
        <ErrorBox error={submitError} title={submitError instanceof ApiError && submitError.status === 422 ? 'The service refused this job' : 'Could not create the job'} />
      </div>
      <div className="actions">
        <button
          type="submit"
          className="primary"
          disabled={!doc || submitting || (pipeline !== 'readalong' && voiceMode === 'clone' && !refAudio) || (pipeline === 'lipsync' && !refVideo) || (pipeline === 'readalong' && recording.length === 0)}
        >
          {submitting ? 'Creating…' : 'Create job'}
        </button>
        {!doc ? (
          <span className="muted small">Upload a document first.</span>
        ) : pipeline === 'lipsync' && !refVideo ? (
          <span className="muted small">Upload a presenter video first.</span>
        ) : pipeline === 'readalong' && recording.length === 0 ? (
          <span className="muted small">Upload your recording first.</span>
        ) : null}
      </div>
    </form>
  );
}

/** How the lip-sync output lays out: the page with the presenter in its corner, at the chosen size. */
function LayoutPreview({ video, videoUrl, width, height }: { video: Upload | null; videoUrl: string | null; width: number; height: number }) {
  const ratio = width > 0 && height > 0 ? width / height : 16 / 9;
  return (
    <figure className="layout-preview">
      <div className="layout-frame" style={{ aspectRatio: String(ratio) }} aria-hidden="true">
        <div className="layout-text">
          {Array.from({ length: 6 }, (_, i) => (
            <div key={i} className={`layout-line${i === 2 ? ' hl' : ''}`} />
          ))}
        </div>
        <div className="layout-presenter">{videoUrl ? <video src={videoUrl} muted autoPlay loop playsInline /> : <span>Presenter</span>}</div>
      </div>
      <figcaption className="muted small">
        Layout at {width}×{height}: the page with the highlighted line, the presenter {video ? `(${video.original_name})` : '(upload a video)'} in the corner.
      </figcaption>
    </figure>
  );
}
