// The text files of a read-along EPUB 3: content documents (every word in a span with an
// id), their Media Overlay SMIL, the nav document, the package document and the container.
// Pure string builders: what goes in the book is decided in build.ts.
import type { DocBlock, TocEntry } from '../documents/model.ts';

export const ACTIVE_CLASS = '-epub-media-overlay-active';
export const PLAYING_CLASS = '-epub-media-overlay-playing';

export const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** A SMIL clock value, H:MM:SS.mmm, from whole milliseconds (integer arithmetic, so sums are exact). */
export function clock(ms: number): string {
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  return `${h}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}.${String(ms % 1000).padStart(3, '0')}`;
}

export const wordId = (page: number, n: number) => `w${page + 1}_${n}`;
export const blockId = (page: number, block: number) => `b${page + 1}_${block}`;
export const sectionId = (page: number) => `page${page + 1}`;

export interface PageImage {
  href: string;
  alt: string;
}

export interface ContentPage {
  /** 0-based source page. */
  page: number;
  title: string;
  blocks: DocBlock[];
  image: PageImage | null;
}

/** One content document. Words are numbered in reading order within the page (wordId). */
export function contentXhtml(p: ContentPage, language: string): string {
  const out: string[] = [];
  let n = 0;
  let open: 'ul' | 'table' | null = null;
  const close = () => {
    if (open === 'ul') out.push('</ul>');
    if (open === 'table') out.push('</div>');
    open = null;
  };
  // Spoken words are numbered in reading order (the Media Overlay's clips); silent ones (a
  // contents page's leaders, a footnote mark) are printed as they stand.
  const words = (b: DocBlock) => b.words.map((w) => (w.silent ? esc(w.text) : `<span id="${wordId(p.page, n++)}">${esc(w.text)}</span>`)).join(' ');
  if (p.image) out.push(`<figure class="page-image"><img src="${esc(p.image.href)}" alt="${esc(p.image.alt)}"/></figure>`);
  p.blocks.forEach((b, i) => {
    const id = blockId(p.page, i);
    const want = b.kind === 'item' ? 'ul' : b.kind === 'cell' ? 'table' : null;
    if (open !== want) {
      close();
      if (want === 'ul') out.push('<ul>');
      // Cells arrive without their row structure, so they read as a grid of short blocks.
      if (want === 'table') out.push('<div class="cells">');
      open = want;
    }
    if (b.role === 'furniture') {
      // A running head or page number, shown as printed and never read.
      out.push(`<p class="furniture" id="${id}">${words(b)}</p>`);
      return;
    }
    const role = b.role ? ` class="${b.role}"` : '';
    switch (b.kind) {
      case 'heading': {
        const h = Math.min(6, Math.max(1, b.level ?? 2));
        out.push(`<h${h} id="${id}">${words(b)}</h${h}>`);
        break;
      }
      case 'item':
        out.push(`<li id="${id}">${words(b)}</li>`);
        break;
      case 'quote':
        out.push(`<blockquote id="${id}"><p>${words(b)}</p></blockquote>`);
        break;
      case 'pre':
        out.push(`<pre id="${id}">${words(b)}</pre>`);
        break;
      case 'cell':
        out.push(`<p class="cell" id="${id}">${words(b)}</p>`);
        break;
      default:
        out.push(`<p${role} id="${id}">${words(b)}</p>`);
    }
  });
  close();
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="${esc(language)}" xml:lang="${esc(language)}">
<head>
<meta charset="UTF-8"/>
<title>${esc(p.title)}</title>
<link rel="stylesheet" type="text/css" href="style.css"/>
</head>
<body>
<section id="${sectionId(p.page)}">
${out.join('\n')}
</section>
</body>
</html>
`;
}

export interface Clip {
  /** Fragment id in the content document. */
  id: string;
  beginMs: number;
  endMs: number;
}

/** The Media Overlay of one content document: one <par> per word, clips into one audio file. */
export function smil(contentHref: string, sectionFragment: string, audioHref: string, clips: Clip[]): string {
  const pars = clips.map(
    (c, i) => `<par id="p${i + 1}"><text src="${esc(contentHref)}#${c.id}"/><audio src="${esc(audioHref)}" clipBegin="${clock(c.beginMs)}" clipEnd="${clock(c.endMs)}"/></par>`,
  );
  return `<?xml version="1.0" encoding="UTF-8"?>
<smil xmlns="http://www.w3.org/ns/SMIL" xmlns:epub="http://www.idpf.org/2007/ops" version="3.0">
<body>
<seq id="s1" epub:textref="${esc(contentHref)}#${sectionFragment}">
${pars.join('\n')}
</seq>
</body>
</smil>
`;
}

export interface NavEntry {
  title: string;
  href: string;
  level: number;
}

/** The nav document: the source's table of contents as nested lists (levels may skip; a skip nests one deeper). */
export function navXhtml(title: string, language: string, entries: NavEntry[]): string {
  const out: string[] = [];
  // Levels of the lists open; each open list's last <li> is still open.
  const stack: number[] = [];
  for (const e of entries) {
    while (stack.length > 1 && e.level < stack[stack.length - 1]!) {
      stack.pop();
      out.push('</li></ol>');
    }
    if (!stack.length || e.level > stack[stack.length - 1]!) {
      out.push('<ol>');
      stack.push(e.level);
    } else out.push('</li>');
    out.push(`<li><a href="${esc(e.href)}">${esc(e.title)}</a>`);
  }
  for (let i = 0; i < stack.length; i++) out.push('</li></ol>');
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="${esc(language)}" xml:lang="${esc(language)}">
<head>
<meta charset="UTF-8"/>
<title>${esc(title)}</title>
<link rel="stylesheet" type="text/css" href="style.css"/>
</head>
<body>
<nav epub:type="toc" id="toc">
<h1>${esc(title)}</h1>
${out.join('\n')}
</nav>
</body>
</html>
`;
}

export const STYLE_CSS = `body { font-family: serif; line-height: 1.5; margin: 0 5%; }
h1, h2, h3, h4, h5, h6 { font-family: sans-serif; line-height: 1.25; }
blockquote { margin: 1em 2em; font-style: italic; }
pre { white-space: pre-wrap; font-family: monospace; }
.cells p.cell { display: inline-block; margin: 0 1em 0.3em 0; }
figure.page-image { margin: 1em 0; text-align: center; }
p.furniture { font-family: sans-serif; font-size: 0.75em; color: #555555; text-align: right; margin: 0; }
p.footnote { font-size: 0.85em; border-top: 1px solid #999999; padding-top: 0.3em; }
p.caption { font-size: 0.9em; font-style: italic; }
figure.page-image img { max-width: 100%; height: auto; }
/* The word being read (Media Overlays active class), and the document while narration plays. */
.${ACTIVE_CLASS} { background-color: #ffe066; color: #000000; border-radius: 0.2em; }
.${PLAYING_CLASS} { }
`;

export const CONTAINER_XML = `<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles>
<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>
</rootfiles>
</container>
`;

export interface ManifestItem {
  id: string;
  href: string;
  type: string;
  properties?: string;
  overlay?: string;
}

export interface PackageMeta {
  identifier: string;
  title: string;
  author: string | null;
  language: string;
  /** dcterms:modified, YYYY-MM-DDThh:mm:ssZ. */
  modified: string;
  /** media:duration of each overlay, by SMIL item id, in ms; the total is their sum. */
  durations: Array<{ id: string; ms: number }>;
}

export function packageOpf(meta: PackageMeta, manifest: ManifestItem[], spine: string[]): string {
  const total = meta.durations.reduce((s, d) => s + d.ms, 0);
  const items = manifest.map(
    (m) =>
      `<item id="${m.id}" href="${esc(m.href)}" media-type="${m.type}"${m.properties ? ` properties="${m.properties}"` : ''}${m.overlay ? ` media-overlay="${m.overlay}"` : ''}/>`,
  );
  const durations = meta.durations.map((d) => `<meta property="media:duration" refines="#${d.id}">${clock(d.ms)}</meta>`);
  return `<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="book-id" xml:lang="${esc(meta.language)}">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:identifier id="book-id">${esc(meta.identifier)}</dc:identifier>
<dc:title>${esc(meta.title)}</dc:title>
${meta.author ? `<dc:creator id="creator">${esc(meta.author)}</dc:creator>\n` : ''}<dc:language>${esc(meta.language)}</dc:language>
<meta property="dcterms:modified">${meta.modified}</meta>
${durations.join('\n')}
<meta property="media:duration">${clock(total)}</meta>
<meta property="media:active-class">${ACTIVE_CLASS}</meta>
<meta property="media:playback-active-class">${PLAYING_CLASS}</meta>
</metadata>
<manifest>
${items.join('\n')}
</manifest>
<spine>
${spine.map((id) => `<itemref idref="${id}"/>`).join('\n')}
</spine>
</package>
`;
}

/** The nav entries that still point into the book: entries for pages not built are dropped. */
export function navEntries(toc: TocEntry[], hrefOf: (page: number, block?: number) => string | null): NavEntry[] {
  const out: NavEntry[] = [];
  for (const t of toc) {
    const href = hrefOf(t.page, t.block);
    if (href && t.title.trim()) out.push({ title: t.title.trim(), href, level: Math.max(1, t.level) });
  }
  return out;
}
