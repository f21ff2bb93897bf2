// EPUB 2 and 3 → document model: one page per spine document (a chapter), its text by block
// elements; TOC from the EPUB 3 nav document or the EPUB 2 NCX; title/author/language from the OPF.
import path from 'node:path/posix';
import { Readable } from 'node:stream';
import { parseDocument } from 'htmlparser2';
import yauzl from 'yauzl';
import { DocumentError, makeBlock, type ByteSource, type BlockKind, type DocBlock, type DocPage, type DocumentModel, type TocEntry } from './types.ts';

// A book bigger than this unpacked is refused: it protects the worker from zip bombs.
const MAX_UNPACKED_BYTES = 512 * 1024 * 1024;

type Node = { type: string; name?: string; attribs?: Record<string, string>; children?: Node[]; data?: string };

export async function readEpub(file: string): Promise<DocumentModel> {
  const entries = await readZip(file);
  const get = (p: string): string | null => entries.get(p)?.toString('utf8') ?? null;
  const { rootfile, opf } = packageOf(get);
  const base = path.dirname(rootfile);
  const resolve = (href: string, from = base) => path.normalize(path.join(from, decodeURIComponent(href.split('#')[0]!)));

  const manifest = new Map<string, { href: string; type: string; props: string }>();
  for (const item of findAll(opf, 'item')) {
    const a = item.attribs ?? {};
    if (a.id && a.href) manifest.set(a.id, { href: resolve(a.href), type: a['media-type'] ?? '', props: a.properties ?? '' });
  }
  const spineEl = findAll(opf, 'spine')[0];
  if (!spineEl) throw new DocumentError('the EPUB package has no spine');

  // DRM lists the encrypted content documents here (font obfuscation lists only fonts).
  const encryption = get('META-INF/encryption.xml');
  const encrypted = new Set(encryption ? findAll(xml(encryption), 'CipherReference').map((c) => path.normalize(decodeURIComponent(c.attribs?.URI ?? ''))) : []);

  const pages: DocPage[] = [];
  const pageOf = new Map<string, number>();
  const anchorsOf = new Map<number, Map<string, number>>();
  for (const ref of findAll(spineEl, 'itemref')) {
    const item = manifest.get(ref.attribs?.idref ?? '');
    if (!item || pageOf.has(item.href)) continue; // some books list one file twice (with a fragment)
    if (!/html|xml/.test(item.type)) continue;
    if (encrypted.has(item.href)) throw new DocumentError('the EPUB is DRM-protected (its chapters are encrypted); upload a DRM-free copy');
    const body = get(item.href);
    if (body === null) throw new DocumentError(`the EPUB spine names ${item.href}, which is not in the book`);
    pageOf.set(item.href, pages.length);
    const { blocks, anchors } = xhtmlBlocks(body);
    anchorsOf.set(pages.length, anchors);
    pages.push({ index: pages.length, href: item.href, blocks });
  }
  if (!pages.some((p) => p.blocks.length)) throw new DocumentError('the EPUB has no text in its spine documents');

  let toc: TocEntry[] = [];
  const nav = [...manifest.values()].find((m) => /(^|\s)nav(\s|$)/.test(m.props));
  const ncx = manifest.get(spineEl.attribs?.toc ?? '') ?? [...manifest.values()].find((m) => m.type === 'application/x-dtbncx+xml');
  const target = (src: string, dir: string) => tocTarget(src, dir, pageOf, anchorsOf);
  if (nav && get(nav.href)) toc = navToc(get(nav.href)!, path.dirname(nav.href), target);
  if (!toc.length && ncx && get(ncx.href)) toc = ncxToc(get(ncx.href)!, path.dirname(ncx.href), target);

  return {
    format: 'epub',
    path: file,
    title: metaOf(opf, 'dc:title'),
    author: metaOf(opf, 'dc:creator'),
    language: metaOf(opf, 'dc:language'),
    pages,
    toc,
  };
}

/** The book's dc:language, from its container and package document alone (the ranges of the ZIP that hold them). */
export async function readEpubLanguage(source: ByteSource): Promise<string | null> {
  const entries = await readZip(source, (name) => /\.(xml|opf)$/i.test(name));
  return metaOf(packageOf((p) => entries.get(p)?.toString('utf8') ?? null).opf, 'dc:language');
}

/** The package document (OPF) the container names. */
function packageOf(get: (p: string) => string | null): { rootfile: string; opf: Node } {
  const container = get('META-INF/container.xml');
  if (!container) throw new DocumentError('the EPUB has no META-INF/container.xml');
  const rootfile = findAll(xml(container), 'rootfile')[0]?.attribs?.['full-path'];
  if (!rootfile) throw new DocumentError('the EPUB container names no package document');
  const opfText = get(rootfile);
  if (!opfText) throw new DocumentError(`the EPUB package document ${rootfile} is missing`);
  return { rootfile, opf: xml(opfText) };
}

function metaOf(opf: Node, name: string): string | null {
  const el = findAll(opf, name)[0];
  const t = el ? text(el).replace(/\s+/g, ' ').trim() : '';
  return t || null;
}

/**
 * A ByteSource as yauzl's random-access reader: the central directory and the wanted entries are
 * read, nothing else. A read that fails (a store's connection cut) is kept in `failure`, so that
 * it fails the read as itself and not as an unreadable EPUB.
 */
class SourceReader extends yauzl.RandomAccessReader {
  failure: Error | null = null;
  constructor(private readonly source: ByteSource) {
    super();
  }
  override _readStreamForRange(start: number, end: number): Readable {
    const source = this.source;
    const kept = (e: Error) => (this.failure ??= e);
    return Readable.from((async function* () {
      for (let at = start; at < end; at += ZIP_READ) {
        let chunk: Uint8Array;
        try {
          chunk = await source.read(at, Math.min(end, at + ZIP_READ));
        } catch (e) {
          throw kept(e as Error);
        }
        yield Buffer.from(chunk);
      }
    })());
  }
}
const ZIP_READ = 1024 * 1024;

/** The text entries of the book (markup, package, navigation), or those `wanted` of them. */
function readZip(file: string | ByteSource, wanted: (name: string) => boolean = () => true): Promise<Map<string, Buffer>> {
  const reader = typeof file === 'string' ? null : new SourceReader(file);
  return new Promise((resolve, reject) => {
    const fail = (e: Error) =>
      reject(reader?.failure ?? (e instanceof DocumentError ? e : new DocumentError(`the file is not a readable EPUB (${e.message.replace(/\s+/g, ' ')})`)));
    const opened = (err: Error | null, zip?: yauzl.ZipFile) => {
      if (err || !zip) return fail(err ?? new Error('cannot open'));
      const out = new Map<string, Buffer>();
      let total = 0;
      zip.on('error', fail);
      zip.on('end', () => resolve(out));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName.endsWith('/') || !/\.(x?html?|xht|xml|opf|ncx)$/i.test(entry.fileName) || !wanted(entry.fileName)) return zip.readEntry();
        if ((entry.generalPurposeBitFlag & 1) !== 0) return fail(new DocumentError('the EPUB is encrypted (DRM); upload a DRM-free copy'));
        total += entry.uncompressedSize;
        if (total > MAX_UNPACKED_BYTES) return fail(new DocumentError('the EPUB unpacks to more than 512 MiB of text'));
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return fail(e ?? new Error('cannot read entry'));
          const parts: Buffer[] = [];
          stream.on('data', (b: Buffer) => parts.push(b));
          stream.on('error', fail);
          stream.on('end', () => {
            out.set(path.normalize(entry.fileName), Buffer.concat(parts));
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    };
    if (typeof file === 'string') yauzl.open(file, { lazyEntries: true, autoClose: true }, opened);
    else yauzl.fromRandomAccessReader(reader!, file.size, { lazyEntries: true, autoClose: true }, opened);
  });
}

const xml = (s: string) => parseDocument(s, { xmlMode: true }) as unknown as Node;
// XHTML in HTML mode (HTML entities such as &nbsp; decoded) but honouring <a/> self-closing tags.
const html = (s: string) => parseDocument(s, { xmlMode: false, recognizeSelfClosing: true, decodeEntities: true }) as unknown as Node;

function findAll(root: Node, name: string): Node[] {
  const out: Node[] = [];
  const walk = (n: Node) => {
    if (n.name && localName(n.name) === localName(name) && (name.includes(':') ? n.name === name || !n.name.includes(':') : true)) out.push(n);
    for (const c of n.children ?? []) walk(c);
  };
  walk(root);
  return out;
}

const localName = (n: string) => n.slice(n.indexOf(':') + 1).toLowerCase();

function text(n: Node): string {
  if (n.type === 'text') return n.data ?? '';
  return (n.children ?? []).map(text).join('');
}

const BLOCKS: Record<string, BlockKind> = {
  p: 'paragraph', div: 'paragraph', section: 'paragraph', article: 'paragraph', aside: 'paragraph', header: 'paragraph', footer: 'paragraph',
  center: 'paragraph', dt: 'paragraph', dd: 'paragraph', figcaption: 'paragraph', caption: 'paragraph', address: 'paragraph', tr: 'cell', th: 'cell', td: 'cell',
  h1: 'heading', h2: 'heading', h3: 'heading', h4: 'heading', h5: 'heading', h6: 'heading', li: 'item', blockquote: 'quote', pre: 'pre',
};
// Not read aloud: metadata, code-like and interactive content, and ruby annotations.
// (label: form labels; SiSU books also use it for paragraph numbers.)
const SKIP = new Set(['head', 'script', 'style', 'noscript', 'label', 'rt', 'rp', 'svg', 'math', 'button', 'select', 'textarea', 'template']);

/**
 * XHTML → blocks: each block element's own text; text beside nested blocks becomes a block of
 * its own. anchors: element id (or a name) → the block it starts, for TOC links with a fragment.
 */
export function xhtmlBlocks(source: string): { blocks: DocBlock[]; anchors: Map<string, number> } {
  const blocks: DocBlock[] = [];
  const anchors = new Map<string, number>();
  const root = html(source);
  const body = findAll(root, 'body')[0] ?? root;
  const stack: Array<{ kind: BlockKind; level?: number; buf: string[] }> = [{ kind: 'paragraph', buf: [] }];
  const flush = () => {
    const top = stack.at(-1)!;
    const block = makeBlock(top.kind, top.buf.join(''), top.level);
    if (block) blocks.push(block);
    top.buf = [];
  };
  const walk = (n: Node) => {
    if (n.type === 'text') {
      stack.at(-1)!.buf.push(n.data ?? '');
      return;
    }
    if (n.type !== 'tag' && n.type !== 'root') return;
    const name = localName(n.name ?? '');
    if (SKIP.has(name)) return;
    const kind = BLOCKS[name];
    if (kind) flush();
    for (const id of [n.attribs?.id, name === 'a' ? n.attribs?.name : undefined]) if (id && !anchors.has(id)) anchors.set(id, blocks.length);
    if (name === 'br' || name === 'hr') {
      stack.at(-1)!.buf.push(' ');
      return;
    }
    if (name === 'img') {
      // Alt text is the image's words for a listener.
      const alt = n.attribs?.alt?.trim();
      if (alt) stack.at(-1)!.buf.push(` ${alt} `);
      return;
    }
    if (!kind) {
      for (const c of n.children ?? []) walk(c);
      return;
    }
    stack.push({ kind, level: kind === 'heading' ? Number(name[1]) : undefined, buf: [] });
    for (const c of n.children ?? []) walk(c);
    flush();
    stack.pop();
  };
  for (const c of body.children ?? []) walk(c);
  flush();
  // An anchor after the last block (or in an empty page) points at the last block, if any.
  for (const [id, b] of anchors) if (b >= blocks.length) anchors.set(id, Math.max(0, blocks.length - 1));
  return { blocks, anchors };
}

type Target = (src: string, dir: string) => { page: number; block?: number } | null;

function tocTarget(src: string, dir: string, pageOf: Map<string, number>, anchorsOf: Map<number, Map<string, number>>): { page: number; block?: number } | null {
  if (!src) return null;
  const [file, fragment] = src.split('#') as [string, string | undefined];
  const page = pageOf.get(path.normalize(path.join(dir, decodeURIComponent(file))));
  if (page === undefined) return null;
  const block = fragment ? anchorsOf.get(page)?.get(decodeURIComponent(fragment)) : undefined;
  return block === undefined || block === 0 ? { page } : { page, block };
}

/** EPUB 2: navMap → navPoints, nested. */
function ncxToc(source: string, dir: string, target: Target): TocEntry[] {
  const toc: TocEntry[] = [];
  const walk = (n: Node, level: number) => {
    for (const c of n.children ?? []) {
      if (!c.name || localName(c.name) !== 'navpoint') continue;
      const label = (c.children ?? []).find((x) => x.name && localName(x.name) === 'navlabel');
      const content = (c.children ?? []).find((x) => x.name && localName(x.name) === 'content');
      const title = label ? text(label).replace(/\s+/g, ' ').trim() : '';
      const to = target(content?.attribs?.src ?? '', dir);
      if (title && to) toc.push({ title, ...to, level });
      walk(c, level + 1);
    }
  };
  const map = findAll(xml(source), 'navMap')[0];
  if (map) walk(map, 1);
  return toc;
}

/** EPUB 3: the nav element with epub:type="toc" → nested ol/li/a. */
function navToc(source: string, dir: string, target: Target): TocEntry[] {
  const navs = findAll(html(source), 'nav');
  const nav = navs.find((n) => (n.attribs?.['epub:type'] ?? '').split(/\s+/).includes('toc')) ?? navs[0];
  if (!nav) return [];
  const toc: TocEntry[] = [];
  const walkList = (ol: Node, level: number) => {
    for (const li of ol.children ?? []) {
      if (!li.name || localName(li.name) !== 'li') continue;
      const a = (li.children ?? []).find((x) => x.name && ['a', 'span'].includes(localName(x.name)));
      const title = a ? text(a).replace(/\s+/g, ' ').trim() : '';
      const to = target(a?.attribs?.href ?? '', dir);
      if (title && to) toc.push({ title, ...to, level });
      for (const sub of (li.children ?? []).filter((x) => x.name && localName(x.name) === 'ol')) walkList(sub, level + 1);
    }
  };
  for (const ol of (nav.children ?? []).filter((x) => x.name && localName(x.name) === 'ol')) walkList(ol, 1);
  return toc;
}
