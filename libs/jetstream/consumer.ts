/**
 * Consuming the bound durable consumer: fetched messages are buffered and taken up to NATS_BATCH at
 * a time, so one transaction carries whatever arrived while the previous one committed (batch of 1
 * when idle, NATS_BATCH under load); each batch goes through ingestBatch, which acks, naks or terms.
 */
import { jetstream, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { sleep } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import { ALERT_HEADER } from './alerts';
import type { BridgeState, BridgeStats } from './health';
import { BridgeMessage, ingestBatch, type BatchResult, type IngestDeps } from './ingest';
import type { NatsConnection } from './nats';

export interface ConsumeOptions {
  stream: string;
  consumer: string;
  batch: number;
  nakBackoffMs: number;
}

export interface ConsumeDeps {
  options: ConsumeOptions;
  ingest: IngestDeps;
  state: BridgeState;
  stats: BridgeStats;
  logger: Logger;
}

/** A fetched JetStream message as ingestBatch takes it. */
export function toBridgeMessage(m: JsMsg): BridgeMessage {
  return {
    data: m.data,
    subject: m.subject,
    seq: m.seq,
    natsMsgId: m.headers?.get('Nats-Msg-Id') || null,
    deliveryCount: m.info.deliveryCount,
    alertHeader: !!m.headers?.get(ALERT_HEADER),
    ack: () => m.ack(),
    // `+TERM <reason>` is understood from nats-server 2.10 only; 2.9 would not terminate the message
    term: () => m.term(),
    nak: (ms) => m.nak(ms),
  };
}

/** The messages read so far from the consumer, and a wait for the next (or for the end). */
interface MessageBuffer {
  readonly messages: JsMsg[];
  readonly ended: boolean;
  /** What ended the consumer's iterator, if it threw. */
  readonly endError: unknown;
  /** Resolves when a message arrives or the iterator ends. */
  next(): Promise<void>;
  /** Resolves once the reader has ended. */
  readonly done: Promise<void>;
}

function bufferMessages(messages: ConsumerMessages): MessageBuffer {
  const buffer: JsMsg[] = [];
  let ended = false;
  let endError: unknown;
  let signal: (() => void) | undefined;
  const kick = () => {
    const s = signal;
    signal = undefined;
    s?.();
  };
  const done = (async () => {
    try {
      for await (const m of messages) {
        buffer.push(m);
        kick();
      }
    } catch (err) {
      endError = err;
    } finally {
      ended = true;
      kick();
    }
  })();
  return {
    messages: buffer,
    get ended() {
      return ended;
    },
    get endError() {
      return endError;
    },
    next: () => new Promise<void>((resolve) => (signal = resolve)),
    done,
  };
}

function count(d: ConsumeDeps, r: BatchResult): void {
  d.stats.batches++;
  d.stats.created += r.created;
  d.stats.duplicates += r.duplicates;
  d.stats.conflicts += r.conflicts;
  d.stats.rejected += r.rejected;
  d.stats.naked += r.naked;
  d.stats.skipped += r.skipped;
  d.state.lastBatchAt = new Date();
  d.state.database = r.error ? 'error' : 'ok';
}

/** Takes batches from the buffer into the database until the consumer ends or `signal` aborts. */
async function ingestUntilEnd(d: ConsumeDeps, buf: MessageBuffer, signal: AbortSignal): Promise<void> {
  const o = d.options;
  for (;;) {
    if (buf.messages.length === 0) {
      if (buf.ended || signal.aborted) break;
      await buf.next();
      continue;
    }
    if (signal.aborted) break;
    const take = buf.messages.splice(0, o.batch);
    const r = await ingestBatch(d.ingest, take.map(toBridgeMessage));
    count(d, r);
    // the database is down: do not spin through the rest of the buffer; give it back and wait
    if (r.error) {
      for (const m of buf.messages.splice(0)) m.nak(Math.max(1, o.nakBackoffMs));
      await sleep(Math.min(o.nakBackoffMs, 1000), signal);
    }
  }
}

/**
 * Consumes until the consumer or stream disappears (returns, or throws what ended the iterator) or
 * `signal` aborts (returns after the batch in hand; buffered messages are given back).
 */
export async function consumeUntilEnd(conn: NatsConnection, d: ConsumeDeps, signal: AbortSignal): Promise<void> {
  const o = d.options;
  const js = jetstream(conn);
  const consumer = await js.consumers.get(o.stream, o.consumer);
  const messages = await consumer.consume({
    max_messages: Math.max(o.batch * 2, 64),
    abort_on_missing_resource: true,
  });
  // stopping ends the iterator at once, so the wait for the next message ends too
  const stopIterator = () => messages.stop();
  signal.addEventListener('abort', stopIterator, { once: true });
  d.state.bound = true;
  d.stats.binds++;
  d.logger.info({ stream: o.stream, consumer: o.consumer }, 'jetstream bridge bound: consuming');
  const buf = bufferMessages(messages);
  try {
    await ingestUntilEnd(d, buf, signal);
  } finally {
    signal.removeEventListener('abort', stopIterator);
    d.state.bound = false;
    messages.stop();
    await buf.done;
    // unprocessed messages go back to the stream now rather than after ack_wait
    for (const m of buf.messages.splice(0)) m.nak();
  }
  // Boolean(): the same truthiness test, without narrowing what the iterator threw (rethrown as is) to `{}`
  if (Boolean(buf.endError) && !signal.aborted) throw buf.endError;
}
