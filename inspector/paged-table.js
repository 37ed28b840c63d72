// @ts-check
// A table filled page by page from a cursor-paginated list API ({items, next_cursor}).
import { h, replace } from './dom.js';

/**
 * @template T
 * @typedef {{
 *   caption: string,
 *   columns: string[],
 *   row: (item: T) => HTMLTableRowElement,
 *   load: (cursor: string | undefined) => Promise<{ items: T[], next_cursor?: string | null }>,
 *   empty: string,
 *   onError: (error: unknown) => void,
 *   testId?: string,
 * }} PagedTableOptions
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
        options.columns.map((column) => h('th', { scope: 'col' }, column)),
      ),
    ),
    body,
  );
  const element = h('div', { class: 'paged' }, h('div', { class: 'table-scroll' }, table), count, more);
  /** @type {string | undefined} */
  let cursor;
  let shown = 0;
  // Each load from the start begins a new generation; a page that answers after a newer
  // generation began (a slow poll after a search, "Load more" across a reload) is dropped.
  let generation = 0;
  // The generation whose answer set `cursor`: "Load more" pages only that list.
  let cursorGeneration = 0;

  /** @param {boolean} fromStart */
  const loadPage = async (fromStart) => {
    // "Load more" clicked while a newer list loads would page the old one: nothing to do.
    if (!fromStart && cursorGeneration !== generation) return;
    const mine = fromStart ? ++generation : generation;
    if (fromStart) more.hidden = true;
    /** @type {Awaited<ReturnType<typeof options.load>>} */
    let page;
    try {
      page = await options.load(fromStart ? undefined : cursor);
    } catch (error) {
      if (mine === generation) throw error;
      return; // the newer load reports its own outcome
    }
    if (mine !== generation) return;
    if (fromStart) {
      body.replaceChildren();
      shown = 0;
    }
    for (const item of page.items) body.appendChild(options.row(item));
    shown += page.items.length;
    cursor = page.next_cursor ?? undefined;
    cursorGeneration = mine;
    more.hidden = cursor === undefined;
    if (shown === 0) {
      replace(body, h('tr', {}, h('td', { colspan: options.columns.length, class: 'muted' }, options.empty)));
    }
    count.textContent = `${shown} shown${cursor === undefined ? '' : ', more available'}`;
  };

  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      await loadPage(false);
    } catch (error) {
      options.onError(error);
    } finally {
      more.disabled = false;
    }
  });

  await loadPage(true);
  return {
    element,
    /** Loads the first page again. */
    reload: () => loadPage(true),
  };
}
