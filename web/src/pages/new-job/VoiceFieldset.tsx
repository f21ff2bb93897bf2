// Step 3 of the new-job form: a voice from the library (each with its sample) or a clip to
// clone, and a preview of the document in that voice.
import { api } from '../../api.ts';
import { DropZone } from '../../components/DropZone.tsx';
import { ErrorBox } from '../../components/ui.tsx';
import type { CloningStatus, Upload, Voice } from '../../types.ts';
import type { Player, useVoiceChoice, VoicePreview, VoiceSelection } from './voice.ts';

const AUDIO_EXT = ['.wav', '.mp3', '.m4a', '.flac', '.ogg'];

type VoiceChoice = ReturnType<typeof useVoiceChoice>;

export interface VoiceFieldsetProps {
  selection: VoiceSelection;
  setMode(mode: VoiceSelection['mode']): void;
  setRefAudio(u: Upload | null): void;
  setRefText(t: string): void;
  choice: VoiceChoice;
  /** null while loading. */
  voices: Voice[] | null;
  loadError: unknown;
  cloning: CloningStatus | null;
  language: string;
  doc: Upload | null;
  player: Player;
  preview: VoicePreview;
  onPreview(): void;
}

export function VoiceFieldset(p: VoiceFieldsetProps) {
  return (
    <fieldset>
      <legend>3. Voice</legend>
      <VoiceModeChoice mode={p.selection.mode} cloning={p.cloning} onChange={p.setMode} />
      {p.selection.mode === 'library' ? (
        <LibraryVoices choice={p.choice} voices={p.voices} loadError={p.loadError} language={p.language} player={p.player} onSampleError={p.preview.setError} />
      ) : (
        <CloneClip refAudio={p.selection.refAudio} refText={p.selection.refText} setRefAudio={p.setRefAudio} setRefText={p.setRefText} />
      )}
      <PreviewActions {...p} />
    </fieldset>
  );
}

/** Library or clone; clone is offered only when a healthy GPU server declares voice cloning, otherwise shown disabled with why. */
function VoiceModeChoice({ mode, cloning, onChange }: { mode: VoiceSelection['mode']; cloning: CloningStatus | null; onChange(mode: VoiceSelection['mode']): void }) {
  return (
    <>
      <div className="choices row">
        <label className="choice">
          <input type="radio" name="voice-mode" checked={mode === 'library'} onChange={() => onChange('library')} /> A voice from the library
        </label>
        <label className={`choice${cloning?.available ? '' : ' unavailable'}`}>
          <input type="radio" name="voice-mode" checked={mode === 'clone'} disabled={!cloning?.available} aria-describedby={cloning && !cloning.available ? 'cloning-status' : undefined} onChange={() => onChange('clone')} /> Clone a voice from a clip
        </label>
      </div>
      {cloning && !cloning.available ? (
        <p id="cloning-status" className="muted small">
          Cloning is not available on this install: {cloning.detail}
        </p>
      ) : null}
    </>
  );
}

function LibraryVoices({ choice, voices, loadError, language, player, onSampleError }: { choice: VoiceChoice; voices: Voice[] | null; loadError: unknown; language: string; player: Player; onSampleError(err: unknown): void }) {
  return (
    <div role="radiogroup" aria-label="Voices" className="voices">
      <div className="voice">
        <label>
          <input type="radio" name="voice" value="" checked={choice.voiceId === ''} onChange={() => choice.pick('')} />
          <span>
            <strong>Default voice</strong> <span className="muted small">the service's engine default for the language</span>
          </span>
        </label>
      </div>
      {voices === null && !loadError ? <p aria-live="polite">Loading voices…</p> : null}
      {choice.listed.map((v) => (
        <VoiceRow key={v.id} voice={v} checked={choice.voiceId === v.id} onPick={() => choice.pick(v.id)} player={player} onSampleError={onSampleError} />
      ))}
      {voices && voices.length ? (
        <button type="button" className="link" aria-expanded={choice.showAll} onClick={choice.toggleShowAll}>
          {choice.showAll ? `Show only voices for ${language}` : `Show all ${voices.length} voices`}
        </button>
      ) : null}
    </div>
  );
}

/** One library voice: its radio button, what it is, and its sample (play / stop). */
function VoiceRow({ voice: v, checked, onPick, player, onSampleError }: { voice: Voice; checked: boolean; onPick(): void; player: Player; onSampleError(err: unknown): void }) {
  const playing = player.playing === v.id;
  return (
    <div className={`voice${v.available ? '' : ' unavailable'}`}>
      <label>
        <input type="radio" name="voice" value={v.id} checked={checked} disabled={!v.available} onChange={onPick} />
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
          aria-label={playing ? `Stop the sample of ${v.name}` : `Play a sample of ${v.name}`}
          onClick={() => (playing ? player.stop() : api.voiceSample(v.id).then(({ url }) => player.play(v.id, url)).catch(onSampleError))}
        >
          {playing ? '■ Stop' : '▶ Sample'}
        </button>
      ) : null}
    </div>
  );
}

function CloneClip({ refAudio, refText, setRefAudio, setRefText }: { refAudio: Upload | null; refText: string; setRefAudio(u: Upload | null): void; setRefText(t: string): void }) {
  return (
    <div>
      <DropZone label="Reference clip of the voice (5–30 s of clear speech)" extensions={AUDIO_EXT} typesInWords="WAV, MP3, M4A, FLAC or OGG audio" kind="audio" value={refAudio} onChange={setRefAudio} />
      <label className="block-label">
        Transcript of the clip (optional; transcribed automatically without one)
        <textarea maxLength={4000} rows={3} value={refText} onChange={(e) => setRefText(e.target.value)} />
      </label>
    </div>
  );
}

/** Preview (again) / stop, what is being spoken, and why a preview or sample failed. */
function PreviewActions({ selection, doc, player, preview, onPreview }: VoiceFieldsetProps) {
  return (
    <>
      <div className="actions">
        <button type="button" onClick={onPreview} disabled={preview.busy || (selection.mode === 'clone' && !selection.refAudio)}>
          {preview.busy ? 'Preparing the preview…' : player.playing === 'preview' ? 'Preview again' : doc ? 'Preview with the document' : 'Preview the voice'}
        </button>
        {player.playing === 'preview' ? (
          <button type="button" onClick={player.stop}>
            Stop preview
          </button>
        ) : null}
      </div>
      {preview.text ? (
        <p className="muted small" aria-live="polite">
          Speaking: “{preview.text}”
        </p>
      ) : null}
      <ErrorBox error={preview.error} title="Preview failed" />
    </>
  );
}
