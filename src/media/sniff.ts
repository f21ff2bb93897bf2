// Detects what an uploaded file is from its first bytes; the client's filename and
// Content-Type are never trusted for the type (the name only tells Markdown from text).

export type UploadKind = 'document' | 'audio' | 'video';

export interface SniffResult {
  kind: UploadKind;
  contentType: string;
  /** Canonical extension, used for downloads and conversions. */
  ext: string;
}

/** How many leading bytes sniff() wants to see. */
export const SNIFF_BYTES = 8192;

const ascii = (b: Uint8Array, start: number, end: number) => Buffer.from(b.subarray(start, end)).toString('latin1');

export function sniff(head: Uint8Array, originalName: string): SniffResult | null {
  if (head.length >= 5 && ascii(head, 0, 5) === '%PDF-') return { kind: 'document', contentType: 'application/pdf', ext: 'pdf' };

  // EPUB: a ZIP whose first entry is the stored file "mimetype" holding application/epub+zip.
  if (head.length >= 58 && head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) {
    if (ascii(head, 30, 38) === 'mimetype' && ascii(head, 38, 58) === 'application/epub+zip') {
      return { kind: 'document', contentType: 'application/epub+zip', ext: 'epub' };
    }
    // Some EPUB writers store "mimetype" later (against the spec); a ZIP that opens with
    // META-INF/ or declares the EPUB media type in its head is still read as an EPUB, and
    // the reader then fails it with a reason if it is not one.
    const nameLen = head[26]! | (head[27]! << 8);
    const firstName = ascii(head, 30, 30 + nameLen);
    if (firstName.startsWith('META-INF/') || Buffer.from(head).includes('application/epub+zip')) {
      return { kind: 'document', contentType: 'application/epub+zip', ext: 'epub' };
    }
    return null; // other ZIPs (docx, plain archives) are not documents we read
  }

  if (head.length >= 12 && ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 12) === 'WAVE') return { kind: 'audio', contentType: 'audio/wav', ext: 'wav' };
  if (head.length >= 4 && ascii(head, 0, 4) === 'fLaC') return { kind: 'audio', contentType: 'audio/flac', ext: 'flac' };
  if (head.length >= 4 && ascii(head, 0, 4) === 'OggS') return { kind: 'audio', contentType: 'audio/ogg', ext: 'ogg' };
  if (head.length >= 3 && ascii(head, 0, 3) === 'ID3') return { kind: 'audio', contentType: 'audio/mpeg', ext: 'mp3' };
  // MPEG audio frame sync: 11 set bits, layer != reserved.
  if (head.length >= 2 && head[0] === 0xff && (head[1]! & 0xe0) === 0xe0 && (head[1]! & 0x06) !== 0) return { kind: 'audio', contentType: 'audio/mpeg', ext: 'mp3' };
  if (head.length >= 4 && head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3) return { kind: 'video', contentType: 'video/webm', ext: 'webm' };

  // ISO base media (MP4, MOV, M4A): "ftyp" box at offset 4; the major brand says audio or video.
  if (head.length >= 12 && ascii(head, 4, 8) === 'ftyp') {
    const brand = ascii(head, 8, 12);
    if (brand === 'M4A ' || brand === 'M4B ') return { kind: 'audio', contentType: 'audio/mp4', ext: 'm4a' };
    if (brand === 'qt  ') return { kind: 'video', contentType: 'video/quicktime', ext: 'mov' };
    return { kind: 'video', contentType: 'video/mp4', ext: 'mp4' };
  }

  if (looksLikeText(head)) {
    const lower = Buffer.from(head.subarray(0, 512)).toString('utf8').trimStart().toLowerCase();
    // Markup a browser would render is refused: it is not a document type we narrate, and
    // serving it back could run script in the service's origin.
    if (lower.startsWith('<!doctype') || lower.startsWith('<html') || lower.startsWith('<svg') || lower.startsWith('<?xml')) return null;
    const md = /\.(md|markdown|mdown|mkd)$/i.test(originalName);
    return md
      ? { kind: 'document', contentType: 'text/markdown; charset=utf-8', ext: 'md' }
      : { kind: 'document', contentType: 'text/plain; charset=utf-8', ext: 'txt' };
  }
  return null;
}

/** UTF-8 (a multi-byte sequence may be cut at the end of the head) with no NUL or stray control bytes. */
function looksLikeText(b: Uint8Array): boolean {
  if (b.length === 0) return false;
  let i = 0;
  if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) i = 3;
  let control = 0;
  while (i < b.length) {
    const c = b[i]!;
    if (c < 0x80) {
      if (c === 0) return false;
      if (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0c) control++;
      i++;
      continue;
    }
    const len = c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (len === 0 || c >= 0xf8) return false;
    for (let k = 1; k < len; k++) {
      if (i + k >= b.length) return control * 100 < b.length; // cut mid-character at the end
      if ((b[i + k]! & 0xc0) !== 0x80) return false;
    }
    i += len;
  }
  return control * 100 < b.length;
}
