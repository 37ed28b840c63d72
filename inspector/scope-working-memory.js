// @ts-check
// A scope's working memory: its entries, a form to set one (the API's validation errors
// shown beside it) and delete buttons.
import { api, segment } from './api.js';
import { confirmButton, h, replace, timeOf } from './dom.js';
import { formError } from './notice.js';

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
    h('button', { type: 'submit' }, 'Save entry'),
  );
  valueInput.setAttribute('aria-describedby', 'working-value-hint');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    problem.clear();
    const key = keyInput.value.trim();
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

  /** The entries last shown, to redraw only on change (an open delete question survives polls). */
  let shown = '';
  return {
    element: h('div', {}, h('div', { class: 'table-scroll' }, table), form),
    /** @param {WorkingMemoryItem[]} entries */
    update(entries) {
      const text = JSON.stringify(entries);
      if (text === shown) return;
      shown = text;
      replace(
        body,
        entries.length === 0
          ? h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No entries.'))
          : entries.map((entry) => row(entry)),
      );
    },
  };

  /** @param {WorkingMemoryItem} entry */
  function row(entry) {
    const edit = h('button', { type: 'button', 'aria-label': `Edit ${entry.key}` }, 'Edit');
    edit.addEventListener('click', () => {
      keyInput.value = entry.key;
      valueInput.value = valueText(entry.value);
      problem.clear();
      valueInput.focus();
    });
    return h(
      'tr',
      { 'data-key': entry.key },
      h('th', { scope: 'row' }, entry.key),
      h('td', { class: 'content' }, h('pre', { class: 'wrap' }, JSON.stringify(entry.value, null, 2))),
      h('td', {}, timeOf(entry.updated_at)),
      h(
        'td',
        { class: 'row-actions' },
        edit,
        confirmButton({
          label: 'Delete',
          question: `Delete ${entry.key}?`,
          confirmLabel: 'Delete',
          onConfirm: async () => {
            try {
              await api(`${base}/working/${segment(entry.key)}`, { method: 'DELETE', signal });
            } catch (error) {
              onError(error);
              return;
            }
            onChanged();
          },
        }),
      ),
    );
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
