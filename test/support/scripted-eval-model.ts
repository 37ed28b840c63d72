/**
 * A scripted "eval model" for the scripted OpenAI-compatible server: one reply function that
 * plays the observer, the reflector, the answer model and the judge of `harness eval`,
 * deterministically and so that the results mean something:
 *
 * - the observer makes one observation per transcript message, with the message's session
 *   date, its text on one line;
 * - the reflector summarises the observations it is shown;
 * - the answer model knows the answer key of the dataset, and gives the gold answer only when
 *   every evidence message of the question (LongMemEval's `has_answer` turns, LoCoMo's
 *   `evidence` turns) is in the memory it was given; otherwise, and for abstention questions,
 *   it says it does not have that information;
 * - the judge says yes when the response contains the reference (normalised), or, for an
 *   abstention question, when it says the information is not available.
 *
 * Usage figures are the rune estimate of the real prompt and of the scripted reply.
 * @module
 */
import { RUNE_TOKEN_ESTIMATOR } from '../../src/core/token-estimator.js';
import { containsAnswer } from '../../src/eval/eval-normalize.js';
import type { ScriptedAnswer, ScriptedRequest } from './scripted-openai-server.js';

/** Which part of the eval a request plays. */
export type EvalRequestKind = 'observer' | 'reflector' | 'answer' | 'judge' | 'other';

/** What the scripted answer model knows of a question. */
export interface AnswerKey {
  readonly answer: string;
  readonly abstention: boolean;
  /** The texts of the messages that hold the answer. */
  readonly evidence: readonly string[];
}

/** The reply of the scripted answer model when the memory does not hold the answer. */
export const DO_NOT_KNOW = 'I do not have that information.';

/** The messages of a chat completions request, with string contents. */
export function messagesOf(request: ScriptedRequest): Array<{ role: string; content: string }> {
  const messages =
    (request.body as { messages?: Array<{ role: string; content: unknown }> } | undefined)?.messages ?? [];
  return messages.map((message) => ({
    role: message.role,
    content: typeof message.content === 'string' ? message.content : JSON.stringify(message.content),
  }));
}

/** The part of the eval a request plays, from its prompt. */
export function evalRequestKind(request: ScriptedRequest): EvalRequestKind {
  const messages = messagesOf(request);
  const first = messages[0]?.content ?? '';
  if (messages.some((message) => message.content.includes('You are the observational memory processor')))
    return 'observer';
  if (first.includes('structured reflection')) return 'reflector';
  if (first.startsWith('You are an assistant answering a question about your earlier conversations')) return 'answer';
  if (first.startsWith('You grade answers in a memory benchmark')) return 'judge';
  return 'other';
}

/** The question an answer request asks (the text after `Question: `). */
export function questionOf(request: ScriptedRequest): string {
  const user = messagesOf(request).at(-1)?.content ?? '';
  return /(?:^|\n)Question: ([\s\S]*)$/.exec(user)?.[1] ?? '';
}

/** The memory an answer request gives: every message between the system message and the question. */
export function memoryOf(request: ScriptedRequest): string {
  return messagesOf(request)
    .slice(1, -1)
    .map((message) => message.content)
    .join('\n');
}

/** The answer key of a dataset as published (LongMemEval or LoCoMo JSON), by question text. */
export function answerKeyFrom(json: unknown): Map<string, AnswerKey> {
  const keys = new Map<string, AnswerKey>();
  const add = (question: string, key: AnswerKey): void => {
    const known = keys.get(question);
    if (known !== undefined && known.answer !== key.answer)
      throw new Error(`the answer key has two answers for ${JSON.stringify(question)}`);
    keys.set(question, key);
  };
  for (const item of json as Array<Record<string, unknown>>) {
    if ('haystack_sessions' in item) {
      const turns = (item['haystack_sessions'] as Array<Array<{ content: string; has_answer?: boolean }>>).flat();
      add(String(item['question']), {
        answer: String(item['answer']),
        abstention: String(item['question_id']).endsWith('_abs'),
        evidence: turns.filter((turn) => turn.has_answer === true).map((turn) => turn.content),
      });
      continue;
    }
    const conversation = item['conversation'] as Record<string, unknown>;
    const turns = Object.values(conversation)
      .filter((value): value is Array<{ dia_id: string; text: string }> => Array.isArray(value))
      .flat();
    for (const qa of item['qa'] as Array<{
      question: string;
      answer?: unknown;
      evidence?: string[];
      category: number;
    }>) {
      add(qa.question, {
        answer: String(qa.answer ?? ''),
        abstention: qa.category === 5,
        evidence: (qa.evidence ?? []).map((id) => turns.find((turn) => turn.dia_id === id)?.text ?? id),
      });
    }
  }
  return keys;
}

/** A reply function for `ScriptedServer.setDefaultReply` that plays every model of the eval. */
export function createScriptedEvalModel(
  keys: ReadonlyMap<string, AnswerKey>,
): (request: ScriptedRequest) => ScriptedAnswer {
  return (request) => {
    const kind = evalRequestKind(request);
    const text =
      kind === 'observer'
        ? observe(request)
        : kind === 'reflector'
          ? reflect(request)
          : kind === 'answer'
            ? answer(request, keys)
            : kind === 'judge'
              ? judge(request)
              : 'ok';
    const promptTokens = messagesOf(request).reduce(
      (sum, message) => sum + RUNE_TOKEN_ESTIMATOR.estimate(message.content),
      0,
    );
    return { text, usage: { promptTokens, completionTokens: RUNE_TOKEN_ESTIMATOR.estimate(text) } };
  };
}

const TRANSCRIPT_LINE = /^\[(\d+)\] (\w+)(?: \([^)]*\))?: /gm;

function observe(request: ScriptedRequest): string {
  const user = messagesOf(request).at(-1)?.content ?? '';
  const transcript = /<transcript>\n([\s\S]*)\n<\/transcript>/.exec(user)?.[1] ?? '';
  const starts = [...transcript.matchAll(TRANSCRIPT_LINE)];
  const blocks = starts.map((match, index) => {
    const body = transcript.slice(match.index + match[0].length, starts[index + 1]?.index ?? transcript.length).trim();
    const dated = /^\(session date: (.*)\)\n\s*/.exec(body);
    const text = (dated ? body.slice(dated[0].length) : body).replace(/\s*\n\s*/g, ' ');
    const when = dated ? `On ${dated[1]}, the` : 'The';
    return `IMPORTANCE:0.8\nSOURCE: ${match[1]}\n${when} ${match[2]} said: ${text}`;
  });
  return blocks.length === 0 ? 'NONE' : blocks.join('\n\n');
}

function reflect(request: ScriptedRequest): string {
  const user = messagesOf(request).at(-1)?.content ?? '';
  const observations = /<observations>\n([\s\S]*?)\n<\/observations>/.exec(user)?.[1] ?? '';
  const lines = observations.split('\n').map((line) => line.replace(/^- \[seq:\d+\] /, ''));
  return ['SUMMARY:', ...lines, '', 'SUPERSESSIONS:', '', 'CONTRADICTIONS:', ''].join('\n');
}

function answer(request: ScriptedRequest, keys: ReadonlyMap<string, AnswerKey>): string {
  const key = keys.get(questionOf(request));
  if (key === undefined) return `The scripted model has no answer key for ${JSON.stringify(questionOf(request))}.`;
  const memory = memoryOf(request);
  const known =
    !key.abstention &&
    key.evidence.length > 0 &&
    key.evidence.every((text) => containsAnswer(memory, firstWords(text, 12)));
  return known ? key.answer : DO_NOT_KNOW;
}

function judge(request: ScriptedRequest): string {
  const user = messagesOf(request).at(-1)?.content ?? '';
  const reference = /<(reference-answer|rubric|explanation)>\n([\s\S]*?)\n<\/\1>/.exec(user);
  const response = /<response>\n([\s\S]*?)\n<\/response>/.exec(user)?.[1] ?? '';
  const right =
    reference?.[1] === 'explanation'
      ? /do not have that information/i.test(response)
      : containsAnswer(response, reference?.[2] ?? '');
  return right
    ? 'The response gives what the reference asks for.\nVerdict: yes'
    : 'The response does not give the reference answer.\nVerdict: no';
}

function firstWords(text: string, count: number): string {
  return text.split(/\s+/).slice(0, count).join(' ');
}
