// Small real documents made byte by byte for tests: PDFs (text in Helvetica at known
// positions, an outline, an encrypted and a text-less "scanned" variant) and EPUB 3 books
// (stored ZIP, nav TOC). Tests can then assert exact words, boxes and chapters.
import zlib from 'node:zlib';

export interface PdfLine {
  text: string;
  /** Baseline position in PDF user space (origin bottom-left), points. */
  x: number;
  y: number;
  size: number;
}

export interface PdfSpec {
  pages: PdfLine[][];
  title?: string;
  author?: string;
  /** The catalog's Lang (the document's natural language; pdf.js reports it as info.Language). */
  language?: string;
  outline?: Array<{ title: string; page: number }>;
  /** A page image only: a grey rectangle where the text would be, no text layer. */
  scanned?: boolean;
  /** A standard security handler whose user password is not empty: pdfjs asks for a password. */
  encrypted?: boolean;
  /** An unused stream object of this many bytes (an attachment no page shows): a large file. */
  padBytes?: number;
}

export const PAGE_W = 612;
export const PAGE_H = 792;

const pdfString = (s: string) => `(${s.replace(/[\\()]/g, (c) => `\\${c}`)})`;

export function makePdf(spec: PdfSpec): Buffer {
  const objs: string[] = [];
  const add = (body: string) => {
    objs.push(body);
    return objs.length;
  };
  const catalog = add('');
  const pagesObj = add('');
  const font = add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  const pageIds: number[] = [];
  for (const lines of spec.pages) {
    const ops = spec.scanned
      ? lines.map((l) => `0.3 g ${l.x} ${l.y} ${l.text.length * l.size * 0.5} ${l.size} re f`).join('\n')
      : lines.map((l) => `BT /F1 ${l.size} Tf ${l.x} ${l.y} Td ${pdfString(l.text)} Tj ET`).join('\n');
    const content = add(`<< /Length ${Buffer.byteLength(ops, 'latin1')} >>\nstream\n${ops}\nendstream`);
    pageIds.push(add(`<< /Type /Page /Parent ${pagesObj} 0 R /MediaBox [0 0 ${PAGE_W} ${PAGE_H}] /Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${content} 0 R >>`));
  }
  objs[pagesObj - 1] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pageIds.length} >>`;
  let outlines = '';
  if (spec.outline?.length) {
    const root = add('');
    const first = objs.length + 1;
    spec.outline.forEach((o, i) => {
      const id = first + i;
      const links = `${i > 0 ? `/Prev ${id - 1} 0 R ` : ''}${i < spec.outline!.length - 1 ? `/Next ${id + 1} 0 R ` : ''}`;
      add(`<< /Title ${pdfString(o.title)} /Parent ${root} 0 R ${links}/Dest [${pageIds[o.page]} 0 R /XYZ 0 ${PAGE_H} 0] >>`);
    });
    objs[root - 1] = `<< /Type /Outlines /First ${first} 0 R /Last ${first + spec.outline.length - 1} 0 R /Count ${spec.outline.length} >>`;
    outlines = ` /Outlines ${root} 0 R /PageMode /UseOutlines`;
  }
  objs[catalog - 1] = `<< /Type /Catalog /Pages ${pagesObj} 0 R${outlines}${spec.language ? ` /Lang ${pdfString(spec.language)}` : ''} >>`;
  const infoParts = [spec.title ? `/Title ${pdfString(spec.title)}` : '', spec.author ? `/Author ${pdfString(spec.author)}` : ''].join(' ');
  const info = add(`<< ${infoParts} /Producer (lectern test) >>`);
  if (spec.padBytes) add(`<< /Length ${spec.padBytes} >>\nstream\n${'x'.repeat(spec.padBytes)}\nendstream`);
  let encrypt = '';
  if (spec.encrypted) {
    const hex = (n: number) => Buffer.alloc(n, 0xab).toString('hex');
    const enc = add(`<< /Filter /Standard /V 1 /R 2 /O <${hex(32)}> /U <${hex(32)}> /P -4 >>`);
    encrypt = ` /Encrypt ${enc} 0 R /ID [<${hex(16)}> <${hex(16)}>]`;
  }

  let out = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets: number[] = [];
  objs.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objs.length + 1} /Root ${catalog} 0 R /Info ${info} 0 R${encrypt} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** A stored (uncompressed) ZIP; `mimetype` first, as EPUB requires. */
export function makeZip(files: Array<[string, string | Buffer]>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of files) {
    const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    const nameBuf = Buffer.from(name, 'utf8');
    const crc = zlib.crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBuf.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBuf.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBuf, data);
    centrals.push(central, nameBuf);
    offset += 30 + nameBuf.length + data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

export interface EpubSpec {
  title: string;
  author: string;
  language: string;
  chapters: Array<{ title: string; paragraphs: string[] }>;
  /** More files for the ZIP (e.g. META-INF/encryption.xml). */
  extra?: Array<[string, string]>;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** An EPUB 3 book: OPF metadata, a nav document (not in the spine) and one XHTML file per chapter. */
export function makeEpub3(spec: EpubSpec): Buffer {
  const chapters = spec.chapters.map((c, i) => ({ ...c, href: `text/ch${i + 1}.xhtml`, id: `ch${i + 1}` }));
  const opf = `<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="uid">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="uid">urn:uuid:00000000-0000-4000-8000-000000000001</dc:identifier>
    <dc:title>${esc(spec.title)}</dc:title>
    <dc:creator>${esc(spec.author)}</dc:creator>
    <dc:language>${spec.language}</dc:language>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
${chapters.map((c) => `    <item id="${c.id}" href="${c.href}" media-type="application/xhtml+xml"/>`).join('\n')}
  </manifest>
  <spine>
${chapters.map((c) => `    <itemref idref="${c.id}"/>`).join('\n')}
  </spine>
</package>`;
  const nav = `<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Contents</title></head>
<body><nav epub:type="toc"><h1>Contents</h1><ol>
${chapters.map((c) => `<li><a href="${c.href}">${esc(c.title)}</a></li>`).join('\n')}
</ol></nav></body></html>`;
  const files: Array<[string, string]> = [
    ['mimetype', 'application/epub+zip'],
    ['META-INF/container.xml', `<?xml version="1.0"?>\n<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`],
    ['OEBPS/content.opf', opf],
    ['OEBPS/nav.xhtml', nav],
    ...chapters.map((c): [string, string] => [
      `OEBPS/${c.href}`,
      `<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>${esc(c.title)}</title><style>p { margin: 0 }</style></head>\n<body><section><h1>${esc(c.title)}</h1>\n${c.paragraphs.map((p) => `<p>${p}</p>`).join('\n')}\n</section></body></html>`,
    ]),
    ...(spec.extra ?? []),
  ];
  return makeZip(files);
}

// ---------------------------------------------------------------------------------------
// Real page layouts drawn with pdf-lib (a PDF-writing library, as producers use): running
// heads with chapter titles and page numbers, a footer repeated on every page, a contents
// page with dot leaders, hyphenated line ends, two columns, a footnote with its superscript
// mark, and a figure with its caption. `fieldGuide()` returns the PDF and what a person
// reads from it, in order.

export interface LaidText {
  text: string;
  /** Left edge (or right edge with align 'right'), baseline from the bottom, points. */
  x: number;
  y: number;
  size: number;
  font?: 'serif' | 'italic' | 'sans';
  align?: 'right' | 'center';
}

export interface LayoutPage {
  texts: LaidText[];
  /** Drawn rectangles (a figure): x, y (bottom), width, height. */
  rects?: Array<[number, number, number, number]>;
}

export async function makeLayoutPdf(pages: LayoutPage[], meta: { title?: string } = {}): Promise<Buffer> {
  const { PDFDocument, StandardFonts, rgb } = await import('pdf-lib');
  const doc = await PDFDocument.create();
  if (meta.title) doc.setTitle(meta.title);
  const fonts = {
    serif: await doc.embedFont(StandardFonts.TimesRoman),
    italic: await doc.embedFont(StandardFonts.TimesRomanItalic),
    sans: await doc.embedFont(StandardFonts.Helvetica),
  };
  for (const p of pages) {
    const page = doc.addPage([PAGE_W, PAGE_H]);
    for (const [x, y, width, height] of p.rects ?? []) page.drawRectangle({ x, y, width, height, borderColor: rgb(0.3, 0.3, 0.3), borderWidth: 1, color: rgb(0.9, 0.9, 0.9) });
    for (const t of p.texts) {
      const font = fonts[t.font ?? 'serif'];
      const w = font.widthOfTextAtSize(t.text, t.size);
      const x = t.align === 'right' ? t.x - w : t.align === 'center' ? t.x - w / 2 : t.x;
      page.drawText(t.text, { x, y: t.y, size: t.size, font });
    }
  }
  return Buffer.from(await doc.save({ useObjectStreams: false }));
}

export interface FieldGuide {
  pdf: Buffer;
  /** Every word a listener hears, in reading order (source tokens). */
  spoken: string[];
  /** Printed words that must never be heard: running heads, footers, leaders, page references. */
  furniture: string[];
}

/** A six-page booklet with the layouts of issue 16. Body text 11 pt Times, 14 pt leading. */
export async function fieldGuide(): Promise<FieldGuide> {
  const title = 'A Field Guide to Quiet Rooms';
  const L = 72;
  const R = 540;
  const lines = (x: number, y: number, list: string[], size = 11, lead = 14): LaidText[] => list.map((text, i) => ({ text, x, y: y - i * lead, size }));
  const head = (chapter: string, n: number): LaidText[] => [
    { text: chapter, x: L, y: 750, size: 9, font: 'italic' },
    { text: String(n), x: R, y: 750, size: 9, align: 'right' },
    { text: title, x: PAGE_W / 2, y: 40, size: 8, font: 'sans', align: 'center' },
  ];
  const leader = (entry: string, page: string, y: number, size = 11): LaidText[] => {
    const dots = ' .'.repeat(Math.max(3, Math.round((360 - entry.length * 5.5) / 5.5)));
    return [
      { text: `${entry}${dots}`, x: L, y, size },
      { text: page, x: R, y, size, align: 'right' },
    ];
  };
  const pages: LayoutPage[] = [
    {
      texts: [
        { text: title, x: L, y: 680, size: 24 },
        { text: 'Contents', x: L, y: 620, size: 16 },
        ...leader('1 Beginnings', '2', 590),
        ...leader('2 Two Columns', '4', 572),
        ...leader('3 Notes and Figures', '5', 554),
        { text: 'i', x: PAGE_W / 2, y: 40, size: 9, align: 'center' },
      ],
    },
    {
      texts: [
        ...head('Chapter 1: Beginnings', 2),
        { text: '1 Beginnings', x: L, y: 690, size: 18 },
        ...lines(L, 650, [
          'Every quiet room starts with a door that closes well. A good exam-',
          'ple is the reading room of an old library, where the well-',
          'known hush settles over the tables by late afternoon.',
        ]),
        ...lines(L, 596, ['The well-known rule is simple: remove what hums, soften what echoes,', 'and leave the windows for last.']),
      ],
    },
    {
      texts: [
        // The producer wrote the footnote first and the running head in the middle.
        { text: '1 Quiet here means no sound above a whisper.', x: L, y: 96, size: 8 },
        ...lines(L, 700, ['Carpets take the edge off footsteps. Curtains hold the street at bay,', 'and shelves full of books scatter whatever sound is left.']),
        { text: 'A room like this stays quiet', x: L, y: 658, size: 11 },
        { text: '1', x: L + 122, y: 662, size: 6 },
        ...head('Chapter 1: Beginnings', 3),
        { text: 'for years.', x: L + 127, y: 658, size: 11 },
      ],
    },
    {
      texts: [
        ...head('Chapter 2: Two Columns', 4),
        // The right column comes first in the content stream: the layout, not the producer, decides.
        ...lines(316, 650, [
          'sation into the right column.',
          'The right column comes second',
          'and finishes the thought before',
          'the page turns over to the next.',
        ]),
        { text: '2 Two Columns', x: L, y: 690, size: 18 },
        ...lines(L, 650, [
          'The left column opens this page.',
          'It runs down the page first, as',
          'any reader expects, and a long',
          'sentence may carry its conver-',
        ]),
      ],
    },
    {
      texts: [
        ...head('Chapter 3: Notes and Figures', 5),
        { text: '3 Notes and Figures', x: L, y: 690, size: 18 },
        ...lines(L, 650, ['A drawing helps more than a paragraph here.']),
        { text: 'Figure 1: The quiet room, drawn from above.', x: L, y: 462, size: 9 },
        ...lines(L, 430, ['After the figure the text goes on where it stopped.']),
      ],
      rects: [[L, 480, 300, 150]],
    },
    {
      texts: [
        ...head('Chapter 3: Notes and Figures', 6),
        ...lines(L, 700, ['The last page ends the booklet with a single thought: quiet is kept,', 'not found.']),
      ],
    },
  ];
  const words = (s: string) => s.split(/\s+/).filter(Boolean);
  const spoken = [
    ...words(`${title} Contents 1 Beginnings 2 Two Columns 3 Notes and Figures`),
    ...words('1 Beginnings Every quiet room starts with a door that closes well. A good example is the reading room of an old library, where the well-known hush settles over the tables by late afternoon.'),
    ...words('The well-known rule is simple: remove what hums, soften what echoes, and leave the windows for last.'),
    ...words('Carpets take the edge off footsteps. Curtains hold the street at bay, and shelves full of books scatter whatever sound is left. A room like this stays quiet for years.'),
    ...words('1 Quiet here means no sound above a whisper.'),
    ...words('2 Two Columns The left column opens this page. It runs down the page first, as any reader expects, and a long sentence may carry its conversation into the right column.'),
    ...words('The right column comes second and finishes the thought before the page turns over to the next.'),
    ...words('3 Notes and Figures A drawing helps more than a paragraph here. Figure 1: The quiet room, drawn from above. After the figure the text goes on where it stopped.'),
    ...words('The last page ends the booklet with a single thought: quiet is kept, not found.'),
  ];
  return { pdf: await makeLayoutPdf(pages, { title }), spoken, furniture: ['Chapter', '.', 'i'] };
}
