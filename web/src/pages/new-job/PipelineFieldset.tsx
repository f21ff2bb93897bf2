// Step 2 of the new-job form: the pipeline, its output options, and what it needs besides
// the document (the presenter video for lip-sync, the recording for read-along).
import { useState } from 'react';
import { DropZone } from '../../components/DropZone.tsx';
import { RecordingPicker } from '../../components/RecordingPicker.tsx';
import { FORMAT_LABELS, PIPELINES, type Language, type OutputFormat, type PipelineType, type Upload } from '../../types.ts';

const VIDEO_EXT = ['.mp4', '.mov', '.webm'];

/** The job's options as the form holds them (which of them a job sends depends on the pipeline). */
export interface JobOptions {
  format: OutputFormat;
  speed: number;
  title: string;
  width: number;
  height: number;
  fps: number;
  preset: string;
}

export const DEFAULT_OPTIONS: JobOptions = { format: 'mp3', speed: 1, title: '', width: 1280, height: 720, fps: 25, preset: '' };

export type SetOption = <K extends keyof JobOptions>(key: K, value: JobOptions[K]) => void;

export type PresenterVideo = ReturnType<typeof usePresenterVideo>;

/** The lip-sync presenter upload and a local object URL of its file for the layout preview. */
export function usePresenterVideo() {
  const [video, setVideo] = useState<Upload | null>(null);
  const [url, setUrl] = useState<string | null>(null);
  return {
    video,
    url,
    onChange(u: Upload | null) {
      setVideo(u);
      if (!u) setUrl(null);
    },
    onFile(f: File | null) {
      setUrl((old) => (old && URL.revokeObjectURL(old), f ? URL.createObjectURL(f) : null));
    },
  };
}

export interface PipelineFieldsetProps {
  pipeline: PipelineType;
  setPipeline(p: PipelineType): void;
  options: JobOptions;
  setOption: SetOption;
  language: string;
  setLanguage(code: string): void;
  /** The document's declared language while the selection follows it (null once the user picks one). */
  declaredLanguage: string | null;
  languages: Language[];
  doc: Upload | null;
  presenter: PresenterVideo;
  recording: Upload[];
  setRecording(u: Upload[]): void;
}

export function PipelineFieldset(p: PipelineFieldsetProps) {
  return (
    <fieldset>
      <legend>2. Pipeline</legend>
      <PipelineChoice pipeline={p.pipeline} onChange={p.setPipeline} />
      <OptionsGrid {...p} />
      {p.pipeline === 'lipsync' ? <PresenterChoice presenter={p.presenter} width={p.options.width} height={p.options.height} /> : null}
      {p.pipeline === 'readalong' ? (
        <>
          <p className="muted small" id="readalong-language">
            Read-along from a recording works in every language of the list; English and French are aligned best. Words you do not read are shown but not highlighted; a recording of another text, or one that is not speech, fails the job saying so.
          </p>
          <RecordingPicker value={p.recording} onChange={p.setRecording} />
        </>
      ) : null}
    </fieldset>
  );
}

function PipelineChoice({ pipeline, onChange }: { pipeline: PipelineType; onChange(p: PipelineType): void }) {
  return (
    <div className="choices">
      {(Object.keys(PIPELINES) as PipelineType[]).map((p) => (
        <label key={p} className="choice">
          <input type="radio" name="pipeline" value={p} checked={pipeline === p} onChange={() => onChange(p)} />
          <span>
            <strong>{PIPELINES[p].label}</strong>
            <span className="muted small block">{PIPELINES[p].description}</span>
          </span>
        </label>
      ))}
    </div>
  );
}

/** Format, speed, language and title; the frame size for video pipelines; the preset for lip-sync. */
function OptionsGrid({ pipeline, options, setOption, language, setLanguage, declaredLanguage, languages, doc }: PipelineFieldsetProps) {
  const { format, speed, title, width, height, fps, preset } = options;
  const formats = PIPELINES[pipeline].formats;
  return (
    <div className="grid">
      <label>
        Output format
        <select value={format} onChange={(e) => setOption('format', formats.find((f) => f === e.target.value) ?? format)}>
          {formats.map((f) => (
            <option key={f} value={f}>
              {FORMAT_LABELS[f] ?? f}
            </option>
          ))}
        </select>
      </label>
      {pipeline !== 'readalong' ? (
        <label>
          Speed ({speed.toFixed(2)}×)
          <input type="range" min={0.5} max={2} step={0.05} value={speed} onChange={(e) => setOption('speed', Number(e.target.value))} />
        </label>
      ) : null}
      <div className="block-label">
        <label htmlFor="job-language">Language</label>
        <select id="job-language" value={language} onChange={(e) => setLanguage(e.target.value)} aria-describedby={declaredLanguage ? 'declared-language' : undefined}>
          {!languages.some((l) => l.code === language) ? <option value={language}>{language}</option> : null}
          {languages.map((l) => (
            <option key={l.code} value={l.code}>
              {l.name} ({l.code})
            </option>
          ))}
        </select>
        {declaredLanguage ? (
          <span className="muted small" id="declared-language">
            The document declares {declaredLanguage}
          </span>
        ) : null}
      </div>
      <label>
        Title (optional)
        <input type="text" maxLength={300} value={title} onChange={(e) => setOption('title', e.target.value)} placeholder={doc?.original_name ?? ''} />
      </label>
      {pipeline !== 'audio' ? (
        <>
          <label>
            Width (px)
            <input type="number" min={320} max={3840} value={width} onChange={(e) => setOption('width', Number(e.target.value))} required />
          </label>
          <label>
            Height (px)
            <input type="number" min={240} max={2160} value={height} onChange={(e) => setOption('height', Number(e.target.value))} required />
          </label>
          <label>
            Frames per second
            <input type="number" min={1} max={60} value={fps} onChange={(e) => setOption('fps', Number(e.target.value))} required />
          </label>
        </>
      ) : null}
      {pipeline === 'lipsync' ? (
        <label>
          Lip-sync preset (optional)
          <input type="text" maxLength={64} value={preset} onChange={(e) => setOption('preset', e.target.value)} />
        </label>
      ) : null}
    </div>
  );
}

function PresenterChoice({ presenter, width, height }: { presenter: PresenterVideo; width: number; height: number }) {
  return (
    <div className="presenter-choice">
      <DropZone label="Presenter video (required: a person facing the camera, who will speak the narration)" extensions={VIDEO_EXT} typesInWords="MP4, MOV or WebM video" kind="video"
        value={presenter.video}
        onChange={presenter.onChange}
        onFile={presenter.onFile}
      />
      <LayoutPreview video={presenter.video} videoUrl={presenter.url} width={width} height={height} />
    </div>
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
