/**
 * Binding the stream and the durable consumer: each is created with our settings when absent (by us
 * or by another bridge meanwhile); an existing one is never changed.
 */
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import type { Logger } from '../observability/logger';
import { fieldOf } from '../errors';
import { apiErrorCode } from './errors-of';
import { nats } from './nats';

/** The seed's stream settings, used only when the stream does not exist. */
export const STREAM_MAX_AGE_MS = 24 * 3600_000;
export const STREAM_DUPLICATE_WINDOW_MS = 5 * 60_000;
/** JetStream API errors for "no such stream" (10059) and "no such consumer" (10014). */
const NOT_FOUND_API_CODES = [10059, 10014];

export interface ProvisionOptions {
  stream: string;
  subject: string;
  consumer: string;
  ackWaitMs: number;
  batch: number;
}

/** The stream config the bridge creates when NATS_STREAM is absent (the seed's settings). */
export function seedStreamConfig(name: string, subject: string): Partial<StreamConfig> & { name: string } {
  return {
    name,
    subjects: [subject],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: nats.nanos(STREAM_MAX_AGE_MS),
    duplicate_window: nats.nanos(STREAM_DUPLICATE_WINDOW_MS),
    num_replicas: 1,
  };
}

function isNotFound(err: unknown): boolean {
  const api = apiErrorCode(err);
  const message = fieldOf(err, 'message');
  return (
    (api !== undefined && NOT_FOUND_API_CODES.includes(api)) ||
    (typeof message === 'string' && /not found/i.test(message))
  );
}

export async function bindStream(jsm: JetStreamManager, o: ProvisionOptions, logger: Logger): Promise<void> {
  try {
    const info = await jsm.streams.info(o.stream);
    const subjects = info.config.subjects ?? [];
    logger.info(
      {
        stream: o.stream,
        subjects,
        maxAgeMs: Number(info.config.max_age) / 1e6,
        duplicateWindowMs: Number(info.config.duplicate_window ?? 0) / 1e6,
      },
      'bound to existing stream (left as it is)',
    );
  } catch (err) {
    if (!isNotFound(err)) throw err;
    const cfg = seedStreamConfig(o.stream, o.subject);
    try {
      await jsm.streams.add(cfg);
      logger.info(
        {
          stream: o.stream,
          subjects: cfg.subjects,
          maxAgeMs: STREAM_MAX_AGE_MS,
          duplicateWindowMs: STREAM_DUPLICATE_WINDOW_MS,
        },
        'stream was absent: created with the seed settings',
      );
    } catch (e2) {
      // another bridge created it meanwhile: bind to that one
      await jsm.streams.info(o.stream).catch(() => {
        throw e2;
      });
    }
  }
}

export async function bindConsumer(jsm: JetStreamManager, o: ProvisionOptions, logger: Logger): Promise<void> {
  try {
    const info = await jsm.consumers.info(o.stream, o.consumer);
    logger.info(
      { stream: o.stream, consumer: o.consumer, filter: info.config.filter_subject, pending: info.num_pending },
      'bound to existing durable consumer',
    );
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      await jsm.consumers.add(o.stream, {
        durable_name: o.consumer,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: o.subject,
        ack_wait: nats.nanos(o.ackWaitMs),
        // never drop for redeliveries: a database outage naks until it is over
        max_deliver: -1,
        max_ack_pending: Math.max(1000, o.batch * 4),
      });
      logger.info(
        { stream: o.stream, consumer: o.consumer, filter: o.subject, ackWaitMs: o.ackWaitMs },
        'durable consumer was absent: created',
      );
    } catch (e2) {
      await jsm.consumers.info(o.stream, o.consumer).catch(() => {
        throw e2;
      });
    }
  }
}
