import { runStoreSuite } from './store.suite.js';
import { createInMemoryStore } from './in-memory-store.js';

// The real clock, which the suite can move forward: its lease tests wait on real time.
let offsetMs = 0;
runStoreSuite({
  name: 'in-memory',
  create: () => {
    offsetMs = 0;
    return createInMemoryStore({ now: () => new Date(Date.now() + offsetMs) });
  },
  advanceClock: (ms) => {
    offsetMs += ms;
  },
});
