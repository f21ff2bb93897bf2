// Plain text and Markdown → paragraphs of speakable text, and the same mapped to the
// document model (one page; headings feed the table of contents).
import fs from 'node:fs';
import { makeBlock, type DocBlock, type DocumentModel, type TocEntry } from './types.ts';

export interface TextBlockKind {
  kind: 'heading' | 'paragraph' | 'item' | 'quote';
  level?: number;
}

export interface TextDocument {
  title: string | null;
  /** Paragraphs (or headings) in reading order, whitespace-normalised. */
  blocks: string[];
  /** What each block is, parallel to `blocks`. */
  kinds: TextBlockKind[];
}

export async function readTextModel(file: string, contentType: string): Promise<DocumentModel> {
  const doc = await readTextDocument(file, contentType);
  const blocks: DocBlock[] = [];
  const toc: TocEntry[] = [];
  doc.blocks.forEach((text, i) => {
    const k = doc.kinds[i] ?? { kind: 'paragraph' };
    const block = makeBlock(k.kind, text, k.level);
    if (!block) return;
    if (k.kind === 'heading') toc.push({ title: block.text, page: 0, block: blocks.length, level: k.level ?? 1 });
    blocks.push(block);
  });
  return {
    format: contentType.startsWith('text/markdown') ? 'markdown' : 'text',
    path: file,
    title: doc.title,
    author: null,
    language: null,
    pages: [{ index: 0, blocks }],
    toc,
  };
}

export async function readTextDocument(file: string, contentType: string): Promise<TextDocument> {
  const raw = (await fs.promises.readFile(file, 'utf8')).replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  return contentType.startsWith('text/markdown') ? parseMarkdown(raw) : parsePlainText(raw);
}

export function parsePlainText(raw: string): TextDocument {
  const blocks = raw
    .split(/\n\s*\n/)
    .map((b) => b.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
  return { title: null, blocks, kinds: blocks.map(() => ({ kind: 'paragraph' as const })) };
}

/** Keeps the structure (headings and paragraphs as blocks), strips formatting that is not spoken. */
export function parseMarkdown(raw: string): TextDocument {
  const blocks: string[] = [];
  const kinds: TextBlockKind[] = [];
  let title: string | null = null;
  let para: string[] = [];
  let paraKind: TextBlockKind['kind'] = 'paragraph';
  let inFence = false;
  const flush = () => {
    const text = inline(para.join(' ')).replace(/\s+/g, ' ').trim();
    if (text) {
      blocks.push(text);
      kinds.push({ kind: paraKind });
    }
    para = [];
    paraKind = 'paragraph';
  };
  for (const line of raw.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) {
      // Code is not prose: a listener gains nothing from hearing it spelled out.
      flush();
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      const text = inline(heading[2]!).trim();
      if (text) {
        if (title === null && heading[1]!.length === 1) title = text;
        blocks.push(text);
        kinds.push({ kind: 'heading', level: heading[1]!.length });
      }
      continue;
    }
    if (/^\s*$/.test(line) || /^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      continue;
    }
    if (/^\s*\|?\s*:?-{3,}/.test(line)) continue; // table separator row
    const item = /^\s*(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      flush();
      paraKind = 'item';
      para.push(item[1]!);
      continue;
    }
    if (para.length === 0 && /^\s*>/.test(line)) paraKind = 'quote';
    para.push(line.replace(/^\s*>\s?/, '').replace(/^\s*\|(.*)\|\s*$/, (_, cells: string) => cells.split('|').map((c) => c.trim()).join(', ')));
  }
  flush();
  return { title, blocks, kinds };
}

function inline(s: string): string {
  return s
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1') // images → alt text
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1') // links → their text
    .replace(/\[([^\]]+)\]\[[^\]]*\]/g, '$1')
    .replace(/<\/?[A-Za-z][^>]*>/g, '') // inline HTML tags
    .replace(/`([^`]+)`/g, '$1')
    .replace(/(\*\*|__)(.+?)\1/g, '$2')
    .replace(/(^|[^\w*])[*_]([^*_\s][^*_]*?)[*_](?=[^\w*]|$)/g, '$1$2')
    .replace(/~~(.+?)~~/g, '$1')
    .replace(/\\([\\`*_{}[\]()#+\-.!|])/g, '$1');
}
