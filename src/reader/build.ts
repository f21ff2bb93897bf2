// The offline reader: one ZIP holding a self-contained index.html (inline CSS and JS, the
// timeline embedded as a literal — file:// pages cannot fetch() their neighbours), the
// narration, page images for PDFs and an optional presenter video. Unzip, double-click,
// read along; no server, no network.
import fs from 'node:fs';
import yazl from 'yazl';
import { OUTPUT_FILES } from '../core/output-files.ts';
import type { BlockKind, WordBox } from '../documents/model.ts';
import { isTimed, type TimelineEntry } from '../core/timeline.ts';
import { READER_SCRIPT, READER_STYLE } from './assets.ts';

export interface ReaderWord {
  text: string;
  /** PDF: the word's boxes in 0..1 page coordinates (two when hyphenated across lines). */
  boxes?: WordBox[];
  /** Printed, not read (DocWord.silent): shown in text pages, in no timeline. */
  silent?: true;
}

export interface ReaderBlock {
  kind: BlockKind;
  level?: number;
  words: ReaderWord[];
}

export interface ReaderPage {
  /** 1-based page number, as in TimelineWord.page. */
  number: number;
  blocks: ReaderBlock[];
  /** PDF: the rendered page (PNG) and its pixel size; the words' boxes are drawn over it. */
  image?: { file: string; width: number; height: number };
}

export interface ReaderOptions {
  outPath: string;
  title: string;
  author: string | null;
  language: string;
  /** narration.mp3 */
  audioFile: string;
  /** Word times in the narration (speed applied); (page, block) and order identify each source word. Skipped words are shown, not timed. */
  words: TimelineEntry[];
  duration: number;
  pages: ReaderPage[];
  /** A presenter video synced to the narration, shown in a draggable, resizable window. */
  presenter?: { videoFile: string };
}

/** What index.html embeds: short keys, because a book's timeline has 100k+ words. */
export interface ReaderData {
  title: string;
  author: string | null;
  duration: number;
  audio: string;
  presenter: string | null;
  pages: Array<{ n: number; img?: string; w?: number; h?: number; blocks: Array<{ k: BlockKind; l?: number; words: Array<{ t: string; i?: number; b?: number[][]; s?: 1 }> }> }>;
  /** Per timeline word: [start, end, page position in `pages`, block, word index]. */
  words: Array<[number, number, number, number, number]>;
}

export function readerData(opts: Omit<ReaderOptions, 'outPath'>): ReaderData {
  const pageAt = new Map(opts.pages.map((p, i) => [p.number, i]));
  const pages: ReaderData['pages'] = opts.pages.map((p, i) => ({
    n: p.number,
    ...(p.image ? { img: pageImageName(i), w: p.image.width, h: p.image.height } : {}),
    blocks: p.blocks.map((b) => ({
      k: b.kind,
      ...(b.level !== undefined ? { l: b.level } : {}),
      words: b.words.map((w) => ({ t: w.text, ...(w.boxes ? { b: w.boxes.map((x) => [x.x, x.y, x.width, x.height].map(r4)) } : {}), ...(w.silent ? { s: 1 as const } : {}) })),
    })),
  }));
  const words: ReaderData['words'] = [];
  let prev = '';
  let index = -1;
  opts.words.forEach((w, i) => {
    const p = pageAt.get(w.page);
    if (p === undefined) throw new Error(`timeline word ${i} ("${w.word}") is on page ${w.page}, which the reader has no page for`);
    const key = `${w.page}:${w.block}`;
    if (key !== prev) index = -1;
    prev = key;
    // The timeline holds the spoken words only: the next one in the block that is not silent.
    const list = pages[p]!.blocks[w.block]?.words ?? [];
    do index++;
    while (list[index]?.s);
    const target = list[index];
    // The timeline and the pages must be the same words; a mismatch would highlight the wrong ones.
    if (!target || target.t !== w.word) throw new Error(`timeline word ${i} ("${w.word}") is not word ${index} of page ${w.page} block ${w.block} ("${target?.t ?? 'none'}")`);
    // A word the narration skips (a recording that does not read it) is shown but never highlighted or clickable.
    if (!isTimed(w)) return;
    target.i = words.length;
    words.push([w.start, w.end, p, w.block, index]);
  });
  return {
    title: opts.title,
    author: opts.author,
    duration: opts.duration,
    audio: OUTPUT_FILES.narration,
    presenter: opts.presenter ? OUTPUT_FILES.presenter : null,
    pages,
    words,
  };
}

export function readerHtml(data: ReaderData, language: string): string {
  // JSON inside <script>: "<" escaped so no "</script>" or "<!--" in the text can end it.
  const json = JSON.stringify(data).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
  const byline = data.author ? ` — ${esc(data.author)}` : '';
  return `<!doctype html>
<html lang="${esc(language)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(data.title)}</title>
<style>${READER_STYLE}</style>
</head>
<body>
<header class="bar" role="toolbar" aria-label="Player">
  <button id="play" type="button" aria-label="Play" title="Play/pause (space)">▶</button>
  <input id="seek" type="range" min="0" max="${data.duration}" step="0.05" value="0" aria-label="Position in the narration">
  <span id="time" class="time">0:00 / 0:00</span>
  <label class="speed">Speed <select id="speed" aria-label="Playback speed" title="Speed (+/-)">
    ${[0.5, 0.75, 1, 1.25, 1.5, 1.75, 2].map((s) => `<option value="${s}"${s === 1 ? ' selected' : ''}>${s}×</option>`).join('')}
  </select></label>
  <span class="title"><strong>${esc(data.title)}</strong>${byline}</span>
  <span class="keys" aria-hidden="true">space play · ←/→ 5 s · ↑/↓ word · +/- speed · click a word to jump</span>
</header>
<main id="doc" aria-label="${esc(data.title)}"></main>
<audio id="audio" src="${data.audio}" preload="auto"></audio>
${
  data.presenter
    ? `<aside id="presenter" class="presenter" role="dialog" aria-label="Presenter video">
  <div class="grip" title="Drag to move; drag the lower right corner to resize">Presenter <button id="presenter-hide" type="button" aria-label="Hide the presenter">×</button></div>
  <video id="presenter-video" src="${data.presenter}" muted playsinline preload="auto" aria-label="Presenter, synced to the narration"></video>
</aside>`
    : ''
}
<div id="status" class="visually-hidden" aria-live="polite"></div>
<script>const LECTERN = ${json};</script>
<script>${READER_SCRIPT}</script>
</body>
</html>
`;
}

/** Writes the reader ZIP atomically (to a temp name, then renamed). */
export async function buildReaderZip(opts: ReaderOptions): Promise<void> {
  const data = readerData(opts);
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from(readerHtml(data, opts.language), 'utf8'), 'index.html');
  // Already-compressed media are stored, not deflated again.
  zip.addFile(opts.audioFile, OUTPUT_FILES.narration, { compress: false });
  opts.pages.forEach((p, i) => {
    if (p.image) zip.addFile(p.image.file, pageImageName(i), { compress: false });
  });
  if (opts.presenter) zip.addFile(opts.presenter.videoFile, OUTPUT_FILES.presenter, { compress: false });
  zip.end();
  const tmp = `${opts.outPath}.tmp`;
  try {
    await new Promise<void>((resolve, reject) => {
      const out = fs.createWriteStream(tmp);
      zip.outputStream.on('error', reject).pipe(out).on('error', reject).on('close', () => resolve());
    });
    await fs.promises.rename(tmp, opts.outPath);
  } finally {
    await fs.promises.rm(tmp, { force: true });
  }
}

const pageImageName = (i: number) => `pages/page-${String(i + 1).padStart(4, '0')}.png`;
const r4 = (n: number) => Math.round(n * 10000) / 10000;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
