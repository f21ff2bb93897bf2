// A transcript with the aligner's word timings → OpenAI's transcription answers: segments
// (json's verbose form), SubRip and WebVTT. The transcriber gives text only; every time
// here comes from aligning that text against the audio.
import { toSrt, toWebVtt, type Cue } from '../../media/captions.ts';
import type { WordTiming } from '../../speech/types.ts';

export const TRANSCRIPT_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];

/** A pause this long between words starts a new segment (transcribers without punctuation give no sentence ends). */
const SEGMENT_PAUSE_S = 0.5;
/** Most words in one segment, so a caption stays readable. */
const SEGMENT_MAX_WORDS = 24;

export interface Segment {
  id: number;
  seek: number;
  start: number;
  end: number;
  text: string;
  tokens: number[];
  temperature: number;
}

/** Words grouped into segments at sentence ends, at pauses, and at SEGMENT_MAX_WORDS. */
export function segmentsOf(words: WordTiming[]): Segment[] {
  const segments: Segment[] = [];
  let cur: WordTiming[] = [];
  const close = () => {
    if (cur.length === 0) return;
    segments.push({ id: segments.length, seek: 0, start: cur[0]!.start, end: cur[cur.length - 1]!.end, text: cur.map((w) => w.word).join(' '), tokens: [], temperature: 0 });
    cur = [];
  };
  words.forEach((w, i) => {
    const prev = words[i - 1];
    if (prev && (w.start - prev.end >= SEGMENT_PAUSE_S || cur.length >= SEGMENT_MAX_WORDS)) close();
    cur.push(w);
    if (/[.!?…]["'”’)\]]*$/u.test(w.word)) close();
  });
  close();
  return segments;
}

const cues = (segments: Segment[]): Cue[] => segments.map((s) => ({ start: s.start, end: s.end, text: s.text }));

export const transcriptSrt = (segments: Segment[]) => toSrt(cues(segments));
export const transcriptVtt = (segments: Segment[]) => toWebVtt(cues(segments));

/** OpenAI's verbose_json names the language in English, lower case ("english"). */
export function languageName(code: string): string {
  try {
    return (new Intl.DisplayNames(['en'], { type: 'language' }).of(code.split(/[-_]/)[0]!) ?? code).toLowerCase();
  } catch {
    return code.toLowerCase();
  }
}
