-- relay.outbound_upsert: repeatable (re-applied by `tg-relay migrate` whenever this file's sha256 changes;
-- libs/db/migrate.ts). Latest definition, first created by 0004_outbound.sql; p_method, p_params and
-- p_placeholders added with 0025_relayed_methods.sql, p_lane with 0027_outbound_lanes.sql. Edit here, never in a
-- numbered file.
/*
 * The idempotent insert behind every way in. Does not create the pg-boss job (the caller does:
 * relay.enqueue_outbound below, or the TypeScript library through pg-boss's own insert).
 * Returns the row and whether it was created here; `conflict` is true (and nothing is written) when
 * msg_id exists with a different payload, so a TypeScript caller can raise a typed error without
 * aborting its transaction. p_chat_id null → p_default_chat_id → relay.outbound_settings.
 * The payload hash covers what the caller asked for (the requested chat, not the resolved default),
 * so a retry of the same request is the same payload even if OPS_CHAT_ID changed in between.
 *
 * p_method (default sendMessage) is a relayed Bot API method (libs/telegram/methods.ts, checked by
 * test/integration/outbound/methods-sql.test.ts); methods other than sendMessage carry every
 * parameter but chat_id in p_params (a JSON object, bounded) and none of the sendMessage
 * fields. Answers (answer*) go to no chat; an edit of an inline message (inline_message_id) is keyed
 * 'inline:' || inline_message_id. The hash of a sendMessage is the one it always was (so rows
 * enqueued before stay idempotent); other methods hash method and params instead of the text fields.
 *
 * p_lane (null: interactive) is the row's priority lane. It is not part of the payload: it says when
 * the message goes, not what it is, so a retry of a request from another lane returns the existing
 * row (in the lane it was created in) instead of a conflict, and the hashes of rows enqueued before
 * lanes existed stay what they were.
 */
-- The 14-argument (before 0025) and 17-argument (before 0027) signatures: a parameter with a default
-- cannot be added by CREATE OR REPLACE, and a second overload would make every existing call
-- ambiguous, so they are dropped first.
drop function if exists relay.outbound_upsert(text, text, text, text, text, text, boolean, jsonb, jsonb, text, text, bigint, integer, uuid);
drop function if exists relay.outbound_upsert(text, text, text, text, text, text, boolean, jsonb, jsonb, text, text, bigint, integer, uuid, text, jsonb, bigint[]);
create or replace function relay.outbound_upsert(
  p_msg_id               text,
  p_bot_id               text,
  p_chat_id              text,
  p_default_chat_id      text,
  p_text                 text,
  p_parse_mode           text,
  p_disable_notification boolean,
  p_reply_markup         jsonb,
  p_send_options         jsonb,
  p_kind                 text,
  p_delivery             text,
  p_source_update_id     bigint,
  p_max_attempts         integer,
  p_job_id               uuid,
  p_method               text default 'sendMessage',
  p_params               jsonb default null,
  p_placeholders         bigint[] default null,
  p_lane                 text default null
) returns table (outbound_id bigint, msg_id text, created boolean, conflict boolean, state text, job_id uuid, target_chat_id text)
language plpgsql as $$
#variable_conflict use_column
declare
  v_bot text;
  v_chat text;
  v_target text;
  v_parse_mode text;
  v_kind text := coalesce(p_kind, 'message');
  v_delivery text := coalesce(p_delivery, 'at_least_once');
  v_lane text := coalesce(p_lane, 'interactive');
  v_options jsonb := p_send_options;
  v_method text := coalesce(nullif(btrim(p_method), ''), 'sendMessage');
  v_answer boolean;
  v_inline text;
  v_count integer := 1;
  v_sha text;
  v_id bigint;
  r record;
begin
  if p_msg_id is null or char_length(p_msg_id) not between 1 and 256 then
    raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: msg_id must be 1..256 characters';
  end if;
  if starts_with(p_msg_id, 'alert:') then
    raise exception using errcode = 'TR422',
      message = 'RELAY_OUTBOUND_INVALID: msg_id must not start with "alert:" (reserved for the alerts the relay raises about failed messages)';
  end if;
  if not v_method = any (array['sendMessage', 'forwardMessage', 'forwardMessages', 'copyMessage', 'copyMessages',
      'sendPhoto', 'sendAudio', 'sendDocument', 'sendVideo', 'sendAnimation', 'sendVoice', 'sendVideoNote', 'sendMediaGroup',
      'sendLocation', 'sendVenue', 'sendContact', 'sendPoll', 'sendDice', 'sendSticker', 'sendInvoice', 'sendGame',
      'editMessageText', 'editMessageCaption', 'editMessageMedia', 'editMessageReplyMarkup', 'editMessageLiveLocation',
      'stopMessageLiveLocation', 'stopPoll', 'setGameScore', 'deleteMessage', 'deleteMessages', 'pinChatMessage',
      'unpinChatMessage', 'unpinAllChatMessages', 'unpinAllForumTopicMessages', 'unpinAllGeneralForumTopicMessages',
      'setMessageReaction', 'answerCallbackQuery', 'answerInlineQuery', 'answerPreCheckoutQuery', 'answerShippingQuery',
      'answerWebAppQuery']) then
    raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: method must be a relayed Bot API method (a send, copy, forward, edit, delete, pin, reaction or answer), got "%s"', left(v_method, 40));
  end if;
  v_answer := starts_with(v_method, 'answer');
  if v_method = 'sendMessage' then
    if p_params is not null then
      raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: params is for methods other than sendMessage (a sendMessage has text and send_options)';
    end if;
    if p_text is null or char_length(p_text) not between 1 and 4096 then
      raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: text must be 1..4096 characters, got %s', coalesce(char_length(p_text), 0));
    end if;
    if p_text !~ '\S' then
      raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: text must contain a visible character (Telegram rejects blank text)';
    end if;
  else
    if p_params is null or jsonb_typeof(p_params) <> 'object' then
      raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: params must be a JSON object of the %s parameters', v_method);
    end if;
    if p_params ? 'chat_id' then
      raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: params must not contain chat_id (it has its own field)';
    end if;
    -- a backstop for callers that bypass libs/outbound (OUTBOUND_PARAMS_MAX_BYTES, 256 KiB of compact
    -- JSON): jsonb's text form adds a space after every ':' and ',', so the bound here is twice that
    if octet_length(p_params::text) > 524288 then
      raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: params must be at most 524288 bytes as JSON, got %s', octet_length(p_params::text));
    end if;
    if p_text is not null or p_parse_mode is not null or p_reply_markup is not null or p_send_options is not null
       or coalesce(p_disable_notification, false) then
      raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: text, parse_mode, disable_notification, reply_markup and send_options are sendMessage fields; a %s carries all its parameters in params', v_method);
    end if;
    v_inline := case when not v_answer and jsonb_typeof(p_params->'inline_message_id') in ('string', 'number')
                     then p_params->>'inline_message_id' end;
    -- what the row counts for against the rate limits (libs/telegram/methods.ts messageCount)
    v_count := case when v_answer then 0
                    when v_method = 'sendMediaGroup' and jsonb_typeof(p_params->'media') = 'array'
                      then greatest(1, jsonb_array_length(p_params->'media'))
                    when v_method in ('forwardMessages', 'copyMessages') and jsonb_typeof(p_params->'message_ids') = 'array'
                      then greatest(1, jsonb_array_length(p_params->'message_ids'))
                    else 1 end;
    if v_count > 100 then
      raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: a %s sends at most 100 messages, got %s', v_method, v_count);
    end if;
  end if;
  if v_kind not in ('message', 'reply', 'alert') then
    raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: kind must be message, reply or alert, got "%s"', left(v_kind, 40));
  end if;
  if v_delivery not in ('at_least_once', 'at_most_once') then
    raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: delivery must be at_least_once or at_most_once, got "%s"', left(v_delivery, 40));
  end if;
  if v_lane not in ('interactive', 'bulk') then
    raise exception using errcode = 'TR422', message = format('RELAY_OUTBOUND_INVALID: lane must be interactive or bulk, got "%s"', left(v_lane, 40));
  end if;
  if p_reply_markup is not null and jsonb_typeof(p_reply_markup) <> 'object' then
    raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: reply_markup must be a JSON object';
  end if;
  if v_options is not null then
    if jsonb_typeof(v_options) <> 'object' then
      raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: send_options must be a JSON object';
    end if;
    if v_options ?| array['chat_id', 'text', 'parse_mode', 'disable_notification', 'reply_markup'] then
      raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: send_options must not repeat chat_id, text, parse_mode, disable_notification or reply_markup (they have their own fields)';
    end if;
    if v_options = '{}'::jsonb then v_options := null; end if;
  end if;
  if p_max_attempts is not null and p_max_attempts not between 1 and 1000 then
    raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: max_attempts must be 1..1000';
  end if;
  v_parse_mode := relay.outbound_normalize_parse_mode(p_parse_mode);

  select s.bot_id, s.default_chat_id into r from relay.outbound_settings s where s.singleton;
  v_bot := coalesce(nullif(btrim(p_bot_id), ''), r.bot_id);
  if v_bot is null then
    raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: bot_id not given and no default bot registered (start a tg-relay worker once, or pass bot_id)';
  end if;
  if v_answer then
    -- an answer belongs to no chat (and so to no chat's FIFO); a chat given with it is not part of it
    v_chat := null;
    v_target := null;
  elsif v_inline is not null then
    v_chat := 'inline:' || v_inline;
    v_target := v_chat;
  elsif nullif(btrim(p_chat_id), '') is not null then
    v_chat := relay.outbound_normalize_chat(p_chat_id, 'chat_id');
    v_target := v_chat;
  else
    v_chat := null;
    v_target := coalesce(nullif(btrim(p_default_chat_id), ''), r.default_chat_id);
    if v_target is null then
      raise exception using errcode = 'TR422', message = 'RELAY_OUTBOUND_INVALID: chat_id not given and no default chat configured (OPS_CHAT_ID)';
    end if;
    v_target := relay.outbound_normalize_chat(v_target, 'default chat (OPS_CHAT_ID)');
  end if;

  -- Per-chat FIFO is id order, and workers claim a chat's head among *committed* rows. An id taken by
  -- a transaction that commits after a higher id of the same chat was committed (and maybe already
  -- claimed) would let the later message go first and put two messages of one chat in flight (found
  -- by the soak: a handler reply committing after a message enqueued meanwhile). So the ids of one
  -- chat are handed out one transaction at a time: this lock is held until the caller's commit.
  if v_target is not null then
    perform relay.outbound_lock_chat(v_bot, v_target);
  end if;

  -- jsonb's text form is canonical (keys sorted), so equal payloads hash equally whatever the key order.
  if v_method = 'sendMessage' then
    v_sha := encode(sha256(convert_to(jsonb_build_object(
      'bot_id', v_bot, 'chat_id', v_chat, 'text', p_text, 'parse_mode', v_parse_mode,
      'disable_notification', coalesce(p_disable_notification, false), 'reply_markup', p_reply_markup,
      'send_options', v_options, 'kind', v_kind, 'delivery', v_delivery)::text, 'UTF8')), 'hex');
  else
    v_sha := encode(sha256(convert_to(jsonb_build_object(
      'bot_id', v_bot, 'chat_id', v_chat, 'method', v_method, 'params', p_params,
      'kind', v_kind, 'delivery', v_delivery)::text, 'UTF8')), 'hex');
  end if;

  insert into relay.outbound as o (msg_id, bot_id, chat_id, target_chat_id, text, parse_mode, disable_notification, reply_markup,
                                   send_options, kind, delivery, payload_sha256, source_update_id, max_attempts, job_id,
                                   method, params, message_count, placeholders, lane)
  values (p_msg_id, v_bot, v_target, v_target, p_text, v_parse_mode, coalesce(p_disable_notification, false), p_reply_markup,
          v_options, v_kind, v_delivery, v_sha, p_source_update_id, p_max_attempts, p_job_id,
          v_method, case when v_method = 'sendMessage' then null else p_params end, v_count, p_placeholders, v_lane)
  on conflict (msg_id) do nothing
  returning o.id into v_id;

  if v_id is not null then
    return query select v_id, p_msg_id, true, false, 'pending'::text, p_job_id, v_target;
    return;
  end if;

  -- Exists (committed, or committed by a concurrent transaction we waited for).
  select o.id, o.payload_sha256, o.state, o.job_id, o.target_chat_id into r from relay.outbound o where o.msg_id = p_msg_id;
  return query select r.id, p_msg_id, false, r.payload_sha256 <> v_sha, r.state, r.job_id, r.target_chat_id;
end $$;
