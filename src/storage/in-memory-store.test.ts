import { runStoreSuite } from './store.suite.js';
import { createInMemoryStore } from './in-memory-store.js';

runStoreSuite({ name: 'in-memory', create: () => createInMemoryStore() });
