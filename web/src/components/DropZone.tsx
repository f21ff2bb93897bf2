// A file picker that also takes a dropped file, uploads it with a progress bar, and shows
// type and size errors (checked here first by extension, then by the service from the bytes).
import { useId, useRef, useState, type DragEvent } from 'react';
import { upload } from '../api.ts';
import { bytes } from '../format.ts';
import type { Upload } from '../types.ts';
import { ErrorBox, ProgressBar } from './ui.tsx';

export interface DropZoneProps {
  label: string;
  /** Extensions with the dot, e.g. ['.pdf', '.md']. */
  extensions: string[];
  /** Said when a file of another type is chosen, e.g. "PDF, EPUB, Markdown or plain text". */
  typesInWords: string;
  kind: Upload['kind'];
  value: Upload | null;
  onChange: (u: Upload | null) => void;
  /** The chosen file itself (e.g. to preview a video locally). */
  onFile?: (f: File | null) => void;
}

export function DropZone({ label, extensions, typesInWords, kind, value, onChange, onFile }: DropZoneProps) {
  const inputId = useId();
  const [over, setOver] = useState(false);
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [name, setName] = useState<string | null>(null);
  const inputRef = useRef<HTMLInputElement>(null);

  const take = async (file: File | undefined) => {
    if (!file) return;
    setError(null);
    const ext = file.name.includes('.') ? file.name.slice(file.name.lastIndexOf('.')).toLowerCase() : '';
    if (!extensions.includes(ext)) {
      setError(new Error(`“${file.name}” is not a file Lectern reads here: choose ${typesInWords}.`));
      return;
    }
    setName(file.name);
    setProgress(0);
    onChange(null);
    try {
      const u = await upload(file, setProgress);
      if (u.kind !== kind) throw new Error(`“${file.name}” is ${u.kind === 'document' ? 'a document' : `${u.kind}`}, not ${kind === 'document' ? 'a document' : kind}.`);
      onChange(u);
      onFile?.(file);
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
    void take(e.dataTransfer.files[0]);
  };

  return (
    <div className={`dropzone${over ? ' over' : ''}`} onDragOver={(e) => (e.preventDefault(), setOver(true))} onDragLeave={() => setOver(false)} onDrop={drop}>
      <label htmlFor={inputId}>{label}</label>
      <p className="muted small">Drop a file here or choose one: {typesInWords}.</p>
      <input id={inputId} ref={inputRef} type="file" accept={extensions.join(',')} onChange={(e) => void take(e.target.files?.[0])} disabled={progress !== null} />
      {progress !== null ? (
        <div>
          <ProgressBar value={Math.round(progress * 100)} label={`Uploading ${name ?? 'the file'}`} />
        </div>
      ) : null}
      {value ? (
        <p className="uploaded" role="status">
          Uploaded <strong>{value.original_name}</strong> ({bytes(value.size_bytes)}){' '}
          <button type="button" className="link" onClick={() => onChange(null)}>
            Remove
          </button>
        </p>
      ) : null}
      <ErrorBox error={error} title="Upload failed" />
    </div>
  );
}
