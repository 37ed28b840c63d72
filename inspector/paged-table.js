// @ts-check
// A table filled page by page from a cursor-paginated list API ({items, next_cursor}).
import { h, replace, whileBusy } from './dom.js';
import { createRowSync } from './row-sync.js';

/**
 * @template T
 * @typedef {{
 *   caption: string,
 *   columns: string[],
 *   row: (item: T) => HTMLTableRowElement,
 *   key?: (item: T) => string,
 *   update?: (row: HTMLTableRowElement, item: T) => void,
 *   load: (cursor: string | undefined) => Promise<{ items: T[], next_cursor?: string | null }>,
 *   empty: string,
 *   onError: (error: unknown) => void,
 *   testId?: string,
 * }} PagedTableOptions `key` names the item a row shows (by default the item itself, as JSON),
 *   so `refresh` keeps the rows that stay; `update` redraws a kept row in place (by default
 *   it is replaced)
 */

/**
 * Builds the table and loads its first page (a failure of that first load is thrown, so the
 * view can replace itself with the error). "Load more" fetches the next pages.
 * @template T
 * @param {PagedTableOptions<T>} options
 */
export async function pagedTable(options) {
  const body = h('tbody');
  const count = h('p', { class: 'muted table-count', role: 'status' });
  const more = h('button', { type: 'button', hidden: true }, 'Load more');
  const table = h(
    'table',
    options.testId ? { 'data-testid': options.testId } : {},
    h('caption', { class: 'visually-hidden' }, options.caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        // A column of buttons has no title: a screen reader still reads it by a name.
        options.columns.map((column) =>
          h('th', { scope: 'col', ...(column === '' ? { 'aria-label': 'Actions' } : {}) }, column),
        ),
      ),
    ),
    body,
  );
  const element = h('div', { class: 'paged' }, h('div', { class: 'table-scroll' }, table), count, more);
  const rows = createRowSync({
    key: options.key ?? ((item) => JSON.stringify(item)),
    build: options.row,
    update: options.update,
  });
  /** @type {string | undefined} */
  let cursor;
  let shown = 0;
  // Each load from the start begins a new generation; a page that answers after a newer
  // generation began (a slow poll after a search, "Load more" across a reload) is dropped.
  let generation = 0;
  // The generation whose answer set `cursor`: "Load more" pages only that list.
  let cursorGeneration = 0;

  /** @param {number} total @param {string | undefined} next @param {number} mine */
  const showCount = (total, next, mine) => {
    shown = total;
    cursor = next;
    cursorGeneration = mine;
    more.hidden = cursor === undefined;
    if (shown === 0) {
      replace(body, h('tr', {}, h('td', { colspan: options.columns.length, class: 'muted' }, options.empty)));
    }
    count.textContent = `${shown} shown${cursor === undefined ? '' : ', more available'}`;
  };

  /**
   * Loads the list from its start: a new list (`keep` false), or the same list brought up to
   * date (`keep` true): as many rows as were shown, the rows that stay kept as they are.
   * @param {boolean} keep
   */
  const loadFromStart = async (keep) => {
    const mine = ++generation;
    if (!keep) more.hidden = true;
    const wanted = keep ? shown : 0;
    /** @type {T[]} */
    const items = [];
    /** @type {string | undefined} */
    let next;
    try {
      do {
        const page = await options.load(next);
        if (mine !== generation) return;
        items.push(...page.items);
        next = page.next_cursor ?? undefined;
      } while (next !== undefined && items.length < wanted);
    } catch (error) {
      if (mine === generation) throw error;
      return; // the newer load reports its own outcome
    }
    if (keep) rows.sync(body, items);
    else replace(body, items.map(rows.row));
    showCount(items.length, next, mine);
  };

  const loadMore = async () => {
    // "Load more" clicked while a newer list loads would page the old one: nothing to do.
    if (cursorGeneration !== generation) return;
    const mine = generation;
    const page = await options.load(cursor);
    if (mine !== generation) return;
    if (shown === 0) body.replaceChildren();
    for (const item of page.items) body.appendChild(rows.row(item));
    showCount(shown + page.items.length, page.next_cursor ?? undefined, mine);
  };

  more.addEventListener('click', async () => {
    try {
      await whileBusy(more, loadMore);
    } catch (error) {
      options.onError(error);
    }
  });

  await loadFromStart(false);
  return {
    element,
    /** Loads the first page again (a new list: a search, a filter). */
    reload: () => loadFromStart(false),
    /** Brings the list up to date, keeping the user's place: as many rows, the same rows where they stay. */
    refresh: () => loadFromStart(true),
  };
}
