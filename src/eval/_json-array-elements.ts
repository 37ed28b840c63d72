/**
 * The elements of a JSON file's top-level array, one at a time, as the bytes of each element
 * and where they lie in the file. Only the structure is scanned (strings, escapes, nesting);
 * each element is left for `JSON.parse`, so a file larger than the longest string V8 allows
 * can be read in memory bounded by its largest element.
 */
import { createReadStream } from 'node:fs';

/** One element of the top-level array. */
export interface JsonArrayElement {
  /** Position in the array, from 0. */
  readonly index: number;
  /** Byte offset of the element's first byte in the file. */
  readonly start: number;
  /** Byte offset just past the element's last byte. */
  readonly end: number;
  readonly bytes: Buffer;
}

/** Why the file is not one JSON array, with the byte offset where that shows. */
export class JsonArrayShapeError extends Error {
  readonly offset: number;
  constructor(message: string, offset: number) {
    super(message);
    this.name = 'JsonArrayShapeError';
    this.offset = offset;
  }
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;

const isSpace = (byte: number): boolean => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/** Scanner state carried from one chunk of the file to the next. */
interface ScanState {
  /** Before the opening `[`, inside the array, or after its closing `]`. */
  phase: 'before' | 'inside' | 'after';
  /** Nesting below the top-level array: 0 between elements. */
  depth: number;
  inString: boolean;
  escaped: boolean;
  /** Whether an element is being read, and where it began. */
  elementStart: number;
  /** A primitive element (number, literal, string) ends at the next `,` or `]` at depth 0. */
  primitive: boolean;
  /** A comma was read and no element after it yet. */
  expectElement: boolean;
  pieces: Buffer[];
  index: number;
}

/**
 * Yields the top-level array's elements in order.
 * @throws JsonArrayShapeError when the file does not hold exactly one JSON array (a
 * malformed element is found later, by `JSON.parse` of its bytes).
 */
export async function* readJsonArrayElements(
  path: string,
  chunkBytes: number = 1 << 20,
): AsyncGenerator<JsonArrayElement> {
  const state: ScanState = {
    phase: 'before',
    depth: 0,
    inString: false,
    escaped: false,
    elementStart: -1,
    primitive: false,
    expectElement: false,
    pieces: [],
    index: 0,
  };
  let offset = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: chunkBytes }) as AsyncIterable<Buffer>) {
    yield* scanChunk(state, chunk, offset);
    if (state.elementStart >= 0) state.pieces.push(chunk.subarray(Math.max(0, state.elementStart - offset)));
    offset += chunk.length;
  }
  if (state.phase === 'before') throw new JsonArrayShapeError('the file holds no JSON array', offset);
  if (state.phase === 'inside')
    throw new JsonArrayShapeError('the file ends inside its top-level array (is it truncated?)', offset);
}

function* scanChunk(state: ScanState, chunk: Buffer, offset: number): Generator<JsonArrayElement> {
  for (let position = 0; position < chunk.length; position += 1) {
    const byte = chunk[position] as number;
    const at = offset + position;
    if (state.phase !== 'inside') {
      if (isSpace(byte)) continue;
      if (state.phase === 'before' && byte === OPEN_BRACKET) {
        state.phase = 'inside';
        continue;
      }
      throw new JsonArrayShapeError(
        state.phase === 'before'
          ? 'the file is not a JSON array (its first character is not "[")'
          : 'the file goes on after its top-level array',
        at,
      );
    }
    if (state.elementStart < 0) {
      if (isSpace(byte)) continue;
      if (byte === COMMA) {
        if (state.expectElement || state.index === 0)
          throw new JsonArrayShapeError('the array has an empty element (a stray ",")', at);
        state.expectElement = true;
        continue;
      }
      if (byte === CLOSE_BRACKET) {
        if (state.expectElement) throw new JsonArrayShapeError('the array ends with a stray ","', at);
        state.phase = 'after';
        continue;
      }
      if (state.index > 0 && !state.expectElement)
        throw new JsonArrayShapeError('two elements of the array are not separated by ","', at);
      state.elementStart = at;
      state.expectElement = false;
      state.primitive = byte !== OPEN_BRACE && byte !== OPEN_BRACKET;
    }
    const ended = state.primitive ? primitiveEnds(state, byte) : nestedEnds(state, byte);
    if (ended === 'at') {
      yield finishElement(state, chunk, offset, position + 1);
    } else if (ended === 'before') {
      // The `,` or `]` that ended a primitive belongs to the array: scan it again.
      yield finishElement(state, chunk, offset, position);
      position -= 1;
    }
  }
}

/** Whether `byte` ends an object or array element (`'at'`: it is the element's last byte). */
function nestedEnds(state: ScanState, byte: number): 'at' | 'no' {
  if (stringByte(state, byte)) return 'no';
  if (byte === OPEN_BRACE || byte === OPEN_BRACKET) state.depth += 1;
  else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
    state.depth -= 1;
    if (state.depth === 0) return 'at';
  }
  return 'no';
}

/** Whether `byte` ends a primitive element (`'before'`: the element ended just before it). */
function primitiveEnds(state: ScanState, byte: number): 'before' | 'no' {
  if (stringByte(state, byte)) return 'no';
  return byte === COMMA || byte === CLOSE_BRACKET ? 'before' : 'no';
}

/** Tracks strings and escapes; true when `byte` is inside (or opens, or closes) a string. */
function stringByte(state: ScanState, byte: number): boolean {
  if (state.inString) {
    if (state.escaped) state.escaped = false;
    else if (byte === BACKSLASH) state.escaped = true;
    else if (byte === QUOTE) state.inString = false;
    return true;
  }
  if (byte === QUOTE) {
    state.inString = true;
    return true;
  }
  return false;
}

function finishElement(state: ScanState, chunk: Buffer, offset: number, endInChunk: number): JsonArrayElement {
  const startInChunk = Math.max(0, state.elementStart - offset);
  state.pieces.push(chunk.subarray(startInChunk, endInChunk));
  const bytes = state.pieces.length === 1 ? Buffer.from(state.pieces[0] as Buffer) : Buffer.concat(state.pieces);
  const element: JsonArrayElement = { index: state.index, start: state.elementStart, end: offset + endInChunk, bytes };
  state.pieces = [];
  state.elementStart = -1;
  state.depth = 0;
  state.index += 1;
  return element;
}
