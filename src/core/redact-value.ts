/**
 * Redaction of structured values: every string inside a JSON-like value, and JSON text
 * (tool arguments, tool results) redacted inside its strings so it stays valid JSON.
 * @module
 */
import { isLabelledSecret, labelsSecret, redactSecrets } from './redact-secrets.js';
import { needsStripping, stripInvisible } from './sanitize-text.js';

/** Options of {@link redactValue}. */
export interface RedactValueOptions {
  /** Redact object keys too (working memory stores what the agent wrote as keys). @default false */
  readonly keys?: boolean;
  /**
   * Also read each string that holds invisible characters without them, and keep that reading,
   * redacted, when it finds more secrets: `sk-\u200Bproj-…` hides a key from the rules only
   * while the zero-width space is there. A string without one is not read twice; object keys
   * are read as they are. @default false
   */
  readonly readWithoutInvisible?: boolean;
}

/**
 * A copy of `value` with {@link redactSecrets} applied to every string in it (object keys
 * only with `keys: true`), a string value read with its key too, so `{"api_key": "…"}` is
 * redacted as the same JSON text would be, and a value its key labels a secret is decided on
 * as it is (a password holding `\` or `"`). A key that labels a secret labels every string
 * under it too (`{"password": ["…"]}`, `{"password": {"current": "…"}}`), and so does the name
 * of a name/value pair its value (`{"name": "DB_PASSWORD", "value": "…"}`). Values without a string that needs it come back
 * unchanged, the same object included. Any depth: the walk keeps its own stack. Throws a
 * `TypeError` for a value that contains itself and needs redacting.
 */
export function redactValue<T>(value: T, options: RedactValueOptions = {}): T {
  const readWithoutInvisible = options.readWithoutInvisible ?? false;
  if (typeof value === 'string') {
    const redacted = redactSecrets(value).text;
    return (readWithoutInvisible ? revealHiddenSecrets(value, redacted, redactText) : redacted) as T;
  }
  if (typeof value !== 'object' || value === null) return value;
  const walk = walkOf(value, options.keys ?? false, readWithoutInvisible);
  return walk.redact || walk.invisible ? (redactTree(value, walk) as T) : value;
}

/**
 * `redacted` (`text` redacted by `redactAs`), or, when `text` holds invisible characters and
 * its reading without them (`strip`) finds more secrets, that reading, keeping every secret
 * either reading found: `redacted` is read again without its invisible characters (what the
 * text as given found stays found, `AKIA…\u200BAKIA…` two ids that stripping would run
 * together), and a piece left next to a placeholder that the stripped text's own reading
 * took (`sk-…\u00AD…`, its tail past the soft hyphen) joins the placeholder. Text without a
 * hidden secret keeps its invisible characters (an emoji's zero-width joiner).
 */
export function revealHiddenSecrets(
  text: string,
  redacted: string,
  redactAs: (stripped: string) => string,
  strip: (text: string) => string = stripInvisible,
): string {
  if (!needsStripping(text)) return redacted;
  const stripped = strip(redacted);
  const revealed = withTailsTaken(redactAs(stripped), redactAs(strip(text)));
  return revealed !== stripped ? revealed : redacted;
}

// A placeholder and the name characters right before or after it, with no space between.
const PLACEHOLDER_NEIGHBOURS = /([A-Za-z0-9_+/=-]*)(\[REDACTED:[a-z_]+\])([A-Za-z0-9_+/=-]*)/g;

/**
 * `revealed` with the characters next to each placeholder dropped where `other`, another
 * reading of the same text, does not hold them in the clear: that reading took them as part
 * of a secret.
 */
function withTailsTaken(revealed: string, other: string): string {
  if (!revealed.includes('[REDACTED:')) return revealed;
  return revealed.replace(
    PLACEHOLDER_NEIGHBOURS,
    (match: string, before: string, placeholder: string, after: string) =>
      before === '' && after === ''
        ? match
        : `${before !== '' && !other.includes(before) ? '' : before}${placeholder}${after !== '' && !other.includes(after) ? '' : after}`,
  );
}

function redactText(text: string): string {
  return redactSecrets(text).text;
}

/**
 * Redacts JSON text inside its string values (and, with `keys: true`, its object keys), so the
 * result still parses (an unterminated private key cannot swallow the closing quotes); text
 * that is not JSON, or too deeply nested to write out again, is redacted as text.
 */
export function redactJsonText(text: string, options: RedactValueOptions = {}): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return redactSecrets(text).text;
  }
  const redacted = redactValue(parsed, options);
  if (redacted === parsed) return text;
  try {
    return JSON.stringify(redacted);
  } catch {
    // NOTE: JSON.stringify recurses: thousands of levels (a model's tool arguments) overflow
    // the stack. The text as text still loses every secret a rule finds in it.
    return redactSecrets(text).text;
  }
}

// Every rule stops at a line break except the private-key block, which always replaces what
// it matches. So a string that one rule would change is changed the same way inside the
// strings joined by line breaks: one pass over the joined text tells whether any string of
// the value needs redacting, at about the cost of redacting one string.
const SEPARATOR = '\n';

/**
 * What {@link redactTree} does to a value: redact its strings (`redact`), its keys too
 * (`keys`), and read its strings that hold invisible characters without them (`invisible`).
 */
interface Walk {
  readonly redact: boolean;
  readonly keys: boolean;
  readonly invisible: boolean;
}

/**
 * The walk `value` needs: `redact` when a string of it (or a key, with `keys`) needs
 * redacting; `invisible` (with `readWithoutInvisible`) when one may hold an invisible character.
 */
function walkOf(value: object, keys: boolean, readWithoutInvisible: boolean): Walk {
  const texts: string[] = [];
  const seen = new Seen();
  seen.add(value, undefined);
  const pending: Array<readonly [object, string | undefined]> = [[value, undefined]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const frame = frameOf(next[0], next[1]);
    const array = Array.isArray(frame.node);
    for (const [key, item] of frame.entries) {
      if (keys && !array) texts.push(key);
      const isString = typeof item === 'string';
      if (!isString && (typeof item !== 'object' || item === null)) continue;
      const own = !array && SECRET_LABEL.test(key) ? key : undefined;
      const label = labelOf(frame, key, own !== undefined);
      if (isString) {
        texts.push(item);
        // Decided on the value as given: a value that redacting on its own changes is found
        // in the joined text anyway, and one it does not is decided on just the same.
        if (own !== undefined && readAsLabelled(own, item, texts))
          return { redact: true, keys, invisible: readWithoutInvisible };
        if (label !== undefined && label !== own && readAsLabelled(label, item, texts)) {
          return { redact: true, keys, invisible: readWithoutInvisible };
        }
      } else if (!seen.has(item, label)) {
        seen.add(item, label);
        pending.push([item, label]);
      }
    }
  }
  const joined = texts.join(SEPARATOR);
  const redact = redactSecrets(joined).text !== joined;
  // The separator is not invisible, so one test of the joined text spares every string its own.
  return { redact, keys: keys && redact, invisible: readWithoutInvisible && needsStripping(joined) };
}

/**
 * Whether `label` makes the string `item` a secret; if not, the pair as JSON text goes to
 * `texts`, for the joined pass to find what reading it with its label finds.
 */
function readAsLabelled(label: string, item: string, texts: string[]): boolean {
  if (isLabelledSecret(label, item)) return true;
  texts.push(pairText(label, item));
  return false;
}

// The words a key must hold for its value to be read as labelled by it (every labelled rule of
// redactSecrets ends its label with one of them, `Cookie` a header's): other keys cost no
// second pass. A `pwd` key's value is decided only as the JSON text decides it, which keeps a
// path (the working directory), so `pwd` labels no strings under it (see `labelsSecret`).
const SECRET_LABEL =
  /passw|pwd|passphrase|secret(?:[_-]?key)?|api[_-]?key|account[_-]?key|private[_-]?key|token|authorization|cookie/iu;

const LABELLED_SECRET = '[REDACTED:labelled_secret]';
const WHOLE_PLACEHOLDER = /^\[REDACTED:[a-z_]+\]$/;

/**
 * A string value with its key as JSON text: `{"api_key":"…"}`. The key is what labels the
 * value a secret (`api_key`, `db_password`, `SecretAccessKey`), and a value read on its own
 * has lost it.
 */
function pairText(key: string, item: string): string {
  return `{${JSON.stringify(key)}:${JSON.stringify(item)}}`;
}

/**
 * The string `item` of `key` (none in an array), redacted as {@link redactEntry} does and, when
 * a key above it or a pair's name labels it (`label`), as labelled by that too.
 */
function redactLabelled(key: string | undefined, label: string | undefined, item: string): string {
  const own = key === undefined ? redactSecrets(item).text : redactEntry(key, item);
  return label === undefined || label === key ? own : redactEntry(label, own);
}

/** The string `item` of `key`, redacted on its own and as labelled by its key. */
function redactEntry(key: string, item: string): string {
  const own = redactSecrets(item).text;
  if (!SECRET_LABEL.test(key)) return own;
  // The key redacted first, so a secret in it (an unterminated private key) cannot run on
  // through the value's quotes.
  const label = redactSecrets(key).text;
  const asText = redactedAsText(label, own);
  // The JSON text's kind when it took the whole value (`[REDACTED:aws_secret_key]`), else the
  // value decided on as it is, never as JSON escapes it.
  if (isLabelledSecret(label, own)) return WHOLE_PLACEHOLDER.test(asText) ? asText : LABELLED_SECRET;
  return asText;
}

/** `own` as the JSON text `{"label": own}` redacts it (an AWS secret key, a header's credentials). */
function redactedAsText(label: string, own: string): string {
  const text = pairText(label, own);
  const redacted = redactSecrets(text).text;
  if (redacted === text) return own;
  try {
    const [value] = Object.values(JSON.parse(redacted) as Record<string, unknown>);
    return typeof value === 'string' ? value : own;
  } catch {
    return own;
  }
}

/**
 * An array or object being rebuilt: its entries, and the redacted values of those done; the
 * label of a key above it, and the name of its name/value pair, when either labels a secret.
 */
interface Frame {
  readonly node: object;
  readonly entries: ReadonlyArray<readonly [string, unknown]>;
  readonly results: unknown[];
  readonly label: string | undefined;
  readonly pairName: string | undefined;
}

// A name/value pair (Kubernetes' env, AWS parameters): the name labels the value.
const NAME_KEYS = new Set(['name', 'Name', 'key', 'Key', 'ParameterKey', 'ParameterName']);
const VALUE_KEYS = new Set(['value', 'Value', 'ParameterValue']);
const NAME = /^[A-Za-z0-9_.-]{1,96}$/;

/** The name of an object's name/value pair, when it labels a secret (`DB_PASSWORD`). */
function pairNameOf(entries: ReadonlyArray<readonly [string, unknown]>): string | undefined {
  let name: string | undefined;
  let value = false;
  for (const [key, item] of entries) {
    if (VALUE_KEYS.has(key)) value = true;
    else if (name === undefined && typeof item === 'string' && NAME_KEYS.has(key)) name = item;
  }
  return value && name !== undefined && NAME.test(name) && labelsSecret(name) ? name : undefined;
}

/**
 * The label the value of the frame's entry `key` is read with besides its own key: the pair's
 * name for its value, the key itself when it labels a secret (`named`: it holds a label word,
 * so it may), else the frame's label.
 */
function labelOf(frame: Frame, key: string, named: boolean): string | undefined {
  if (Array.isArray(frame.node)) return frame.label;
  if (frame.pairName !== undefined && VALUE_KEYS.has(key)) return frame.pairName;
  return named && labelsSecret(key) ? key : frame.label;
}

/** The parts met so far, each with the labels it was met under (most under none). */
class Seen {
  readonly #unlabelled = new Set<object>();
  readonly #labelled = new Map<object, Set<string>>();

  has(node: object, label: string | undefined): boolean {
    return label === undefined ? this.#unlabelled.has(node) : (this.#labelled.get(node)?.has(label) ?? false);
  }

  add(node: object, label: string | undefined): void {
    if (label === undefined) this.#unlabelled.add(node);
    else this.#labelled.set(node, (this.#labelled.get(node) ?? new Set<string>()).add(label));
  }
}

/**
 * `root` with every string redacted, rebuilt bottom-up with a stack of its own: JSON parses
 * far deeper than a recursive walk can go. A part that needs nothing stays the same object,
 * and a part met twice is redacted once.
 */
function redactTree(root: object, walk: Walk): unknown {
  // Keyed by the label a part is read under too: under `password` its strings are secrets.
  const done = new Map<string | undefined, Map<object, unknown>>();
  const open = new Set<object>([root]);
  const parents: Frame[] = [];
  let frame = frameOf(root, undefined);
  for (;;) {
    const index = frame.results.length;
    if (index < frame.entries.length) {
      const [key, item] = frame.entries[index] ?? ['', undefined];
      if (typeof item !== 'string' && (typeof item !== 'object' || item === null)) {
        frame.results.push(item);
        continue;
      }
      const label = labelOf(frame, key, !Array.isArray(frame.node) && SECRET_LABEL.test(key));
      if (typeof item === 'string') {
        frame.results.push(redactString(Array.isArray(frame.node) ? undefined : key, label, item, walk));
      } else if (done.get(label)?.has(item)) {
        frame.results.push(done.get(label)?.get(item));
      } else if (open.has(item)) {
        throw new TypeError('redactValue: the value contains itself, so it has no JSON form to redact.');
      } else {
        open.add(item);
        parents.push(frame);
        frame = frameOf(item, label);
      }
      continue;
    }
    open.delete(frame.node);
    const rebuilt = rebuild(frame, walk.keys);
    const byLabel = done.get(frame.label) ?? new Map<object, unknown>();
    done.set(frame.label, byLabel.set(frame.node, rebuilt));
    const parent = parents.pop();
    if (parent === undefined) return rebuilt;
    parent.results.push(rebuilt);
    frame = parent;
  }
}

/**
 * The string `item` as `walk` leaves it: redacted (with its `key`, the string of an object,
 * and the `label` above it), and read without invisible characters at any depth.
 */
function redactString(key: string | undefined, label: string | undefined, item: string, walk: Walk): string {
  const redacted = walk.redact ? redactLabelled(key, label, item) : item;
  if (!walk.invisible) return redacted;
  // Read with its key and label, as the value's own walk reads it (`{"api_key": …}`).
  const redactAs =
    key === undefined && label === undefined ? redactText : (stripped: string) => redactLabelled(key, label, stripped);
  return revealHiddenSecrets(item, redacted, redactAs);
}

function frameOf(node: object, label: string | undefined): Frame {
  if (Array.isArray(node)) {
    return {
      node,
      entries: Array.from(node, (item: unknown) => ['', item] as const),
      results: [],
      label,
      pairName: undefined,
    };
  }
  const entries = Object.entries(node);
  return { node, entries, results: [], label, pairName: pairNameOf(entries) };
}

/** The frame's node with its redacted values (and keys), or the node itself when none changed. */
function rebuild(frame: Frame, keys: boolean): unknown {
  const { node, entries, results } = frame;
  if (Array.isArray(node)) return results.some((item, index) => item !== node[index]) ? results : node;
  let changed = false;
  const redactedKeys = keys ? entries.map(([key]) => redactSecrets(key).text) : [];
  // Keys that redacting leaves as they are keep their names; the others take free ones.
  const taken = new Set(
    entries.filter((_entry, index) => redactedKeys[index] === entries[index]?.[0]).map(([key]) => key),
  );
  const rebuiltEntries = entries.map(([key, item], index) => {
    const redactedKey = redactedKeys[index] ?? key;
    const nextKey = keys && redactedKey !== key ? distinctKey(redactedKey, taken) : key;
    const next = results[index];
    if (next !== item || nextKey !== key) changed = true;
    return [nextKey, next] as const;
  });
  // fromEntries defines own properties, so a "__proto__" key stays a plain key.
  return changed ? Object.fromEntries(rebuiltEntries) : node;
}

/**
 * `redacted` (a key redacting changed), made distinct from the keys `taken` (every key left
 * as it was, and the changed ones placed so far): two addresses as keys would otherwise
 * become one key, and one value would be lost.
 */
function distinctKey(redacted: string, taken: Set<string>): string {
  let next = redacted;
  for (let copy = 2; taken.has(next); copy++) next = `${redacted} (${copy})`;
  taken.add(next);
  return next;
}
