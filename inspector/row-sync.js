// @ts-check
// Bringing a table body up to date without throwing away what the user is doing in it: a row
// whose item is still listed stays the same element (an open question, a focused button and
// a selection survive), a changed one is redrawn, and the focus of a row that goes moves to
// the row that takes its place.
import { focusIsLost } from './dom.js';

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/**
 * @template T
 * @typedef {{
 *   key: (item: T) => string,
 *   build: (item: T) => HTMLTableRowElement,
 *   update?: (row: HTMLTableRowElement, item: T) => void,
 * }} RowSyncOptions `update` redraws a kept row for its changed item in place (by default the
 *   row is replaced by a new one)
 */

/**
 * @template T
 * @param {RowSyncOptions<T>} options
 */
export function createRowSync({ key, build, update }) {
  // The key and the item (as JSON) each row shows.
  /** @type {WeakMap<Element, { key: string, json: string }>} */
  const shown = new WeakMap();
  /** @param {T} item */
  const row = (item) => {
    const element = build(item);
    shown.set(element, { key: key(item), json: JSON.stringify(item) });
    return element;
  };
  return {
    /** A new row for `item`. */
    row,
    /**
     * Makes `body` show `items`, in order, keeping the rows that still show one of them.
     * @param {HTMLTableSectionElement} body
     * @param {T[]} items
     */
    sync(body, items) {
      const focused = document.activeElement;
      const focusedRow = focused && body.contains(focused) ? rowOf(body, focused) : undefined;
      const focusedIndex = focusedRow ? [...body.children].indexOf(focusedRow) : -1;
      const controlIndex = focusedRow && focused ? [...focusedRow.querySelectorAll(FOCUSABLE)].indexOf(focused) : -1;
      /** @type {Map<string, Element>} */
      const current = new Map();
      for (const child of body.children) {
        const known = shown.get(child);
        if (known && !current.has(known.key)) current.set(known.key, child);
      }
      /** @type {Map<Element, Element>} */
      const replacedBy = new Map();
      const rows = items.map((item) => {
        const existing = current.get(key(item));
        current.delete(key(item));
        const known = existing && shown.get(existing);
        if (!existing || !known) return row(item);
        const json = JSON.stringify(item);
        if (known.json === json) return existing;
        if (update) {
          update(/** @type {HTMLTableRowElement} */ (existing), item);
          known.json = json;
          return existing;
        }
        const fresh = row(item);
        replacedBy.set(existing, fresh);
        return fresh;
      });
      const wanted = new Set(rows);
      for (const child of Array.from(body.children)) if (!wanted.has(child)) child.remove();
      // Rows move only when out of order: moving a row would drop the focus inside it.
      /** @type {Element | null} */
      let next = body.firstElementChild;
      for (const element of rows) {
        if (element === next) next = element.nextElementSibling;
        else body.insertBefore(element, next);
      }
      if (!focusedRow || !focused || !focusIsLost()) return;
      if (focused.isConnected) {
        /** @type {HTMLElement} */ (focused).focus();
        return;
      }
      const replacement = replacedBy.get(focusedRow);
      const target = replacement ?? body.children[Math.min(focusedIndex, body.children.length - 1)];
      focusInRow(body, target, replacement ? controlIndex : 0);
    },
  };
}

/**
 * Removes a row the user acted on (deleted), moving the focus, when it was in the row or
 * lost, to the row that takes its place (or the one before, or the table).
 * @param {HTMLTableRowElement} row
 */
export function removeRow(row) {
  const body = row.parentElement;
  const hadFocus = row.contains(document.activeElement) || focusIsLost();
  const next = row.nextElementSibling ?? row.previousElementSibling;
  row.remove();
  if (hadFocus && body) focusInRow(body, next ?? undefined, 0);
}

/**
 * @param {Element} body
 * @param {Element} element
 */
function rowOf(body, element) {
  /** @type {Element | null} */
  let row = element;
  while (row && row.parentElement !== body) row = row.parentElement;
  return row ?? undefined;
}

/**
 * Focuses the control at `index` among those of `row` (or its first one); with none, the table.
 * @param {Element} body
 * @param {Element | undefined} row
 * @param {number} index
 */
function focusInRow(body, row, index) {
  const controls = row ? /** @type {HTMLElement[]} */ ([...row.querySelectorAll(FOCUSABLE)]) : [];
  const control = controls[index] ?? controls[0];
  if (control) {
    control.focus();
    return;
  }
  const table = body.closest('table');
  if (!table) return;
  table.tabIndex = -1;
  table.focus();
}
