/**
 * The outbound reply sink on its own: what a relayed call becomes (OutboundReply), what it resolves
 * with, how its files are read, and what it refuses. No database and no Bot API: the writer records
 * what it is given, and `direct` records the calls that would have reached Telegram.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { Input } from 'telegraf';
import {
  createDirectReplySink,
  createOutboundReplySink,
  InvalidReplyError,
  type DirectCall,
  type OutboundReply,
  type OutboundReplyWriter,
  type ReplySession,
} from '../../../libs/dispatch';
import { RELAYED_METHODS } from '../../../libs/telegram/methods';
import { isPlaceholder } from '../../../libs/telegram/placeholders';

const BOT = '2000000002';
const UPDATE = 77;
const CHAT = 4242;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'reply-sink-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function harness(opts: { maxUploadBytes?: number; validate?: OutboundReplyWriter['validate'] } = {}) {
  const written: OutboundReply[][] = [];
  const write: OutboundReplyWriter = (_client, replies) => (written.push(replies), Promise.resolve());
  if (opts.validate) write.validate = opts.validate;
  const sink = createOutboundReplySink({ write, maxUploadBytes: opts.maxUploadBytes });
  const session = sink.open({ botId: BOT, updateId: UPDATE, chatId: String(CHAT) });
  const directCalls: string[] = [];
  const direct: DirectCall = (method) => (directCalls.push(method), Promise.resolve({ direct: method }));
  const controller = new AbortController();
  const call = (method: string, payload: Record<string, unknown>) =>
    session.call(method, payload, controller.signal, direct);
  const commit = async () => {
    await session.commit({} as never);
    return written.flat();
  };
  return { session, call, commit, directCalls, controller, written };
}

const id = (n: number) => `update:${BOT}:${UPDATE}:${n}`;

/** A refusal of the call, read as its code and message. */
async function refusal(p: Promise<unknown>): Promise<InvalidReplyError> {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InvalidReplyError);
  return err as InvalidReplyError;
}

describe('capture: what a relayed call becomes', () => {
  it('an attempt that only sends text keeps its msg_ids (update:{bot}:{update}:{n}) and resolves with Messages whose ids are placeholders', async () => {
    const h = harness();
    const a = (await h.call('sendMessage', { chat_id: CHAT, text: 'one', parse_mode: 'HTML' })) as Record<
      string,
      unknown
    >;
    const b = (await h.call('sendMessage', { chat_id: CHAT, text: 'two' })) as Record<string, unknown>;
    const replies = await h.commit();
    expect(replies.map((r) => [r.msgId, r.method, r.chatId, r.text, r.parseMode ?? null])).toEqual([
      [id(1), 'sendMessage', String(CHAT), 'one', 'HTML'],
      [id(2), 'sendMessage', String(CHAT), 'two', null],
    ]);
    expect(isPlaceholder(a.message_id)).toBe(true);
    expect(a).toMatchObject({ chat: { id: CHAT, type: 'private' }, text: 'one', tg_relay_msg_id: id(1) });
    expect(typeof a.date).toBe('number');
    expect(replies.map((r) => r.placeholders)).toEqual([[a.message_id], [b.message_id]]);
    expect(a.message_id).not.toBe(b.message_id);
    expect(replies[0].params).toBeUndefined(); // sendMessage keeps its own fields (text, parseMode, payload)
  });

  it('numbers every captured call of the attempt in call order; reads and sendChatAction go to the Bot API', async () => {
    const h = harness();
    const sent = (await h.call('sendMessage', { chat_id: CHAT, text: 'hi' })) as { message_id: number };
    expect(await h.call('sendChatAction', { chat_id: CHAT, action: 'typing' })).toEqual({ direct: 'sendChatAction' });
    const photo = (await h.call('sendPhoto', {
      chat_id: CHAT,
      photo: Input.fromBuffer(Buffer.from('jpeg bytes')),
      caption: 'look',
      reply_markup: undefined,
      has_spoiler: null,
    })) as Record<string, unknown>;
    expect(await h.call('getChat', { chat_id: CHAT })).toEqual({ direct: 'getChat' });
    const edited = await h.call('editMessageText', { chat_id: CHAT, message_id: sent.message_id, text: 'hi!' });
    expect(await h.call('answerCallbackQuery', { callback_query_id: 'cb1', text: 'ok' })).toBe(true);
    expect(await h.call('deleteMessage', { chat_id: CHAT, message_id: 5 })).toBe(true);
    expect(h.directCalls).toEqual(['sendChatAction', 'getChat']);

    const replies = await h.commit();
    expect(replies.map((r) => [r.msgId, r.method, r.chatId])).toEqual([
      [id(1), 'sendMessage', String(CHAT)],
      [id(2), 'sendPhoto', String(CHAT)],
      [id(3), 'editMessageText', String(CHAT)],
      [id(4), 'answerCallbackQuery', ''],
      [id(5), 'deleteMessage', String(CHAT)],
    ]);
    // params: every parameter but chat_id, null and undefined dropped (as telegraf drops them), files attached
    expect(replies[1].params).toEqual({ photo: 'attach://file1', caption: 'look' });
    expect(replies[1].uploads).toEqual([{ part: 'file1', filename: 'photo.jpg', bytes: Buffer.from('jpeg bytes') }]);
    expect(replies[1].placeholders).toEqual([photo.message_id]);
    expect(photo).toMatchObject({ caption: 'look', chat: { id: CHAT }, tg_relay_msg_id: id(2) });
    // the edit names the placeholder as it was given (resolved by the outbound worker at send)
    expect(replies[2].params).toEqual({ message_id: sent.message_id, text: 'hi!' });
    expect(replies[2].placeholders).toEqual([]);
    expect(edited).toMatchObject({
      message_id: sent.message_id,
      text: 'hi!',
      chat: { id: CHAT },
      tg_relay_msg_id: id(3),
    });
    expect(replies[3].params).toEqual({ callback_query_id: 'cb1', text: 'ok' });
    expect(replies.every((r) => r.botId === BOT && r.sourceUpdateId === UPDATE)).toBe(true);
  });

  it('results are shaped like Telegram answers for each kind of method', async () => {
    const h = harness();
    const album = (await h.call('sendMediaGroup', {
      chat_id: -1001234567890,
      media: [
        { type: 'photo', media: 'AgACAgIAAxkBAAI', caption: 'first' },
        { type: 'photo', media: 'https://example.com/b.jpg' },
      ],
    })) as Array<Record<string, unknown>>;
    expect(album).toHaveLength(2);
    expect(album[0]).toMatchObject({ caption: 'first', chat: { id: -1001234567890, type: 'supergroup' } });
    expect(album.every((m) => isPlaceholder(m.message_id))).toBe(true);
    const copy = (await h.call('copyMessage', {
      chat_id: '@somechannel',
      from_chat_id: CHAT,
      message_id: 3,
    })) as Record<string, unknown>;
    expect(Object.keys(copy).sort()).toEqual(['message_id', 'tg_relay_msg_id']);
    const copies = (await h.call('forwardMessages', {
      chat_id: CHAT,
      from_chat_id: 1,
      message_ids: [1, 2, 3],
    })) as Array<Record<string, unknown>>;
    expect(copies).toHaveLength(3);
    expect(copies.every((m) => isPlaceholder(m.message_id) && Object.keys(m).length === 1)).toBe(true);
    expect(await h.call('editMessageText', { inline_message_id: 'inl', text: 'x' })).toBe(true);
    expect(await h.call('pinChatMessage', { chat_id: CHAT, message_id: 1 })).toBe(true);
    expect(await h.call('setMessageReaction', { chat_id: CHAT, message_id: 1, reaction: [] })).toBe(true);
    expect(await h.call('stopPoll', { chat_id: CHAT, message_id: 9 })).toMatchObject({ is_closed: true });
    const replies = await h.commit();
    expect(replies.map((r) => r.placeholders?.length)).toEqual([2, 1, 3, 0, 0, 0, 0]);
    expect(replies[0].placeholders).toEqual(album.map((m) => m.message_id));
    expect(replies[2].placeholders).toEqual(copies.map((m) => m.message_id));
    expect(replies[1].chatId).toBe('@somechannel');
    expect(replies[3]).toMatchObject({ chatId: '', params: { inline_message_id: 'inl', text: 'x' } });
  });
});

describe('capture: uploads', () => {
  it('reads buffers, streams and files anywhere telegraf uploads them; URL objects become the URL', async () => {
    const path = join(dir, 'report.pdf');
    writeFileSync(path, 'pdf bytes');
    const h = harness();
    await h.call('sendMediaGroup', {
      chat_id: CHAT,
      media: [
        { type: 'photo', media: Input.fromBuffer(Buffer.from('p1'), 'one.png') },
        {
          type: 'video',
          media: Input.fromReadableStream(Readable.from([Buffer.from('vi'), Buffer.from('deo')])),
          thumbnail: Input.fromLocalFile(path),
        },
        { type: 'photo', media: Input.fromURLStream('https://example.com/c.jpg', 'c.jpg') },
        { type: 'photo', media: 'file-id' },
      ],
    });
    await h.call('sendDocument', { chat_id: CHAT, document: Input.fromLocalFile(path, 'named.pdf') });
    await h.call('editMessageMedia', {
      chat_id: CHAT,
      message_id: 4,
      media: { type: 'photo', media: Input.fromBuffer(Buffer.from('new')) },
    });
    await h.call('sendVideo', {
      chat_id: CHAT,
      video: 'https://example.com/v.mp4',
      thumbnail: Input.fromBuffer(Buffer.from('t')),
    });
    const [album, doc, edit, video] = await h.commit();
    expect(album.params?.media).toEqual([
      { type: 'photo', media: 'attach://file1' },
      { type: 'video', media: 'attach://file2', thumbnail: 'attach://file3' },
      { type: 'photo', media: 'https://example.com/c.jpg' },
      { type: 'photo', media: 'file-id' },
    ]);
    expect(album.uploads?.map((u) => [u.part, u.filename, u.bytes.toString()])).toEqual([
      ['file1', 'one.png', 'p1'],
      ['file2', 'video.mp4', 'video'],
      ['file3', 'report.pdf', 'pdf bytes'],
    ]);
    expect(doc.params).toEqual({ document: 'attach://file1' });
    expect(doc.uploads?.map((u) => [u.filename, u.bytes.toString()])).toEqual([['named.pdf', 'pdf bytes']]);
    expect(edit.params).toEqual({ message_id: 4, media: { type: 'photo', media: 'attach://file1' } });
    expect(video.params).toEqual({ video: 'https://example.com/v.mp4', thumbnail: 'attach://file1' });
    expect(video.uploads?.[0].filename).toBe('thumbnail.dat');
  });

  it('a buffer is read when the call is made: changing it afterwards changes nothing', async () => {
    const h = harness();
    const bytes = Buffer.from('before');
    await h.call('sendPhoto', { chat_id: CHAT, photo: Input.fromBuffer(bytes) });
    bytes.write('AFTER!');
    expect((await h.commit())[0].uploads?.[0].bytes.toString()).toBe('before');
  });

  it('OUTBOUND_MAX_UPLOAD bounds the files of one call together; the refusal names the limit', async () => {
    const h = harness({ maxUploadBytes: 10 });
    await h.call('sendPhoto', { chat_id: CHAT, photo: Input.fromBuffer(Buffer.alloc(10, 1)) }); // exactly the limit
    const over = await refusal(h.call('sendPhoto', { chat_id: CHAT, photo: Input.fromBuffer(Buffer.alloc(11, 1)) }));
    expect(over.code).toBe('RELAY_INVALID_REPLY');
    expect(over.message).toMatch(
      /reply 2 \(sendPhoto\) refused .*photo is over the upload limit: .*10 bytes \(OUTBOUND_MAX_UPLOAD\)/,
    );
    const together = await refusal(
      h.call('sendMediaGroup', {
        chat_id: CHAT,
        media: [
          { type: 'photo', media: Input.fromBuffer(Buffer.alloc(6, 1)) },
          { type: 'photo', media: Input.fromBuffer(Buffer.alloc(5, 1)) },
        ],
      }),
    );
    expect(together.problems).toEqual([
      { field: 'media[1].media', problem: expect.stringMatching(/OUTBOUND_MAX_UPLOAD/) },
    ]);
    const file = join(dir, 'eleven.bin');
    writeFileSync(file, Buffer.alloc(11, 1));
    await refusal(h.call('sendDocument', { chat_id: CHAT, document: Input.fromLocalFile(file) }));
    // the calls after a refusal are captured, numbered as if the refused ones had not been made
    await h.call('sendMessage', { chat_id: CHAT, text: 'after' });
    expect((await h.commit()).map((r) => [r.msgId, r.method])).toEqual([
      [id(1), 'sendPhoto'],
      [id(2), 'sendMessage'],
    ]);
  });

  it('an endless stream is read only up to the limit, then destroyed', async () => {
    const h = harness({ maxUploadBytes: 1000 });
    let produced = 0;
    const endless = new Readable({
      read() {
        produced += 100;
        this.push(Buffer.alloc(100, 1));
      },
    });
    await refusal(h.call('sendVideo', { chat_id: CHAT, video: Input.fromReadableStream(endless) }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(endless.destroyed).toBe(true);
    expect(produced).toBeLessThan(5000);
  });

  it.each([
    [
      'a stream that errors',
      () => ({
        photo: Input.fromReadableStream(
          new Readable({
            read() {
              this.destroy(new Error('disk on fire'));
            },
          }),
        ),
      }),
      { field: 'photo', problem: 'source stream failed (Error)' },
    ],
    [
      'a missing path',
      () => ({ photo: Input.fromLocalFile(join(dir, 'no-such-file.jpg')) }),
      { field: 'photo', problem: 'source file cannot be read (ENOENT)' },
    ],
    [
      'a directory',
      () => {
        mkdirSync(join(dir, 'sub'), { recursive: true });
        return { photo: Input.fromLocalFile(join(dir, 'sub')) };
      },
      { field: 'photo', problem: 'source names a path that is not a file' },
    ],
    [
      'an empty buffer',
      () => ({ photo: Input.fromBuffer(Buffer.alloc(0)) }),
      { field: 'photo', problem: 'is empty (Telegram refuses empty files)' },
    ],
    [
      'a source that is no file',
      () => ({ photo: { source: 42 } }),
      { field: 'photo', problem: 'source must be a Buffer, a readable stream or a file path' },
    ],
    [
      'an object-mode stream',
      () => ({ photo: Input.fromReadableStream(Readable.from([{ not: 'bytes' }])) }),
      { field: 'photo', problem: 'source stream gave something other than bytes (an object-mode stream?)' },
    ],
    [
      'a getter that throws',
      () =>
        Object.defineProperty({}, 'photo', {
          enumerable: true,
          get: () => {
            throw new RangeError('no');
          },
        }),
      { field: 'payload', problem: 'cannot be read: RangeError' },
    ],
    [
      'a string with a NUL',
      () => ({ photo: 'file-id', caption: 'a\u0000b' }),
      { field: 'params', problem: expect.stringMatching(/^caption contains a NUL/) },
    ],
    [
      'a BigInt parameter',
      () => ({ photo: 'file-id', message_thread_id: 5n }),
      { field: 'params', problem: 'message_thread_id is a BigInt (not JSON)' },
    ],
  ])('%s is refused on its own call (InvalidReplyError naming the field)', async (_what, payload, problem) => {
    const h = harness();
    await h.call('sendMessage', { chat_id: CHAT, text: 'before' });
    const err = await refusal(h.call('sendPhoto', Object.assign(payload(), { chat_id: CHAT })));
    expect(err.replyNumber).toBe(2);
    expect(err.problems).toEqual([problem]);
    await h.call('sendMessage', { chat_id: CHAT, text: 'after' });
    expect((await h.commit()).map((r) => r.text)).toEqual(['before', 'after']);
    expect(h.directCalls).toEqual([]);
  });

  it('a message method without a chat (and not an inline edit) is refused at the call', async () => {
    const h = harness();
    expect((await refusal(h.call('sendPhoto', { photo: 'file-id' }))).problems[0].field).toBe('chat_id');
    expect((await refusal(h.call('deleteMessage', { chat_id: { id: 1 }, message_id: 1 }))).problems[0].field).toBe(
      'chat_id',
    );
    expect(await h.commit()).toEqual([]);
  });
});

describe('capture: order, the writer, the attempt', () => {
  it('a call made while an earlier one still reads its file keeps its place (and its number)', async () => {
    const h = harness();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = Readable.from(
      (async function* () {
        await gate;
        yield Buffer.from('late bytes');
      })(),
    );
    const first = h.call('sendVoice', { chat_id: CHAT, voice: Input.fromReadableStream(slow) });
    const second = h.call('sendMessage', { chat_id: CHAT, text: 'second' });
    release();
    const [a, b] = (await Promise.all([first, second])) as Array<{ tg_relay_msg_id: string }>;
    expect([a.tg_relay_msg_id, b.tg_relay_msg_id]).toEqual([id(1), id(2)]);
    expect((await h.commit()).map((r) => r.method)).toEqual(['sendVoice', 'sendMessage']);
  });

  it('commit includes a call the handler did not await', async () => {
    const h = harness();
    void h.call('sendDocument', {
      chat_id: CHAT,
      document: Input.fromReadableStream(Readable.from([Buffer.from('d')])),
    });
    expect((await h.commit()).map((r) => r.method)).toEqual(['sendDocument']);
  });

  it("the writer's own rules see the whole capture (method, params, placeholders) and refuse it at the call", async () => {
    const seen: OutboundReply[] = [];
    const h = harness({
      validate: (r) => {
        seen.push(r);
        return r.method === 'sendSticker' ? [{ field: 'sticker', problem: 'not today' }] : [];
      },
    });
    await h.call('sendDice', { chat_id: CHAT, emoji: '🎲' });
    const err = await refusal(h.call('sendSticker', { chat_id: CHAT, sticker: 'file-id' }));
    expect(err.problems).toEqual([{ field: 'sticker', problem: 'not today' }]);
    expect(seen.map((r) => [r.method, r.params, r.placeholders?.length])).toEqual([
      ['sendDice', { emoji: '🎲' }, 1],
      ['sendSticker', { sticker: 'file-id' }, 1],
    ]);
    expect((await h.commit()).map((r) => r.method)).toEqual(['sendDice']);
  });

  it('a read still running when the attempt ends is abandoned with the attempt’s reason, and commit does not wait for it', async () => {
    const h = harness();
    const never = new Readable({ read: () => undefined });
    const pending = h.call('sendAudio', { chat_id: CHAT, audio: Input.fromReadableStream(never) });
    await new Promise((resolve) => setImmediate(resolve)); // the read has begun
    const reason = new Error('attempt finished');
    h.controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(await h.commit()).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(never.destroyed).toBe(true);
  });
});

describe('direct mode is unchanged', () => {
  it('every method goes to the Bot API; only a sendMessage Telegram always refuses is stopped, numbered among sendMessage calls', async () => {
    const session: ReplySession = createDirectReplySink().open({ botId: BOT, updateId: UPDATE });
    const calls: string[] = [];
    const direct: DirectCall = (method) => (calls.push(method), Promise.resolve(true));
    const signal = new AbortController().signal;
    await session.call('sendPhoto', { chat_id: CHAT, photo: Input.fromBuffer(Buffer.from('x')) }, signal, direct);
    await session.call('answerCallbackQuery', { callback_query_id: 'q' }, signal, direct);
    await session.call('sendMessage', { chat_id: CHAT, text: 'ok' }, signal, direct);
    const err = await refusal(session.call('sendMessage', { chat_id: CHAT, text: ' ' }, signal, direct));
    expect(err.replyNumber).toBe(2);
    expect(calls).toEqual(['sendPhoto', 'answerCallbackQuery', 'sendMessage']);
  });
});

describe('property: a relayed call with any payload', () => {
  const inputFile = fc.oneof(
    fc.uint8Array({ maxLength: 64 }).map((b) => Input.fromBuffer(Buffer.from(b))),
    fc
      .array(fc.uint8Array({ maxLength: 16 }), { maxLength: 4 })
      .map((chunks) => Input.fromReadableStream(Readable.from(chunks.map((c) => Buffer.from(c))))),
    fc.string().map((s) => Input.fromLocalFile(join(dir, 'missing', s))),
    fc.webUrl().map((u) => Input.fromURLStream(u)),
    fc.record({ source: fc.anything() }),
    fc.record({ url: fc.anything(), filename: fc.anything() }),
  );
  const value = fc.oneof(
    fc.anything({ withBigInt: true, withDate: true, withMap: true, withNullPrototype: true, withTypedArray: true }),
    inputFile,
    fc.array(fc.record({ type: fc.string(), media: fc.oneof(inputFile, fc.string()), thumbnail: inputFile }), {
      maxLength: 3,
    }),
  );
  const key = fc.oneof(
    fc.constantFrom('chat_id', 'photo', 'media', 'thumbnail', 'text', 'message_id', 'inline_message_id', '__proto__'),
    fc.string(),
  );

  it('resolves or rejects with InvalidReplyError, never reaches the Bot API, and commits only what resolved', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...RELAYED_METHODS),
        fc.dictionary(key, value, { maxKeys: 6 }),
        fc.boolean(),
        async (method, payload, throwingGetter) => {
          if (throwingGetter)
            Object.defineProperty(payload, 'caption', {
              enumerable: true,
              get: () => {
                throw new Error('getter');
              },
            });
          const h = harness({ maxUploadBytes: 100 });
          const outcome = await h.call(method, payload).then(
            () => 'captured',
            (err: unknown) => err,
          );
          if (outcome !== 'captured') expect(outcome).toBeInstanceOf(InvalidReplyError);
          expect(h.directCalls).toEqual([]);
          const replies = await h.commit();
          expect(replies).toHaveLength(outcome === 'captured' ? 1 : 0);
          for (const r of replies) {
            expect(r.method).toBe(method);
            // what is stored is JSON as it will be sent: no Buffer, no stream, no BigInt
            if (r.params) expect(JSON.parse(JSON.stringify(r.params))).toEqual(r.params);
            expect((r.uploads ?? []).reduce((n, u) => n + u.bytes.length, 0)).toBeLessThanOrEqual(100);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
