import type { Reporter, TestModule } from 'vitest/node';

/** Prints the plain `N passed, N failed, N skipped` line that CI reads. */
export default class PlainSummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      // A module that failed to load has no tests: count it so a broken file cannot pass silently.
      if (module.state() === 'failed' && module.children.size === 0) failed++;
    }
    process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
