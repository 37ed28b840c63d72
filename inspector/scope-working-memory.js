// @ts-check
// A scope's working memory: its entries with when each expires, a form to set one (with an
// optional time to live; the API's validation errors shown beside it) and delete buttons.
import { api, segment } from './api.js';
import { append, confirmButton, h, replace, timeOf, whileBusy } from './dom.js';
import { formError } from './notice.js';
import { createRowSync, removeRow } from './row-sync.js';
import { visibleText } from './visible-text.js';

/**
 * @typedef {{
 *   key: string,
 *   value: unknown,
 *   created_at: string,
 *   updated_at: string,
 *   expires_at?: string | null,
 * }} WorkingMemoryItem `expires_at`: ISO UTC, or null when the entry never expires
 */

/** A time to live as the form reads it: a decimal number, which the API then checks. */
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/iu;

/** @param {import('./scope-observations.js').PanelOptions} options */
export function workingMemoryPanel({ base, signal, onError, onChanged }) {
  const body = h('tbody');
  const table = h(
    'table',
    { 'data-testid': 'working-memory-table' },
    h('caption', { class: 'visually-hidden' }, 'Working memory entries'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Key', 'Value', 'Updated', 'Expires', ''].map((name) =>
          h('th', { scope: 'col', ...(name === '' ? { 'aria-label': 'Actions' } : {}) }, name),
        ),
      ),
    ),
    body,
  );

  const keyInput = h('input', { id: 'working-key', name: 'key', spellcheck: 'false', required: true });
  const valueInput = h('textarea', { id: 'working-value', name: 'value', rows: 3, spellcheck: 'false' });
  // Text, not a number input: the browser would refuse 0 or 1.5 with its own bubble, or read
  // "10m" as empty (no TTL at all); the API's check and message apply instead.
  const ttlInput = h('input', {
    id: 'working-ttl',
    name: 'ttl_seconds',
    inputmode: 'numeric',
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'working-ttl-hint',
  });
  const problem = formError();
  const save = h('button', { type: 'submit' }, 'Save entry');
  const form = h(
    'form',
    { class: 'edit-form', 'aria-labelledby': 'working-form-heading' },
    h('h3', { id: 'working-form-heading' }, 'Set an entry'),
    h('label', { for: keyInput.id }, 'Key'),
    keyInput,
    h('label', { for: valueInput.id }, 'Value'),
    h('p', { class: 'hint', id: 'working-value-hint' }, 'Read as JSON when it parses, otherwise kept as text.'),
    valueInput,
    h('label', { for: ttlInput.id }, 'Time to live (seconds)'),
    h(
      'p',
      { class: 'hint', id: 'working-ttl-hint' },
      'Optional: the entry expires this many seconds after it is saved (3600 is an hour). Empty: the server’s default, normally never. Edit fills in the time left.',
    ),
    ttlInput,
    problem.element,
    save,
  );
  valueInput.setAttribute('aria-describedby', 'working-value-hint');
  problem.clearWhenBlocked(form);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (save.disabled) return;
    problem.clear();
    const key = keyInput.value.trim();
    // A key of spaces only would be the path `/working/`, which the API answers with a 404.
    if (key === '') {
      problem.show('A key is required: enter the name of the entry.');
      keyInput.focus();
      return;
    }
    // The browser would resolve them as path segments and send the request elsewhere.
    if (key === '.' || key === '..') {
      problem.show('A key may not be "." or "..": a URL cannot name it.');
      keyInput.focus();
      return;
    }
    const ttl = ttlInput.value.trim();
    // Any number goes to the API, which says what is wrong with 0, -5 or 1.5.
    if (ttl !== '' && !(NUMBER.test(ttl) && Number.isFinite(Number(ttl)))) {
      problem.show('The time to live is a number of seconds, such as 3600 for an hour; leave it empty for none.');
      ttlInput.focus();
      return;
    }
    void whileBusy(save, async () => {
      try {
        await api(`${base}/working/${segment(key)}`, {
          method: 'PUT',
          json: { value: parseValue(valueInput.value), ...(ttl === '' ? {} : { ttl_seconds: Number(ttl) }) },
          signal,
        });
      } catch (error) {
        problem.show(error);
        return;
      }
      valueInput.value = '';
      keyInput.value = '';
      ttlInput.value = '';
      onChanged();
    });
  });
  const rows = createRowSync({ key: (entry) => entry.key, build: row });

  /** The entries last shown, to look at the rows only on change. */
  let shown = '';
  return {
    element: h('div', {}, h('div', { class: 'table-scroll' }, table), form),
    /** @param {WorkingMemoryItem[]} entries */
    update(entries) {
      // Every poll: the relative times stay right between changes.
      const now = Date.now();
      for (const time of body.querySelectorAll('time.expiry')) showExpiry(/** @type {HTMLTimeElement} */ (time), now);
      const text = JSON.stringify(entries);
      if (text === shown) return;
      shown = text;
      rows.sync(body, entries);
      if (entries.length === 0) replace(body, h('tr', {}, h('td', { colspan: 5, class: 'muted' }, 'No entries.')));
    },
  };

  /** @param {WorkingMemoryItem} entry */
  function row(entry) {
    const tr = h('tr', { 'data-key': entry.key });
    const edit = h('button', { type: 'button', 'aria-label': `Edit ${entry.key}` }, 'Edit');
    edit.addEventListener('click', () => {
      keyInput.value = entry.key;
      valueInput.value = valueText(entry.value);
      ttlInput.value = secondsLeft(entry.expires_at);
      problem.clear();
      valueInput.focus();
    });
    append(tr, [
      h('th', { scope: 'row' }, entry.key),
      h('td', { class: 'content' }, h('pre', { class: 'wrap' }, visibleText(JSON.stringify(entry.value, null, 2)))),
      h('td', {}, timeOf(entry.updated_at)),
      h('td', { class: 'expires' }, expiryOf(entry.expires_at)),
      h(
        'td',
        { class: 'row-actions' },
        edit,
        confirmButton({
          label: 'Delete',
          name: `Delete working-memory entry ${entry.key}`,
          question: `Delete ${entry.key}?`,
          confirmLabel: 'Delete',
          onConfirm: async () => {
            try {
              await api(`${base}/working/${segment(entry.key)}`, { method: 'DELETE', signal });
            } catch (error) {
              onError(error);
              return;
            }
            removeRow(tr);
            onChanged();
          },
        }),
      ),
    ]);
    return tr;
  }
}

/**
 * When an entry expires: "in 4 min", the ISO time in the tooltip; "never" without an expiry.
 * @param {string | null | undefined} iso
 * @returns {Node}
 */
function expiryOf(iso) {
  if (!iso) return h('span', { class: 'muted' }, 'never');
  const time = h('time', { class: 'expiry', datetime: iso, title: iso });
  showExpiry(time, Date.now());
  return time;
}

/**
 * Writes the time left until an expiry, as of `now`. A time passed says "expired" until the
 * next read drops the entry (the API stops returning it once the store's clock passes it).
 * @param {HTMLTimeElement} time
 * @param {number} now
 */
function showExpiry(time, now) {
  const left = Date.parse(time.dateTime) - now;
  const text = Number.isNaN(left) ? time.dateTime : left > 0 ? `in ${durationText(left)}` : 'expired';
  if (time.textContent !== text) time.textContent = text;
  time.classList.toggle('expired', left <= 0);
}

/**
 * A duration, short and rounded: "45 s", "4 min", "3 h", "12 days", "10 years".
 * @param {number} ms more than 0
 */
function durationText(ms) {
  const seconds = Math.ceil(ms / 1000);
  if (seconds < 90) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 90) return `${minutes} min`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h`;
  const days = Math.round(hours / 24);
  if (days < 730) return `${days} days`;
  return `${Math.round(days / 365)} years`;
}

/**
 * The whole seconds until `iso`, as the TTL field's text ('' without one, or once passed).
 * @param {string | null | undefined} iso
 */
function secondsLeft(iso) {
  const left = iso ? Math.ceil((Date.parse(iso) - Date.now()) / 1000) : Number.NaN;
  return left > 0 ? String(left) : '';
}

/**
 * The text that {@link parseValue} reads back as `value`: a string as it is, unless it
 * would parse as JSON (`"42"`), which is then quoted.
 * @param {unknown} value
 */
function valueText(value) {
  return typeof value === 'string' && parseValue(value) === value ? value : JSON.stringify(value, null, 2);
}

/**
 * A typed value: JSON when it parses, else the text itself.
 * @param {string} text
 * @returns {unknown}
 */
function parseValue(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
