// A fake XMLHttpRequest for the upload component tests (the DropZone uploads with XHR for its
// progress events): every upload answers 201 with the record `record` makes for its file.
let uploaded = 0;

export function fakeXhr(record: (file: File, id: string) => object) {
  return class FakeXhr {
    status = 0;
    responseText = '';
    upload: { onprogress: ((e: { lengthComputable: boolean; loaded: number; total: number }) => void) | null } = { onprogress: null };
    onload: (() => void) | null = null;
    onerror: (() => void) | null = null;
    onabort: (() => void) | null = null;
    open() {}
    setRequestHeader() {}
    abort() {}
    send(form: FormData) {
      const file = form.get('file') as File;
      uploaded++;
      const id = `00000000-0000-4000-8000-${String(uploaded).padStart(12, '0')}`;
      setTimeout(() => {
        this.upload.onprogress?.({ lengthComputable: true, loaded: file.size, total: file.size });
        this.status = 201;
        this.responseText = JSON.stringify({ owner: null, created_at: '2026-01-01T10:00:00.000Z', ...record(file, id) });
        this.onload?.();
      }, 0);
    }
  };
}
