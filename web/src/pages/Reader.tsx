// The read-along view of a finished job: the narration with the spoken word highlighted,
// click a word to hear from there, space to play/pause, arrows to seek, and the presenter
// window for lip-sync jobs. Everything comes from the job's files (timeline.json, the
// narration audio, presenter.mp4), fetched with the token and played from blob: URLs, or straight
// from the store when the service keeps files in an S3 bucket (presigned links; see fileUrl).
import { useEffect, useMemo, useRef, useState, type RefObject } from 'react';
import { api, apiJson, fileUrl } from '../api.ts';
import { ErrorBox } from '../components/ui.tsx';
import { PresenterWindow } from '../components/PresenterWindow.tsx';
import { duration, jobTitle } from '../format.ts';
import { Link } from '../router.tsx';
import { PRESENTER_FILE, TIMELINE_FILE, type Job, type Timeline, type TimelineWord } from '../types.ts';
import { DownloadButton } from './JobPage.tsx';

const SEEK_SECONDS = 5;

/** Indices of the words with a time (a read-along job's recording may skip some). */
export function timedIndices(words: TimelineWord[]): number[] {
  return words.flatMap((w, i) => (w.start !== null ? [i] : []));
}

/**
 * Index of the word being spoken at `t` (the last one started), or -1 before the first.
 * Skipped words (no time) are never the one spoken; pass `timed` (timedIndices) when calling often.
 */
export function wordAt(words: TimelineWord[], t: number, timed: number[] = timedIndices(words)): number {
  let lo = 0;
  let hi = timed.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (words[timed[mid]!]!.start! <= t) {
      found = timed[mid]!;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

export function narrationFile(job: Job): string | null {
  const files = job.config_json.result?.files ?? [];
  return files.find((f) => /^narration\.(mp3|m4b|m4a|wav|ogg)$/i.test(f)) ?? files.find((f) => /\.(mp3|m4b|m4a)$/i.test(f)) ?? null;
}

export function Reader({ id }: { id: string }) {
  const [job, setJob] = useState<Job | null>(null);
  const [timeline, setTimeline] = useState<Timeline | null>(null);
  const [audioUrl, setAudioUrl] = useState<string | null>(null);
  const [presenterUrl, setPresenterUrl] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    let cancelled = false;
    const urls: string[] = [];
    (async () => {
      const j = await api.getJob(id);
      if (cancelled) return;
      setJob(j);
      const files = j.config_json.result?.files ?? [];
      if (!files.includes(TIMELINE_FILE)) throw new Error('This job has no read-along timeline (it is not finished, or its pipeline makes none).');
      const audio = narrationFile(j);
      if (!audio) throw new Error('This job has no narration audio to read along with.');
      const [tl, a, p] = await Promise.all([
        apiJson<Timeline>(api.jobFileUrl(id, TIMELINE_FILE)),
        fileUrl(api.jobFileUrl(id, audio)),
        files.includes(PRESENTER_FILE) ? fileUrl(api.jobFileUrl(id, PRESENTER_FILE)) : Promise.resolve(null),
      ]);
      for (const f of [a, p]) if (f?.local) urls.push(f.url);
      if (cancelled) return;
      setTimeline(tl);
      setAudioUrl(a.url);
      setPresenterUrl(p?.url ?? null);
    })().catch((err) => !cancelled && setError(err));
    return () => {
      cancelled = true;
      urls.forEach((u) => URL.revokeObjectURL(u));
    };
  }, [id]);

  return (
    <section aria-labelledby="reader-heading" className="reader">
      <p>
        <Link to={`/jobs/${id}`}>← Job details</Link>
      </p>
      <h1 id="reader-heading">{timeline?.title || (job ? jobTitle(job) : 'Reader')}</h1>
      {timeline?.author ? <p className="muted">{timeline.author}</p> : null}
      {job?.download_url && job.config_json.result?.output?.endsWith('.zip') ? (
        <p>
          <DownloadButton job={job} label="Download the offline reader (ZIP)" />
        </p>
      ) : null}
      <ErrorBox error={error} title="The reader cannot open" />
      {!error && (!timeline || !audioUrl) ? <p aria-live="polite">Loading the narration…</p> : null}
      {timeline && audioUrl ? <ReadAlong timeline={timeline} audioUrl={audioUrl} presenterUrl={presenterUrl} /> : null}
    </section>
  );
}

function ReadAlong({ timeline, audioUrl, presenterUrl }: { timeline: Timeline; audioUrl: string; presenterUrl: string | null }) {
  const audioRef = useRef<HTMLAudioElement>(null);
  const videoRef = useRef<HTMLVideoElement>(null);
  const textRef = useRef<HTMLDivElement>(null);
  const words = timeline.words;
  const pages = useMemo(() => [...new Set(words.map((w) => w.page))].sort((a, b) => a - b), [words]);
  const [page, setPage] = useState(pages[0] ?? 1);
  const { current, time } = useFollowAudio(audioRef, videoRef, words, setPage);
  useHighlight(textRef, current, page);
  useSeekKeys(audioRef, timeline.duration);

  const seekTo = (i: number) => {
    const audio = audioRef.current;
    const w = words[i];
    if (!audio || !w || w.start === null) return;
    audio.currentTime = w.start + 0.001;
    void audio.play().catch(() => undefined);
  };

  const goPage = (p: number) => {
    setPage(p);
    const first = words.find((w) => w.page === p && w.start !== null);
    const audio = audioRef.current;
    if (audio && first && first.start !== null && audio.paused) audio.currentTime = first.start + 0.001;
  };

  return (
    <>
      <div className="player">
        <audio ref={audioRef} src={audioUrl} controls preload="auto" aria-label="Narration" />
        <span className="muted small" aria-hidden="true">
          {duration(time)} / {duration(timeline.duration)}
        </span>
      </div>
      <p className="muted small" id="reader-help">
        Click a word to hear from there. Space plays or pauses; ← and → go back or forward {SEEK_SECONDS} seconds.
      </p>
      {pages.length > 1 ? <Pager pages={pages} page={page} onGo={goPage} /> : null}
      <PageText textRef={textRef} words={words} page={page} onWord={seekTo} />
      {presenterUrl ? <PresenterWindow src={presenterUrl} videoRef={videoRef} /> : null}
    </>
  );
}

/**
 * Follows the audio: the playback time, the word being spoken and its page, and the
 * presenter video kept in step. A frame loop while playing (timeupdate alone fires only
 * ~4 times a second).
 */
function useFollowAudio(
  audioRef: RefObject<HTMLAudioElement | null>,
  videoRef: RefObject<HTMLVideoElement | null>,
  words: TimelineWord[],
  setPage: (page: number) => void,
): { current: number; time: number } {
  const timed = useMemo(() => timedIndices(words), [words]);
  const [current, setCurrent] = useState(-1);
  const [time, setTime] = useState(0);
  useEffect(() => {
    const audio = audioRef.current;
    if (!audio) return;
    let frame = 0;
    const tick = () => {
      const t = audio.currentTime;
      setTime(t);
      const i = wordAt(words, t, timed);
      setCurrent(i);
      if (i >= 0) setPage(words[i]!.page);
      const v = videoRef.current;
      if (v) {
        if (Math.abs(v.currentTime - t) > 0.25) v.currentTime = t;
        if (audio.paused !== v.paused) void (audio.paused ? v.pause() : v.play().catch(() => undefined));
      }
      if (!audio.paused) frame = requestAnimationFrame(tick);
    };
    const start = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(tick);
    };
    const events = ['play', 'seeked', 'pause', 'timeupdate', 'ended'] as const;
    events.forEach((e) => audio.addEventListener(e, start));
    return () => {
      cancelAnimationFrame(frame);
      events.forEach((e) => audio.removeEventListener(e, start));
    };
  }, [words, timed]);
  return { current, time };
}

/** The highlight is a class on the word's element, moved without re-rendering the page. */
function useHighlight(textRef: RefObject<HTMLDivElement | null>, current: number, page: number): void {
  useEffect(() => {
    const root = textRef.current;
    if (!root) return;
    root.querySelectorAll('.word.current').forEach((el) => el.classList.remove('current'));
    const el = root.querySelector(`[data-i="${current}"]`);
    if (el) {
      el.classList.add('current');
      const r = el.getBoundingClientRect();
      if (r.top < 80 || r.bottom > window.innerHeight - 80) el.scrollIntoView({ block: 'center', behavior: 'smooth' });
    }
  }, [current, page]);
}

/** Space: play/pause; arrows: seek. Not while typing, or on a control that uses the key itself. */
function useSeekKeys(audioRef: RefObject<HTMLAudioElement | null>, total: number): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const audio = audioRef.current;
      const target = e.target as HTMLElement | null;
      if (!audio || !target || e.altKey || e.ctrlKey || e.metaKey) return;
      if (target.closest('input, textarea, select, button, a, audio, video, [role="slider"], .presenter-bar')) return;
      if (e.key === ' ') {
        e.preventDefault();
        void (audio.paused ? audio.play() : audio.pause());
      } else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
        e.preventDefault();
        const d = e.key === 'ArrowLeft' ? -SEEK_SECONDS : SEEK_SECONDS;
        audio.currentTime = Math.min(Math.max(0, audio.currentTime + d), audio.duration || total);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [total]);
}

function Pager({ pages, page, onGo }: { pages: number[]; page: number; onGo: (page: number) => void }) {
  const pageIndex = pages.indexOf(page);
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" disabled={pageIndex <= 0} onClick={() => onGo(pages[pageIndex - 1]!)}>
        Previous page
      </button>
      <span>
        Page {page} of {pages.at(-1)}
      </span>
      <button type="button" disabled={pageIndex >= pages.length - 1} onClick={() => onGo(pages[pageIndex + 1]!)}>
        Next page
      </button>
    </nav>
  );
}

/** Words of the page shown, grouped into their blocks (paragraphs, headings, list items). */
function pageBlocks(words: TimelineWord[], page: number): Array<{ block: number; items: Array<{ w: TimelineWord; i: number }> }> {
  const out: Array<{ block: number; items: Array<{ w: TimelineWord; i: number }> }> = [];
  words.forEach((w, i) => {
    if (w.page !== page) return;
    const last = out.at(-1);
    if (last && last.block === w.block) last.items.push({ w, i });
    else out.push({ block: w.block, items: [{ w, i }] });
  });
  return out;
}

/** The page's text, one element per word; a click on a timed word plays from it. */
function PageText({ textRef, words, page, onWord }: { textRef: RefObject<HTMLDivElement | null>; words: TimelineWord[]; page: number; onWord: (i: number) => void }) {
  const blocks = useMemo(() => pageBlocks(words, page), [words, page]);
  return (
    <div
      ref={textRef}
      className="read-text"
      aria-describedby="reader-help"
      onClick={(e) => {
        const i = (e.target as HTMLElement).dataset?.i;
        if (i !== undefined) onWord(Number(i));
      }}
    >
      {blocks.map((b) => (
        <p key={`${page}-${b.block}`} data-block={b.block}>
          {b.items.map(({ w, i }) => (
            <span key={i}>
              {w.start !== null ? (
                <span className="word" data-i={i}>
                  {w.word}
                </span>
              ) : (
                <span className="word skipped" title="Not read in the recording">
                  {w.word}
                </span>
              )}{' '}
            </span>
          ))}
        </p>
      ))}
    </div>
  );
}
