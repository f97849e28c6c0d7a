/**
 * Where a finished attempt's outcome goes: most into the outcome writer (group commit), one on the
 * attempt's own transaction (a handler that opened `dispatch.transaction`) straight to the settler.
 * And what is written instead when an outcome cannot be: the attempt again after a conflict or a
 * failed own transaction, else a terminal failure saying why — so one bad outcome never jams a worker.
 */
import { errorCode, hasCode } from '../errors';
import type { Logger } from '../observability/logger';
import { conflictRetry, isAttemptConflict, type AttemptTransaction } from './attempt-transaction';
import type { BackoffPolicy } from './backoff';
import { shortError } from './errors';
import type { Finished } from './held-claims';
import { Outcome } from './outcome';
import { isTransientWriteError, OutcomeWriter } from './outcome-writer';
import { decideSettlement } from './settlement';
import type { Settler } from './settler';

/** SQLSTATE in_failed_sql_transaction: a statement failed earlier in the transaction, which can only roll back. */
const SQLSTATE_IN_FAILED_TRANSACTION = '25P02';

export interface OutcomeRouting<Row, Effects> {
  /** Resolves once the outcome (or what replaced it) is written, or given up at shutdown. Never rejects. */
  submit(f: Finished<Row, Effects>): Promise<void>;
  /** The group-commit writer (shutdown waits for it or abandons it). */
  readonly writer: OutcomeWriter<Finished<Row, Effects>>;
}

export function createOutcomeRouting<Row, Effects>(deps: {
  settler: Settler<Row, Effects>;
  logger: Logger;
  retry: BackoffPolicy;
  random?: () => number;
  writers: number;
}): OutcomeRouting<Row, Effects> {
  const { settler, logger, retry, random } = deps;
  const writer = new OutcomeWriter<Finished<Row, Effects>>((batch) => settler.write(batch), logger, deps.writers, {
    // an outcome the database refuses (or whose kind effects throw) fails its own item, nothing else;
    // effects that conflicted with another attempt's commit run the attempt again
    onUnwritable: (f, err) => instead(f, err),
  });

  /** What is written for an outcome that could not be: the attempt again after a conflict, else a terminal failure. */
  function instead(f: Finished<Row, Effects>, err: unknown): Finished<Row, Effects> {
    // an attempt's own transaction that a failed statement of its own left aborted (25P02) cannot commit
    const ownFailed =
      f.outcome.transaction && (isTransientWriteError(err) || hasCode(err, SQLSTATE_IN_FAILED_TRANSACTION));
    if (isAttemptConflict(err) || ownFailed) {
      // nothing of the attempt committed: run it again (a conflict or a lost connection is not the item's
      // fault; an aborted own transaction is a counted retry, so one that always fails spends the budget)
      const outcome = isAttemptConflict(err)
        ? conflictRetry<Effects>(err, f.job.attempt, random)
        : Outcome.retry<Effects>(undefined, {
            errorCode: errorCode(err) ?? 'RELAY_OUTCOME_UNWRITABLE',
            error: shortError(err),
          });
      return { ...f, outcome, decision: decideSettlement(f.job, outcome, retry, random) };
    }
    return unwritableAsTerminal(f, err, retry, random);
  }

  /**
   * An outcome on the attempt's own transaction is written there alone; when that fails (rolled
   * back), what happened instead goes through the outcome writer like any other outcome.
   */
  async function settleOwn(f: Finished<Row, Effects>, tx: AttemptTransaction): Promise<void> {
    try {
      await settler.writeOwn(f, tx);
    } catch (err) {
      logger.warn(
        { err: { message: shortError(err), code: errorCode(err) }, id: f.job.id },
        "an attempt's own transaction could not commit with its outcome; rolled back",
      );
      await writer.submit(instead(f, err));
    }
  }

  return {
    writer,
    submit: (f) => {
      const tx = f.outcome.transaction;
      return tx ? settleOwn(f, tx) : writer.submit(f);
    },
  };
}

/** What is written instead of an outcome the database refused: a terminal failure saying why. */
function unwritableAsTerminal<Row, Effects>(
  f: Finished<Row, Effects>,
  err: unknown,
  retry: BackoffPolicy,
  random?: () => number,
): Finished<Row, Effects> {
  const outcome = Outcome.terminal<Effects>(`the attempt's outcome could not be written: ${shortError(err)}`, {
    errorCode: 'RELAY_OUTCOME_UNWRITABLE',
    error: shortError(err),
    details: {
      refusedOutcome: f.outcome.label ?? f.decision.auditOutcome,
      ...(f.outcome.errorCode ? { refusedErrorCode: f.outcome.errorCode } : {}),
    },
  });
  return { ...f, outcome, decision: decideSettlement(f.job, outcome, retry, random) };
}
