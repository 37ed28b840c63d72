// @ts-check
// A scope's working memory: its entries, a form to set one (the API's validation errors
// shown beside it) and delete buttons.
import { api, segment } from './api.js';
import { append, confirmButton, h, replace, timeOf, whileBusy } from './dom.js';
import { formError } from './notice.js';
import { createRowSync, removeRow } from './row-sync.js';
import { visibleText } from './visible-text.js';

/**
 * @typedef {{ key: string, value: unknown, created_at: string, updated_at: string }} WorkingMemoryItem
 */

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
        ['Key', 'Value', 'Updated', ''].map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    body,
  );

  const keyInput = h('input', { id: 'working-key', name: 'key', spellcheck: 'false', required: true });
  const valueInput = h('textarea', { id: 'working-value', name: 'value', rows: 3, spellcheck: 'false' });
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
    void whileBusy(save, async () => {
      try {
        await api(`${base}/working/${segment(key)}`, {
          method: 'PUT',
          json: { value: parseValue(valueInput.value) },
          signal,
        });
      } catch (error) {
        problem.show(error);
        return;
      }
      valueInput.value = '';
      keyInput.value = '';
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
      const text = JSON.stringify(entries);
      if (text === shown) return;
      shown = text;
      rows.sync(body, entries);
      if (entries.length === 0) replace(body, h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No entries.')));
    },
  };

  /** @param {WorkingMemoryItem} entry */
  function row(entry) {
    const tr = h('tr', { 'data-key': entry.key });
    const edit = h('button', { type: 'button', 'aria-label': `Edit ${entry.key}` }, 'Edit');
    edit.addEventListener('click', () => {
      keyInput.value = entry.key;
      valueInput.value = valueText(entry.value);
      problem.clear();
      valueInput.focus();
    });
    append(tr, [
      h('th', { scope: 'row' }, entry.key),
      h('td', { class: 'content' }, h('pre', { class: 'wrap' }, visibleText(JSON.stringify(entry.value, null, 2)))),
      h('td', {}, timeOf(entry.updated_at)),
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
