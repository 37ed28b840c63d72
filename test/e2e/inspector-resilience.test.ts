/**
 * The memory inspector in a real headless Chromium, when things are not as expected: a
 * server that fails or never answers, a bad link, text that would pass for something it is
 * not, ids too long for a row; and its names for assistive technology. No fixed sleeps:
 * every wait is for a condition.
 */
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_WORKING_MEMORY_KEY_LENGTH } from '../../src/core/working-memory.js';
import { createInspectorPages, WAIT } from '../support/inspector-pages.js';
import type { InspectorPages, OpenInspectorOptions } from '../support/inspector-pages.js';
import { startE2E } from './e2e-harness.js';
import type { E2E, ModelScript } from './e2e-harness.js';

const KEY = 'key-acme';
const AGENT = 'planner';
/**
 * Makes the page's 15 s request timeout 3 s, so a test need not wait for it; long enough for
 * the page's first loads on a loaded machine (the scope view does not retry a failed first load).
 */
const SHORT_TIMEOUT = `{
  const timeout = AbortSignal.timeout.bind(AbortSignal);
  AbortSignal.timeout = (ms) => timeout(Math.min(ms, 3000));
}`;

let e2e: E2E;
let inspector: InspectorPages;
let defaultAgent: ModelScript['agent'];

beforeAll(async () => {
  inspector = createInspectorPages();
  e2e = await startE2E({ env: { HARNESS_API_KEYS: `${KEY}:acme` } });
  defaultAgent = e2e.script.agent;
}, 60_000);

afterEach(async () => {
  e2e.script.agent = defaultAgent;
  // Uncaught page errors and CSP violations: any of them fails the test that caused it.
  expect(await inspector.closePages()).toEqual([]);
});

afterAll(async () => {
  await inspector?.close();
  await e2e?.close();
});

/** A completed run in `conversation` (agent `planner`), its memory work settled. */
async function seed(conversation: string, prompt: string): Promise<string> {
  const runId = await e2e.startRun({ prompt, conversation_id: conversation, agent_id: AGENT }, KEY);
  await e2e.events(runId, { key: KEY });
  return runId;
}

/** Sets a working-memory entry of a scope of tenant acme, as another client does. */
async function setEntry(conversation: string, key: string, value: unknown): Promise<void> {
  const { status } = await e2e.apiJson(`/v1/memory/acme/${conversation}/${AGENT}/working/${encodeURIComponent(key)}`, {
    method: 'PUT',
    key: KEY,
    json: { value },
  });
  expect(status).toBe(200);
}

function open(hash: string, options: OpenInspectorOptions = {}): Promise<Page> {
  return inspector.open(e2e.url, hash, { key: KEY, ...options });
}

describe('inspector: when things go wrong', () => {
  it('says "Not updated" while the server fails or never answers, and the next answer puts the live line back', async () => {
    await seed('resilient', 'I like hiking');
    const page = await open(`#/scope/acme/resilient/${AGENT}`, { init: SHORT_TIMEOUT });
    const state = page.getByTestId('memory-state');
    await expect.poll(() => state.innerText(), WAIT).toBe('Memory work: idle');
    const poll = (url: URL) => url.pathname === `/v1/memory/acme/resilient/${AGENT}`;

    // The server cannot be reached, then is back.
    await page.route(poll, (route) => route.abort('connectionrefused'));
    await state.getByText('Not updated').waitFor(WAIT);
    expect(await state.innerText()).toContain('could not be reached');
    await page.unroute(poll);
    await expect.poll(() => state.innerText(), WAIT).toBe('Memory work: idle');

    // The server takes the request and never answers (the route never lets it through).
    await page.route(poll, () => {});
    await state.getByText('did not answer within').waitFor(WAIT);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await expect.poll(() => state.innerText(), WAIT).toBe('Memory work: idle');

    // A pressed button whose call never answers comes back, with the error.
    await page.route(
      (url) => url.pathname.endsWith('/observational/disable'),
      () => {},
    );
    const disable = page.getByRole('button', { name: 'Disable', exact: true });
    await disable.focus();
    await page.keyboard.press('Enter');
    await page.locator('#notice .notice-error').getByText('did not answer within').waitFor(WAIT);
    expect(await disable.isEnabled()).toBe(true);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  });

  it('says what the server answered while a run’s stream retries, and counts only real reconnections', async () => {
    const runId = await seed('stream-refused', 'I like radio');
    const page = await open('#/scopes');
    let attempts = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    await page.route(
      (url) => url.pathname.endsWith('/events'),
      async (route) => {
        attempts += 1;
        if (attempts <= 2) {
          const error = { code: 'internal_error', message: 'the store failed' };
          return route.fulfill({ status: 500, contentType: 'application/json', body: JSON.stringify({ error }) });
        }
        await released;
        return route.fallback();
      },
    );
    await page.goto(`${e2e.url}/inspector/#/run/${encodeURIComponent(runId)}`);
    const state = page.getByTestId('stream-state');
    // The third attempt is held, so the line says what the two before it got.
    await expect.poll(() => attempts, WAIT).toBe(3);
    await expect.poll(() => state.innerText(), WAIT).toContain('2 tries failed');
    expect(await state.innerText()).toContain('the store failed (HTTP 500, internal_error)');
    expect(await state.innerText()).not.toContain('reconnected');
    release();
    await page.locator('[data-testid="stream-state"][data-state="ended"]').waitFor(WAIT);
    expect(await state.innerText()).toBe('ended: the run is over');
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  });

  it('shows a bad link for a stray "%" in the address, instead of failing', async () => {
    const page = await open('#/run/abc%zz');
    await page.getByRole('heading', { name: 'Bad link' }).waitFor(WAIT);
    expect(await page.getByTestId('view-error').innerText()).toContain('not one the inspector can open');
    expect(await page.title()).toBe('Bad link · Memory inspector');
    await page.getByRole('link', { name: 'Go to the memory scopes' }).click();
    await page.getByRole('heading', { name: 'Memory scopes' }).waitFor(WAIT);
  });

  it('"Skip to content" moves the focus to the view and stays on the page', async () => {
    const page = await open('#/runs');
    await page.getByRole('heading', { name: 'Runs', exact: true }).waitFor(WAIT);
    await page.getByRole('link', { name: 'Skip to content' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('main#view:focus').waitFor(WAIT);
    expect(new URL(page.url()).hash).toBe('#/runs');
    expect(await page.locator('h1').innerText()).toBe('Runs');
  });

  it('shows a run’s bidi controls as visible markers, in isolated text', async () => {
    // The run store strips them when it redacts (the default); a server with redaction off, or
    // a database written before, still holds them.
    const redacting = e2e;
    e2e = await startE2E({ env: { HARNESS_API_KEYS: `${KEY}:acme`, HARNESS_REDACT_TRANSCRIPTS: 'false' } });
    let pageErrors: unknown[];
    try {
      await bidiShown();
    } finally {
      // Its pages go before its server: uncaught page errors and CSP violations fail the test.
      pageErrors = await inspector.closePages();
      await e2e.close();
      e2e = redacting;
    }
    expect(pageErrors).toEqual([]);
  });

  async function bidiShown(): Promise<void> {
    e2e.script.agent = (turn) =>
      turn.prompt.includes('\u202E') ? { text: 'Paid to \u202Eabc\u202C.' } : defaultAgent(turn);
    const runId = await seed('bidi', 'account \u202E0987654321\u202C');
    const shown = 'account ⟨U+202E⟩0987654321⟨U+202C⟩';
    const page = await open('#/runs?conversation_id=bidi');
    const cell = page.getByTestId('runs-table').locator('td.content');
    await cell.waitFor(WAIT);
    expect(await cell.textContent()).toBe(shown);
    const isolation = (element: { ownerDocument: any }) =>
      element.ownerDocument.defaultView.getComputedStyle(element).unicodeBidi as string;
    expect(await cell.locator('bdi').evaluate(isolation)).toBe('isolate');

    await page.goto(`${e2e.url}/inspector/#/run/${encodeURIComponent(runId)}`);
    await page.getByTestId('events').locator('li[data-type="run.completed"]').waitFor(WAIT);
    const summary = await page.getByTestId('run-summary').textContent();
    expect(summary).toContain(shown);
    expect(summary).toContain('Paid to ⟨U+202E⟩abc⟨U+202C⟩.');
    expect(await page.getByTestId('run-prompt').locator('bdi').evaluate(isolation)).toBe('isolate');
    const events = await page.getByTestId('events').textContent();
    expect(events).toContain('⟨U+202E⟩');
    expect(`${summary}${events}`).not.toMatch(/[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u);
  }

  it('wraps a 128-character key, so its row’s buttons stay on a 1280 px screen', async () => {
    await seed('long-key', 'I like long walks');
    const key = 'k'.repeat(MAX_WORKING_MEMORY_KEY_LENGTH);
    await setEntry('long-key', key, 'a value');
    const page = await open(`#/scope/acme/long-key/${AGENT}`, { width: 1280 });
    const row = page.locator(`tr[data-key="${key}"]`);
    await row.waitFor(WAIT);
    const box = await row.getByRole('button', { name: 'Delete' }).boundingBox();
    expect(box).not.toBeNull();
    expect(box!.x + box!.width).toBeLessThanOrEqual(1280);
    const overflow = await row
      .locator('xpath=ancestor::div[contains(@class, "table-scroll")]')
      .evaluate((element) => element.scrollWidth - element.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
  });

  it('names each view in the document title, and each Delete button by what it deletes', async () => {
    await seed('named', 'I like puzzles');
    await setEntry('named', 'plan', 'Solve one a day');
    const page = await open(`#/scope/acme/named/${AGENT}`);
    const deleteObservation = page.getByRole('button', { name: 'Delete observation 1', exact: true });
    await deleteObservation.waitFor(WAIT);
    expect(await page.title()).toBe(`Scope acme / named / ${AGENT} · Memory inspector`);
    // The confirming button says the same.
    await deleteObservation.click();
    await page.getByText('Delete observation #1?').waitFor(WAIT);
    expect(await deleteObservation.evaluate((element) => element.matches(':focus'))).toBe(true);
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Delete working-memory entry plan', exact: true }).waitFor(WAIT);

    await page.goto(`${e2e.url}/inspector/#/runs`);
    await expect.poll(() => page.title(), WAIT).toBe('Runs · Memory inspector');
  });
});
