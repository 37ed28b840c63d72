// @ts-check
// The inspector's entry: the key form, the hash router and the life cycle of a view (each
// view gets an AbortSignal that ends its polling and streams when the user moves on).
import { keyProblem, storedKey, storeKey } from './api.js';
import { clearNoticeOnNavigation, notify } from './notice.js';
import { renderRun } from './run-view.js';
import { renderRuns } from './runs-view.js';
import { renderScope } from './scope-view.js';
import { renderScopes } from './scopes-view.js';

/**
 * @typedef {{
 *   main: HTMLElement,
 *   signal: AbortSignal,
 *   params: string[],
 *   query: URLSearchParams,
 * }} ViewContext
 */

/** @type {Array<{ pattern: RegExp, section: string, render: (context: ViewContext) => Promise<void> }>} */
const ROUTES = [
  { pattern: /^\/scopes$/, section: 'scopes', render: renderScopes },
  { pattern: /^\/scope\/([^/]+)\/([^/]+)\/([^/]+)$/, section: 'scopes', render: renderScope },
  { pattern: /^\/runs$/, section: 'runs', render: renderRuns },
  { pattern: /^\/run\/([^/]+)$/, section: 'runs', render: renderRun },
];

/** @type {AbortController | undefined} */
let current;

/**
 * Renders the view the hash names, ending the previous one.
 * @param {{ focus?: boolean }} [options] focus the new heading (after the user navigated)
 */
async function show(options = {}) {
  const main = /** @type {HTMLElement} */ (document.getElementById('view'));
  current?.abort();
  const controller = new AbortController();
  current = controller;
  const hash = location.hash.replace(/^#/, '') || '/scopes';
  const [path = '', search = ''] = hash.split('?', 2);
  const route = ROUTES.find((candidate) => candidate.pattern.test(path));
  if (!route) {
    location.replace('#/scopes');
    return;
  }
  const params = (route.pattern.exec(path) ?? []).slice(1).map((part) => decodeURIComponent(part));
  for (const link of document.querySelectorAll('nav a[data-section]')) {
    if (link.getAttribute('data-section') === route.section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  main.replaceChildren();
  main.setAttribute('aria-busy', 'true');
  try {
    await route.render({ main, signal: controller.signal, params, query: new URLSearchParams(search) });
  } finally {
    if (current === controller) main.removeAttribute('aria-busy');
  }
  // Focus the new view's heading, so keyboard and screen-reader users start there.
  if (options.focus && current === controller) main.querySelector('h1')?.focus();
}

function setUpKeyForm() {
  const form = /** @type {HTMLFormElement} */ (document.getElementById('key-form'));
  const input = /** @type {HTMLInputElement} */ (document.getElementById('api-key'));
  const state = /** @type {HTMLElement} */ (document.getElementById('key-state'));
  const clear = /** @type {HTMLButtonElement} */ (document.getElementById('clear-key'));
  const describe = () => {
    state.textContent = storedKey() === '' ? 'No key in use' : 'Key in use for this tab';
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const problem = keyProblem(input.value.trim());
    if (problem !== undefined) {
      notify(problem, 'error');
      input.focus();
      return;
    }
    storeKey(input.value.trim());
    input.value = '';
    describe();
    notify(storedKey() === '' ? 'Key cleared.' : 'Key saved for this tab.');
    void show({ focus: true });
  });
  clear.addEventListener('click', () => {
    storeKey('');
    input.value = '';
    describe();
    notify('Key cleared.');
    void show({ focus: true });
  });
  describe();
}

setUpKeyForm();
window.addEventListener('hashchange', () => {
  clearNoticeOnNavigation();
  void show({ focus: true });
});
void show();
