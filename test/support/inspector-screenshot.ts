/**
 * The README's picture of the memory inspector (1280×800): seeds a real harness (SQLite, the
 * scripted model server of the tests, no network) with a few runs of one conversation, a
 * working-memory entry and a reflection, then opens the inspector in headless Chromium and
 * takes the picture. `npm run screenshot:inspector` writes docs/inspector.png with it, and the
 * browser test takes one too, so the picture cannot silently stop working.
 * @module
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { messagesOf, startE2E } from '../e2e/e2e-harness.js';
import { launchChromium } from './launch-chromium.js';

const KEY = 'inspector-demo';
const CONVERSATION = 'trip-planning';
const AGENT = 'planner';
const PROMPTS = [
  'I am planning a trip to Lisbon in May.',
  'Actually, make it Porto: Lisbon is too busy in May.',
  'I need a hotel near the river for three nights.',
  'My budget is 150 euros a night, and I do not eat meat.',
];
/** Importance the scripted observer gives each user line, by a word in it. */
const IMPORTANCE: ReadonlyArray<[string, number]> = [
  ['Porto', 0.9],
  ['budget', 0.8],
  ['hotel', 0.6],
  ['Lisbon', 0.5],
];

/** Takes the inspector's screenshot into `output` (a PNG file). */
export async function takeInspectorScreenshot(output: string): Promise<void> {
  const e2e = await startE2E({
    env: { HARNESS_API_KEYS: `${KEY}:acme`, HARNESS_MEMORY_SNIPPET_MAX_TOKENS: '120' },
  });
  try {
    e2e.script.observer = (request) => {
      const user = String(messagesOf(request)[1]?.content ?? '');
      const said = [...user.slice(user.indexOf('<transcript>')).matchAll(/^\[\d+\] user: (.*)$/gm)].map(
        (match) => match[1] ?? '',
      );
      return {
        text: said
          .map((line) => {
            const importance = IMPORTANCE.find(([word]) => line.includes(word))?.[1] ?? 0.4;
            return `IMPORTANCE:${importance}\nThe user said: ${line}`;
          })
          .join('\n\n'),
      };
    };
    e2e.script.agent = () => ({ text: 'Noted.' });
    e2e.script.reflector = () => ({
      text: [
        'SUMMARY:',
        'The user is planning a May trip to Porto (not Lisbon), three nights by the river, at most 150 euros ' +
          'a night, vegetarian.',
        '',
        'SUPERSESSIONS:',
        '- [seq:2] replaces [seq:1]: the destination changed from Lisbon to Porto',
        '',
        'CONTRADICTIONS:',
        '',
      ].join('\n'),
    });
    for (const prompt of PROMPTS) {
      const runId = await e2e.startRun({ prompt, conversation_id: CONVERSATION, agent_id: AGENT }, KEY);
      await e2e.events(runId, { key: KEY });
    }
    const base = `/v1/memory/acme/${CONVERSATION}/${AGENT}`;
    await expectOk(
      e2e.api(`${base}/working/hotel`, {
        method: 'PUT',
        key: KEY,
        json: { value: { area: 'Ribeira', nights: 3, max_per_night_eur: 150 } },
      }),
    );
    await expectOk(e2e.api(`${base}/observational/reflect`, { method: 'POST', key: KEY, json: {} }));

    const browser = await launchChromium();
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${e2e.url}/inspector/`);
      await page.getByLabel('API key').fill(KEY);
      await page.getByRole('button', { name: 'Use key' }).click();
      await page.getByText('Key in use for this tab').waitFor();
      await page.goto(`${e2e.url}/inspector/#/scope/acme/${CONVERSATION}/${AGENT}`);
      await page.getByTestId('observations-table').waitFor();
      await page.getByTestId('reflection-summary').waitFor();
      await page.locator('body').click({ position: { x: 1, y: 1 } });
      mkdirSync(dirname(output), { recursive: true });
      await page.screenshot({ path: output });
    } finally {
      await browser.close();
    }
  } finally {
    await e2e.close();
  }
}

async function expectOk(response: Promise<Response>): Promise<void> {
  const answer = await response;
  if (!answer.ok) throw new Error(`${answer.url} answered ${answer.status}: ${await answer.text()}`);
}
