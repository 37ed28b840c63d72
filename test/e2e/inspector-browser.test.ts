/**
 * The memory inspector in a real headless Chromium, against a real harness server (SQLite,
 * the scripted OpenAI-compatible model) over HTTP. No fixed sleeps: every wait is for a
 * condition (a locator, or `expect.poll`).
 */
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_WORKING_MEMORY_KEY_LENGTH } from '../../src/core/working-memory.js';
import { countAnswersRead, createInspectorPages, unsearchedAnswersRead, WAIT } from '../support/inspector-pages.js';
import type { InspectorPages } from '../support/inspector-pages.js';
import { startDropProxy } from './drop-proxy.js';
import type { DropProxy } from './drop-proxy.js';
import { messagesOf, startE2E } from './e2e-harness.js';
import type { E2E, ModelScript } from './e2e-harness.js';

const KEY = 'key-acme';
const OTHER_TENANT_KEY = 'key-other';
const READ_ONLY_KEY = 'key-acme-read';
const AGENT = 'planner';

let e2e: E2E;
let proxy: DropProxy;
let defaultAgent: ModelScript['agent'];
let inspector: InspectorPages;

beforeAll(async () => {
  inspector = createInspectorPages();
  e2e = await startE2E({
    env: {
      HARNESS_API_KEYS: `${KEY}:acme,${OTHER_TENANT_KEY}:other,${READ_ONLY_KEY}:acme runs:read memory:read`,
    },
  });
  defaultAgent = e2e.script.agent;
  proxy = await startDropProxy(e2e.url);
  await seed('trip-planning', 'I am planning a trip to Lisbon in May');
  await seed('groceries', 'Remind me to buy oat milk');
}, 60_000);

afterEach(async () => {
  e2e.script.agent = defaultAgent;
  // Uncaught page errors and CSP violations: any of them fails the test that caused it.
  expect(await inspector.closePages()).toEqual([]);
});

afterAll(async () => {
  await inspector?.close();
  await proxy?.close();
  await e2e?.close();
});

/** A completed run in `conversation` (agent `planner`), its memory work settled. */
async function seed(conversation: string, prompt: string): Promise<string> {
  const runId = await e2e.startRun({ prompt, conversation_id: conversation, agent_id: AGENT }, KEY);
  await e2e.events(runId, { key: KEY });
  return runId;
}

/** The API's view of a scope of tenant acme. */
async function scopeJson(conversation: string): Promise<Record<string, any>> {
  const { status, body } = await e2e.apiJson(`/v1/memory/acme/${conversation}/${AGENT}`, { key: KEY });
  expect(status).toBe(200);
  return body;
}

/** Opens the inspector in a new tab (so a fresh session storage), types the key, then goes to `hash`. */
function openInspector(
  hash: string,
  options: { key?: string; base?: string; width?: number; height?: number } = {},
): Promise<Page> {
  return inspector.open(options.base ?? e2e.url, hash, options);
}

/** Types a key into the header form. */
function useKey(page: Page, key: string): Promise<void> {
  return inspector.useKey(page, key);
}

const scopeHash = (conversation: string) => `#/scope/acme/${conversation}/${AGENT}`;
const bodyText = (page: Page) => page.locator('body').innerText();

describe('inspector: in a real browser', () => {
  it('opens, lists the scopes, and finds one by search', async () => {
    const page = await openInspector('#/scopes', { key: KEY });
    await page.getByRole('heading', { name: 'Memory scopes' }).waitFor(WAIT);
    await page.getByRole('link', { name: 'trip-planning' }).waitFor(WAIT);
    await page.getByRole('link', { name: 'groceries' }).waitFor(WAIT);

    await page.getByLabel('Search conversation or agent').fill('trip');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => page.getByRole('link', { name: 'groceries' }).count(), WAIT).toBe(0);
    await page.getByRole('link', { name: 'trip-planning' }).click();
    await page.getByRole('heading', { name: `Scope trip-planning / ${AGENT}` }).waitFor(WAIT);
  });

  it('shows the snippets exactly as the API builds them, and a correction reaches the snippet', async () => {
    const before = await scopeJson('trip-planning');
    const snippet = String(before['snippets'].observational_memory);
    expect(snippet).toContain('Lisbon');
    const page = await openInspector(scopeHash('trip-planning'), { key: KEY });
    const shown = page.getByTestId('snippet-observational-memory');
    await expect.poll(() => shown.textContent(), WAIT).toBe(snippet);
    expect(await page.getByTestId('snippet-working-memory').textContent()).toBe(
      String(before['snippets'].working_memory),
    );
    const budget = page.locator('#budget-bar');
    expect(await budget.innerText()).toContain(
      `${before['progress'].snippet_tokens} / ${before['progress'].snippet_max_tokens} tokens`,
    );
    await page.locator('#observe-bar').waitFor(WAIT);
    await page.locator('#reflect-bar').waitFor(WAIT);
    expect(await page.getByTestId('memory-state').getAttribute('data-state')).toBe('idle');
    expect(await page.getByTestId('memory-state').innerText()).toBe('Memory work: idle');

    // The observations table says why each one is shown, then one is corrected in place.
    const row = page.locator('tr[data-seq="1"]');
    expect(await row.innerText()).toContain('included');
    await row.getByRole('button', { name: 'Correct observation 1' }).click();
    await page.getByLabel('Observation #1').fill('The user is going to Porto in June.');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await expect.poll(() => shown.textContent(), WAIT).toContain('Porto in June');
    const after = await scopeJson('trip-planning');
    await expect.poll(() => shown.textContent(), WAIT).toBe(String(after['snippets'].observational_memory));
    expect(await shown.textContent()).not.toContain('Lisbon');
  });

  it(
    'edits working memory (with the API’s validation errors shown) and the next run’s model request has ' + 'it',
    async () => {
      const page = await openInspector(scopeHash('trip-planning'), { key: KEY });
      await page.getByTestId('working-memory-table').waitFor(WAIT);

      // An invalid key: the API's message is shown beside the form, and nothing is stored.
      await page.getByLabel('Key', { exact: true }).fill('k'.repeat(MAX_WORKING_MEMORY_KEY_LENGTH + 1));
      await page.getByLabel('Value').fill('x');
      await page.getByRole('button', { name: 'Save entry' }).click();
      await page.locator('.form-error').getByText(`longer than ${MAX_WORKING_MEMORY_KEY_LENGTH}`).waitFor(WAIT);

      // The browser would send `..` and `.` to other paths (the scope's own, the list's).
      for (const dots of ['..', '.']) {
        await page.getByLabel('Key', { exact: true }).fill(dots);
        await page.getByRole('button', { name: 'Save entry' }).click();
        await page.locator('.form-error').getByText('a URL cannot name it').waitFor(WAIT);
      }

      await page.getByLabel('Key', { exact: true }).fill('hotel');
      await page.getByLabel('Value').fill('{"name": "Casa Azul", "nights": 3}');
      await page.getByRole('button', { name: 'Save entry' }).click();
      await page.locator('tr[data-key="hotel"]').getByText('Casa Azul').waitFor(WAIT);
      await expect.poll(() => page.getByTestId('snippet-working-memory').textContent(), WAIT).toContain('Casa Azul');
      expect((await scopeJson('trip-planning'))['working_memory']).toEqual([
        expect.objectContaining({ key: 'hotel', value: { name: 'Casa Azul', nights: 3 } }),
      ]);

      const requestsBefore = e2e.agentRequests().length;
      await seed('trip-planning', 'Where am I staying?');
      const [request] = e2e.agentRequests().slice(requestsBefore);
      expect(request).toBeDefined();
      const sent = JSON.stringify(messagesOf(request!));
      expect(sent).toContain('hotel');
      expect(sent).toContain('Casa Azul');
    },
  );

  it('shows a run’s events live, and resumes with Last-Event-ID after a dropped connection', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    e2e.script.agent = (turn) =>
      turn.prompt.startsWith('gated:') ? async () => (await gate, { text: 'released' }) : defaultAgent(turn);
    const runId = await e2e.startRun(
      { prompt: 'gated: plan the day', conversation_id: 'live-run', agent_id: AGENT },
      KEY,
    );
    // Through the proxy, which can drop the connection.
    const page = await openInspector(`#/run/${encodeURIComponent(runId)}`, { key: KEY, base: proxy.url });
    const events = page.getByTestId('events');
    const state = page.getByTestId('stream-state');
    await events.locator('li[data-type="run.started"]').waitFor(WAIT);
    await page.locator('[data-testid="stream-state"][data-state="live"]').waitFor(WAIT);
    // The model has not answered yet: the page shows the run while it runs.
    expect((await e2e.apiJson(`/v1/runs/${runId}`, { key: KEY })).body['status']).toBe('running');

    const shownBefore = await events.locator('li').count();
    const lastShown = await events.locator('li').last().getAttribute('data-event-id');
    proxy.dropAll();
    await page.locator('[data-testid="stream-state"][data-state="live"][data-reconnects="1"]').waitFor(WAIT);
    const resumed = proxy.requestHeads.filter((head) => head.includes(`/events`) && head.includes('last-event-id:'));
    expect(resumed.map((head) => /last-event-id: (.*)/.exec(head)?.[1]?.trim())).toEqual([lastShown?.toLowerCase()]);

    release();
    await events.locator('li[data-type="run.completed"]').waitFor(WAIT);
    await page.locator('[data-testid="stream-state"][data-state="ended"]').waitFor(WAIT);
    expect(await state.innerText()).toContain('reconnected 1×');
    expect(await events.locator('li').count()).toBeGreaterThan(shownBefore);
    await page.getByTestId('run-status').getByText('completed').waitFor(WAIT);

    // Every stored event once, in order: nothing lost or repeated across the drop.
    const shownIds = await events.locator('li').evaluateAll((items) => items.map((item) => item.dataset['eventId']));
    const stored = await e2e.events(runId, { key: KEY });
    expect(shownIds).toEqual(stored.map((frame) => frame.id));
  });

  it('forgets a scope only after confirmation (keyboard only)', async () => {
    await seed('forget-me', 'My locker code is 4711');
    const page = await openInspector(scopeHash('forget-me'), { key: KEY });
    await expect.poll(() => page.getByTestId('snippet-observational-memory').textContent(), WAIT).toContain('4711');

    const forget = page.getByRole('button', { name: 'Forget…' });
    await forget.focus();
    await page.keyboard.press('Enter');
    const confirm = page.getByRole('button', { name: 'Forget permanently' });
    await confirm.waitFor(WAIT);
    expect(await confirm.evaluate((element) => element.matches(':focus'))).toBe(true);
    await page.keyboard.press('Escape');
    await forget.waitFor(WAIT);
    expect(await confirm.count()).toBe(0);
    expect((await scopeJson('forget-me'))['status'].observation_count).toBeGreaterThan(0);

    await forget.focus();
    await page.keyboard.press('Enter');
    await confirm.waitFor(WAIT);
    await page.keyboard.press('Enter');
    await page.getByText(`Forgot forget-me / ${AGENT}.`).waitFor(WAIT);
    await page.getByRole('heading', { name: 'Memory scopes' }).waitFor(WAIT);
    expect(await page.getByRole('link', { name: 'forget-me' }).count()).toBe(0);
    const after = await scopeJson('forget-me');
    expect(after['status'].observation_count).toBe(0);
    expect(after['snippets'].observational_memory).toBe('');
  });

  it('shows a clear error and no data for a wrong key, another tenant’s key, or no key', async () => {
    const wrong = await openInspector('#/scopes', { key: 'not-a-key' });
    await wrong.getByTestId('view-error').getByText('refused the API key').waitFor(WAIT);
    expect(await wrong.getByTestId('view-error').innerText()).toContain('HTTP 401');
    expect(await wrong.getByTestId('scope-table').count()).toBe(0);
    expect(await bodyText(wrong)).not.toContain('trip-planning');

    await wrong.goto(`${e2e.url}/inspector/${scopeHash('trip-planning')}`);
    await wrong.getByTestId('view-error').getByText('HTTP 401').waitFor(WAIT);
    expect(await wrong.getByTestId('snippet-observational-memory').count()).toBe(0);
    expect(await bodyText(wrong)).not.toMatch(/Porto|Lisbon|Casa Azul/);

    const other = await openInspector(scopeHash('trip-planning'), { key: OTHER_TENANT_KEY });
    await other.getByTestId('view-error').getByText('Not found').waitFor(WAIT);
    expect(await bodyText(other)).not.toMatch(/Porto|Lisbon|Casa Azul/);

    const none = await openInspector('#/scopes');
    await none.getByTestId('view-error').getByText('needs an API key').waitFor(WAIT);

    // A key that stops working takes the data off the screen.
    const page = await openInspector(scopeHash('trip-planning'), { key: KEY });
    await expect.poll(() => page.getByTestId('snippet-observational-memory').textContent(), WAIT).toContain('Porto');
    await useKey(page, 'revoked-key');
    await page.getByTestId('view-error').getByText('refused the API key').waitFor(WAIT);
    expect(await bodyText(page)).not.toMatch(/Porto|Lisbon|Casa Azul/);
  });

  it('keeps the scope view for a read-only key whose write is refused, and says why', async () => {
    const page = await openInspector(scopeHash('groceries'), { key: READ_ONLY_KEY });
    await page.locator('tr[data-seq="1"]').waitFor(WAIT);
    await page.getByRole('button', { name: 'Reflect now' }).click();
    await page.locator('#notice').getByText('memory:write').waitFor(WAIT);
    expect(await page.getByTestId('view-error').count()).toBe(0);
    expect(await page.locator('tr[data-seq="1"]').count()).toBe(1);
    expect(await page.getByTestId('snippet-observational-memory').textContent()).toContain('oat milk');
  });

  it('lists runs with filters and replays a finished run’s events', async () => {
    const page = await openInspector('#/runs?conversation_id=groceries', { key: KEY });
    const link = page.getByTestId('runs-table').getByRole('link').first();
    await link.waitFor(WAIT);
    expect(await page.getByTestId('runs-table').innerText()).not.toContain('trip-planning');
    await link.click();
    await page.getByTestId('events').locator('li[data-type="run.completed"]').waitFor(WAIT);
    await page.locator('[data-testid="stream-state"][data-state="ended"]').waitFor(WAIT);
    expect(await page.getByTestId('run-summary').innerText()).toContain('oat milk');

    // The form starts a run in the filtered scope and opens it.
    await page.goto(`${e2e.url}/inspector/#/runs?conversation_id=groceries&agent_id=${AGENT}`);
    await page.getByLabel('Prompt').fill('Add bread to the list');
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.getByTestId('events').locator('li[data-type="run.completed"]').waitFor(WAIT);
    expect(await page.getByTestId('run-summary').innerText()).toContain(`groceries / ${AGENT}`);
  });

  it('works without a key on a server without API keys (loopback), listing the tenant asked for', async () => {
    const keyless = await startE2E();
    try {
      const runId = await keyless.startRun({
        prompt: 'Keyless hello',
        conversation_id: 'open-conv',
        tenant_id: 'team',
      });
      await keyless.events(runId);
      const page = await openInspector('#/scopes', { base: keyless.url });
      await page.getByRole('heading', { name: 'Memory scopes' }).waitFor(WAIT);
      expect(await page.getByRole('link', { name: 'open-conv' }).count()).toBe(0);
      await page.getByLabel('Tenant (servers without keys)').fill('team');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByRole('link', { name: 'open-conv' }).click();
      await expect
        .poll(() => page.getByTestId('snippet-observational-memory').textContent(), WAIT)
        .toContain('Keyless hello');
    } finally {
      await keyless.close();
    }
  });

  it('shows "observing…" while an observation runs, then the new observation and operation', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const observe = e2e.script.observer;
    try {
      await seed('observe-live', 'First line before the page opens');
      // From now on the observer answers only when the test lets it.
      e2e.script.observer = (request) => async () => (await gate, observe(request));
      const page = await openInspector(scopeHash('observe-live'), { key: KEY });
      await page.getByTestId('observations-table').waitFor(WAIT);
      const runId = await e2e.startRun(
        { prompt: 'Second line while the page watches', conversation_id: 'observe-live', agent_id: AGENT },
        KEY,
      );
      await page.locator('[data-testid="memory-state"][data-state="observing…"]').waitFor(WAIT);
      release();
      await page.locator('[data-testid="memory-state"][data-state="idle"]').waitFor(WAIT);
      await e2e.events(runId, { key: KEY });
      await page.getByTestId('observations-table').getByText('Second line while the page watches').waitFor(WAIT);
      await expect
        .poll(() => page.getByTestId('operations-table').locator('tr[data-operation]').count(), WAIT)
        .toBeGreaterThanOrEqual(2);
      expect(await page.getByTestId('operations-table').innerText()).toContain('applied');
    } finally {
      release();
      e2e.script.observer = observe;
    }
  });

  it('disables, enables, reflects now, exports and deletes an observation from the buttons', async () => {
    await seed('controls', 'I like window seats');
    await seed('controls', 'I also like aisle seats on short flights');
    const page = await openInspector(scopeHash('controls'), { key: KEY });
    const status = page.getByTestId('scope-status');
    await status.getByText('enabled').waitFor(WAIT);

    await page.getByRole('button', { name: 'Disable', exact: true }).click();
    await status.getByText('disabled').waitFor(WAIT);
    expect((await scopeJson('controls'))['status'].enabled).toBe(false);
    await page.getByRole('button', { name: 'Enable', exact: true }).click();
    await status.getByText('enabled', { exact: true }).waitFor(WAIT);

    await page.getByRole('button', { name: 'Reflect now' }).click();
    await page.getByText('Reflection done.').waitFor(WAIT);
    await page.getByTestId('reflection-summary').getByText('The user is working on a project.').waitFor(WAIT);

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export JSON' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`memory-controls-${AGENT}.json`);
    const exported = await e2e.api(`/v1/memory/acme/controls/${AGENT}/observational/export?format=json`, { key: KEY });
    const path = await download.path();
    const { readFile } = await import('node:fs/promises');
    expect(await readFile(path, 'utf8')).toBe(await exported.text());

    const row = page.locator('tr[data-seq="1"]');
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => row.count(), WAIT).toBe(0);
    const seqs = (await e2e.apiJson(`/v1/memory/acme/controls/${AGENT}/observations`, { key: KEY })).body['items'].map(
      (item: { seq: number }) => item.seq,
    );
    expect(seqs).not.toContain(1);
  });

  it('says why Reflect now did nothing, and shows no message range for an imported observation', async () => {
    await seed('reflect-off', 'I like window seats');
    expect(
      (await e2e.api(`/v1/memory/acme/reflect-off/${AGENT}/observational/disable`, { key: KEY, method: 'POST' }))
        .status,
    ).toBe(200);
    const page = await openInspector(scopeHash('reflect-off'), { key: KEY });
    await page.getByTestId('scope-status').getByText('disabled').waitFor(WAIT);
    await page.getByRole('button', { name: 'Reflect now' }).click();
    await page.getByText('Observational memory is off for this scope: enable it to reflect.').waitFor(WAIT);

    await e2e.harness.observationalMemory.importObservations(
      { tenantId: 'acme', conversationId: 'imported', agentId: AGENT },
      [{ content: 'The user moved to Berlin.', importance: 0.7 }],
    );
    const imported = await openInspector(scopeHash('imported'), { key: KEY });
    const row = imported.locator('tr[data-seq="1"]');
    await row.getByText('The user moved to Berlin.').waitFor(WAIT);
    const text = await row.innerText();
    expect(text).toContain('import · ');
    expect(text).not.toContain('message');
    // Every column header and every snippet (empty here: working memory) has a name to be read by.
    await imported.getByTestId('snippet-working-memory').waitFor(WAIT);
    const unnamed = await imported
      .locator('th, pre[tabindex]')
      .evaluateAll((elements) =>
        elements
          .filter((element) => (element.getAttribute('aria-label') ?? element.textContent ?? '').trim() === '')
          .map((element) => element.outerHTML),
      );
    expect(unnamed).toEqual([]);
  });

  it('fits a phone-width screen and is usable from the keyboard', async () => {
    const page = await openInspector(scopeHash('trip-planning'), { key: KEY, width: 390, height: 844 });
    await expect.poll(() => page.getByTestId('snippet-observational-memory').textContent(), WAIT).toContain('Porto');
    const overflow = () => page.locator('html').evaluate((root) => root.scrollWidth - root.clientWidth);
    expect(await overflow()).toBeLessThanOrEqual(0);

    // From the top of the scopes page, Tab reaches the scope's link with a visible focus ring,
    // and Enter opens it with the focus on the new heading.
    await page.goto(`${e2e.url}/inspector/#/scopes`);
    await page.getByRole('link', { name: 'trip-planning' }).waitFor(WAIT);
    expect(await overflow()).toBeLessThanOrEqual(0);
    let reached = false;
    for (let step = 0; step < 40 && !reached; step++) {
      await page.keyboard.press('Tab');
      reached = (await page.locator(':focus').textContent()) === 'trip-planning';
    }
    expect(reached).toBe(true);
    const focused = page.locator(':focus');
    expect(
      await focused.evaluate((element) => element.ownerDocument.defaultView?.getComputedStyle(element).outlineStyle),
    ).toBe('solid');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Scope trip-planning / ${AGENT}` }).waitFor(WAIT);
    await page.locator('h1:focus').waitFor(WAIT);
  });

  it('deleting an observation another client deleted first says so and keeps the scope view', async () => {
    await seed('stale-delete', 'I like coffee');
    const page = await openInspector(scopeHash('stale-delete'), { key: KEY });
    const row = page.locator('tr[data-seq="1"]');
    await row.waitFor(WAIT);
    const gone = await e2e.apiJson(`/v1/memory/acme/stale-delete/${AGENT}/observations/1`, {
      method: 'DELETE',
      key: KEY,
    });
    expect(gone.status).toBe(200);
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.locator('#notice .notice-error').waitFor(WAIT);
    await expect.poll(() => page.locator('tr[data-seq="1"]').count(), WAIT).toBe(0);
    expect(await page.getByTestId('view-error').count()).toBe(0);
    expect(await page.getByTestId('observations-table').count()).toBe(1);
  });

  it('follows new observations after a correction was left by a search, and saves any importance', async () => {
    const observe = e2e.script.observer;
    // An observer's score that is not a multiple of 0.05.
    e2e.script.observer = (request) => {
      const reply = observe(request) as { text: string };
      return { text: reply.text.replace(/IMPORTANCE: ?[\d.]+/g, 'IMPORTANCE: 0.72') };
    };
    try {
      await seed('edit-left', 'First thing to remember');
    } finally {
      e2e.script.observer = observe;
    }
    const page = await openInspector(scopeHash('edit-left'), { key: KEY });
    const row = page.locator('tr[data-seq="1"]');
    await row.waitFor(WAIT);
    // A correction saved with its importance of 0.72 left as it is.
    await row.getByRole('button', { name: 'Correct observation 1' }).click();
    await page.getByLabel('Observation #1').fill('The user drinks black tea.');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await expect
      .poll(async () => (await scopeJson('edit-left'))['observations'][0]?.content, WAIT)
      .toBe('The user drinks black tea.');
    // A correction opened, then left by searching: the table reloads without it.
    await row.getByRole('button', { name: 'Correct observation 1' }).click();
    await page.getByLabel('Observation #1').waitFor(WAIT);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => page.getByLabel('Observation #1').count(), WAIT).toBe(0);
    await seed('edit-left', 'Second thing to remember');
    await page.getByTestId('observations-table').getByText('Second thing to remember').waitFor(WAIT);
  });

  it('a slow reload that answers after a newer search is dropped, not shown over it', async () => {
    await seed('slow-reload', 'I like coffee');
    const page = await openInspector(scopeHash('slow-reload'), { key: KEY });
    await page.locator('tr[data-seq="1"]').waitFor(WAIT);
    await countAnswersRead(page);
    // The poll's reload (no search) is held until the search has answered.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    let holding!: () => void;
    const firstHeld = new Promise<void>((resolve) => (holding = resolve));
    await page.route(/\/observations(\?|$)/u, async (route) => {
      if (new URL(route.request().url()).searchParams.has('q')) return route.continue();
      held += 1;
      holding();
      await released;
      await route.continue();
    });
    await seed('slow-reload', 'Remind me about the dentist');
    await firstHeld;
    await page.getByLabel('Search observations').fill('coffee');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const rows = page.getByTestId('observations-table').locator('tbody tr');
    await expect.poll(() => rows.allInnerTexts(), WAIT).toEqual([expect.stringContaining('coffee')]);

    release();
    await expect.poll(() => unsearchedAnswersRead(page), WAIT).toBe(held);
    expect(await rows.allInnerTexts()).toEqual([expect.stringContaining('coffee')]);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  });

  it('ignores "Load more" clicked while a newer list loads: the old list never joins it', async () => {
    const page = await openInspector('#/scopes', { key: KEY });
    await page.getByRole('heading', { name: 'Memory scopes' }).waitFor(WAIT);
    // The table alone, on a load function the test holds (the page's own module).
    const outcome = await page.evaluate(`(async () => {
      const { pagedTable } = await import('./paged-table.js');
      const held = [];
      let loads = 0;
      const load = (cursor) => {
        loads += 1;
        if (loads === 1) return Promise.resolve({ items: ['all-1'], next_cursor: 'c1' });
        return new Promise((resolve) => held.push({ cursor, resolve }));
      };
      const row = (item) => { const tr = document.createElement('tr'); tr.textContent = item; return tr; };
      const table = await pagedTable({ caption: 't', columns: ['x'], empty: 'none', onError: () => {}, load, row });
      document.body.append(table.element);
      const reload = table.reload();
      table.element.querySelector('button').click();
      held[0].resolve({ items: ['coffee-1'], next_cursor: null });
      await reload;
      const rows = [...table.element.querySelectorAll('tbody tr')].map((tr) => tr.textContent);
      table.element.remove();
      return { rows, loads, cursors: held.map((entry) => entry.cursor ?? null) };
    })()`);
    expect(outcome).toEqual({ rows: ['coffee-1'], loads: 2, cursors: [null] });
  });

  it('keeps the filters on screen when the API refuses them, so they can be corrected', async () => {
    const scopes = await openInspector('#/scopes?enabled=maybe', { key: KEY });
    await scopes.getByTestId('list-error').getByText('enabled must be true or false').waitFor(WAIT);
    expect(await scopes.getByTestId('view-error').count()).toBe(0);
    await scopes.getByRole('button', { name: 'Search', exact: true }).click();
    await scopes.getByRole('link', { name: 'trip-planning' }).waitFor(WAIT);
    expect(await scopes.getByTestId('list-error').count()).toBe(0);

    const runs = await openInspector('#/runs?status=lost', { key: KEY });
    await runs.getByTestId('list-error').getByText('status must be one of').waitFor(WAIT);
    await runs.getByLabel('Status').selectOption('completed');
    await runs.getByRole('button', { name: 'Filter', exact: true }).click();
    await runs.getByTestId('runs-table').getByRole('link').first().waitFor(WAIT);
  });

  it('refuses an API key no HTTP header can carry, instead of calling the server unreachable', async () => {
    const page = await openInspector('#/scopes');
    await page.getByTestId('view-error').getByText('needs an API key').waitFor(WAIT);
    await page.getByLabel('API key').fill('clé-ключ');
    await page.getByRole('button', { name: 'Use key' }).click();
    await page.locator('#notice .notice-error').getByText('an HTTP header cannot carry').waitFor(WAIT);
    expect(await page.locator('#key-state').innerText()).toBe('No key in use');

    // A key kept in the tab by an earlier version is reported the same way.
    await page.evaluate(`sessionStorage.setItem('harness-memory.inspector.api-key', 'ключ')`);
    await page.reload();
    await page.getByTestId('view-error').getByText('an HTTP header cannot carry').waitFor(WAIT);
    expect(await bodyText(page)).not.toContain('could not be reached');
  });
});
