/**
 * The memory inspector in a real headless Chromium, with working-memory entries that expire:
 * the table says when each one does, the set form takes a time to live (and shows the API's
 * refusal of a bad one), and an entry whose time has passed leaves the table. No fixed
 * sleeps: every wait is for a condition; the page's clock is moved with `page.clock`.
 */
import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createInspectorPages, WAIT } from '../support/inspector-pages.js';
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

interface EntryJson {
  readonly key: string;
  readonly expires_at: string | null;
}

/** Sets an entry as another client does; its status must be 200. */
async function setEntry(conversation: string, key: string, json: Record<string, unknown>): Promise<void> {
  const path = `/v1/memory/acme/${conversation}/${AGENT}/working/${encodeURIComponent(key)}`;
  const { status } = await e2e.apiJson(path, { method: 'PUT', key: KEY, json });
  expect(status).toBe(200);
}

/** The scope's entries, as the API lists them. */
async function entries(conversation: string): Promise<EntryJson[]> {
  const { status, body } = await e2e.apiJson(`/v1/memory/acme/${conversation}/${AGENT}/working`, { key: KEY });
  expect(status).toBe(200);
  return body['entries'];
}

/** Opens the scope's page and waits for its working-memory table. */
async function openScope(conversation: string): Promise<Page> {
  const page = await inspector.open(e2e.url, `#/scope/acme/${conversation}/${AGENT}`, { key: KEY });
  await page.getByTestId('working-memory-table').waitFor(WAIT);
  return page;
}

/** The cell of the "Expires" column in the row of `key`. */
async function expiresCell(page: Page, key: string): Promise<Locator> {
  const table = page.getByTestId('working-memory-table');
  const headers = await table.locator('thead th').allInnerTexts();
  const column = headers.indexOf('Expires');
  expect(column).toBeGreaterThan(0);
  return table.locator(`tr[data-key="${key}"] > *`).nth(column);
}

/** Fills the set form and presses "Save entry". */
async function submitEntry(page: Page, key: string, value: string, ttl: string): Promise<void> {
  await page.getByLabel('Key', { exact: true }).fill(key);
  await page.getByLabel('Value').fill(value);
  await page.getByLabel('Time to live (seconds)').fill(ttl);
  await page.getByRole('button', { name: 'Save entry' }).click();
}

describe('inspector: working-memory expiry', () => {
  it('sets an entry with a time to live through the form and shows when it expires; one without shows "never"', async () => {
    await setEntry('ttl-form', 'plain', { value: 'kept for good' });
    const page = await openScope('ttl-form');
    const plain = await expiresCell(page, 'plain');
    await expect.poll(() => plain.innerText(), WAIT).toBe('never');
    expect(await plain.locator('time').count()).toBe(0);

    const before = Date.now();
    await submitEntry(page, 'draft', 'outline first', '300');
    const draft = await expiresCell(page, 'draft');
    await expect.poll(() => draft.innerText(), WAIT).toBe('in 5 min');
    // The tooltip holds the API's expiry as it is, five minutes from the save.
    const [stored] = (await entries('ttl-form')).filter((entry) => entry.key === 'draft');
    expect(stored?.expires_at).toEqual(expect.any(String));
    expect(await draft.locator('time').getAttribute('title')).toBe(stored!.expires_at);
    expect(await draft.locator('time').getAttribute('datetime')).toBe(stored!.expires_at);
    const expiresAt = Date.parse(stored!.expires_at!);
    expect(expiresAt).toBeGreaterThan(before + 290_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 300_000);
    // The form is cleared, its TTL field too.
    expect(await page.getByLabel('Time to live (seconds)').inputValue()).toBe('');

    // Edit fills in the time left, so saving a new value keeps the entry's expiry.
    await page.locator('tr[data-key="draft"]').getByRole('button', { name: 'Edit draft' }).click();
    const left = Number(await page.getByLabel('Time to live (seconds)').inputValue());
    expect(left).toBeGreaterThan(280);
    expect(left).toBeLessThanOrEqual(300);
  });

  it('shows the API’s refusal of a time to live of 0, -5 or 1.5, and its own of text; an empty one sets none', async () => {
    await setEntry('ttl-invalid', 'plain', { value: 'here' });
    const page = await openScope('ttl-invalid');
    const problem = page.locator('.form-error');
    for (const ttl of ['0', '-5', '1.5']) {
      await submitEntry(page, 'bad', 'x', ttl);
      // The API's message, which names the field and the value it got.
      await problem.getByText(`ttl_seconds must be a whole number of seconds from 1 to`).waitFor(WAIT);
      await problem.getByText(`got ${ttl}.`).waitFor(WAIT);
    }
    await submitEntry(page, 'bad', 'x', 'ten minutes');
    await problem.getByText('The time to live is a number of seconds').waitFor(WAIT);
    expect(await page.getByLabel('Time to live (seconds)').evaluate((element) => element.matches(':focus'))).toBe(true);
    expect((await entries('ttl-invalid')).map((entry) => entry.key)).toEqual(['plain']);

    await submitEntry(page, 'bad', 'x', '');
    const bad = await expiresCell(page, 'bad');
    await expect.poll(() => bad.innerText(), WAIT).toBe('never');
    expect(await problem.textContent()).toBe('');
    expect((await entries('ttl-invalid')).find((entry) => entry.key === 'bad')?.expires_at).toBeNull();
  });

  it('keeps the time left current without a reload, and says "expired" once the page’s clock passes it', async () => {
    await setEntry('ttl-clock', 'soon', { value: 'in ten minutes', ttl_seconds: 600 });
    const page = await openScope('ttl-clock');
    const soon = await expiresCell(page, 'soon');
    await expect.poll(() => soon.innerText(), WAIT).toBe('in 10 min');
    // Only the page's clock moves (its timers keep running): the next poll rewrites the text.
    const now = Date.now();
    await page.clock.setFixedTime(now + 5 * 60_000);
    await expect.poll(() => soon.innerText(), WAIT).toBe('in 5 min');
    await page.clock.setFixedTime(now + 11 * 60_000);
    await expect.poll(() => soon.innerText(), WAIT).toBe('expired');
    // The server's clock has not passed it: still listed, only no longer shown as live.
    expect((await entries('ttl-clock')).map((entry) => entry.key)).toEqual(['soon']);
  });

  it('drops an entry from the table once its time to live has passed', async () => {
    await setEntry('ttl-pass', 'stays', { value: 'no expiry' });
    const page = await openScope('ttl-pass');
    await page.locator('tr[data-key="stays"]').waitFor(WAIT);
    // Saved through the form, the page reads the entries at once: the row is shown before it expires.
    await submitEntry(page, 'brief', 'gone soon', '2');
    await page.locator('tr[data-key="brief"]').waitFor(WAIT);
    // The API stops returning it once the store's clock passes it; the next poll drops the row.
    await expect.poll(() => page.locator('tr[data-key="brief"]').count(), WAIT).toBe(0);
    expect((await entries('ttl-pass')).map((entry) => entry.key)).toEqual(['stays']);
    await page.locator('tr[data-key="stays"]').waitFor(WAIT);
  });
});
