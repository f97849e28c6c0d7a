// Prints one plain closing line ("tests: N passed, N failed, N skipped") that CI tooling reads.
// A suite that could not run at all counts as one failure, so a broken file never reads as green.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(
      `\ntests: ${results.numPassedTests} passed, ${failed} failed, ${results.numPendingTests} skipped\n`,
    );
  }
}
module.exports = SummaryReporter;
