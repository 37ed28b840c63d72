// @ts-check
// The inspector's entry: the key form, the hash router and the life cycle of a view (each
// view gets an AbortSignal that ends its polling and streams when the user moves on).
import { keyProblem, storedKey, storeKey } from './api.js';
import { h, replace } from './dom.js';
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

/**
 * @type {Array<{ pattern: RegExp, section: string, title: (params: string[]) => string,
 *   render: (context: ViewContext) => Promise<void> }>}
 */
const ROUTES = [
  { pattern: /^\/scopes$/, section: 'scopes', title: () => 'Memory scopes', render: renderScopes },
  {
    pattern: /^\/scope\/([^/]+)\/([^/]+)\/([^/]+)$/,
    section: 'scopes',
    title: (params) => `Scope ${params.join(' / ')}`,
    render: renderScope,
  },
  { pattern: /^\/runs$/, section: 'runs', title: () => 'Runs', render: renderRuns },
  { pattern: /^\/run\/([^/]+)$/, section: 'runs', title: ([runId]) => `Run ${runId}`, render: renderRun },
];

/** The document's title for a view: the view first, so tabs and history tell pages apart. */
const titleOf = (/** @type {string} */ view) => `${view} · Memory inspector`;

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
  /** @type {string[]} */
  let params;
  try {
    params = (route.pattern.exec(path) ?? []).slice(1).map((part) => decodeURIComponent(part));
  } catch {
    // A stray `%` (a link cut or typed by hand) cannot be decoded.
    showBadLink(main);
    if (options.focus) main.querySelector('h1')?.focus();
    return;
  }
  markSection(route.section);
  document.title = titleOf(route.title(params));
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

/** @param {string} section the nav link to mark as the current page ('' for none) */
function markSection(section) {
  for (const link of document.querySelectorAll('nav a[data-section]')) {
    if (link.getAttribute('data-section') === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

/** @param {HTMLElement} main */
function showBadLink(main) {
  markSection('');
  document.title = titleOf('Bad link');
  main.removeAttribute('aria-busy');
  replace(
    main,
    h('h1', { tabindex: -1 }, 'Bad link'),
    h(
      'div',
      { class: 'error-panel', role: 'alert', 'data-testid': 'view-error' },
      'This address is not one the inspector can open (part of it is not valid percent-encoding). ',
      h('a', { href: '#/scopes' }, 'Go to the memory scopes'),
      '.',
    ),
  );
}

/** The skip link moves the focus to the view; as a plain `#view` link it would change the route. */
function setUpSkipLink() {
  document.querySelector('.skip-link')?.addEventListener('click', (event) => {
    event.preventDefault();
    document.getElementById('view')?.focus();
  });
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

setUpSkipLink();
setUpKeyForm();
window.addEventListener('hashchange', () => {
  clearNoticeOnNavigation();
  void show({ focus: true });
});
void show();
