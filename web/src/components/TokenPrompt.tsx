// Asks for the access token after a 401; the answer stays in sessionStorage for this tab.
import { useEffect, useRef, useState, type FormEvent } from 'react';

export function TokenPrompt({ refused, onSubmit, onCancel }: { refused: boolean; onSubmit: (token: string) => void; onCancel: () => void }) {
  const [value, setValue] = useState('');
  const inputRef = useRef<HTMLInputElement>(null);
  useEffect(() => inputRef.current?.focus(), []);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (value.trim()) onSubmit(value.trim());
  };
  return (
    <div className="modal-backdrop">
      <form className="modal" role="dialog" aria-modal="true" aria-labelledby="token-heading" onSubmit={submit} onKeyDown={(e) => e.key === 'Escape' && onCancel()}>
        <h2 id="token-heading">Access token needed</h2>
        {refused ? (
          <p className="error" role="alert">
            That token was not accepted. Check it and try again.
          </p>
        ) : (
          <p>This Lectern service asks for an access token. Ask its administrator for one.</p>
        )}
        <label htmlFor="token-input">Access token</label>
        <input id="token-input" ref={inputRef} type="password" autoComplete="off" autoFocus value={value} onChange={(e) => setValue(e.target.value)} required />
        <p className="muted small">Kept for this browser tab's session only.</p>
        <div className="actions">
          <button type="submit" className="primary">
            Continue
          </button>
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </div>
  );
}
