// The voice side of the new-job form: which voice the library list shows and selects, the
// player for samples and previews, and the preview of the document in the chosen voice.
import { useEffect, useRef, useState } from 'react';
import { api } from '../../api.ts';
import type { JobCreateRequest, Upload, Voice } from '../../types.ts';

/** A voice from the library (voiceId '' is the engine's default) or a reference clip to clone. */
export interface VoiceSelection {
  mode: 'library' | 'clone';
  voiceId: string;
  refAudio: Upload | null;
  refText: string;
}

/** The request's voice fields for the selection (preview and job alike). */
export function voiceFields(v: VoiceSelection): Pick<JobCreateRequest, 'voice_id' | 'ref_audio_file_id' | 'ref_text'> {
  return v.mode === 'clone' ? { ref_audio_file_id: v.refAudio?.id, ref_text: v.refText.trim() || undefined } : { voice_id: v.voiceId || undefined };
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

/**
 * The library voice chosen, and the list shown: the language's voices first (all of them
 * with showAll), available before unavailable, then by name.
 */
export function useVoiceChoice(voices: Voice[] | null, language: string) {
  const [voiceId, setVoiceId] = useState('');
  /** Once the user picks a voice, a language change no longer moves the selection. */
  const [picked, setPicked] = useState(false);
  const [showAll, setShowAll] = useState(false);
  // Preselect the language's default voice (the service marks it: the neural voice where one is installed).
  useEffect(() => {
    if (!picked && voices) setVoiceId(defaultVoiceFor(voices, language)?.id ?? '');
  }, [voices, language, picked]);
  const pick = (id: string) => {
    setPicked(true);
    setVoiceId(id);
  };
  const langBase = language.split('-')[0]!.toLowerCase();
  const ofLanguage = (v: Voice) => v.language.toLowerCase().startsWith(langBase);
  const sorted = [...(voices ?? [])].sort((a, b) => Number(ofLanguage(b)) - Number(ofLanguage(a)) || Number(b.available) - Number(a.available) || a.name.localeCompare(b.name));
  const listed = sorted.filter((v) => showAll || v.id === voiceId || ofLanguage(v));
  return { voiceId, pick, showAll, toggleShowAll: () => setShowAll(!showAll), listed };
}

export type Player = ReturnType<typeof usePlayer>;

/** Plays one clip at a time: a blob: URL fetched with the token, or the store's presigned link. */
export function usePlayer() {
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

export type VoicePreview = ReturnType<typeof useVoicePreview>;

/** The document (or a sample sentence) spoken in the chosen voice, played as 'preview'; its text and errors shown. */
export function useVoicePreview(player: Player) {
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async (request: Parameters<typeof api.preview>[0]) => {
    setBusy(true);
    setError(null);
    setText(null);
    try {
      const { url, res } = await api.preview(request);
      const spoken = res.headers.get('x-preview-text');
      setText(spoken ? decodeURIComponent(spoken) : null);
      await player.play('preview', url);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { text, error, setError, busy, run };
}
