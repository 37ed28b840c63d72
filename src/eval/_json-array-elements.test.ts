import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonArrayShapeError, readJsonArrayElements } from './_json-array-elements.js';
import { seededRandom } from '../../test/support/seeded-random.js';

const directory = mkdtempSync(join(tmpdir(), 'harness-memory-json-array-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
let files = 0;

function fileOf(text: string): string {
  const path = join(directory, `f${(files += 1)}.json`);
  writeFileSync(path, text);
  return path;
}

async function elementsOf(text: string, chunkBytes?: number): Promise<unknown[]> {
  const path = fileOf(text);
  const elements: unknown[] = [];
  for await (const element of readJsonArrayElements(path, chunkBytes)) {
    expect(Buffer.from(text).subarray(element.start, element.end).equals(element.bytes)).toBe(true);
    elements.push(JSON.parse(element.bytes.toString('utf8')));
  }
  return elements;
}

async function shapeErrorOf(text: string): Promise<JsonArrayShapeError> {
  try {
    await elementsOf(text);
  } catch (error) {
    if (error instanceof JsonArrayShapeError) return error;
    throw error;
  }
  throw new Error(`no error for ${text}`);
}

const TRICKY = [
  { id: 'a', text: 'quotes \\" and brackets ] } [ { inside', nested: [[1, [2]], { x: '}' }] },
  'a string element, with a comma ] and a bracket',
  12.5e3,
  true,
  null,
  [],
  {},
  { unicode: 'café ☕ 𝄞', escaped: '\\\\', tail: '\\' },
];

describe('readJsonArrayElements', () => {
  it('yields every element as JSON.parse sees it, whatever the chunk boundaries', async () => {
    const text = ` \n[ ${TRICKY.map((value) => JSON.stringify(value)).join(' ,\n ')} ]\n`;
    const expected = JSON.parse(text) as unknown[];
    for (const chunk of [1, 2, 3, 5, 7, 16, 1 << 20]) expect(await elementsOf(text, chunk)).toEqual(expected);
  });

  it('matches JSON.parse on random arrays of random values', async () => {
    const random = seededRandom(7);
    const value = (depth: number): unknown => {
      const pick = Math.floor(random() * (depth > 3 ? 4 : 6));
      if (pick === 0) return Math.round(random() * 1e6) / 100;
      if (pick === 1)
        return ['', '"', '\\', ']', '}', ',', 'é', '\n'].map((piece) => (random() < 0.5 ? piece : '')).join('x');
      if (pick === 2) return random() < 0.5;
      if (pick === 3) return null;
      if (pick === 4) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      return Object.fromEntries(
        Array.from({ length: Math.floor(random() * 4) }, (_, index) => [`k${index}"]`, value(depth + 1)]),
      );
    };
    for (let round = 0; round < 40; round += 1) {
      const array = Array.from({ length: Math.floor(random() * 6) }, () => value(0));
      const text = JSON.stringify(array, null, round % 2 === 0 ? 0 : 2);
      expect(await elementsOf(text, 1 + (round % 9))).toEqual(array);
    }
  });

  it('reads an empty array as no elements', async () => {
    expect(await elementsOf(' [ ] ')).toEqual([]);
  });

  it.each([
    ['{"a": 1}', 'not a JSON array'],
    ['', 'holds no JSON array'],
    ['[1, 2] x', 'goes on after its top-level array'],
    ['[{"a": [1, 2]', 'ends inside its top-level array'],
    ['[1,, 2]', 'empty element'],
    ['[, 1]', 'empty element'],
    ['[1, 2,]', 'stray ","'],
    ['[{"a": 1} {"b": 2}]', 'not separated'],
  ])('refuses %j: %s', async (text, reason) => {
    const error = await shapeErrorOf(text);
    expect(error.message).toContain(reason);
    expect(error.offset).toBeGreaterThanOrEqual(0);
  });
});
