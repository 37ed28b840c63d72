// @ts-check
// Building DOM nodes. Stored memory is untrusted text, so nothing here parses HTML: text
// becomes text nodes and attributes are set one by one.

/**
 * @typedef {string | number | Node | null | undefined | false} Child
 * @typedef {{
 *   class?: string,
 *   text?: string,
 *   on?: Record<string, (event: any) => void>,
 *   [attribute: string]: unknown,
 * }} Props
 */

/** Properties set as DOM properties rather than attributes (their attribute is only the default). */
const PROPERTIES = new Set(['value', 'checked', 'disabled', 'hidden', 'selected']);

/**
 * An element with attributes, listeners and children. Strings and numbers become text.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Props} [props]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') element.className = String(value);
    else if (name === 'text') element.textContent = String(value);
    else if (name === 'on') {
      for (const [type, listener] of Object.entries(/** @type {Record<string, EventListener>} */ (value))) {
        element.addEventListener(type, listener);
      }
    } else if (PROPERTIES.has(name)) Reflect.set(element, name, value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

/**
 * Appends children (nested arrays flattened; empty values skipped).
 * @param {Node} parent
 * @param {Array<Child | Child[]>} children
 */
export function append(parent, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/**
 * Replaces an element's children.
 * @param {Element} parent
 * @param {...(Child | Child[])} children
 */
export function replace(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
}

/**
 * A date as the reader's local time, with the ISO value in a `<time>` element.
 * @param {string | null | undefined} iso
 * @returns {Node}
 */
export function timeOf(iso) {
  if (!iso) return document.createTextNode('–');
  const date = new Date(iso);
  const shown = Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
  return h('time', { datetime: iso, title: iso }, shown);
}

/**
 * A number for a table cell: fixed decimals, or a dash when absent.
 * @param {unknown} value
 * @param {number} [digits]
 */
export function numberText(value, digits = 0) {
  return typeof value === 'number' && Number.isFinite(value) ? value.toFixed(digits) : '–';
}

/**
 * A horizontal bar for `value` of `max`, exposed as a progress bar to assistive technology.
 * The bar fills to 100 % at most; the text says the real figures.
 * @param {{ label: string, value: number, max: number, unit?: string, id?: string }} options
 */
export function bar({ label, value, max, unit = 'tokens', id }) {
  const ratio = max > 0 ? value / max : 0;
  const fill = h('span', { class: `bar-fill${ratio >= 1 ? ' full' : ''}` });
  fill.style.width = `${Math.min(100, Math.max(0, ratio * 100)).toFixed(1)}%`;
  const text = `${value} / ${max} ${unit}`;
  return h(
    'div',
    { class: 'bar', ...(id ? { id } : {}) },
    h('div', { class: 'bar-label' }, h('span', {}, label), h('span', { class: 'bar-figures' }, text)),
    h(
      'div',
      {
        class: 'bar-track',
        role: 'progressbar',
        'aria-label': label,
        'aria-valuemin': 0,
        'aria-valuemax': max,
        'aria-valuenow': Math.min(value, max),
        'aria-valuetext': text,
      },
      fill,
    ),
  );
}

/**
 * Runs `work` with `button` disabled, so a second press cannot start it again. Disabling the
 * focused button drops the focus on the page: it goes back to the button afterwards, unless
 * it went somewhere else meanwhile or the button left the page.
 * @template R
 * @param {HTMLButtonElement} button
 * @param {() => Promise<R>} work
 * @returns {Promise<R>}
 */
export async function whileBusy(button, work) {
  const hadFocus = document.activeElement === button;
  button.disabled = true;
  try {
    return await work();
  } finally {
    button.disabled = false;
    if (hadFocus && button.isConnected && focusIsLost()) button.focus();
  }
}

/** Whether the focus is nowhere in particular (on the body, as after its element went away). */
export function focusIsLost() {
  return document.activeElement === null || document.activeElement === document.body;
}

/**
 * A two-step button: the first press asks, the second (on "confirm") acts. Escape or
 * "Cancel" goes back. Focus moves to the confirm button and back.
 * @param {{ label: string, question: string, confirmLabel: string, onConfirm: () => unknown,
 *   danger?: boolean, name?: string }} options `name`: the accessible name of both buttons
 *   when their label alone does not say what they act on ("Delete observation 3")
 */
export function confirmButton({ label, question, confirmLabel, onConfirm, danger = true, name }) {
  const wrapper = h('span', { class: 'confirm' });
  const start = h('button', { type: 'button', class: danger ? 'danger' : '', 'aria-label': name }, label);
  let asking = false;
  const showStart = () => {
    asking = false;
    replace(wrapper, start);
    start.focus();
  };
  wrapper.addEventListener('keydown', (event) => {
    if (asking && event.key === 'Escape') showStart();
  });
  start.addEventListener('click', () => {
    const yes = h('button', { type: 'button', class: 'danger', 'aria-label': name }, confirmLabel);
    const no = h('button', { type: 'button' }, 'Cancel');
    yes.addEventListener('click', async () => {
      yes.disabled = true;
      no.disabled = true;
      try {
        await onConfirm();
      } finally {
        if (wrapper.isConnected) showStart();
      }
    });
    no.addEventListener('click', showStart);
    asking = true;
    replace(wrapper, h('span', { class: 'question', role: 'alert' }, question), yes, no);
    yes.focus();
  });
  replace(wrapper, start);
  return wrapper;
}
