import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runRunStoreSuite } from '../run-store.suite.js';
import { createSqliteRunStore } from './sqlite-run-store.js';

let directory = '';
runRunStoreSuite({
  name: 'sqlite',
  create: () => {
    directory = mkdtempSync(join(tmpdir(), 'hm-runs-'));
    return createSqliteRunStore({ path: join(directory, 'state.db') });
  },
  cleanup: () => rmSync(directory, { recursive: true, force: true }),
  openPeer: () => createSqliteRunStore({ path: join(directory, 'state.db') }),
});
