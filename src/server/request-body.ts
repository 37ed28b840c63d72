import type { Context } from 'hono';
import { z } from 'zod/v4';
import { httpError } from './http-error.js';

/**
 * Reads and validates a JSON body: malformed JSON is 400 `invalid_json` naming the problem;
 * unknown fields or wrong types are 400 `invalid_request` listing each issue.
 */
export async function readJsonBody<Schema extends z.ZodType>(
  context: Context,
  schema: Schema,
): Promise<z.output<Schema>> {
  const text = await context.req.text();
  let data: unknown;
  if (text.trim() === '') data = {};
  else {
    try {
      data = JSON.parse(text);
    } catch (error) {
      throw httpError(400, 'invalid_json', `request body is not valid JSON: ${(error as Error).message}`);
    }
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(body)'}: ${issue.message}`,
    );
    throw httpError(400, 'invalid_request', issues.join('; '));
  }
  return parsed.data;
}
