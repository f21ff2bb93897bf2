// The app shell: header (who is signed in, and signing out), routes, and the token prompt
// that api.ts asks for on a 401.
import { useEffect, useRef, useState } from 'react';
import { api, setToken, setTokenPrompt } from './api.ts';
import { TokenPrompt } from './components/TokenPrompt.tsx';
import { Dashboard } from './pages/Dashboard.tsx';
import { JobPage } from './pages/JobPage.tsx';
import { NewJob } from './pages/NewJob.tsx';
import { Reader } from './pages/Reader.tsx';
import { Link, useLocation } from './router.tsx';
import type { Me } from './types.ts';

export function route(path: string) {
  let m: RegExpExecArray | null;
  if (path === '/' || path === '') return { name: 'jobs' as const, title: 'Jobs' };
  if (path === '/new') return { name: 'new' as const, title: 'New job' };
  if ((m = /^\/jobs\/([^/]+)\/read\/?$/.exec(path))) return { name: 'reader' as const, id: decodeURIComponent(m[1]!), title: 'Reader' };
  if ((m = /^\/jobs\/([^/]+)\/?$/.exec(path))) return { name: 'job' as const, id: decodeURIComponent(m[1]!), title: 'Job' };
  return { name: 'missing' as const, title: 'Not found' };
}

export function App() {
  const { path } = useLocation();
  const r = route(path);
  const [asking, setAsking] = useState<{ refused: boolean; resolve: (t: string | null) => void } | null>(null);
  const mainRef = useRef<HTMLElement>(null);
  const [me, setMe] = useState<Me | null>(null);

  useEffect(() => {
    setTokenPrompt((refused) => new Promise((resolve) => setAsking({ refused, resolve })));
    // Who the token is (waits for the prompt like any request): admins get the owner column.
    api.me().then(setMe, () => setMe(null));
    return () => setTokenPrompt(null);
  }, []);
  // Another person at this browser: forget the token and start over (the next request asks).
  const signOut = () => {
    setToken(null);
    window.location.assign('/');
  };
  // A new page: its title, and focus at the start of the content for screen-reader and keyboard users.
  useEffect(() => {
    document.title = `${r.title} · Lectern`;
    // The token prompt is modal: focus stays in it.
    if (!document.querySelector('.modal')) mainRef.current?.focus({ preventScroll: true });
    window.scrollTo(0, 0);
  }, [path]); // eslint-disable-line react-hooks/exhaustive-deps

  const answer = (t: string | null) => {
    asking?.resolve(t);
    setAsking(null);
  };

  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <Link to="/" className="brand">
          Lectern
        </Link>
        <nav aria-label="Main">
          <Link to="/" aria-current={r.name === 'jobs' ? 'page' : undefined}>
            Jobs
          </Link>
          <Link to="/new" aria-current={r.name === 'new' ? 'page' : undefined}>
            New job
          </Link>
        </nav>
        {me?.authentication && me.name ? (
          <div className="signed-in">
            <span>
              Signed in as <strong>{me.name}</strong>
              {me.admin ? ' (admin: sees every job)' : ''}
            </span>
            <button type="button" onClick={signOut}>
              Sign out
            </button>
          </div>
        ) : null}
      </header>
      <main id="main" ref={mainRef} tabIndex={-1}>
        {r.name === 'jobs' ? <Dashboard me={me} /> : null}
        {r.name === 'new' ? <NewJob /> : null}
        {r.name === 'job' ? <JobPage key={r.id} id={r.id} /> : null}
        {r.name === 'reader' ? <Reader key={r.id} id={r.id} /> : null}
        {r.name === 'missing' ? (
          <section>
            <h1>Not found</h1>
            <p>
              There is no page at {path}. <Link to="/">Back to the jobs</Link>
            </p>
          </section>
        ) : null}
      </main>
      {asking ? <TokenPrompt refused={asking.refused} onSubmit={answer} onCancel={() => answer(null)} /> : null}
    </>
  );
}
