import { readFile } from 'node:fs/promises';
import { Hono } from 'hono';
import { etag } from 'hono/etag';
import { jsonError } from '../http-error.js';
import type { ServerEnv } from '../server-env.js';

/**
 * The folder of the inspector's static files. They sit at the package root, beside `dist/`
 * and `src/`, so this path is the same from `src/server/routes/` (tests) and from
 * `dist/server/routes/` (the package).
 */
export const INSPECTOR_FILES_URL: URL = new URL('../../../inspector/', import.meta.url);

/**
 * The page's Content-Security-Policy: its own files only, no inline script or style, no
 * plugins, no framing, and data calls to this origin alone.
 */
export const INSPECTOR_CSP: string = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  svg: 'image/svg+xml',
};

/** A file name the route serves: one flat folder, kebab-case, a known extension (so no `..` or `/`). */
const FILE_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*\.(html|css|js|svg)$/;

/** Options of {@link inspectorRoutes}. */
export interface InspectorRoutesOptions {
  /** Where the files are read from. @default INSPECTOR_FILES_URL */
  readonly files?: URL;
}

/**
 * `/inspector`: the memory inspector's static files. They need no key: the page asks for
 * one and sends it with every data call, which the API checks as usual.
 */
export function inspectorRoutes(options: InspectorRoutesOptions = {}): Hono<ServerEnv> {
  const app = new Hono<ServerEnv>();
  const folder = options.files ?? INSPECTOR_FILES_URL;
  // NOTE: files (all text) are read once and kept: they are a few kilobytes and never change while
  // the server runs (a package upgrade restarts it). A name that is not there is not kept: the
  // route needs no key, so anyone could grow the cache by asking for new names.
  const cache = new Map<string, Promise<string | undefined>>();
  const load = (name: string): Promise<string | undefined> => {
    let found = cache.get(name);
    if (found === undefined) {
      found = readFile(new URL(name, folder), 'utf8').then(
        (text) => text,
        (error: NodeJS.ErrnoException) => {
          cache.delete(name);
          if (error.code === 'ENOENT') return undefined;
          throw error;
        },
      );
      cache.set(name, found);
    }
    return found;
  };

  // `no-cache` with an ETag: the browser asks each time and gets a 304 while the files are
  // unchanged, so an upgraded package is picked up at once.
  app.use('*', etag());

  // Relative links in the page need the trailing slash; a relative Location keeps any
  // path prefix a proxy added.
  app.get('/', (context) => context.redirect('inspector/', 308));

  app.get('/:name{.*}', async (context) => {
    const requested = context.req.param('name');
    const name = requested === '' ? 'index.html' : requested;
    const match = FILE_NAME.exec(name);
    const text = match ? await load(name) : undefined;
    if (!match || text === undefined) {
      return jsonError(404, 'not_found', `the inspector has no file ${name.slice(0, 100)}`);
    }
    return context.body(text, 200, {
      'content-type': CONTENT_TYPES[match[1] as string] ?? 'application/octet-stream',
      'content-security-policy': INSPECTOR_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-cache',
    });
  });

  return app;
}
