/**
 * Which attempts a session value has passed through, so that the session store can tell an object
 * that only this attempt touched from one shared by telegraf's `session()`.
 *
 * telegraf's middleware keeps one in-memory object per key while updates of that key run at the
 * same time in a process, hands it to each of them through an accessor it defines on the context
 * (`ctx.session`), and writes it in `finally`. The store sees only the first update's read and the
 * writes: an update that joined the cached object never calls it before its write, and telegraf's
 * `defaultSession` or an object assigned to `ctx.session` was never handed out by the store. The
 * dispatch context therefore wraps the accessors defined on it: every value read or assigned through
 * one is noted as held by the context's attempt. The store then refuses to commit a value another
 * attempt also held (its changes, committed or not, may be in it), and treats a write of a key this
 * attempt never read, with a value that came through its accessors, as a write of another's object.
 */

type Attempt = object;

/** Objects → the attempts that read or assigned them through a context accessor, or got them from the store. */
const objectHolders = new WeakMap<object, Set<Attempt>>();
/** Attempts → the primitive values that passed through their accessors (a primitive session has no identity). */
const primitivesOf = new WeakMap<Attempt, Set<unknown>>();
/** Attempts → the objects they read or assigned (what their session writes may be computed from). */
const objectsOf = new WeakMap<Attempt, Set<object>>();

const isObject = (v: unknown): v is object => (typeof v === 'object' && v !== null) || typeof v === 'function';

/** Notes that `attempt` holds `value` (read it, assigned it, or got it from the store). */
export function noteHeld(value: unknown, attempt: Attempt | undefined): void {
  if (!attempt || value === undefined || value === null) return;
  if (isObject(value)) {
    const set = objectHolders.get(value);
    if (set) set.add(attempt);
    else objectHolders.set(value, new Set([attempt]));
    const mine = objectsOf.get(attempt);
    if (mine) mine.add(value);
    else objectsOf.set(attempt, new Set([value]));
    return;
  }
  const prims = primitivesOf.get(attempt);
  if (prims) prims.add(value);
  else primitivesOf.set(attempt, new Set([value]));
}

function sharedObject(value: object, attempt: Attempt): boolean {
  const set = objectHolders.get(value);
  if (!set) return false;
  for (const a of set) if (a !== attempt) return true;
  return false;
}

/**
 * `value`, or any object `attempt` read or assigned, was held by another attempt too: what it would
 * write may hold another's changes (mutated in place, or copied into a new object it built).
 */
export function sharedWithAnother(value: unknown, attempt: Attempt): boolean {
  if (isObject(value) && sharedObject(value, attempt)) return true;
  for (const o of objectsOf.get(attempt) ?? []) if (sharedObject(o, attempt)) return true;
  return false;
}

/** `value` reached `attempt` through a context accessor or the store (not a fresh value it built itself). */
export function heldBy(value: unknown, attempt: Attempt): boolean {
  if (isObject(value)) return objectHolders.get(value)?.has(attempt) === true;
  return primitivesOf.get(attempt)?.has(value) === true;
}

/**
 * The context as handlers see it: itself, except that reading or assigning an accessor property
 * defined on it later (telegraf's `session()` defines `ctx.session` so) notes the value as held by
 * `attempt()`. Plain data properties and the prototype's getters are untouched.
 */
export function watchAccessors<T extends object>(ctx: T, attempt: () => Attempt | undefined): T {
  // the accessor stays as defined (a proxy may not alter a non-configurable one): its name is watched
  const watched = new Set<string | symbol>();
  return new Proxy(ctx, {
    defineProperty(target, p, desc) {
      if (desc.get || desc.set) watched.add(p);
      return Reflect.defineProperty(target, p, desc);
    },
    get(target, p, receiver) {
      const v: unknown = Reflect.get(target, p, receiver);
      if (watched.has(p)) noteHeld(v, attempt());
      return v;
    },
    set(target, p, v, receiver) {
      if (watched.has(p)) noteHeld(v, attempt());
      return Reflect.set(target, p, v, receiver);
    },
  });
}
