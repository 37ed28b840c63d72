import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Hono } from 'hono';
import { afterAll, describe, expect, it } from 'vitest';
import { INSPECTOR_CSP, INSPECTOR_FILES_URL, inspectorRoutes } from './inspector.js';

const mounted = (files?: URL) => {
  const app = new Hono();
  app.route('/inspector', inspectorRoutes(files ? { files } : {}));
  return app;
};

const shipped = readdirSync(INSPECTOR_FILES_URL).sort();
const scripts = shipped.filter((name) => name.endsWith('.js'));

describe('server: inspector route', () => {
  it('redirects /inspector to /inspector/ with a relative location', async () => {
    const response = await mounted().request('/inspector');
    expect(response.status).toBe(308);
    expect(response.headers.get('location')).toBe('inspector/');
  });

  it('serves the page, its stylesheet and every script with their content types and a strict CSP', async () => {
    const app = mounted();
    const expected: Record<string, string> = {
      '/inspector/': 'text/html; charset=utf-8',
      '/inspector/index.html': 'text/html; charset=utf-8',
      '/inspector/inspector.css': 'text/css; charset=utf-8',
      ...Object.fromEntries(scripts.map((name) => [`/inspector/${name}`, 'text/javascript; charset=utf-8'])),
    };
    for (const [path, type] of Object.entries(expected)) {
      const response = await app.request(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toBe(type);
      expect(response.headers.get('content-security-policy'), path).toBe(INSPECTOR_CSP);
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
    expect(INSPECTOR_CSP).toContain("default-src 'self'");
    expect(INSPECTOR_CSP).toContain("script-src 'self'");
    expect(INSPECTOR_CSP).not.toContain('unsafe-inline');
    expect(INSPECTOR_CSP).not.toContain('unsafe-eval');
  });

  it('answers 304 to a revalidation of an unchanged file', async () => {
    const app = mounted();
    const first = await app.request('/inspector/app.js');
    const tag = first.headers.get('etag');
    expect(tag).toBeTruthy();
    const again = await app.request('/inspector/app.js', { headers: { 'if-none-match': tag ?? '' } });
    expect(again.status).toBe(304);
  });

  it('answers 404 for unknown files, nested paths and traversal attempts, without reading them', async () => {
    const app = mounted();
    for (const path of [
      '/inspector/missing.js',
      '/inspector/../package.json',
      '/inspector/%2e%2e/package.json',
      '/inspector/%2e%2e%2fpackage.json',
      '/inspector/sub/app.js',
      '/inspector/App.js',
      '/inspector/app.js.map',
    ]) {
      const response = await app.request(path);
      expect(response.status, path).toBe(404);
      expect(await response.text(), path).not.toContain('"name": "harness-memory"');
    }
  });

  it('reads the files from the folder it is given', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'hm-inspector-'));
    afterAll(() => rmSync(folder, { recursive: true, force: true }));
    writeFileSync(join(folder, 'index.html'), '<p>elsewhere</p>');
    const response = await mounted(pathToFileURL(`${folder}/`)).request('/inspector/');
    expect(await response.text()).toBe('<p>elsewhere</p>');
  });

  it('keeps no answer for a name that is not there, so asking for new names cannot grow its cache', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'hm-inspector-'));
    afterAll(() => rmSync(folder, { recursive: true, force: true }));
    const app = mounted(pathToFileURL(`${folder}/`));
    expect((await app.request('/inspector/later.js')).status).toBe(404);
    // Had the miss been kept, the file appearing afterwards would still answer 404.
    writeFileSync(join(folder, 'later.js'), 'export {};');
    const response = await app.request('/inspector/later.js');
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('export {};');
  });
});

describe('server: inspector files', () => {
  it('ships an HTML page with no inline script, no inline style and nothing from another origin', () => {
    const html = readFileSync(new URL('index.html', INSPECTOR_FILES_URL), 'utf8');
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|<style|\son[a-z]+=/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(shipped).toEqual(expect.arrayContaining(['index.html', 'inspector.css', 'app.js']));
  });

  it('never turns strings into markup: no innerHTML, outerHTML, insertAdjacentHTML or document.write', () => {
    for (const name of scripts) {
      const text = readFileSync(new URL(name, INSPECTOR_FILES_URL), 'utf8');
      expect(text, name).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
      expect(text, name).not.toMatch(/from '(https?:|\/\/)/);
    }
  });

  it('imports only files it ships', () => {
    for (const name of scripts) {
      const text = readFileSync(new URL(name, INSPECTOR_FILES_URL), 'utf8');
      for (const match of text.matchAll(/from '\.\/([^']+)'/g)) expect(shipped, name).toContain(match[1]);
    }
  });
});
