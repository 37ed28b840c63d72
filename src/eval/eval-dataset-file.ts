/**
 * Reading a dataset file of any size. A file up to `wholeFileMaxBytes` is parsed whole; a
 * larger one (`longmemeval_s` is 277 MB, `longmemeval_m` 2.7 GB, beyond the longest string
 * V8 allows) is read one instance at a time, keeping only the questions in memory and reading
 * a conversation's sessions back from the file when it is evaluated.
 * @module
 */
import { open, readFile, stat } from 'node:fs/promises';
import { HarnessMemoryError } from '../core/errors.js';
import type { ParsedConversation } from './_dataset-fields.js';
import { JsonArrayShapeError, readJsonArrayElements } from './_json-array-elements.js';
import { assembleEvalDataset, detectEvalFormat, parseEvalDataset, parseEvalElement } from './eval-dataset.js';
import type { EvalConversation, EvalDataset, EvalDatasetFormat, EvalSession } from './eval-dataset.js';

/** Options of {@link readEvalDatasetFile}. */
export interface ReadEvalDatasetOptions {
  /** How the file is named in error messages. @default the path */
  readonly shownPath?: string;
  /**
   * Files larger than this are read one instance at a time, their sessions left in the file until needed.
   * @default 64 MiB
   */
  readonly wholeFileMaxBytes?: number;
}

/** Where one instance lies in the file. */
interface ByteRange {
  readonly start: number;
  readonly end: number;
}

/**
 * Reads a LongMemEval or LoCoMo file as published, of any size (see the module note).
 * @throws HarnessMemoryError `EVAL_DATASET_INVALID` naming the file, and the instance and
 * field when one is malformed; the file system's error when the file cannot be read.
 * @example
 * const dataset = await readEvalDatasetFile('longmemeval_m.json');
 * const [first] = dataset.conversations;
 * const sessions = dataset.loadSessions ? await dataset.loadSessions(first) : first.sessions;
 */
export async function readEvalDatasetFile(path: string, options: ReadEvalDatasetOptions = {}): Promise<EvalDataset> {
  const shownPath = options.shownPath ?? path;
  const { size } = await stat(path);
  if (size <= (options.wholeFileMaxBytes ?? 64 * 1024 * 1024))
    return parseEvalDataset(parseJson(await readFile(path, 'utf8'), shownPath));
  return readByInstance(path, shownPath);
}

/** What identifies one version of the file: a change to it while the eval runs is noticed. */
interface FileVersion {
  readonly size: number;
  readonly mtimeMs: number;
  readonly ino: number;
}

const versionOf = ({ size, mtimeMs, ino }: FileVersion): FileVersion => ({ size, mtimeMs, ino });

async function readByInstance(path: string, shownPath: string): Promise<EvalDataset> {
  const version = versionOf(await stat(path));
  let format: EvalDatasetFormat | undefined;
  const parsed: ParsedConversation[] = [];
  const ranges = new Map<number, ByteRange>();
  try {
    for await (const element of readJsonArrayElements(path)) {
      const json = parseJson(element.bytes.toString('utf8'), shownPath, element.index);
      format ??= detectEvalFormat(json);
      const instance = parseEvalElement(format, json, element.index);
      ranges.set(element.index, { start: element.start, end: element.end });
      parsed.push({ ...instance, conversation: { ...instance.conversation, sessions: [], lazy: true } });
    }
  } catch (error) {
    if (error instanceof JsonArrayShapeError)
      throw invalid(
        `${shownPath} is not a JSON array of instances: ${error.message} (at byte ${error.offset}). Give a ` +
          `LongMemEval or LoCoMo file as published.`,
      );
    throw error;
  }
  if (format === undefined) return parseEvalDataset([]);
  const chosen = format;
  return assembleEvalDataset(chosen, parsed, (conversation) =>
    loadSessions({ path, shownPath, format: chosen, ranges, version }, conversation),
  );
}

/** The file as it was first read, and where each instance lay in it. */
interface ReadFile {
  readonly path: string;
  readonly shownPath: string;
  readonly format: EvalDatasetFormat;
  readonly ranges: ReadonlyMap<number, ByteRange>;
  readonly version: FileVersion;
}

async function loadSessions(source: ReadFile, conversation: EvalConversation): Promise<readonly EvalSession[]> {
  const { path, shownPath, format, ranges } = source;
  const changed = (what: string): HarnessMemoryError =>
    invalid(`${shownPath} changed while the eval ran: ${what}. Run it again on a file that stays as it is.`);
  const range = ranges.get(conversation.index);
  if (range === undefined) throw new RangeError(`loadSessions: instance ${conversation.index} is not in ${shownPath}`);
  const bytes = Buffer.alloc(range.end - range.start);
  const file = await open(path, 'r');
  try {
    const now = versionOf(await file.stat());
    const { version } = source;
    if (now.size !== version.size || now.mtimeMs !== version.mtimeMs || now.ino !== version.ino)
      throw changed('it is not the file it was when the eval began');
    const { bytesRead } = await file.read(bytes, 0, bytes.length, range.start);
    if (bytesRead !== bytes.length) throw changed(`instance ${conversation.index} is no longer where it was`);
  } finally {
    await file.close();
  }
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw changed(`instance ${conversation.index} is no longer where it was`);
  }
  const instance = parseEvalElement(format, json, conversation.index);
  if (instance.conversation.id !== conversation.id)
    throw changed(`instance ${conversation.index} is no longer ${JSON.stringify(conversation.id)}`);
  return instance.conversation.sessions;
}

function parseJson(text: string, shownPath: string, index?: number): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    const where = index === undefined ? '' : `: element ${index} of its top-level array`;
    throw invalid(
      `${shownPath} is not JSON${where} (${(error as Error).message}). Give a LongMemEval or LoCoMo file as published.`,
    );
  }
}

function invalid(message: string): HarnessMemoryError {
  return new HarnessMemoryError({ code: 'EVAL_DATASET_INVALID', component: 'eval', message, data: {} });
}
