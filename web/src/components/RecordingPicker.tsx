// The recording of a read-along job: one audio file or an audiobook of many (MP3, M4A/M4B,
// WAV, FLAC, OGG), chosen or dropped together, uploaded one after another with a progress
// bar, listed with a Remove button each. Their order does not matter: the service finds the
// reading order from the words heard in them.
import { useId, useRef, useState, type DragEvent } from 'react';
import { upload } from '../api.ts';
import { bytes } from '../format.ts';
import type { Upload } from '../types.ts';
import { ErrorBox, ProgressBar } from './ui.tsx';

export const RECORDING_EXT = ['.mp3', '.m4a', '.m4b', '.wav', '.flac', '.ogg', '.oga', '.opus'];

export function RecordingPicker({ value, onChange }: { value: Upload[]; onChange: (files: Upload[]) => void }) {
  const inputId = useId();
  const [over, setOver] = useState(false);
  const [progress, setProgress] = useState<{ name: string; fraction: number } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const inputRef = useRef<HTMLInputElement>(null);

  const take = async (files: File[]) => {
    if (!files.length) return;
    setError(null);
    const wrong = files.find((f) => !RECORDING_EXT.includes(f.name.includes('.') ? f.name.slice(f.name.lastIndexOf('.')).toLowerCase() : ''));
    if (wrong) {
      setError(new Error(`“${wrong.name}” is not a recording Lectern reads: choose MP3, M4A/M4B, WAV, FLAC or OGG audio.`));
      return;
    }
    let list = value;
    try {
      for (const f of files) {
        setProgress({ name: f.name, fraction: 0 });
        const u = await upload(f, (fraction) => setProgress({ name: f.name, fraction }));
        // An M4B audiobook is an MP4 container: the service may type it as video; the job checks it holds audio.
        if (u.kind === 'document') throw new Error(`“${f.name}” is a document, not audio.`);
        list = [...list, u];
        onChange(list);
      }
    } catch (err) {
      setError(err);
    } finally {
      setProgress(null);
      if (inputRef.current) inputRef.current.value = '';
    }
  };
  const drop = (e: DragEvent<HTMLDivElement>) => {
    e.preventDefault();
    setOver(false);
    void take([...e.dataTransfer.files]);
  };

  return (
    <div className={`dropzone${over ? ' over' : ''}`} onDragOver={(e) => (e.preventDefault(), setOver(true))} onDragLeave={() => setOver(false)} onDrop={drop}>
      <label htmlFor={inputId}>Your recording of the document (one file, or every chapter file of an audiobook)</label>
      <p className="muted small">Drop the files here or choose them: MP3, M4A/M4B, WAV, FLAC or OGG. Any order: Lectern finds the reading order from the words.</p>
      <input id={inputId} ref={inputRef} type="file" multiple accept={RECORDING_EXT.join(',')} onChange={(e) => void take([...(e.target.files ?? [])])} disabled={progress !== null} />
      {progress ? (
        <div>
          <ProgressBar value={Math.round(progress.fraction * 100)} label={`Uploading ${progress.name}`} />
        </div>
      ) : null}
      {value.length ? (
        <ul className="uploaded" aria-label="Recording files">
          {value.map((u) => (
            <li key={u.id}>
              <strong>{u.original_name}</strong> ({bytes(u.size_bytes)}){' '}
              <button type="button" className="link" aria-label={`Remove ${u.original_name}`} onClick={() => onChange(value.filter((x) => x.id !== u.id))}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      <ErrorBox error={error} title="Upload failed" />
    </div>
  );
}
