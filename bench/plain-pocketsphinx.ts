// The plain HMM baseline: Debian's pocketsphinx_continuous with its en-us model and a JSGF
// grammar that admits only the transcript, -time yes, no refinement.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { WordTiming } from '../src/speech/types.ts';
import { tokenizeWords } from '../src/speech/words.ts';

const PS = '/usr/share/pocketsphinx/model/en-us';
const DICT = path.join(PS, 'cmudict-en-us.dict');
let dictWords: Set<string> | null = null;

/** The dictionary's words (alternates such as "read(2)" under their word). */
function inDictionary(word: string): boolean {
  dictWords ??= new Set(readFileSync(DICT, 'utf8').split('\n').map((l) => l.split(' ')[0]!.replace(/\(\d+\)$/, '')));
  return dictWords.has(word);
}

/** Word timings of `text` in the WAV at `wav` (resampled to 16 kHz by ffmpeg when it is not). */
export function plainPocketsphinx(wav: string, sampleRate: number, text: string): WordTiming[] {
  const tmp = mkdtempSync(path.join(tmpdir(), 'lectern-ps-'));
  try {
    const tokens = tokenizeWords(text);
    const spoken = tokens.map((t) => t.word.toLowerCase().replace(/’/g, "'").replace(/[^a-z']/g, ''));
    // plain means no pronunciation of its own for a word the dictionary lacks: such a clip has no result
    const missing = spoken.filter((w) => !inDictionary(w));
    if (missing.length) throw new Error(`${path.basename(wav)}: not in the dictionary: ${missing.join(', ')}`);
    writeFileSync(path.join(tmp, 'g.gram'), `#JSGF V1.0;\ngrammar g;\npublic <s> = ${spoken.join(' ')};\n`);
    if (sampleRate !== 16000) {
      execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', wav, '-ar', '16000', '-ac', '1', path.join(tmp, 'a.wav')]);
      wav = path.join(tmp, 'a.wav');
    }
    const out = execFileSync('pocketsphinx_continuous', ['-infile', wav, '-jsgf', path.join(tmp, 'g.gram'), '-time', 'yes', '-vad_postspeech', '400', '-vad_threshold', '1.0',
      '-hmm', path.join(PS, 'en-us'), '-dict', DICT], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const segs = out.split('\n').map((l) => l.trim().split(/\s+/)).filter((p) => p.length === 4 && !p[0]!.startsWith('<') && !p[0]!.startsWith('[') && /^\d/.test(p[1]!));
    if (segs.length !== tokens.length) throw new Error(`${path.basename(wav)}: pocketsphinx gave ${segs.length} words for ${tokens.length}`);
    return tokens.map((t, i) => ({ word: t.word, start: Number(segs[i]![1]), end: Number(segs[i]![2]) + 0.01 }));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
