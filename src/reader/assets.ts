// The reader page's inline style and script. Plain browser JavaScript (no build step): it
// reads the LECTERN literal that build.ts embeds, lays out the pages, and keeps the spoken
// word highlighted from the audio clock.

export const READER_STYLE = `
:root { --hl: rgba(255, 208, 0, 0.55); --hl-edge: #e07b00; --bar: #1f2933; }
* { box-sizing: border-box; }
body { margin: 0; font: 18px/1.6 Georgia, 'DejaVu Serif', serif; background: #e9ecef; color: #1b1b1b; }
.bar { position: sticky; top: 0; z-index: 10; display: flex; flex-wrap: wrap; align-items: center; gap: .6rem;
  padding: .5rem 1rem; background: var(--bar); color: #fff; font: 14px/1.3 system-ui, 'DejaVu Sans', sans-serif; }
.bar button { font-size: 1.1rem; width: 2.4rem; height: 2.2rem; border-radius: .4rem; border: 0; background: #fff; color: var(--bar); cursor: pointer; }
.bar button:focus-visible, .bar select:focus-visible, .bar input:focus-visible, .w:focus-visible { outline: 3px solid #4dabf7; outline-offset: 2px; }
#seek { flex: 1 1 12rem; min-width: 8rem; }
.time { font-variant-numeric: tabular-nums; min-width: 7.5rem; }
.title { flex: 1 1 100%; opacity: .9; }
.keys { flex: 1 1 100%; opacity: .6; font-size: 12px; }
main { max-width: 60rem; margin: 1rem auto 4rem; padding: 0 1rem; }
.page { position: relative; background: #fff; margin: 0 auto 1.5rem; box-shadow: 0 1px 4px rgba(0,0,0,.2); }
.page.text { padding: 2rem 3rem; }
.page img { display: block; width: 100%; height: auto; user-select: none; }
.page .pno { position: absolute; right: .6rem; bottom: .3rem; font: 12px system-ui, sans-serif; color: #888; }
.w { cursor: pointer; border-radius: .2em; }
.text .w:hover { background: rgba(0, 120, 255, .12); }
.text .w.current { background: var(--hl); box-shadow: 0 0 0 2px var(--hl-edge); }
.box { position: absolute; cursor: pointer; color: transparent; overflow: hidden; font-size: 1px; line-height: 1; }
.box:hover { background: rgba(0, 120, 255, .15); }
.box.current { background: var(--hl); outline: 2px solid var(--hl-edge); mix-blend-mode: multiply; }
blockquote { margin-left: 1.5rem; padding-left: 1rem; border-left: 3px solid #ccc; }
pre { white-space: pre-wrap; font: 15px/1.5 'DejaVu Sans Mono', monospace; }
.presenter { position: fixed; right: 1rem; bottom: 1rem; width: 320px; height: 240px; min-width: 160px; min-height: 120px;
  z-index: 20; display: flex; flex-direction: column; background: #000; border-radius: .5rem; overflow: hidden;
  resize: both; box-shadow: 0 4px 16px rgba(0,0,0,.4); }
.presenter .grip { flex: none; cursor: move; user-select: none; touch-action: none; display: flex; justify-content: space-between; align-items: center;
  padding: .15rem .5rem; background: var(--bar); color: #fff; font: 12px system-ui, sans-serif; }
.presenter .grip button { background: none; border: 0; color: #fff; font-size: 16px; cursor: pointer; }
.presenter video { flex: 1; min-height: 0; width: 100%; object-fit: contain; background: #000; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (prefers-reduced-motion: reduce) { html { scroll-behavior: auto; } }
`;

export const READER_SCRIPT = `
(function () {
  'use strict';
  var D = LECTERN;
  var audio = document.getElementById('audio');
  var playBtn = document.getElementById('play');
  var seek = document.getElementById('seek');
  var timeEl = document.getElementById('time');
  var speedSel = document.getElementById('speed');
  var status = document.getElementById('status');
  var docEl = document.getElementById('doc');
  var SPEEDS = [0.5, 0.75, 1, 1.25, 1.5, 1.75, 2];
  var starts = D.words.map(function (w) { return w[0]; });
  var els = new Array(D.words.length); // timeline index -> the element(s) showing that word
  var current = -1;
  var seeking = false;
  var reduceMotion = window.matchMedia && window.matchMedia('(prefers-reduced-motion: reduce)').matches;

  function fmt(t) {
    t = Math.max(0, Math.floor(t || 0));
    var h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), s = t % 60;
    return (h ? h + ':' + (m < 10 ? '0' : '') : '') + m + ':' + (s < 10 ? '0' : '') + s;
  }

  function wordEl(tag, cls, w) {
    var el = document.createElement(tag);
    el.className = cls;
    if (w.i !== undefined) {
      el.dataset.i = w.i;
      (els[w.i] = els[w.i] || []).push(el);
    }
    return el;
  }

  // Pages: PDF pages as their image with a transparent, clickable box per word (the text is
  // in the boxes, so it can be read by screen readers and selected); other pages as text.
  var frag = document.createDocumentFragment();
  D.pages.forEach(function (p) {
    var page = document.createElement('section');
    page.className = 'page ' + (p.img ? 'pdf' : 'text');
    page.setAttribute('aria-label', 'Page ' + p.n);
    if (p.img) {
      page.style.maxWidth = p.w + 'px';
      var img = document.createElement('img');
      img.src = p.img; img.width = p.w; img.height = p.h; img.alt = ''; img.loading = 'lazy';
      page.appendChild(img);
      p.blocks.forEach(function (b) {
        b.words.forEach(function (w) {
          (w.b || []).forEach(function (r, k) {
            var el = wordEl('span', 'w box', w);
            el.textContent = w.t + ' ';
            // A word hyphenated across lines has a box per part; screen readers hear it once.
            if (k) el.setAttribute('aria-hidden', 'true');
            el.style.left = (r[0] * 100) + '%'; el.style.top = (r[1] * 100) + '%';
            el.style.width = (r[2] * 100) + '%'; el.style.height = (r[3] * 100) + '%';
            page.appendChild(el);
          });
        });
      });
    } else {
      var list = null; // consecutive items share one <ul>
      p.blocks.forEach(function (b) {
        var tag = b.k === 'heading' ? 'h' + Math.min(6, Math.max(1, b.l || 2)) : b.k === 'item' ? 'li' : b.k === 'quote' ? 'blockquote' : b.k === 'pre' ? 'pre' : 'p';
        var el = document.createElement(tag);
        b.words.forEach(function (w, j) {
          if (j) el.appendChild(document.createTextNode(' '));
          var s = wordEl('span', 'w', w);
          s.textContent = w.t;
          el.appendChild(s);
        });
        if (b.k === 'item') {
          if (!list) { list = document.createElement('ul'); page.appendChild(list); }
          list.appendChild(el);
        } else {
          list = null;
          page.appendChild(el);
        }
      });
    }
    var pno = document.createElement('span');
    pno.className = 'pno'; pno.setAttribute('aria-hidden', 'true'); pno.textContent = p.n;
    page.appendChild(pno);
    frag.appendChild(page);
  });
  docEl.appendChild(frag);

  // The word being spoken at t: the last one that has started (it stays lit through pauses).
  function wordAt(t) {
    var lo = 0, hi = starts.length - 1, k = -1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (starts[mid] <= t + 1e-3) { k = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return k;
  }

  function inView(el) {
    var r = el.getBoundingClientRect();
    var top = document.querySelector('.bar').getBoundingClientRect().bottom;
    return r.top >= top + 20 && r.bottom <= window.innerHeight - 40;
  }

  function highlight(k, scroll) {
    if (k === current) return;
    if (current >= 0 && els[current]) els[current].forEach(function (e) { e.classList.remove('current'); e.removeAttribute('aria-current'); });
    current = k;
    if (k < 0 || !els[k]) return;
    els[k].forEach(function (e) { e.classList.add('current'); e.setAttribute('aria-current', 'true'); });
    if (scroll && !inView(els[k][0])) els[k][0].scrollIntoView({ block: 'center', behavior: reduceMotion ? 'auto' : 'smooth' });
  }

  function sync() {
    var t = audio.currentTime;
    if (!seeking) seek.value = t;
    timeEl.textContent = fmt(t) + ' / ' + fmt(D.duration);
    highlight(wordAt(t), !audio.paused);
    syncPresenter();
  }

  function tick() {
    sync();
    if (!audio.paused) requestAnimationFrame(tick);
  }

  function jump(t) {
    audio.currentTime = Math.max(0, Math.min(D.duration, t));
    sync();
  }

  function toggle() {
    if (audio.paused) audio.play().catch(function (e) { status.textContent = 'Cannot play: ' + e.message; });
    else audio.pause();
  }

  function setSpeed(s) {
    audio.playbackRate = s;
    speedSel.value = String(s);
    if (video) video.playbackRate = s;
    status.textContent = 'Speed ' + s + '×';
  }

  function stepSpeed(dir) {
    var i = SPEEDS.indexOf(audio.playbackRate);
    if (i < 0) i = SPEEDS.indexOf(1);
    setSpeed(SPEEDS[Math.max(0, Math.min(SPEEDS.length - 1, i + dir))]);
  }

  audio.addEventListener('play', function () {
    playBtn.textContent = '❚❚'; playBtn.setAttribute('aria-label', 'Pause');
    if (video) video.play().catch(function () {});
    requestAnimationFrame(tick);
  });
  audio.addEventListener('pause', function () {
    playBtn.textContent = '▶'; playBtn.setAttribute('aria-label', 'Play');
    if (video) video.pause();
    sync();
  });
  audio.addEventListener('seeked', sync);
  audio.addEventListener('timeupdate', function () { if (audio.paused) sync(); });
  playBtn.addEventListener('click', toggle);
  seek.addEventListener('input', function () { seeking = true; jump(Number(seek.value)); });
  seek.addEventListener('change', function () { seeking = false; jump(Number(seek.value)); });
  speedSel.addEventListener('change', function () { setSpeed(Number(speedSel.value)); });

  docEl.addEventListener('click', function (e) {
    var el = e.target.closest('[data-i]');
    if (!el) return;
    var k = Number(el.dataset.i);
    jump(D.words[k][0]);
    highlight(k, false);
  });

  document.addEventListener('keydown', function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var tag = e.target.tagName;
    var inControl = tag === 'BUTTON' || tag === 'SELECT' || tag === 'INPUT';
    if (e.key === ' ' && !inControl) { e.preventDefault(); toggle(); }
    else if ((e.key === 'ArrowRight' || e.key === 'ArrowLeft') && tag !== 'INPUT' && tag !== 'SELECT') {
      e.preventDefault(); jump(audio.currentTime + (e.key === 'ArrowRight' ? 5 : -5));
    } else if ((e.key === 'ArrowDown' || e.key === 'ArrowUp') && !inControl) {
      e.preventDefault();
      var k = Math.max(0, Math.min(D.words.length - 1, (current < 0 ? -1 : current) + (e.key === 'ArrowDown' ? 1 : -1)));
      jump(D.words[k][0]);
    } else if (e.key === '+' || e.key === '=') { e.preventDefault(); stepSpeed(1); }
    else if (e.key === '-' || e.key === '_') { e.preventDefault(); stepSpeed(-1); }
  });

  // The presenter: a video muted and slaved to the narration's clock, in a window that is
  // dragged by its title bar and resized by its corner (CSS resize).
  var video = document.getElementById('presenter-video');
  function syncPresenter() {
    if (!video || video.readyState < 1) return;
    var t = Math.min(audio.currentTime, video.duration || Infinity);
    if (Math.abs(video.currentTime - t) > 0.15) video.currentTime = t;
  }
  if (video) {
    var win = document.getElementById('presenter');
    var grip = win.querySelector('.grip');
    var drag = null;
    grip.addEventListener('pointerdown', function (e) {
      if (e.target.tagName === 'BUTTON') return;
      var r = win.getBoundingClientRect();
      drag = { dx: e.clientX - r.left, dy: e.clientY - r.top };
      grip.setPointerCapture(e.pointerId);
    });
    grip.addEventListener('pointermove', function (e) {
      if (!drag) return;
      var x = Math.max(0, Math.min(window.innerWidth - 60, e.clientX - drag.dx));
      var y = Math.max(0, Math.min(window.innerHeight - 30, e.clientY - drag.dy));
      win.style.left = x + 'px'; win.style.top = y + 'px'; win.style.right = 'auto'; win.style.bottom = 'auto';
    });
    grip.addEventListener('pointerup', function () { drag = null; });
    document.getElementById('presenter-hide').addEventListener('click', function () { win.hidden = true; });
    video.addEventListener('loadedmetadata', syncPresenter);
  }

  sync();
})();
`;
