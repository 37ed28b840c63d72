// @ts-check
// Messages to the user: a short notice under the header, and a view replaced by an error.
import { describeError } from './api.js';
import { h, replace } from './dom.js';

/**
 * Shows a notice under the header, until the next one or the next navigation.
 * @param {string} message
 * @param {'info' | 'error'} [kind]
 * @param {{ keepAcrossNavigation?: boolean }} [options] keep it over the navigation that follows
 *   (a notice about what was just done, shown on the page that comes next)
 */
export function notify(message, kind = 'info', options = {}) {
  const region = document.getElementById('notice');
  if (!region) return;
  replace(region, message === '' ? null : h('p', { class: `notice-${kind}` }, message));
  if (options.keepAcrossNavigation) region.dataset['keep'] = 'true';
  else delete region.dataset['keep'];
}

/** Called on navigation: clears the notice, unless it was meant for the page that comes next. */
export function clearNoticeOnNavigation() {
  const region = document.getElementById('notice');
  if (!region) return;
  if (region.dataset['keep'] === 'true') delete region.dataset['keep'];
  else replace(region);
}

/**
 * Replaces a view's content with the error alone: after a refusal nothing of the data it
 * showed may stay on screen.
 * @param {HTMLElement} main
 * @param {string} title
 * @param {unknown} error
 */
export function failView(main, title, error) {
  replace(main, h('h1', { tabindex: -1 }, title), errorPanel(error, 'view-error'));
}

/**
 * The error of a list the API refused for its filters (a 400, say), shown in the table's
 * place: the filters stay on screen, so the user can correct them.
 * @param {unknown} error
 * @param {string} [testId]
 */
export function errorPanel(error, testId = 'list-error') {
  return h('div', { class: 'error-panel', role: 'alert', 'data-testid': testId }, describeError(error));
}

/**
 * An error line for a form (validation errors from the API, or the form's own), empty until used.
 */
export function formError() {
  const line = h('p', { class: 'form-error', role: 'alert' });
  const clear = () => replace(line);
  return {
    element: line,
    /** @param {unknown} error an error, or the message itself */
    show(error) {
      replace(line, error === null ? null : typeof error === 'string' ? error : describeError(error));
    },
    clear,
    /**
     * Clears the line when the browser's own checks (a required field left empty) stop a
     * submit: the old error would stand beside a field that is now valid.
     * @param {HTMLFormElement} form
     */
    clearWhenBlocked(form) {
      // `invalid` does not bubble: caught on the way down.
      form.addEventListener('invalid', clear, true);
    },
  };
}
