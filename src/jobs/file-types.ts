// Content types of the files jobs make, by extension: what downloads are labelled with and
// what the store records.
import path from 'node:path';

const CONTENT_TYPES: Record<string, string> = {
  '.mp3': 'audio/mpeg',
  '.m4b': 'audio/mp4',
  '.m4a': 'audio/mp4',
  '.mp4': 'video/mp4',
  '.zip': 'application/zip',
  '.epub': 'application/epub+zip',
  '.json': 'application/json',
  '.vtt': 'text/vtt; charset=utf-8',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
};

/** Types a browser may show in place; anything else from a job is sent as an attachment. */
export const INLINE_TYPES = /^(audio|video|image)\/|^application\/json$|^text\/vtt/;

export function contentTypeFor(file: string): string {
  return CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}
