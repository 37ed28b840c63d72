/**
 * The memory inspector in a real headless Chromium, while the user edits: a second press sends
 * nothing more, a change made elsewhere keeps the user's place (pages loaded, an open
 * question, the focus), and the focus never falls back to the page's start. No fixed sleeps:
 * every wait is for a condition.
 */
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { countAnswersRead, createInspectorPages, unsearchedAnswersRead, WAIT } from '../support/inspector-pages.js';
import type { InspectorPages } from '../support/inspector-pages.js';
import { startE2E } from './e2e-harness.js';
import type { E2E } from './e2e-harness.js';

const KEY = 'key-acme';
const AGENT = 'planner';

let e2e: E2E;
let inspector: InspectorPages;

beforeAll(async () => {
  inspector = createInspectorPages();
  e2e = await startE2E({ env: { HARNESS_API_KEYS: `${KEY}:acme` } });
}, 60_000);

afterEach(async () => {
  // Uncaught page errors and CSP violations: any of them fails the test that caused it.
  expect(await inspector.closePages()).toEqual([]);
});

afterAll(async () => {
  await inspector?.close();
  await e2e?.close();
});

/** A completed run in `conversation` (agent `planner`), its memory work settled. */
async function seed(conversation: string, prompt: string): Promise<void> {
  const runId = await e2e.startRun({ prompt, conversation_id: conversation, agent_id: AGENT }, KEY);
  await e2e.events(runId, { key: KEY });
}

/** A call to the scope's API, as another client makes it; its status must be 200. */
async function elsewhere(conversation: string, path: string, method: string, json?: unknown): Promise<void> {
  const { status } = await e2e.apiJson(`/v1/memory/acme/${conversation}/${AGENT}${path}`, {
    method,
    key: KEY,
    ...(json === undefined ? {} : { json }),
  });
  expect(status).toBe(200);
}

/** The seqs of the observations table's rows, in order. */
function shownSeqs(page: Page): Promise<string[]> {
  return page
    .getByTestId('observations-table')
    .locator('tbody tr[data-seq]')
    .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-seq') ?? ''));
}

/** What has the focus: its accessible label or text, or the tag of an element without one. */
function focused(page: Page): Promise<string> {
  return page.evaluate(`(() => {
    const element = document.activeElement;
    if (!element || element === document.body) return 'body';
    return element.getAttribute('aria-label') ?? (element.textContent?.trim() || element.tagName.toLowerCase());
  })()`);
}

/** Makes the page log the API calls it starts (`METHOD /path`), when it starts them. */
async function logCalls(page: Page): Promise<void> {
  // A string, as the page's own code: the tests are type-checked without the DOM library.
  await page.evaluate(`{
    const fetchOriginal = window.fetch;
    const log = (window.callsStarted = []);
    window.fetch = function fetch(input, init) {
      log.push((init?.method ?? 'GET') + ' ' + new URL(String(input)).pathname);
      return fetchOriginal.call(this, input, init);
    };
  }`);
}

/** The calls {@link logCalls} saw, with `method` and a path ending with `pathEnd`. */
function callsStarted(page: Page, method: string, pathEnd: string): Promise<number> {
  return page.evaluate(
    `window.callsStarted.filter((call) => call.startsWith(${JSON.stringify(`${method} `)}) && call.endsWith(${JSON.stringify(pathEnd)})).length`,
  );
}

/** Holds every `method` request whose path ends with `pathEnd` until the returned function is called. */
async function holdRequests(page: Page, method: string, pathEnd: string): Promise<() => void> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  await page.route(
    (url) => url.pathname.endsWith(pathEnd),
    async (route) => {
      if (route.request().method() === method) await released;
      await route.fallback();
    },
  );
  return release;
}

describe('inspector: editing keeps the user’s place', () => {
  it('a double press on "Start run" starts one run, and on a correction’s Save sends one correction', async () => {
    const page = await inspector.open(e2e.url, `#/runs?conversation_id=double&agent_id=${AGENT}`, { key: KEY });
    await page.getByLabel('Prompt').waitFor(WAIT);
    await logCalls(page);
    const releaseRun = await holdRequests(page, 'POST', '/v1/runs');
    await page.getByLabel('Prompt').fill('Remember that I like sailing');
    await page.getByRole('button', { name: 'Start run' }).dblclick();
    // Both presses have been handled: a second submit would have started its call by now.
    expect(await callsStarted(page, 'POST', '/v1/runs')).toBe(1);
    releaseRun();
    await page.getByTestId('events').locator('li[data-type="run.completed"]').waitFor(WAIT);

    await page.goto(`${e2e.url}/inspector/#/scope/acme/double/${AGENT}`);
    const row = page.locator('tr[data-seq="1"]');
    await row.waitFor(WAIT);
    await logCalls(page);
    const releaseSave = await holdRequests(page, 'PATCH', '/observations/1');
    await row.getByRole('button', { name: 'Correct observation 1' }).click();
    await page.getByLabel('Observation #1').fill('The user likes sailing on lakes.');
    await page.getByRole('button', { name: 'Save', exact: true }).dblclick();
    expect(await callsStarted(page, 'PATCH', '/observations/1')).toBe(1);
    releaseSave();
    await row.getByText('The user likes sailing on lakes.').waitFor(WAIT);
    const { body } = await e2e.apiJson(`/v1/memory/acme/double/${AGENT}/operations`, { key: KEY });
    expect(body['items'].filter((item: { operation_type: string }) => item.operation_type === 'correct')).toHaveLength(
      1,
    );
  });

  it('a change made elsewhere keeps the pages loaded, an open delete question and its focus', async () => {
    for (const line of ['I like tea', 'I like rowing', 'I like chess']) await seed('keep-place', line);
    await elsewhere('keep-place', '/working/alpha', 'PUT', { value: 'first' });
    await elsewhere('keep-place', '/working/beta', 'PUT', { value: 'second' });
    const page = await inspector.open(e2e.url, '#/scopes', { key: KEY });
    // Pages of one observation, so "Load more" has something to load.
    await page.route(
      (url) => url.pathname.endsWith('/observations'),
      (route) => {
        const url = new URL(route.request().url());
        url.searchParams.set('limit', '1');
        return route.fallback({ url: url.toString() });
      },
    );
    await page.goto(`${e2e.url}/inspector/#/scope/acme/keep-place/${AGENT}`);
    await expect.poll(() => shownSeqs(page), WAIT).toHaveLength(1);
    await page.getByTestId('observations-table').waitFor(WAIT);
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => shownSeqs(page), WAIT).toHaveLength(2);
    const [first, second] = await shownSeqs(page);

    // A delete question open on the second row, then another client corrects the first.
    const secondRow = page.locator(`tr[data-seq="${second}"]`);
    await secondRow.getByRole('button', { name: 'Delete' }).click();
    const confirm = secondRow.locator('.confirm button.danger');
    await expect.poll(() => confirm.evaluate((element) => element.matches(':focus')), WAIT).toBe(true);
    await elsewhere('keep-place', `/observations/${first}`, 'PATCH', { content: 'The user prefers green tea.' });
    await page.locator(`tr[data-seq="${first}"]`).getByText('The user prefers green tea.').waitFor(WAIT);
    expect(await shownSeqs(page)).toEqual([first, second]);
    expect(await secondRow.locator('.question').count()).toBe(1);
    expect(await confirm.evaluate((element) => element.matches(':focus'))).toBe(true);

    // The same in working memory: a new entry elsewhere leaves the question on alpha open.
    const alpha = page.locator('tr[data-key="alpha"]');
    await alpha.getByRole('button', { name: 'Delete' }).click();
    const confirmAlpha = alpha.locator('.confirm button.danger');
    await expect.poll(() => confirmAlpha.evaluate((element) => element.matches(':focus')), WAIT).toBe(true);
    await elsewhere('keep-place', '/working/gamma', 'PUT', { value: 'third' });
    await page.locator('tr[data-key="gamma"]').waitFor(WAIT);
    expect(await alpha.locator('.question').count()).toBe(1);
    expect(await confirmAlpha.evaluate((element) => element.matches(':focus'))).toBe(true);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  });

  it('keeps the focus on the page after a delete, a saved correction and the scope buttons', async () => {
    for (const line of ['I like kites', 'I like maps', 'I like owls']) await seed('focus-kept', line);
    await elsewhere('focus-kept', '/working/one', 'PUT', { value: 1 });
    await elsewhere('focus-kept', '/working/two', 'PUT', { value: 2 });
    const page = await inspector.open(e2e.url, `#/scope/acme/focus-kept/${AGENT}`, { key: KEY });
    await expect.poll(() => shownSeqs(page), WAIT).toHaveLength(3);
    const [first, second, third] = await shownSeqs(page);

    // A deleted observation: the focus moves to the row that takes its place.
    await page.locator(`tr[data-seq="${second}"]`).getByRole('button', { name: 'Delete' }).focus();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
    await expect.poll(() => shownSeqs(page), WAIT).toEqual([first, third]);
    expect(await focused(page)).toBe(`Correct observation ${third}`);

    // A deleted working-memory entry: the same.
    await page.locator('tr[data-key="one"]').getByRole('button', { name: 'Delete' }).focus();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('tr[data-key="one"]').count(), WAIT).toBe(0);
    expect(await focused(page)).toBe('Edit two');

    // A saved correction: the focus is back on its row's button, also once the table reloaded.
    await countAnswersRead(page);
    const listsBefore = await unsearchedAnswersRead(page);
    await page.getByRole('button', { name: `Correct observation ${first}` }).click();
    await page.getByLabel(`Observation #${first}`).fill('The user flies kites on Sundays.');
    await page.getByRole('button', { name: 'Save', exact: true }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => unsearchedAnswersRead(page), WAIT).toBeGreaterThan(listsBefore);
    await page.locator(`tr[data-seq="${first}"]`).getByText('The user flies kites on Sundays.').waitFor(WAIT);
    expect(await focused(page)).toBe(`Correct observation ${first}`);

    // Disable and Enable: disabled while they work, focused again once done.
    for (const [label, state] of [
      ['Disable', 'disabled'],
      ['Enable', 'enabled'],
    ] as const) {
      const button = page.getByRole('button', { name: label, exact: true });
      await button.focus();
      await page.keyboard.press('Enter');
      await page.getByTestId('scope-status').getByText(state, { exact: true }).waitFor(WAIT);
      await expect.poll(() => button.isEnabled(), WAIT).toBe(true);
      expect(await focused(page)).toBe(label);
    }
  });

  it('a correction cancelled after a change elsewhere shows the change', async () => {
    await seed('cancel-edit', 'I like jazz');
    await seed('cancel-edit', 'I like blues');
    const page = await inspector.open(e2e.url, `#/scope/acme/cancel-edit/${AGENT}`, { key: KEY });
    await expect.poll(() => shownSeqs(page), WAIT).toHaveLength(2);
    const [first, second] = await shownSeqs(page);
    await page.getByRole('button', { name: `Correct observation ${first}` }).click();
    await page.getByLabel(`Observation #${first}`).waitFor(WAIT);
    await elsewhere('cancel-edit', `/observations/${second}`, 'PATCH', { content: 'The user likes soul music.' });
    // The page has seen the change (in the snippet) while the form was open.
    await expect
      .poll(() => page.getByTestId('snippet-observational-memory').textContent(), WAIT)
      .toContain('The user likes soul music.');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.locator(`tr[data-seq="${second}"]`).getByText('The user likes soul music.').waitFor(WAIT);
  });

  it('asks for a working-memory key rather than sending one of spaces, and drops the error once blocked', async () => {
    await seed('blank-key', 'I like maths');
    const page = await inspector.open(e2e.url, `#/scope/acme/blank-key/${AGENT}`, { key: KEY });
    await page.getByTestId('working-memory-table').waitFor(WAIT);
    await logCalls(page);
    await page.getByLabel('Key', { exact: true }).fill('   ');
    await page.getByLabel('Value').fill('x');
    await page.getByRole('button', { name: 'Save entry' }).click();
    const problem = page.locator('.form-error');
    await problem.getByText('A key is required').waitFor(WAIT);
    expect(await callsStarted(page, 'PUT', '/working/')).toBe(0);
    expect(await focused(page)).toBe('input');

    // An empty key: the browser's own check stops the submit, and the old error goes.
    await page.getByLabel('Key', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Save entry' }).click();
    await expect.poll(() => problem.textContent(), WAIT).toBe('');
  });
});
