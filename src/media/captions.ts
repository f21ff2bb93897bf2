// Caption files (WebVTT, SubRip) from timed cues: narration word cues, transcript segments.

export interface Cue {
  start: number;
  end: number;
  text: string;
}

/** hh:mm:ss.mmm (WebVTT) or hh:mm:ss,mmm (SubRip). */
function timestamp(t: number, decimal: '.' | ','): string {
  const ms = Math.max(0, Math.round(t * 1000));
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  return `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}${decimal}${String(ms % 1000).padStart(3, '0')}`;
}

/** Numbered cues; an empty cue lasts 1 ms (players drop zero-length ones); "-->" in text would end the timing line. */
function cueBlocks(cues: Cue[], decimal: '.' | ','): string[] {
  return cues.map((c, i) => `${i + 1}\n${timestamp(c.start, decimal)} --> ${timestamp(Math.max(c.end, c.start + 0.001), decimal)}\n${c.text.replace(/-->/g, '→')}\n`);
}

export function toWebVtt(cues: Cue[]): string {
  return `WEBVTT\n\n${cueBlocks(cues, '.').join('\n')}`;
}

export function toSrt(cues: Cue[]): string {
  return cueBlocks(cues, ',').join('\n');
}
