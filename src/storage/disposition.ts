// Content-Disposition for a download: an ASCII fallback name and the exact UTF-8 one (RFC 6266).
// The API sets it on the files it sends, and asks the object store to set it on presigned GETs.
export function contentDisposition(filename: string, inline: boolean): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `${inline ? 'inline' : 'attachment'}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
