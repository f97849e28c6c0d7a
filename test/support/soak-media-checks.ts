/**
 * The soak's media invariants (test/fixtures/soak-media.ts): every handled update's photo reached the
 * Bot API with exactly the bytes the handler uploaded (sha256 from the sandbox's call log), every album
 * as one album of its 2 photos, every edit with the real message id of the reply it edits (never a
 * placeholder), and the rows' recorded Telegram ids are the ones the sandbox handed out. Exactly-once
 * (duplicates only after as many recorded ambiguous attempts) and per-chat order across text, media and
 * edits are checked with the text sends in soak-checks.ts, from the keys this file gives every send.
 */
import type { CallRecord, SentMessage } from '../../libs/sandbox';
import { sha256Hex } from '../../libs/sandbox/bot-api-request';
import { albumCaption, draftText, editedText, photoCaption, soakPhotoBytes } from '../fixtures/soak-media';

/** The columns of relay.outbound the soak's checks read. */
export interface OutboundRow {
  id: string;
  msg_id: string;
  kind: string;
  state: string;
  chat_id: string;
  target_chat_id: string;
  text: string | null;
  failed_reason: string | null;
  telegram_message_id: string | null;
  method: string;
  params: Record<string, unknown> | null;
  telegram_message_ids: string[] | null;
}

type Fig = (label: string, value: string | number, ok?: boolean, why?: string) => void;

/** `album 17 2/2` → `album 17`: what every message of one album shares. */
const albumOf = (caption: string | undefined) => String(caption).replace(/ \d+\/\d+$/, '');

function mediaItems(params: Record<string, unknown> | null | undefined): Array<Record<string, unknown>> {
  const media = params?.media;
  return Array.isArray(media) ? (media as Array<Record<string, unknown>>) : [];
}

/** What identifies a row's sends in the sandbox's record: its text, an edit's new text, a photo's caption, an album's. */
export function rowSendKey(r: OutboundRow): string {
  const p = r.params ?? {};
  if (r.method === 'sendMessage') return `sendMessage\u0000${r.text}`;
  if (r.method === 'editMessageText') return `editMessageText\u0000${String(p.text)}`;
  if (r.method === 'sendPhoto') return `sendPhoto\u0000${String(p.caption)}`;
  if (r.method === 'sendMediaGroup') return `sendMediaGroup\u0000${albumOf(mediaItems(p)[0]?.caption as string)}`;
  return `${r.method}\u0000row ${r.id}`;
}

/** The key of one message the sandbox accepted (rowSendKey's counterpart). */
export function sentKey(s: SentMessage): string {
  if (s.method === 'sendMediaGroup') return `sendMediaGroup\u0000${albumOf(s.caption)}`;
  return `${s.method}\u0000${s.media ? s.caption : s.text}`;
}

/** A message of an album after its first: the album's call is counted once, by its first message. */
export function isAlbumTail(s: SentMessage): boolean {
  return s.method === 'sendMediaGroup' && !/ 1\/\d+$/.test(s.caption ?? '');
}

/** Calls the Bot API processed (a send recorded), answered or not. */
const processed = (c: CallRecord) => c.outcome === 'ok' || c.outcome === 'dropped_after';

/** The sha256 of the upload an `attach://<part>` value names in this call, or why there is none. */
function attachedSha(c: CallRecord, value: unknown): string {
  const m = /^attach:\/\/(.+)$/.exec(String(value));
  if (!m) return `not an upload (${String(value).slice(0, 40)})`;
  return c.files?.find((f) => f.part === m[1])?.sha256 ?? `no part ${m[1]}`;
}

export interface MediaInput {
  /** The reply rows, with the update and the call number of their msg_id. */
  replies: Array<{ row: OutboundRow; update: number; n: number }>;
  sent: SentMessage[];
  calls: CallRecord[];
}

export function checkMedia(input: MediaInput, fig: Fig, section: (title: string) => void): void {
  section('media replies: uploads, albums, edits through placeholders');
  const { replies, sent, calls } = input;
  const callsOf = (method: string, key: (c: CallRecord) => string) => {
    const out = new Map<string, CallRecord[]>();
    for (const c of calls.filter((x) => x.method === method)) out.set(key(c), [...(out.get(key(c)) ?? []), c]);
    return out;
  };
  const sentOf = (method: string, key: (s: SentMessage) => string) => {
    const out = new Map<string, SentMessage[]>();
    for (const s of sent.filter((x) => x.method === method)) out.set(key(s), [...(out.get(key(s)) ?? []), s]);
    return out;
  };
  checkPhotos(
    replies,
    callsOf('sendPhoto', (c) => String(c.params.caption)),
    sentOf('sendPhoto', (s) => String(s.caption)),
    fig,
  );
  checkAlbums(
    replies,
    callsOf('sendMediaGroup', (c) => albumOf(mediaItems(c.params)[0]?.caption as string)),
    sentOf('sendMediaGroup', (s) => albumOf(s.caption)),
    fig,
  );
  checkEdits(replies, calls, sent, fig);
}

/** Every photo row delivered once processed with its exact bytes, every call of it with exactly those bytes, its id Telegram's. */
function checkPhotos(
  replies: MediaInput['replies'],
  callsByCaption: Map<string, CallRecord[]>,
  sentByCaption: Map<string, SentMessage[]>,
  fig: Fig,
): void {
  const photos = replies.filter((r) => r.row.method === 'sendPhoto');
  let exact = 0;
  let wrongBytes = 0;
  let bytes = 0;
  const examples: string[] = [];
  for (const { row, update } of photos) {
    const want = soakPhotoBytes(update, 0);
    const mine = callsByCaption.get(photoCaption(update)) ?? [];
    const bad = mine.filter((c) => c.files && attachedSha(c, c.params.photo) !== sha256Hex(want));
    wrongBytes += bad.length;
    if (bad.length && examples.length < 3)
      examples.push(`update ${update}: ${attachedSha(bad[0], bad[0].params.photo)}`);
    const got = mine.filter((c) => processed(c) && attachedSha(c, c.params.photo) === sha256Hex(want));
    const ids = (sentByCaption.get(photoCaption(update)) ?? []).map((s) => String(s.message_id));
    if (row.state === 'delivered' && got.length > 0 && ids.includes(String(row.telegram_message_id))) {
      exact++;
      bytes += want.length;
    }
  }
  fig(
    'photo replies: reached the Bot API with exactly the uploaded bytes (sha256 in the call log), Telegram id recorded',
    `${exact} of ${photos.length} (${bytes} bytes; ${wrongBytes} calls with other bytes${examples.length ? `: ${examples.join('; ')}` : ''})`,
    exact === photos.length && wrongBytes === 0 && photos.length > 0,
  );
}

/** Every album row sent as one sendMediaGroup of its 2 photos (exact bytes, in order), its 2 ids Telegram's. */
function checkAlbums(
  replies: MediaInput['replies'],
  callsByAlbum: Map<string, CallRecord[]>,
  sentByAlbum: Map<string, SentMessage[]>,
  fig: Fig,
): void {
  const albums = replies.filter((r) => r.row.method === 'sendMediaGroup');
  let asAlbums = 0;
  let wrongCalls = 0;
  const examples: string[] = [];
  for (const { row, update } of albums) {
    const key = albumOf(albumCaption(update, 0));
    const mine = callsByAlbum.get(key) ?? [];
    const exactCall = (c: CallRecord) => {
      const items = mediaItems(c.params);
      return (
        items.length === 2 &&
        items.every(
          (it, slot) =>
            it.type === 'photo' &&
            it.caption === albumCaption(update, slot) &&
            attachedSha(c, it.media) === sha256Hex(soakPhotoBytes(update, slot)),
        )
      );
    };
    const bad = mine.filter((c) => c.files && !exactCall(c));
    wrongCalls += bad.length;
    if (bad.length && examples.length < 3) examples.push(`update ${update}: ${JSON.stringify(bad[0].params.media)}`);
    // the sandbox records an album's messages one after the other, in one call: pairs of consecutive seq
    const msgs = [...(sentByAlbum.get(key) ?? [])].sort((a, b) => a.seq - b.seq);
    const pairs: string[] = [];
    for (let i = 0; i + 1 < msgs.length; i += 2) {
      if (msgs[i + 1].seq === msgs[i].seq + 1 && msgs[i].caption === albumCaption(update, 0))
        pairs.push(`${msgs[i].message_id},${msgs[i + 1].message_id}`);
    }
    const recorded = (row.telegram_message_ids ?? []).join(',');
    if (
      row.state === 'delivered' &&
      mine.some((c) => processed(c) && exactCall(c)) &&
      msgs.length === 2 * pairs.length &&
      pairs.includes(recorded)
    )
      asAlbums++;
  }
  fig(
    'albums: sent as one album of 2 photos with exactly their bytes, both Telegram ids recorded',
    `${asAlbums} of ${albums.length} (${wrongCalls} calls with other items or bytes${examples.length ? `: ${examples.join('; ')}` : ''})`,
    asAlbums === albums.length && wrongCalls === 0 && albums.length > 0,
  );
}

/** Every edit sent with the real id of the reply it edits; no edit call ever carries a placeholder id. */
function checkEdits(replies: MediaInput['replies'], calls: CallRecord[], sent: SentMessage[], fig: Fig): void {
  const edits = replies.filter((r) => r.row.method === 'editMessageText');
  const draftOf = new Map(
    replies
      .filter((r) => r.row.method === 'sendMessage' && r.row.text === draftText(r.update))
      .map((r) => [r.update, r]),
  );
  const editCalls = calls.filter((c) => c.method === 'editMessageText');
  const placeholderCalls = editCalls.filter((c) => !(Number(c.params.message_id) > 0)).length;
  let real = 0;
  const examples: string[] = [];
  for (const { row, update } of edits) {
    const draft = draftOf.get(update)?.row;
    const draftId = Number(draft?.telegram_message_id);
    const draftIds = sent
      .filter((s) => s.method === 'sendMessage' && s.text === draftText(update))
      .map((s) => s.message_id);
    const mine = sent.filter((s) => s.method === 'editMessageText' && s.text === editedText(update));
    const ok =
      row.state === 'delivered' &&
      draft?.state === 'delivered' &&
      draftIds.includes(draftId) &&
      mine.length > 0 &&
      mine.every((s) => s.message_id === draftId && s.resolved_chat_id === Number(draft.target_chat_id));
    if (ok) real++;
    else if (examples.length < 3)
      examples.push(
        `update ${update}: draft ${draft?.state} id ${draftId}, edits of ${mine.map((s) => s.message_id).join('/') || 'none'}`,
      );
  }
  fig(
    'edits: sent with the real message id of the reply they edit (its placeholder resolved)',
    `${real} of ${edits.length}${examples.length ? ` (${examples.join('; ')})` : ''}`,
    real === edits.length && edits.length > 0,
  );
  fig(
    'edit calls that reached the Bot API with a placeholder (non-positive) message id',
    `${placeholderCalls} of ${editCalls.length} calls`,
    placeholderCalls === 0 && editCalls.length > 0,
  );
}
