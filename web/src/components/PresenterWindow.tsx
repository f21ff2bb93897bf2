// The lip-sync presenter in a floating window: drag it by its title bar (or move it with
// the arrow keys when the bar has focus), resize it from its corner.
import { useEffect, useRef, useState, type PointerEvent as RPointerEvent, type KeyboardEvent, type RefObject } from 'react';

export function PresenterWindow({ src, videoRef }: { src: string; videoRef: RefObject<HTMLVideoElement | null> }) {
  const [pos, setPos] = useState(() => ({ x: Math.max(8, window.innerWidth - 300), y: Math.max(8, window.innerHeight - 260) }));
  const drag = useRef<{ dx: number; dy: number } | null>(null);
  const boxRef = useRef<HTMLDivElement>(null);

  const clamp = (x: number, y: number) => {
    const w = boxRef.current?.offsetWidth ?? 240;
    const h = boxRef.current?.offsetHeight ?? 200;
    return { x: Math.min(Math.max(0, x), Math.max(0, window.innerWidth - w)), y: Math.min(Math.max(0, y), Math.max(0, window.innerHeight - h)) };
  };
  useEffect(() => {
    const onResize = () => setPos((p) => clamp(p.x, p.y));
    window.addEventListener('resize', onResize);
    onResize();
    return () => window.removeEventListener('resize', onResize);
  }, []);

  const down = (e: RPointerEvent<HTMLDivElement>) => {
    drag.current = { dx: e.clientX - pos.x, dy: e.clientY - pos.y };
    e.currentTarget.setPointerCapture(e.pointerId);
  };
  const move = (e: RPointerEvent<HTMLDivElement>) => {
    if (drag.current) setPos(clamp(e.clientX - drag.current.dx, e.clientY - drag.current.dy));
  };
  const up = () => {
    drag.current = null;
  };
  const key = (e: KeyboardEvent<HTMLDivElement>) => {
    const step = e.shiftKey ? 60 : 20;
    const d: Record<string, [number, number]> = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
    const v = d[e.key];
    if (!v) return;
    e.preventDefault();
    e.stopPropagation();
    setPos((p) => clamp(p.x + v[0], p.y + v[1]));
  };

  return (
    <div ref={boxRef} className="presenter" style={{ left: pos.x, top: pos.y }} role="region" aria-label="Presenter">
      <div className="presenter-bar" tabIndex={0} onPointerDown={down} onPointerMove={move} onPointerUp={up} onKeyDown={key} aria-label="Presenter window: drag, or use the arrow keys, to move it">
        Presenter
      </div>
      <video ref={videoRef} src={src} muted playsInline className="presenter-video" aria-label="Presenter video (follows the narration)" />
    </div>
  );
}
