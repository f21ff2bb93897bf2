// Reading a built EPUB back for the tests: its zip entries (in order, with compression), its
// package metadata, and every Media Overlay clip; and epubcheck's verdict.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseDocument } from 'htmlparser2';
import yauzl from 'yauzl';

export interface ZipEntry {
  name: string;
  stored: boolean;
  data: Buffer;
}

export function readZipEntries(file: string): Promise<ZipEntry[]> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true }, (err, zip) => {
      if (err || !zip) return reject(err);
      const out: ZipEntry[] = [];
      zip.on('entry', (e: yauzl.Entry) => {
        zip.openReadStream(e, (err2, stream) => {
          if (err2 || !stream) return reject(err2);
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            out.push({ name: e.fileName, stored: e.compressionMethod === 0, data: Buffer.concat(chunks) });
            zip.readEntry();
          });
        });
      });
      zip.on('end', () => resolve(out));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

type Node = { type: string; name?: string; attribs?: Record<string, string>; children?: Node[]; data?: string };

export function xml(text: string): Node {
  return parseDocument(text, { xmlMode: true }) as unknown as Node;
}

export function findAll(node: Node, name: string, out: Node[] = []): Node[] {
  if (node.name === name) out.push(node);
  for (const c of node.children ?? []) findAll(c, name, out);
  return out;
}

export function textOf(node: Node): string {
  return node.type === 'text' ? (node.data ?? '') : (node.children ?? []).map(textOf).join('');
}

/** H:MM:SS.mmm (or any SMIL clock value this builder writes) → seconds. */
export function parseClock(v: string): number {
  const m = /^(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$/.exec(v);
  if (m) return Number(m[1] ?? 0) * 3600 + Number(m[2]) * 60 + Number(m[3]);
  const s = /^(\d+(?:\.\d+)?)s$/.exec(v);
  if (s) return Number(s[1]);
  throw new Error(`not a clock value: ${v}`);
}

export interface OverlayClip {
  smil: string;
  content: string;
  id: string;
  audio: string;
  begin: number;
  end: number;
}

export interface BookView {
  entries: ZipEntry[];
  files: Map<string, Buffer>;
  opf: Node;
  meta: (property: string, refines?: string) => string | null;
  /** Every SMIL's clips, in spine order. */
  overlays: Array<{ id: string; smil: string; content: string; clips: OverlayClip[] }>;
  spine: string[];
  text(name: string): string;
}

export async function inspectEpub(file: string): Promise<BookView> {
  const entries = await readZipEntries(file);
  const files = new Map(entries.map((e) => [e.name, e.data]));
  const text = (name: string) => {
    const b = files.get(name);
    if (!b) throw new Error(`${name} is not in the book`);
    return b.toString('utf8');
  };
  const rootfile = findAll(xml(text('META-INF/container.xml')), 'rootfile')[0]!.attribs!['full-path']!;
  const base = rootfile.includes('/') ? rootfile.slice(0, rootfile.lastIndexOf('/') + 1) : '';
  const opf = xml(text(rootfile));
  const metas = findAll(opf, 'meta');
  const meta = (property: string, refines?: string) => {
    const m = metas.find((x) => x.attribs?.property === property && (refines ? x.attribs?.refines === refines : !x.attribs?.refines));
    return m ? textOf(m).trim() : null;
  };
  const items = new Map(findAll(opf, 'item').map((i) => [i.attribs!.id!, i.attribs!]));
  const spine = findAll(opf, 'itemref').map((r) => base + items.get(r.attribs!.idref!)!.href!);
  const overlays: BookView['overlays'] = [];
  for (const ref of findAll(opf, 'itemref')) {
    const item = items.get(ref.attribs!.idref!)!;
    if (!item['media-overlay']) continue;
    const smilItem = items.get(item['media-overlay'])!;
    const smilName = base + smilItem.href!;
    const clips = findAll(xml(text(smilName)), 'par').map((par) => {
      const t = findAll(par, 'text')[0]!.attribs!.src!;
      const a = findAll(par, 'audio')[0]!.attribs!;
      const [content, id] = t.split('#') as [string, string];
      return { smil: smilName, content: base + content, id, audio: base + a.src!, begin: parseClock(a.clipBegin!), end: parseClock(a.clipEnd!) };
    });
    overlays.push({ id: item['media-overlay'], smil: smilName, content: base + item.href!, clips });
  }
  return { entries, files, opf, meta, overlays, spine, text };
}

/** epubcheck's summary line; the Debian package installs the jar as /usr/bin/epubcheck. A big stack: its reading-order check recurses per overlay reference and overflows the default on whole books. */
export async function epubcheck(file: string): Promise<{ summary: string; output: string }> {
  const jar = '/usr/share/java/epubcheck.jar';
  const run = promisify(execFile);
  const r = await run('java', ['-Xss256m', '-jar', jar, file], { maxBuffer: 64 * 1024 * 1024 }).catch((e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '' }));
  const output = `${r.stdout}\n${r.stderr}`;
  const summary = /Messages: .*/.exec(output)?.[0] ?? 'no summary';
  return { summary, output };
}
