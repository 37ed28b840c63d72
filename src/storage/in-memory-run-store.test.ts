import { createInMemoryRunStore } from './in-memory-run-store.js';
import { runRunStoreSuite } from './run-store.suite.js';

runRunStoreSuite({ name: 'in-memory', create: () => createInMemoryRunStore() });
