// Who is asking, as everything below the HTTP layer sees it: the token's name, and whether it
// sees every job and upload or only its own. The security hook makes one per request
// (src/security/http.ts); routes hand it to the job service and the voice library, which hand
// it to the stores, where it becomes a WHERE on the owner column. "Not yours" and "does not
// exist" are then the same query with the same empty answer.

export type Caller =
  /** An admin token, or anyone while authentication is off: every row. `name` owns what it makes. */
  | { readonly name: string | null; readonly sees: 'all' }
  /** Any other token: the rows it owns, and nothing else (rows without an owner included). */
  | { readonly name: string; readonly sees: 'own' };

/** Authentication off (no tokens): everything belongs to everyone, and what is made has no owner. */
export const UNAUTHENTICATED: Caller = Object.freeze({ name: null, sees: 'all' });

/** Lectern's own code (the worker, the export task, an event stream re-reading the job it was allowed to open). */
export const INTERNAL: Caller = Object.freeze({ name: null, sees: 'all' });

/** The caller a token makes: an admin sees all, any other token its own. */
export function tokenCaller(name: string, admin: boolean): Caller {
  return admin ? { name, sees: 'all' } : { name, sees: 'own' };
}

/** The owner a query must match, or null when the caller sees every row. */
export function ownerFilter(caller: Caller): string | null {
  return caller.sees === 'own' ? caller.name : null;
}
