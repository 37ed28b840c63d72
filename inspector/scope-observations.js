// @ts-check
// A scope's observations as a table: why the next snippet shows each one or not, where it
// came from, and the correct / delete actions.
import { api, isGoneRow } from './api.js';
import { confirmButton, h, numberText, replace, timeOf, whileBusy } from './dom.js';
import { formError } from './notice.js';
import { pagedTable } from './paged-table.js';
import { removeRow } from './row-sync.js';

/**
 * @typedef {{
 *   seq: number, content: string, importance: number | null | undefined, token_count: number,
 *   created_at: string, source: string, source_start_index?: number, source_end_index?: number,
 *   source_message_indexes?: number[], recency?: number, score?: number, included?: boolean,
 *   cut_by_budget?: boolean, not_shown_because?: 'memory_off' | 'repeated' | 'superseded' | 'budget' | null,
 *   superseded_by?: number | null,
 * }} ObservationItem
 */

/**
 * @typedef {{ base: string, signal: AbortSignal, onError: (error: unknown) => void, onChanged: () => void }} PanelOptions
 */

/** @param {PanelOptions & { isEnabled: () => boolean }} options */
export async function observationsPanel({ base, signal, onError, onChanged, isEnabled }) {
  let query = '';
  const searchInput = h('input', { id: 'observation-search', type: 'search', name: 'q' });
  const search = h(
    'form',
    { class: 'filters', role: 'search' },
    h('label', { for: 'observation-search' }, 'Search observations'),
    searchInput,
    h('button', { type: 'submit' }, 'Search'),
  );
  search.addEventListener('submit', (event) => {
    event.preventDefault();
    query = searchInput.value.trim();
    changedWhileEditing = false;
    table.reload().catch(onError);
  });

  // How each row is redrawn for a newer version of its observation.
  /** @type {WeakMap<Element, (item: ObservationItem) => void>} */
  const updaters = new WeakMap();
  // A change seen while a correction was open: the table is brought up to date when it closes.
  let changedWhileEditing = false;

  /** @param {ObservationItem} first */
  const row = (first) => {
    let item = first;
    let editing = false;
    const tr = h('tr', { 'data-seq': item.seq });
    const dataCells = () => [
      h('td', { class: 'number' }, `#${item.seq}`),
      h('td', { class: 'content' }, item.content),
      h('td', { class: 'number' }, numberText(item.importance, 2)),
      h('td', { class: 'number' }, numberText(item.recency)),
      h('td', { class: 'number' }, numberText(item.score, 3)),
      h('td', {}, inclusion(item, isEnabled())),
      h('td', {}, item.superseded_by ? `#${item.superseded_by}` : '–'),
      h('td', { class: 'provenance' }, provenance(item)),
    ];
    const actionsCell = () => h('td', { class: 'row-actions' }, correctButton(), deleteButton());
    const correctButton = () => {
      const button = h('button', { type: 'button', 'aria-label': `Correct observation ${item.seq}` }, 'Correct');
      button.addEventListener('click', () => edit());
      return button;
    };
    const deleteButton = () =>
      confirmButton({
        label: 'Delete',
        name: `Delete observation ${item.seq}`,
        question: `Delete observation #${item.seq}?`,
        confirmLabel: 'Delete',
        onConfirm: async () => {
          try {
            await api(`${base}/observations/${item.seq}`, { method: 'DELETE', signal });
          } catch (error) {
            onError(error);
            // Deleted meanwhile elsewhere: the table is brought up to date.
            if (isGoneRow(error)) {
              removeRow(tr);
              onChanged();
            }
            return;
          }
          removeRow(tr);
          onChanged();
        },
      });
    const edit = () => {
      const content = h('textarea', { id: `observation-${item.seq}-content`, rows: 4, value: item.content });
      const importance = h('input', {
        id: `observation-${item.seq}-importance`,
        type: 'number',
        min: 0,
        max: 1,
        // Any value: an observer's 0.72 must not block saving a correction of the text.
        step: 'any',
        value: typeof item.importance === 'number' ? String(item.importance) : '',
      });
      const problem = formError();
      const save = h('button', { type: 'submit' }, 'Save');
      const form = h(
        'form',
        { class: 'edit-form' },
        h('label', { for: content.id }, `Observation #${item.seq}`),
        content,
        h('label', { for: importance.id }, 'Importance (0 to 1, empty keeps it)'),
        importance,
        problem.element,
        h('div', { class: 'row-actions' }, save, cancel()),
      );
      problem.clearWhenBlocked(form);
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        // A second press while the first is on its way would log a second correction.
        if (save.disabled) return;
        const body = /** @type {{ content: string, importance?: number }} */ ({ content: content.value });
        if (importance.value.trim() !== '') body.importance = Number(importance.value);
        void whileBusy(save, async () => {
          try {
            const answer = await api(`${base}/observations/${item.seq}`, { method: 'PATCH', json: body, signal });
            item = { ...item, ...(answer.observation ?? { content: body.content }) };
          } catch (error) {
            problem.show(error);
            return;
          }
          close();
          onChanged();
        });
      });
      editing = true;
      replace(tr, h('td', { colspan: 9 }, form));
      content.focus();
    };
    const cancel = () => {
      const button = h('button', { type: 'button' }, 'Cancel');
      button.addEventListener('click', close);
      return button;
    };
    const close = () => {
      editing = false;
      replace(tr, dataCells(), actionsCell());
      tr.querySelector('button')?.focus();
      if (changedWhileEditing && !busy()) {
        changedWhileEditing = false;
        table.refresh().catch(onError);
      }
    };
    updaters.set(tr, (next) => {
      item = next;
      if (editing) return;
      // The actions cell stays as it is: an open delete question and the focus survive.
      const actions = tr.lastElementChild;
      if (!actions) return replace(tr, dataCells(), actionsCell());
      for (const cell of Array.from(tr.children)) if (cell !== actions) cell.remove();
      actions.before(...dataCells());
    });
    replace(tr, dataCells(), actionsCell());
    return tr;
  };

  /** Whether a correction is being edited (a reload would lose it): a form still on the page, not one a reload removed. */
  const busy = () => table.element.querySelector('form.edit-form') !== null;

  const table = await pagedTable({
    caption: 'Observations',
    testId: 'observations-table',
    columns: [
      'Seq',
      'Observation',
      'Importance',
      'Recency',
      'Score',
      'Next snippet',
      'Superseded by',
      'Provenance',
      '',
    ],
    empty: 'No observations.',
    load: (cursor) => api(`${base}/observations`, { query: { q: query, limit: 50, cursor }, signal }),
    row,
    key: (item) => String(item.seq),
    update: (tr, item) => updaters.get(tr)?.(item),
    onError,
  });
  return {
    element: h('div', {}, search, table.element),
    /** Brings the table up to date, keeping the user's place; after the correction being edited, if one is. */
    refresh: async () => {
      if (busy()) {
        changedWhileEditing = true;
        return;
      }
      changedWhileEditing = false;
      await table.refresh();
    },
  };
}

/**
 * Why the next snippet shows the observation or not.
 * @param {ObservationItem} item
 * @param {boolean} enabled
 */
function inclusion(item, enabled) {
  if (item.included) return h('span', { class: 'badge on' }, 'included');
  if (item.superseded_by) return h('span', { class: 'badge off' }, 'superseded');
  if (!enabled) return h('span', { class: 'badge off' }, 'memory off');
  if (item.not_shown_because === 'repeated') return h('span', { class: 'badge off' }, 'repeated later');
  if (item.cut_by_budget) return h('span', { class: 'badge warn' }, 'cut by budget');
  return h('span', { class: 'badge off' }, 'not shown');
}

/**
 * Where the observation came from: the roles, the messages it cites (or its batch's range,
 * as positions from 0 in the scope's message log), its size and time.
 * @param {ObservationItem} item
 */
function provenance(item) {
  const cited = item.source_message_indexes ?? [];
  const start = item.source_start_index;
  const end = item.source_end_index;
  // An observation no message made (imported, or told through a client) has no range: -1.
  const messages =
    cited.length > 0
      ? `message${cited.length > 1 ? 's' : ''} ${cited.join(', ')}`
      : start === undefined || start < 0
        ? ''
        : start === end
          ? `message ${start}`
          : `messages ${start}–${end}`;
  return [
    `${[item.source, messages].filter((part) => part !== '').join(', ')} · ${item.token_count} tokens · `,
    timeOf(item.created_at),
  ];
}
