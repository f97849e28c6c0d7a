// Built by `npm run build:ui` from libs/admin/ui/src. Do not edit: edit the sources and rebuild.
"use strict";
(() => {
  // libs/admin/ui/src/api.ts
  var ApiError = class extends Error {
    constructor(status, code, message, body = {}) {
      super(message);
      this.status = status;
      this.code = code;
      this.body = body;
      this.name = "ApiError";
    }
    status;
    code;
    body;
  };
  function queryString(q = {}) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== void 0 && v !== null && v !== "") params.set(k, String(v));
    const s = params.toString();
    return s ? `?${s}` : "";
  }
  function createApi(token, onUnauthorized) {
    const request = async (method, path, body) => {
      const hasBody = method !== "GET";
      let res;
      try {
        res = await fetch(path, {
          method,
          cache: "no-store",
          headers: {
            authorization: `Bearer ${token}`,
            accept: "application/json",
            ...hasBody ? { "content-type": "application/json" } : {}
          },
          body: hasBody ? JSON.stringify(body ?? {}) : void 0
        });
      } catch (err2) {
        throw new ApiError(0, "NETWORK", `the admin API did not answer (${err2.message})`);
      }
      const text2 = await res.text();
      let json;
      try {
        json = text2 ? JSON.parse(text2) : null;
      } catch {
        json = null;
      }
      if (!res.ok) {
        const body2 = json && typeof json === "object" ? json : void 0;
        const err2 = new ApiError(
          res.status,
          body2?.code ?? `HTTP_${res.status}`,
          body2?.message ?? `HTTP ${res.status}`,
          body2 ?? {}
        );
        if (res.status === 401) onUnauthorized(err2);
        throw err2;
      }
      return json;
    };
    return {
      get: (path, query) => request("GET", `${path}${queryString(query)}`),
      post: (path, body) => request("POST", path, body),
      delete: (path, body) => request("DELETE", path, body)
    };
  }
  function describeError(err2) {
    if (err2 instanceof ApiError) return err2.status ? `${err2.message} (${err2.code}, HTTP ${err2.status})` : err2.message;
    return err2?.message ?? String(err2);
  }

  // libs/admin/ui/src/dom.ts
  function append(el, children) {
    for (const c of children) {
      if (c === null || c === void 0 || c === false) continue;
      if (Array.isArray(c)) append(el, c);
      else el.append(c instanceof Node ? c : String(c));
    }
  }
  function setAttrs(el, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === void 0 || v === false) continue;
      if (typeof v === "function") el.addEventListener(k.slice(2).toLowerCase(), v);
      else if (k === "class") el.setAttribute("class", String(v));
      else if (v === true) el.setAttribute(k, "");
      else el.setAttribute(k, String(v));
    }
  }
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    setAttrs(el, attrs);
    append(el, children);
    return el;
  }
  var SVG_NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...children) {
    const el = document.createElementNS(SVG_NS, tag);
    setAttrs(el, attrs);
    append(el, children);
    return el;
  }
  function replaceKeepingFocus(container, ...children) {
    const active = document.activeElement;
    const key = active && container.contains(active) ? active.getAttribute("data-focus-key") : null;
    container.replaceChildren();
    append(container, children);
    if (key) {
      const again = container.querySelector(`[data-focus-key="${CSS.escape(key)}"]`);
      again?.focus();
    }
  }
  function statusRegion(cls = "status") {
    return h("div", { role: "status", "aria-live": "polite", class: cls });
  }
  function setStatus(region, kind, ...children) {
    region.dataset.kind = kind;
    region.replaceChildren();
    append(region, children);
  }

  // libs/admin/ui/src/dialog.ts
  var open = 0;
  var dialogOpen = () => open > 0;
  function confirmDialog(opts) {
    const opener = document.activeElement;
    const titleId = `dlg-title-${Date.now()}`;
    const reason = opts.reason ? h("input", { id: `${titleId}-reason`, name: "reason", type: "text", maxlength: 500, autocomplete: "off" }) : null;
    const confirm = h(
      "button",
      { type: "submit", value: "confirm", class: opts.danger ? "danger" : "primary" },
      opts.confirmLabel
    );
    const cancel = h(
      "button",
      { type: "submit", value: "cancel", formnovalidate: true },
      opts.inform ? "Close" : "Cancel"
    );
    const form = h(
      "form",
      { method: "dialog" },
      h("h2", { id: titleId }, opts.title),
      h("div", { class: "dialog-body" }, opts.body),
      reason ? h("p", { class: "field" }, h("label", { for: reason.id }, "Reason (optional, kept in the audit trail)"), reason) : null,
      h("div", { class: "dialog-buttons" }, opts.inform ? null : confirm, cancel)
    );
    const dialog = h("dialog", { "aria-labelledby": titleId }, form);
    document.body.append(dialog);
    open++;
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => {
        open--;
        const confirmed = dialog.returnValue === "confirm";
        dialog.remove();
        opener?.focus();
        resolve({ confirmed, reason: reason?.value.trim() || void 0 });
      });
      dialog.showModal();
      (opts.inform ? cancel : reason ?? cancel).focus();
    });
  }

  // libs/admin/ui/src/format.ts
  var pad = (n, w = 2) => String(n).padStart(w, "0");
  function fmtTime(iso) {
    if (!iso) return "—";
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return iso;
    const time3 = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    const now = /* @__PURE__ */ new Date();
    if (d.toDateString() === now.toDateString()) return time3;
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time3}`;
  }
  function fmtAge(seconds) {
    if (seconds === null || seconds === void 0) return "—";
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
    if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor(s % 3600 / 60))}m`;
    return `${Math.floor(s / 86400)}d ${Math.floor(s % 86400 / 3600)}h`;
  }
  function fmtMs(ms) {
    if (ms === null || ms === void 0) return "—";
    return ms < 1e3 ? `${ms} ms` : `${(ms / 1e3).toFixed(ms < 1e4 ? 2 : 1)} s`;
  }
  function fmtCount(n, approximate = false) {
    return `${approximate ? "≈" : ""}${n.toLocaleString("en-US")}`;
  }
  function isoToLocalInput(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return "";
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }
  function localInputToIso(value2) {
    if (!value2) return void 0;
    const d = new Date(value2);
    return Number.isNaN(d.getTime()) ? void 0 : d.toISOString();
  }
  function text(value2) {
    if (typeof value2 === "string") return value2;
    if (typeof value2 === "number" || typeof value2 === "boolean" || typeof value2 === "bigint" || value2 === null || value2 === void 0)
      return String(value2);
    return JSON.stringify(value2) ?? "";
  }
  function pretty(value2) {
    return JSON.stringify(value2, null, 2);
  }

  // libs/queue/work-types.ts
  var WORK_TYPE_NAMES = ["captures", "outbound", "inbox"];
  var CLAIM_TABLE_MODEL = {
    states: ["pending", "delivering", "delivered", "failed"],
    pending: "pending",
    claimed: "delivering",
    claimMarksState: true,
    done: "delivered",
    failed: "failed",
    terminal: ["delivered", "failed"],
    retryFrom: ["failed"],
    cancelFrom: ["pending"],
    recoverable: true
  };
  var WORK_TYPES = {
    captures: {
      name: "captures",
      queue: "capture.deliver",
      table: "relay.captures",
      subject: "capture",
      keyColumn: "capture_key",
      model: CLAIM_TABLE_MODEL,
      noun: { one: "capture", many: "captures" },
      title: "Captures"
    },
    outbound: {
      name: "outbound",
      queue: "outbound.send",
      table: "relay.outbound",
      subject: "outbound",
      keyColumn: "msg_id",
      model: CLAIM_TABLE_MODEL,
      noun: { one: "outbound message", many: "outbound messages" },
      title: "Outbound"
    },
    inbox: {
      name: "inbox",
      queue: "update.dispatch",
      table: "relay.inbox",
      subject: "inbox",
      keyColumn: "update_id",
      model: {
        states: ["pending", "handled", "failed"],
        pending: "pending",
        claimed: "pending",
        claimMarksState: false,
        done: "handled",
        failed: "failed",
        terminal: ["handled", "failed"],
        retryFrom: ["failed"],
        cancelFrom: [],
        recoverable: true
      },
      noun: { one: "inbox update", many: "inbox updates" },
      title: "Inbox"
    }
  };
  var WORK_TYPE_LIST = WORK_TYPE_NAMES.map((n) => WORK_TYPES[n]);

  // libs/admin/ui/src/kinds.ts
  function stateBadge(state) {
    return h("span", { class: `badge state-${state}` }, state);
  }
  var err = (row) => {
    const text2 = row.failed_reason ?? row.last_error;
    return text2 ? h("span", { class: "error-text", title: text2 }, text2) : "—";
  };
  var time = (iso) => h("time", { datetime: iso ?? "" }, fmtTime(iso));
  var fromRegistry = (t) => ({
    title: t.title,
    noun: t.noun.one,
    states: t.model.states,
    retry: t.model.retryFrom.length > 0,
    cancel: t.model.cancelFrom.length > 0
  });
  var KIND_VIEWS = {
    captures: {
      ...fromRegistry(WORK_TYPES.captures),
      chat: true,
      timeLabel: "Created",
      columns: [
        { label: "Created", cell: (r) => time(r.created_at) },
        { label: "Chat", cell: (r) => r.chat_id, num: true },
        { label: "Message", cell: (r) => r.message_id, num: true },
        { label: "State", cell: (r) => stateBadge(r.state) },
        { label: "Attempts", cell: (r) => `${r.attempts}${r.max_attempts ? ` / ${r.max_attempts}` : ""}`, num: true },
        { label: "HTTP", cell: (r) => r.last_status ?? "—", num: true },
        { label: "Error", cell: err }
      ]
    },
    outbound: {
      ...fromRegistry(WORK_TYPES.outbound),
      chat: true,
      timeLabel: "Created",
      columns: [
        { label: "Created", cell: (r) => time(r.created_at) },
        { label: "msg_id", cell: (r) => h("code", null, r.msg_id) },
        { label: "Method", cell: (r) => h("code", null, r.method) },
        {
          label: "Chat",
          // an answer to a query belongs to no chat
          cell: (r) => r.chat_id === null ? "—" : r.target_chat_id !== r.chat_id ? `${r.chat_id} → ${r.target_chat_id ?? "—"}` : r.chat_id
        },
        { label: "Kind", cell: (r) => r.kind },
        { label: "State", cell: (r) => stateBadge(r.state) },
        { label: "Attempts", cell: (r) => `${r.attempts}${r.max_attempts ? ` / ${r.max_attempts}` : ""}`, num: true },
        { label: "HTTP", cell: (r) => r.last_status ?? "—", num: true },
        { label: "Error", cell: err }
      ]
    },
    inbox: {
      ...fromRegistry(WORK_TYPES.inbox),
      chat: true,
      timeLabel: "Received",
      columns: [
        { label: "Received", cell: (r) => time(r.received_at) },
        { label: "Update", cell: (r) => r.update_id, num: true },
        { label: "Type", cell: (r) => r.update_type },
        { label: "Chat", cell: (r) => r.chat_id ?? "—", num: true },
        { label: "Authorized", cell: (r) => r.authorized ? "yes" : "no" },
        { label: "State", cell: (r) => stateBadge(r.state) },
        { label: "Attempts", cell: (r) => r.attempts, num: true },
        { label: "Error", cell: err }
      ]
    },
    quarantine: {
      title: "Quarantine",
      noun: "quarantined update",
      states: ["quarantined", "released", "discarded"],
      chat: false,
      retry: false,
      cancel: false,
      timeLabel: "Quarantined",
      columns: [
        { label: "Quarantined", cell: (r) => time(r.created_at) },
        { label: "Update", cell: (r) => r.update_id ?? "—", num: true },
        { label: "Size", cell: (r) => `${r.size_bytes} B`, num: true },
        { label: "State", cell: (r) => stateBadge(r.state) },
        { label: "Error", cell: (r) => h("span", { class: "error-text", title: r.error }, r.error) },
        { label: "Path", cell: (r) => r.json_path ? h("code", null, r.json_path) : "—" }
      ]
    }
  };
  var WORK_CARDS = [
    { kind: "inbox", title: "Dispatch", what: "updates handed to the bot handlers" },
    { kind: "captures", title: "Captures", what: "messages posted to the collector" },
    { kind: "outbound", title: "Outbound", what: "messages sent to Telegram" }
  ];

  // libs/admin/ui/src/router.ts
  var LIST_KINDS = ["captures", "outbound", "inbox", "quarantine"];
  function parseHash(hash) {
    const raw = hash.replace(/^#/, "");
    const [path, query = ""] = raw.split("?", 2);
    const parts = path.split("/").filter(Boolean);
    const params = new URLSearchParams(query);
    if (parts.length === 0 || parts[0] === "overview") return { name: "overview" };
    const kind = LIST_KINDS.find((k) => k === parts[0]);
    if (kind && parts.length === 1) return { name: "list", kind, params };
    if (kind && parts.length === 2 && /^[1-9][0-9]{0,15}$/.test(parts[1]))
      return { name: "detail", kind, id: Number(parts[1]) };
    if (parts[0] === "broadcasts" && parts.length === 1) return { name: "broadcasts", params };
    if (parts[0] === "broadcasts" && parts.length === 2 && /^[1-9][0-9]{0,17}$/.test(parts[1]))
      return { name: "broadcast", id: parts[1] };
    if (parts[0] === "bots" && parts.length === 1) return { name: "bots" };
    if (parts[0] === "bots" && parts.length === 2 && parts[1] === "add") return { name: "bot-add", params };
    if (parts[0] === "bots" && parts.length === 2 && /^[0-9]{1,20}$/.test(parts[1])) return { name: "bot", id: parts[1] };
    if (parts[0] === "audit" && parts.length === 1) return { name: "audit", params };
    if (parts[0] === "sandbox" && parts.length === 1) return { name: "sandbox" };
    return { name: "unknown", path };
  }
  function listHash(kind, params = {}) {
    const p = params instanceof URLSearchParams ? params : new URLSearchParams(Object.entries(params).filter((e) => !!e[1]));
    const q = p.toString();
    return `#/${kind}${q ? `?${q}` : ""}`;
  }
  var detailHash = (kind, id) => `#/${kind}/${id}`;
  var broadcastHash = (id) => `#/broadcasts/${id}`;
  var botHash = (id) => `#/bots/${id}`;
  var botChangeHash = (id) => `#/bots/add?id=${id}`;

  // libs/admin/ui/src/views/audit.ts
  function subject(a) {
    const d = a.details ?? {};
    const kind = LIST_KINDS.find((k) => k === d.kind);
    if (kind && a.subject_id) return h("a", { href: detailHash(kind, a.subject_id) }, `${kind} #${a.subject_id}`);
    if (kind) return `${kind}${d.count !== void 0 ? ` (${text(d.count)})` : ""}`;
    return a.subject_key ?? "—";
  }
  function auditView(ctx, params) {
    const cursor = params.get("cursor") ?? void 0;
    const box = h("div", { class: "table-box" });
    const pager = h("nav", { class: "pager", "aria-label": "Pages" });
    const el = h(
      "div",
      null,
      h(
        "div",
        { class: "page-head" },
        h("h1", { tabindex: -1 }, "Audit trail"),
        h("p", { class: "muted small" }, "Admin actions (relay.attempts, subject admin), newest first.")
      ),
      box,
      pager
    );
    return {
      title: "Audit",
      el,
      async refresh() {
        let page;
        try {
          page = await ctx.api.get("v1/audit", { limit: 50, cursor });
        } catch (err2) {
          replaceKeepingFocus(box, h("p", { role: "alert", class: "error" }, describeError(err2)));
          return;
        }
        const rows = page.items.map((a) => {
          const d = a.details ?? {};
          return h(
            "tr",
            null,
            h("td", null, h("time", { datetime: a.started_at, title: a.started_at }, fmtTime(a.started_at))),
            h("td", null, h("span", { class: "badge admin" }, a.action)),
            h("td", null, a.actor ?? "—"),
            h("td", null, subject(a)),
            h(
              "td",
              null,
              d.result === "refused" ? h("span", { class: "error-text" }, `refused: ${a.error_code ?? ""} ${a.error ?? ""}`) : text(d.result ?? "ok")
            ),
            h("td", null, d.reason ? text(d.reason) : "—")
          );
        });
        replaceKeepingFocus(
          box,
          rows.length === 0 ? h("p", { class: "empty" }, "No admin action yet.") : h(
            "table",
            { class: "grid" },
            h("caption", { class: "visually-hidden" }, "Admin actions, newest first"),
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                ["Time", "Action", "By", "Subject", "Result", "Reason"].map((t) => h("th", { scope: "col" }, t))
              )
            ),
            h("tbody", null, rows)
          )
        );
        replaceKeepingFocus(
          pager,
          cursor ? h("a", { href: "#/audit", "data-focus-key": "first" }, "« Newest") : null,
          page.next_cursor ? h(
            "a",
            { href: `#/audit?cursor=${encodeURIComponent(page.next_cursor)}`, "data-focus-key": "next" },
            "Older »"
          ) : null
        );
      }
    };
  }

  // libs/admin/ui/src/views/bot-form.ts
  function parseSettings(textValue) {
    const out = {};
    textValue.split("\n").forEach((line, i) => {
      const l = line.trim();
      if (!l) return;
      const eq = l.indexOf("=");
      if (eq <= 0) throw new Error(`Settings, line ${i + 1}: expected NAME=value`);
      out[l.slice(0, eq).trim()] = l.slice(eq + 1).trim();
    });
    return out;
  }
  var fieldName = (f) => typeof f === "string" ? f.replace(/^body\./, "").split(/[./]/)[0] : void 0;
  function botAddView(ctx, params) {
    const changing = params.get("id");
    const input = (id, name, attrs = {}) => h("input", { id, name, type: "text", autocomplete: "off", spellcheck: "false", ...attrs });
    const token = input("bot-token", "token", { type: "password", required: true, maxlength: 300, size: 50 });
    const handlers = input("bot-handlers", "handlers", { maxlength: 1e3, placeholder: "handlers/shop-bot.ts" });
    const captureUrl = input("bot-capture-url", "capture_url", {
      inputmode: "url",
      maxlength: 2e3,
      placeholder: "https://collector.example/telegram"
    });
    const allowed = h("textarea", { id: "bot-allowed", name: "allowed_chat_ids", rows: 2, spellcheck: "false" });
    const ops = input("bot-ops-chat", "ops_chat_id", { maxlength: 100, size: 20 });
    const settings = h("textarea", {
      id: "bot-settings",
      name: "settings",
      rows: 3,
      spellcheck: "false",
      placeholder: "OUTBOUND_RATE_PER_BOT=30/1s"
    });
    const enabled = h("input", { id: "bot-enabled", name: "enabled", type: "checkbox", checked: true });
    const reason = input("bot-reason", "reason", { maxlength: 500 });
    const fields = {
      token,
      handlers,
      capture_url: captureUrl,
      allowed_chat_ids: allowed,
      ops_chat_id: ops,
      settings,
      enabled,
      reason
    };
    const status = statusRegion();
    const button = h("button", { type: "submit", class: "primary" }, changing ? "Save registration" : "Add bot");
    const field = (el2, label, hint) => h(
      "p",
      { class: "field" },
      h("label", { for: el2.id }, label),
      el2,
      hint ? h("span", { class: "muted small", id: `${el2.id}-hint` }, hint) : null
    );
    for (const [el2, hint] of [
      [token, "bot-token-hint"],
      [allowed, "bot-allowed-hint"],
      [settings, "bot-settings-hint"]
    ])
      el2.setAttribute("aria-describedby", hint);
    const form = h(
      "form",
      { class: "stacked-form", method: "post", autocomplete: "off", "aria-label": changing ? "Change bot" : "Add bot" },
      field(
        token,
        "Token (from @BotFather)",
        "Checked with getMe and stored encrypted. It is never shown again, and this field is emptied when the request is sent: type it again to retry."
      ),
      field(handlers, "Handlers module (optional)"),
      field(captureUrl, "Capture URL (optional)"),
      field(
        allowed,
        "Allowed chat ids (optional)",
        "Separated by commas, spaces or lines; none lets every chat through."
      ),
      field(ops, "Operators’ chat id (optional)"),
      field(
        settings,
        "Settings (optional)",
        "NAME=value per line: OUTBOUND_RATE_PER_BOT, OUTBOUND_RATE_PER_CHAT, OUTBOUND_RATE_PER_GROUP, PAID_BROADCAST_RATE, HANDLER_TIMEOUT."
      ),
      h(
        "p",
        { class: "field check-field" },
        h("label", { for: enabled.id, class: "check" }, enabled, " Enabled: serve it now")
      ),
      field(reason, "Reason (optional, kept in the audit trail)"),
      h("p", { class: "field buttons" }, button),
      status
    );
    function markInvalid(name) {
      for (const el3 of Object.values(fields)) el3.removeAttribute("aria-invalid");
      const el2 = name ? fields[name] : void 0;
      if (!el2) return;
      el2.setAttribute("aria-invalid", "true");
      el2.focus();
    }
    const submit = async (ev) => {
      ev.preventDefault();
      let settingsValue;
      try {
        settingsValue = parseSettings(settings.value);
      } catch (err2) {
        setStatus(status, "error", err2.message);
        markInvalid("settings");
        return;
      }
      const body = {
        token: token.value.trim(),
        handlers: handlers.value.trim() || null,
        capture_url: captureUrl.value.trim() || null,
        allowed_chat_ids: allowed.value.split(/[\s,]+/).filter(Boolean),
        ops_chat_id: ops.value.trim() || null,
        enabled: enabled.checked,
        settings: settingsValue,
        ...reason.value.trim() ? { reason: reason.value.trim() } : {}
      };
      const request = ctx.api.post("v1/bots", body);
      token.value = "";
      body.token = "";
      button.disabled = true;
      setStatus(status, "info", "Checking the token with getMe…");
      try {
        const b = await request;
        markInvalid(void 0);
        setStatus(
          status,
          "ok",
          // version 1 is a new row (a bot removed and added again starts over)
          `${b.version === 1 ? "Added" : "Updated"} bot ${b.id}${b.username ? ` (@${b.username})` : ""}, ${b.enabled ? "enabled" : "disabled"}: `,
          h("a", { href: botHash(b.id) }, "see its page")
        );
        if (!changing) form.reset();
      } catch (err2) {
        const name = err2 instanceof ApiError ? fieldName(err2.body.field) : void 0;
        setStatus(status, "error", `Not registered: ${describeError(err2)}${name ? ` — field ${name}` : ""}`);
        markInvalid(name ?? "token");
      } finally {
        button.disabled = false;
      }
    };
    form.addEventListener("submit", (ev) => void submit(ev));
    const heading = h("h1", { tabindex: -1 }, changing ? `Change bot ${changing}` : "Add a bot");
    const intro = h(
      "p",
      { class: "muted small" },
      changing ? "Saving replaces the whole registration with this form (POST /v1/bots), so it starts from the current one. The token is needed again." : "POST /v1/bots: a new bot is added, the token of a registered bot replaces its registration. Needs TOKEN_ENCRYPTION_KEY on the admin API."
    );
    const el = h(
      "div",
      null,
      h(
        "p",
        { class: "crumbs" },
        h("a", { href: changing ? botHash(changing) : "#/bots" }, changing ? "← Bot" : "← Bots")
      ),
      h("div", { class: "page-head" }, heading, intro),
      form
    );
    let filled = !changing;
    return {
      title: changing ? `Change bot ${changing}` : "Add a bot",
      el,
      // nothing here moves by itself: the registration is read once, so live refresh never overwrites typing
      async refresh() {
        if (filled || !changing) return;
        let b;
        try {
          b = await ctx.api.get(`v1/bots/${changing}`);
        } catch (err2) {
          setStatus(status, "error", `Could not read bot ${changing}: ${describeError(err2)}`);
          return;
        }
        filled = true;
        handlers.value = b.handlers ?? "";
        captureUrl.value = b.capture_url ?? "";
        allowed.value = b.allowed_chat_ids.join(", ");
        ops.value = b.ops_chat_id ?? "";
        settings.value = Object.entries(b.settings).map(([k, v]) => `${k}=${v}`).join("\n");
        enabled.checked = b.enabled;
      }
    };
  }

  // libs/admin/ui/src/views/bots.ts
  var SHOWN_CHATS = 50;
  var dash = () => h("span", { class: "muted" }, "—");
  var orDash = (v, code = false) => v === null ? dash() : code ? h("code", null, v) : v;
  var botName = (b) => b.username ? `@${b.username}` : `bot ${b.id}`;
  var enabledBadge = (b) => stateBadge(b.enabled ? "enabled" : "disabled");
  var time2 = (iso) => h("time", { datetime: iso, title: iso }, fmtTime(iso));
  var allowList = (b) => b.allowed_chat_ids.length === 0 ? "all chats" : `${fmtCount(b.allowed_chat_ids.length)} chats`;
  function settingsList(b) {
    const entries = Object.entries(b.settings);
    if (entries.length === 0) return dash();
    return h(
      "ul",
      { class: "plain settings" },
      entries.map(([k, v]) => h("li", null, h("code", null, `${k}=${v}`)))
    );
  }
  var ACTIONS = {
    disable: {
      label: "Disable",
      text: "Pollers and workers stop serving it within seconds. Its messages, sessions and audit rows stay; Enable brings it back.",
      danger: true,
      applies: (b) => b.enabled
    },
    enable: {
      label: "Enable",
      text: "Pollers and workers serve it again within seconds.",
      danger: false,
      applies: (b) => !b.enabled
    },
    remove: {
      label: "Remove",
      text: "The bot leaves the registry with its encrypted token: adding it back needs the token again. Its messages, sessions and audit rows stay.",
      danger: true,
      applies: () => true
    }
  };
  async function act(ctx, b, action, status) {
    const copy = ACTIONS[action];
    const { confirmed, reason } = await confirmDialog({
      title: `${copy.label} ${botName(b)} (${b.id})?`,
      body: [h("p", null, copy.text)],
      confirmLabel: `${copy.label} bot`,
      reason: true,
      danger: copy.danger
    });
    if (!confirmed) return false;
    const body = reason ? { reason } : {};
    try {
      if (action === "remove") {
        await ctx.api.delete(`v1/bots/${b.id}`, body);
        setStatus(status, "ok", `Remove: done — bot ${b.id} is no longer registered`);
      } else {
        const r = await ctx.api.post(`v1/bots/${b.id}/${action}`, body);
        setStatus(status, "ok", `${copy.label}: done — bot ${r.id} is now ${r.enabled ? "enabled" : "disabled"}`);
      }
    } catch (err2) {
      setStatus(status, "error", `${copy.label} refused: ${describeError(err2)}`);
    }
    return true;
  }
  function actionButtons(b, run) {
    return Object.keys(ACTIONS).filter((a) => ACTIONS[a].applies(b)).map(
      (a) => h(
        "button",
        {
          type: "button",
          class: ACTIONS[a].danger ? "danger" : "primary",
          "data-focus-key": `${a}-${b.id}`,
          "aria-label": `${ACTIONS[a].label} bot ${b.id}…`,
          onclick: () => run(a)
        },
        `${ACTIONS[a].label}…`
      )
    );
  }
  var COLUMNS = [
    "Bot",
    "Username",
    "State",
    "Handlers",
    "Capture URL",
    "Allow-list",
    "Ops chat",
    "Settings",
    "Updated",
    "Actions"
  ];
  function botsView(ctx) {
    const box = h("div", { class: "table-box" });
    const status = statusRegion();
    const el = h(
      "div",
      null,
      h(
        "div",
        { class: "page-head" },
        h("h1", { tabindex: -1 }, "Bots"),
        h("p", { class: "muted small" }, "The registered bots (relay.bots) that fleet processes serve.")
      ),
      h("div", { class: "toolbar" }, h("a", { href: "#/bots/add", class: "button primary" }, "Add a bot…"), status),
      box
    );
    const run = (b, a) => void act(ctx, b, a, status).then((done) => done ? view.refresh() : void 0);
    const view = {
      title: "Bots",
      el,
      async refresh() {
        let items;
        try {
          ({ items } = await ctx.api.get("v1/bots"));
        } catch (err2) {
          replaceKeepingFocus(box, h("p", { role: "alert", class: "error" }, describeError(err2)));
          return;
        }
        const rows = items.map(
          (b) => h(
            "tr",
            { "data-bot": b.id },
            h("td", null, h("a", { href: botHash(b.id), "data-focus-key": `b-${b.id}` }, b.id)),
            h("td", { class: "username" }, b.username === null ? dash() : `@${b.username}`),
            h("td", null, enabledBadge(b)),
            h("td", null, orDash(b.handlers, true)),
            h("td", null, orDash(b.capture_url, true)),
            h("td", null, allowList(b)),
            h("td", null, orDash(b.ops_chat_id)),
            h("td", null, settingsList(b)),
            h("td", null, time2(b.updated_at)),
            h(
              "td",
              { class: "row-actions" },
              actionButtons(b, (a) => run(b, a))
            )
          )
        );
        replaceKeepingFocus(
          box,
          rows.length === 0 ? h("p", { class: "empty" }, "No bot is registered: add one here, or with `tg-relay bots add`.") : h(
            "table",
            { class: "grid" },
            h("caption", { class: "visually-hidden" }, "Registered bots"),
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                COLUMNS.map((t) => h("th", { scope: "col" }, t))
              )
            ),
            h("tbody", null, rows)
          )
        );
      }
    };
    return view;
  }
  function meta(rows) {
    return h(
      "dl",
      { class: "meta" },
      rows.map(([label, v]) => [h("dt", null, label), h("dd", null, v)])
    );
  }
  function chatList(ids) {
    if (ids.length === 0) return "all chats (no allow-list)";
    const more = ids.length - SHOWN_CHATS;
    return [ids.slice(0, SHOWN_CHATS).join(", "), more > 0 ? ` … and ${fmtCount(more)} more` : null];
  }
  function botView(ctx, id) {
    const badge = h("span");
    const actions = h("div", { class: "toolbar", role: "group", "aria-label": "Actions" });
    const status = statusRegion();
    const facts = h("section", { "aria-label": "Registration" });
    const heading = h("h1", { tabindex: -1 }, `Bot ${id}`);
    function render(b) {
      heading.textContent = b.username ? `Bot ${b.id} (@${b.username})` : `Bot ${b.id}`;
      replaceKeepingFocus(badge, enabledBadge(b));
      replaceKeepingFocus(
        actions,
        actionButtons(b, (a) => void act(ctx, b, a, status).then((done) => done ? view.refresh() : void 0)),
        h("a", { href: botChangeHash(b.id), "data-focus-key": "change" }, "Change its registration…")
      );
      replaceKeepingFocus(
        facts,
        meta([
          ["id", b.id],
          ["username", b.username === null ? dash() : `@${b.username}`],
          ["enabled", b.enabled ? "yes: pollers and workers serve it" : "no: nothing serves it"],
          ["handlers", orDash(b.handlers, true)],
          ["capture URL", orDash(b.capture_url, true)],
          ["allowed chats", chatList(b.allowed_chat_ids)],
          ["operators’ chat", orDash(b.ops_chat_id)],
          ["settings", settingsList(b)],
          ["token", `stored encrypted (key ${b.token_key_id}); never shown`],
          ["version", String(b.version)],
          ["created", time2(b.created_at)],
          ["updated", time2(b.updated_at)]
        ])
      );
    }
    const el = h(
      "div",
      { class: "detail" },
      h("p", { class: "crumbs" }, h("a", { href: "#/bots" }, "← Bots")),
      h("div", { class: "page-head" }, heading, badge),
      actions,
      status,
      facts
    );
    const view = {
      title: `Bot ${id}`,
      el,
      async refresh() {
        let b;
        try {
          b = await ctx.api.get(`v1/bots/${id}`);
        } catch (err2) {
          const msg = err2 instanceof ApiError && err2.status === 404 ? `Bot ${id} is not registered.` : describeError(err2);
          replaceKeepingFocus(badge);
          replaceKeepingFocus(actions);
          replaceKeepingFocus(facts, h("p", { role: "alert", class: "error" }, msg));
          return;
        }
        render(b);
      }
    };
    return view;
  }

  // libs/admin/ui/src/views/broadcasts.ts
  var PAGE = 25;
  var SEGMENTS = [
    { key: "delivered", label: "delivered" },
    { key: "failed", label: "failed" },
    { key: "blocked", label: "blocked or deactivated" },
    { key: "cancelled", label: "cancelled" },
    { key: "delivering", label: "being sent" }
  ];
  var finished = (c) => c.delivered + c.failed + c.blocked + c.cancelled;
  function progressText(b) {
    const done = finished(b.counts);
    const pct = b.recipients === 0 ? 100 : Math.floor(done * 100 / b.recipients);
    return `${fmtCount(done)} of ${fmtCount(b.recipients)} done (${pct}%)`;
  }
  function progressBar(b, large = false) {
    const total = Math.max(1, b.recipients);
    const label = progressText(b);
    return h(
      "span",
      { class: `progress${large ? " large" : ""}` },
      h(
        "span",
        {
          class: "bar",
          role: "progressbar",
          "aria-label": `Broadcast #${b.id}`,
          "aria-valuemin": 0,
          "aria-valuemax": b.recipients,
          "aria-valuenow": finished(b.counts),
          "aria-valuetext": label
        },
        SEGMENTS.filter((s) => b.counts[s.key] > 0).map((s) => {
          const seg = h("span", { class: `seg seg-${s.key}`, title: `${fmtCount(b.counts[s.key])} ${s.label}` });
          seg.style.width = `${b.counts[s.key] * 100 / total}%`;
          return seg;
        })
      ),
      h("span", { class: "small" }, label)
    );
  }
  function eta(b) {
    if (b.state === "completed" || b.state === "cancelled") return "—";
    if (b.state === "paused") return "paused";
    if (b.eta_seconds === null) return "not moving yet";
    return fmtAge(b.eta_seconds);
  }
  function audience(b) {
    const a = b.audience;
    if (typeof a.name === "string") return `audience "${a.name}"`;
    if (typeof a.chat_ids === "number") return `a list of ${fmtCount(a.chat_ids)} chats`;
    return text(a);
  }
  var rate = (b) => `${b.rate.toLocaleString("en-US")}/s`;
  var stars = (n) => `${n.toLocaleString("en-US", { maximumFractionDigits: 1 })} Stars`;
  function broadcastsView(ctx, params) {
    const before = params.get("before") ?? void 0;
    const box = h("div", { class: "table-box" });
    const pager = h("nav", { class: "pager", "aria-label": "Pages" });
    const el = h(
      "div",
      null,
      h(
        "div",
        { class: "page-head" },
        h("h1", { tabindex: -1 }, "Broadcasts"),
        h("p", { class: "muted small" }, "One message to many chats (POST /v1/broadcasts), newest first.")
      ),
      box,
      pager
    );
    return {
      title: "Broadcasts",
      el,
      async refresh() {
        let items;
        try {
          ({ items } = await ctx.api.get("v1/broadcasts", { limit: PAGE, before }));
        } catch (err2) {
          replaceKeepingFocus(box, h("p", { role: "alert", class: "error" }, describeError(err2)));
          return;
        }
        const rows = items.map(
          (b) => h(
            "tr",
            { "data-broadcast": b.id },
            h("td", null, h("a", { href: broadcastHash(b.id), "data-focus-key": `b-${b.id}` }, `#${b.id}`)),
            h("td", null, h("time", { datetime: b.created_at, title: b.created_at }, fmtTime(b.created_at))),
            h("td", null, stateBadge(b.state)),
            h("td", null, b.method, h("br"), h("span", { class: "muted small" }, audience(b))),
            h("td", null, progressBar(b)),
            h("td", { class: "num" }, fmtCount(b.counts.failed)),
            h("td", { class: "num" }, fmtCount(b.counts.blocked)),
            h("td", { class: "num" }, rate(b)),
            h("td", null, eta(b))
          )
        );
        replaceKeepingFocus(
          box,
          rows.length === 0 ? h("p", { class: "empty" }, "No broadcast yet: POST /v1/broadcasts starts one (docs/broadcasts.md).") : h(
            "table",
            { class: "grid" },
            h("caption", { class: "visually-hidden" }, "Broadcasts, newest first"),
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                ["Broadcast", "Created", "State", "Message", "Progress", "Failed", "Blocked", "Rate", "ETA"].map(
                  (t) => h("th", { scope: "col" }, t)
                )
              )
            ),
            h("tbody", null, rows)
          )
        );
        const last = items.at(-1);
        replaceKeepingFocus(
          pager,
          before ? h("a", { href: "#/broadcasts", "data-focus-key": "first" }, "« Newest") : null,
          last && items.length === PAGE ? h("a", { href: `#/broadcasts?before=${last.id}`, "data-focus-key": "next" }, "Older »") : null
        );
      }
    };
  }
  var ACTIONS2 = {
    pause: {
      from: ["pending", "running"],
      label: "Pause",
      text: "Messages not yet sent are held; the ones already on their way finish.",
      danger: false,
      done: "held"
    },
    resume: {
      from: ["paused"],
      label: "Resume",
      text: "The held messages are sent again, at the bulk rate, behind interactive traffic.",
      danger: false,
      done: "released"
    },
    cancel: {
      from: ["pending", "running", "paused"],
      label: "Cancel",
      text: "Messages not yet sent fail as cancelled and are never sent. This cannot be undone.",
      danger: true,
      done: "cancelled"
    }
  };
  function figures(rows) {
    return h(
      "dl",
      { class: "meta" },
      rows.map(([label, v, key]) => [h("dt", null, label), h("dd", key ? { "data-count": key } : null, v)])
    );
  }
  function broadcastView(ctx, id) {
    const badge = h("span");
    const bar = h("div", { class: "broadcast-progress" });
    const actions = h("div", { class: "toolbar", role: "group", "aria-label": "Actions" });
    const status = statusRegion();
    const progress = h("section", { "aria-label": "Progress" });
    const plan = h("section", { "aria-label": "Plan" });
    async function act2(action) {
      const copy = ACTIONS2[action];
      const { confirmed } = await confirmDialog({
        title: `${copy.label} broadcast #${id}?`,
        body: [h("p", null, copy.text)],
        // "Cancel" alone would read like the button that closes the dialog
        confirmLabel: `${copy.label} broadcast`,
        danger: copy.danger
      });
      if (!confirmed) return;
      try {
        const r = await ctx.api.post(
          `v1/broadcasts/${id}/${action}`,
          {}
        );
        setStatus(
          status,
          "ok",
          `${copy.label}: done — now ${r.state}, ${fmtCount(r.moved)} messages ${copy.done}, audit #${r.audit_id}`
        );
      } catch (err2) {
        setStatus(status, "error", `${copy.label} refused: ${describeError(err2)}`);
      }
      await view.refresh();
    }
    function render(b) {
      const c = b.counts;
      replaceKeepingFocus(badge, stateBadge(b.state));
      replaceKeepingFocus(bar, progressBar(b, true));
      const buttons = Object.keys(ACTIONS2).filter((a) => ACTIONS2[a].from.includes(b.state)).map(
        (a) => h(
          "button",
          {
            type: "button",
            class: ACTIONS2[a].danger ? "danger" : "primary",
            "data-focus-key": a,
            onclick: () => void act2(a)
          },
          `${ACTIONS2[a].label}…`
        )
      );
      replaceKeepingFocus(
        actions,
        buttons.length ? buttons : h("span", { class: "muted" }, `No action applies to a ${b.state} broadcast.`)
      );
      replaceKeepingFocus(
        progress,
        h("h2", null, "Progress"),
        figures([
          ["delivered", fmtCount(c.delivered), "delivered"],
          ["failed", fmtCount(c.failed), "failed"],
          ["blocked or deactivated (403, recorded in relay.chat_status)", fmtCount(c.blocked), "blocked"],
          ["cancelled", fmtCount(c.cancelled), "cancelled"],
          ["being sent", fmtCount(c.delivering), "delivering"],
          ["waiting", fmtCount(c.pending), "pending"],
          ["held (paused)", fmtCount(c.paused), "paused"],
          ["skipped (known blocked, not sent)", fmtCount(c.skipped), "skipped"],
          ["rate, last minute", rate(b)],
          ["time left", eta(b)]
        ])
      );
      const p = b.plan;
      replaceKeepingFocus(
        plan,
        h("h2", null, "Message and plan"),
        figures([
          ["method", b.method],
          ["audience", audience(b)],
          ["key", b.key ?? h("span", { class: "muted" }, "—")],
          ["bot", b.bot_id],
          ["created", h("time", { datetime: b.created_at, title: b.created_at }, fmtTime(b.created_at))],
          ["messages planned", fmtCount(p.messages)],
          ["planned rate", `${p.rate_per_second.toLocaleString("en-US")}/s${p.paid ? " (paid broadcast)" : ""}`],
          ["planned duration", fmtAge(p.estimated_seconds)],
          ["paid messages (above 30/s)", fmtCount(p.paid_messages)],
          ["cost", stars(p.cost_stars), "cost"]
        ])
      );
    }
    const heading = h("h1", { tabindex: -1 }, `Broadcast #${id}`);
    const el = h(
      "div",
      { class: "detail" },
      h("p", { class: "crumbs" }, h("a", { href: "#/broadcasts" }, "← Broadcasts")),
      h("div", { class: "page-head" }, heading, badge),
      bar,
      actions,
      status,
      h("div", { class: "detail-grid" }, progress, plan)
    );
    const view = {
      title: `Broadcast #${id}`,
      el,
      async refresh() {
        let b;
        try {
          b = await ctx.api.get(`v1/broadcasts/${id}`);
        } catch (err2) {
          const msg = err2 instanceof ApiError && err2.status === 404 ? `Broadcast #${id} does not exist.` : describeError(err2);
          replaceKeepingFocus(progress, h("p", { role: "alert", class: "error" }, msg));
          return;
        }
        render(b);
      }
    };
    return view;
  }

  // libs/admin/ui/src/views/detail.ts
  var HIDDEN = {
    captures: [{ key: "payload", label: "payload (message text and sender)", render: pretty }],
    outbound: [
      { key: "text", label: "message text", render: (v) => String(v) },
      { key: "reply_markup", label: "reply markup", render: pretty },
      // methods other than sendMessage: caption, media, the edited text… (files by URL, file_id or attach://part)
      { key: "params", label: "parameters", render: pretty }
    ],
    inbox: [{ key: "payload", label: "raw update", render: pretty }],
    quarantine: [{ key: "raw_base64", label: "raw bytes", render: (v) => decodeBase64(String(v)) }]
  };
  function decodeBase64(b64) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  }
  var FIELD_ORDER = [
    "capture_key",
    "msg_id",
    "method",
    "update_id",
    "update_type",
    "bot_id",
    "chat_id",
    "target_chat_id",
    "message_id",
    "from_id",
    "kind",
    "delivery",
    "authorized",
    "state",
    "attempts",
    "max_attempts",
    "last_status",
    "last_error",
    "failed_reason",
    "error",
    "json_path",
    "next_attempt_at",
    "worker_id",
    "started_at",
    "created_at",
    "received_at",
    "message_date",
    "updated_at",
    "delivered_at",
    "handled_at",
    "resolved_at",
    "telegram_message_id",
    "telegram_message_ids",
    "message_count",
    "uploads",
    "source_update_id",
    "trace_id"
  ];
  var rank = (k) => {
    const i = FIELD_ORDER.indexOf(k);
    return i < 0 ? FIELD_ORDER.length : i;
  };
  var ADMIN_ACTIONS = {
    retry: "retry",
    retry_bulk: "bulk retry",
    retry_bulk_dry_run: "bulk retry, dry run (counted only)",
    cancel: "cancel",
    recover_stale: "recover stale",
    release: "release",
    discard: "discard",
    enqueue: "enqueued"
  };
  var isTimeKey = (k) => k.endsWith("_at") || k === "message_date";
  function value(k, v) {
    if (v === null || v === void 0 || v === "") return h("span", { class: "muted" }, "—");
    if (k === "state") return stateBadge(text(v));
    if (isTimeKey(k)) return h("time", { datetime: text(v), title: text(v) }, fmtTime(text(v)));
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (typeof v === "object") return h("code", null, JSON.stringify(v));
    if (/error|reason/.test(k)) return h("span", { class: "error-text" }, text(v));
    return text(v);
  }
  function traceLink(traceId, url) {
    if (typeof traceId !== "string" || traceId === "") return h("span", { class: "muted" }, "— (not traced)");
    if (typeof url !== "string" || !/^https?:\/\//i.test(url)) return h("code", null, traceId);
    return h(
      "a",
      { href: url, target: "_blank", rel: "noopener noreferrer", title: "open the trace" },
      h("code", null, traceId)
    );
  }
  function timeline(history) {
    if (history.length === 0) return h("p", { class: "empty" }, "No attempt yet.");
    const rows = history.map((a) => {
      const admin = a.outcome.startsWith("admin.");
      const outcome = admin ? ADMIN_ACTIONS[a.outcome.slice("admin.".length)] ?? a.outcome.slice("admin.".length).replace(/_/g, " ") : a.outcome;
      const details = a.details && typeof a.details === "object" ? a.details : null;
      const note = admin ? [
        details?.reason ? `reason: ${text(details.reason)}` : null,
        details?.result === "refused" ? "refused" : null,
        details?.dry_run === true ? `matched ${text(details.matched ?? "?")}` : details?.count !== void 0 && details?.ids ? `bulk (${text(details.count)})` : null
      ].filter(Boolean).join(" · ") : null;
      return h(
        "tr",
        { class: admin ? `admin-row${a.outcome.endsWith("_dry_run") ? " dry-run" : ""}` : "", "data-outcome": a.outcome },
        h("td", null, h("time", { datetime: a.started_at, title: a.started_at }, fmtTime(a.started_at))),
        h("td", { class: "num" }, admin ? "—" : a.attempt ?? "—"),
        h(
          "td",
          null,
          admin ? h("span", { class: "badge admin" }, `admin: ${outcome}`) : h("span", { class: `badge outcome-${outcome}` }, outcome)
        ),
        h("td", { class: "num" }, a.http_status ?? "—"),
        h(
          "td",
          null,
          a.error_code ? h("code", null, a.error_code) : null,
          a.error_code && a.error ? " " : null,
          a.error ? h("span", { class: "error-text" }, a.error) : null,
          note ? h("span", { class: "muted" }, note) : null,
          !a.error && !a.error_code && !note ? "—" : null
        ),
        h("td", null, a.worker_id ? h("code", null, a.worker_id) : "—"),
        h("td", { class: "num" }, fmtMs(a.duration_ms)),
        h("td", null, a.actor ?? "—")
      );
    });
    return h(
      "table",
      { class: "grid timeline" },
      h("caption", null, `Attempt history (${history.length}), oldest first — deliveries and admin actions`),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          ["Started", "Attempt", "Outcome", "HTTP", "Error", "Worker", "Duration", "By"].map(
            (t) => h("th", { scope: "col" }, t)
          )
        )
      ),
      h("tbody", null, rows)
    );
  }
  function detailView(ctx, kind, id) {
    const spec = KIND_VIEWS[kind];
    const revealed = /* @__PURE__ */ new Set();
    const heading = h("h1", { tabindex: -1 }, `${spec.noun[0].toUpperCase()}${spec.noun.slice(1)} #${id}`);
    const badge = h("span");
    const status = statusRegion();
    const actions = h("div", { class: "toolbar", role: "group", "aria-label": "Actions" });
    const meta2 = h("div");
    const secrets = h("div");
    const history = h("section", { "aria-label": "Attempt history" });
    let current = null;
    async function act2(action) {
      const what = `${spec.noun} #${id}`;
      const copy = {
        retry: {
          title: `Retry ${what} now?`,
          text: "It returns to pending with a renewed attempt budget and is delivered again.",
          label: "Retry now",
          danger: false
        },
        cancel: {
          title: `Cancel ${what}?`,
          text: "It becomes failed with reason “cancelled” and will not be delivered (it can be retried later).",
          label: "Cancel it",
          danger: true
        },
        release: {
          title: `Release ${what}?`,
          text: "It is decoded again and stored through the normal ingress path (inbox, capture, jobs).",
          label: "Release",
          danger: false
        },
        discard: {
          title: `Discard ${what}?`,
          text: "It is marked discarded; its bytes are kept.",
          label: "Discard",
          danger: true
        }
      }[action];
      const { confirmed, reason } = await confirmDialog({
        title: copy.title,
        body: [h("p", null, copy.text)],
        confirmLabel: copy.label,
        reason: true,
        danger: copy.danger
      });
      if (!confirmed) return;
      try {
        const r = await ctx.api.post(`v1/${kind}/${id}/${action}`, reason ? { reason } : {});
        setStatus(
          status,
          "ok",
          `${copy.label}: done — now ${r.state}${r.outcome ? ` (${text(r.outcome)})` : ""}, audit #${r.audit_id}`
        );
      } catch (err2) {
        setStatus(status, "error", `${copy.label} refused: ${describeError(err2)}`);
      }
      await view.refresh();
    }
    function renderActions(row) {
      const state = row.state;
      const buttons = [];
      if (spec.retry && state === "failed")
        buttons.push(
          h(
            "button",
            { type: "button", class: "primary", "data-focus-key": "retry", onclick: () => void act2("retry") },
            "Retry now…"
          )
        );
      if (spec.cancel && state === "pending")
        buttons.push(
          h(
            "button",
            { type: "button", class: "danger", "data-focus-key": "cancel", onclick: () => void act2("cancel") },
            "Cancel…"
          )
        );
      if (kind === "quarantine" && state === "quarantined") {
        buttons.push(
          h(
            "button",
            { type: "button", class: "primary", "data-focus-key": "release", onclick: () => void act2("release") },
            "Release…"
          )
        );
        buttons.push(
          h(
            "button",
            { type: "button", class: "danger", "data-focus-key": "discard", onclick: () => void act2("discard") },
            "Discard…"
          )
        );
      }
      replaceKeepingFocus(
        actions,
        buttons.length ? buttons : h("span", { class: "muted" }, `No action applies to a ${state} ${spec.noun}.`)
      );
    }
    function contentNote(r) {
      if (kind !== "outbound" || r.text !== null || typeof r.method !== "string") return null;
      const p = r.params && typeof r.params === "object" ? r.params : {};
      const has = ["caption", "text", "media"].filter((k) => p[k] !== void 0 && p[k] !== null);
      return h(
        "p",
        { class: "muted small", "data-content-note": "" },
        `No message text: a ${r.method} carries ${has.length ? has.join(", ") : "its content"} in its parameters.`
      );
    }
    function renderSecrets(row) {
      const r = row;
      replaceKeepingFocus(
        secrets,
        contentNote(r),
        HIDDEN[kind].filter((f) => r[f.key] !== void 0 && r[f.key] !== null).map((f) => {
          const shown = revealed.has(f.key);
          const boxId = `secret-${f.key}`;
          const button = h(
            "button",
            {
              type: "button",
              "aria-expanded": shown ? "true" : "false",
              "aria-controls": boxId,
              "data-focus-key": `reveal-${f.key}`,
              onclick: () => {
                if (revealed.has(f.key)) revealed.delete(f.key);
                else revealed.add(f.key);
                renderSecrets(row);
              }
            },
            shown ? `Hide ${f.label}` : `Reveal ${f.label}`
          );
          return h(
            "div",
            { class: "secret" },
            button,
            h("pre", { id: boxId, hidden: !shown, class: "payload" }, shown ? f.render(r[f.key]) : "")
          );
        })
      );
    }
    const el = h(
      "div",
      { class: "detail" },
      h("p", { class: "crumbs" }, h("a", { href: listHash(kind) }, `← ${spec.title}`)),
      h("div", { class: "page-head" }, heading, badge),
      actions,
      status,
      h(
        "div",
        { class: "detail-grid" },
        h("section", { "aria-label": "Metadata" }, meta2),
        h(
          "section",
          { "aria-label": "Content" },
          h("h2", null, "Content"),
          h("p", { class: "muted small" }, "Hidden by default: it holds what users wrote."),
          secrets
        )
      ),
      history
    );
    const view = {
      title: `${spec.title} #${id}`,
      el,
      async refresh() {
        try {
          current = await ctx.api.get(`v1/${kind}/${id}`);
        } catch (err2) {
          if (err2 instanceof ApiError && err2.status === 404)
            replaceKeepingFocus(meta2, h("p", { role: "alert", class: "error" }, `${spec.noun} #${id} does not exist.`));
          else replaceKeepingFocus(meta2, h("p", { role: "alert", class: "error" }, describeError(err2)));
          return;
        }
        const row = current;
        replaceKeepingFocus(badge, stateBadge(String(row.state)));
        renderActions(current);
        const hidden = /* @__PURE__ */ new Set([...HIDDEN[kind].map((f) => f.key), "history", "id", "trace_url"]);
        replaceKeepingFocus(
          meta2,
          h(
            "dl",
            { class: "meta" },
            Object.entries(row).filter(([k]) => !hidden.has(k)).sort(([a], [b]) => rank(a) - rank(b)).map(([k, v]) => [
              h("dt", null, k),
              h("dd", { "data-field": k }, k === "trace_id" ? traceLink(v, row.trace_url) : value(k, v))
            ])
          )
        );
        renderSecrets(current);
        replaceKeepingFocus(history, h("h2", null, "Attempts"), timeline(current.history));
      }
    };
    return view;
  }

  // libs/telegram/methods.ts
  var CLASSES = {
    // sends, copies, forwards
    sendMessage: "message",
    forwardMessage: "message",
    forwardMessages: "message",
    copyMessage: "message",
    copyMessages: "message",
    sendPhoto: "message",
    sendAudio: "message",
    sendDocument: "message",
    sendVideo: "message",
    sendAnimation: "message",
    sendVoice: "message",
    sendVideoNote: "message",
    sendMediaGroup: "message",
    sendLocation: "message",
    sendVenue: "message",
    sendContact: "message",
    sendPoll: "message",
    sendDice: "message",
    sendSticker: "message",
    sendInvoice: "message",
    sendGame: "message",
    // edits
    editMessageText: "message",
    editMessageCaption: "message",
    editMessageMedia: "message",
    editMessageReplyMarkup: "message",
    editMessageLiveLocation: "message",
    stopMessageLiveLocation: "message",
    stopPoll: "message",
    setGameScore: "message",
    // deletes, pins, reactions
    deleteMessage: "message",
    deleteMessages: "message",
    pinChatMessage: "message",
    unpinChatMessage: "message",
    unpinAllChatMessages: "message",
    unpinAllForumTopicMessages: "message",
    unpinAllGeneralForumTopicMessages: "message",
    setMessageReaction: "message",
    // answers to queries
    answerCallbackQuery: "answer",
    answerInlineQuery: "answer",
    answerPreCheckoutQuery: "answer",
    answerShippingQuery: "answer",
    answerWebAppQuery: "answer",
    // everything else is direct: updates and webhook, the bot itself, reads, chat actions,
    // membership and chat administration, forum topics, commands and profile, stickers, payments' links
    getUpdates: "direct",
    setWebhook: "direct",
    deleteWebhook: "direct",
    getWebhookInfo: "direct",
    getMe: "direct",
    logOut: "direct",
    close: "direct",
    sendChatAction: "direct",
    getUserProfilePhotos: "direct",
    getFile: "direct",
    banChatMember: "direct",
    unbanChatMember: "direct",
    restrictChatMember: "direct",
    promoteChatMember: "direct",
    setChatAdministratorCustomTitle: "direct",
    banChatSenderChat: "direct",
    unbanChatSenderChat: "direct",
    setChatPermissions: "direct",
    exportChatInviteLink: "direct",
    createChatInviteLink: "direct",
    editChatInviteLink: "direct",
    revokeChatInviteLink: "direct",
    approveChatJoinRequest: "direct",
    declineChatJoinRequest: "direct",
    setChatPhoto: "direct",
    deleteChatPhoto: "direct",
    setChatTitle: "direct",
    setChatDescription: "direct",
    leaveChat: "direct",
    getChat: "direct",
    getChatAdministrators: "direct",
    getChatMemberCount: "direct",
    getChatMembersCount: "direct",
    kickChatMember: "direct",
    getChatMember: "direct",
    setChatStickerSet: "direct",
    deleteChatStickerSet: "direct",
    getForumTopicIconStickers: "direct",
    createForumTopic: "direct",
    editForumTopic: "direct",
    closeForumTopic: "direct",
    reopenForumTopic: "direct",
    deleteForumTopic: "direct",
    editGeneralForumTopic: "direct",
    closeGeneralForumTopic: "direct",
    reopenGeneralForumTopic: "direct",
    hideGeneralForumTopic: "direct",
    unhideGeneralForumTopic: "direct",
    setMyName: "direct",
    getMyName: "direct",
    getUserChatBoosts: "direct",
    setMyCommands: "direct",
    deleteMyCommands: "direct",
    getMyCommands: "direct",
    setMyDescription: "direct",
    getMyDescription: "direct",
    setMyShortDescription: "direct",
    getMyShortDescription: "direct",
    setChatMenuButton: "direct",
    getChatMenuButton: "direct",
    setMyDefaultAdministratorRights: "direct",
    getMyDefaultAdministratorRights: "direct",
    getStickerSet: "direct",
    getCustomEmojiStickers: "direct",
    uploadStickerFile: "direct",
    createNewStickerSet: "direct",
    addStickerToSet: "direct",
    setStickerPositionInSet: "direct",
    deleteStickerFromSet: "direct",
    setStickerEmojiList: "direct",
    setStickerKeywords: "direct",
    setStickerMaskPosition: "direct",
    setStickerSetTitle: "direct",
    deleteStickerSet: "direct",
    setStickerSetThumbnail: "direct",
    setCustomEmojiStickerSetThumbnail: "direct",
    createInvoiceLink: "direct",
    setPassportDataErrors: "direct",
    getGameHighScores: "direct"
  };
  function methodClass(method) {
    return Object.hasOwn(CLASSES, method) ? CLASSES[method] : "direct";
  }
  function isRelayed(method) {
    return methodClass(method) !== "direct";
  }
  var RELAYED_METHODS = Object.keys(CLASSES).filter(isRelayed);

  // libs/admin/ui/src/views/list.ts
  var FILTER_KEYS = ["state", "chat", "method", "since", "until", "error", "limit"];
  var PAGE_SIZES = ["25", "50", "100", "200"];
  function filterOf(params) {
    const out = {};
    for (const k of [...FILTER_KEYS, "cursor"]) {
      const v = params.get(k);
      if (v) out[k] = v;
    }
    return out;
  }
  function describeFilter(f) {
    const parts = [
      f.chat && `chat ${f.chat}`,
      f.method && `method ${f.method}`,
      f.since && `since ${new Date(f.since).toLocaleString()}`,
      f.until && `until ${new Date(f.until).toLocaleString()}`,
      f.error && `error contains “${f.error}”`
    ].filter(Boolean);
    return parts.length ? parts.join(", ") : "no other filter";
  }
  function listView(ctx, kind, params) {
    const spec = KIND_VIEWS[kind];
    const filter = filterOf(params);
    const id = (s) => `f-${kind}-${s}`;
    const state = h(
      "select",
      { id: id("state"), name: "state" },
      h("option", { value: "" }, "any"),
      spec.states.map((s) => h("option", { value: s, selected: filter.state === s }, s))
    );
    const chat = spec.chat ? h("input", {
      id: id("chat"),
      name: "chat",
      type: "text",
      inputmode: "numeric",
      size: 14,
      value: filter.chat ?? "",
      pattern: "^(-?[0-9]{1,20}|@[A-Za-z0-9_]{4,64})$",
      autocomplete: "off"
    }) : null;
    const method = kind === "outbound" ? h(
      "select",
      { id: id("method"), name: "method" },
      h("option", { value: "" }, "any"),
      RELAYED_METHODS.map((m) => h("option", { value: m, selected: filter.method === m }, m))
    ) : null;
    const since = h("input", {
      id: id("since"),
      name: "since",
      type: "datetime-local",
      value: isoToLocalInput(filter.since ?? null)
    });
    const until = h("input", {
      id: id("until"),
      name: "until",
      type: "datetime-local",
      value: isoToLocalInput(filter.until ?? null)
    });
    const error = h("input", {
      id: id("error"),
      name: "error",
      type: "search",
      size: 18,
      maxlength: 200,
      value: filter.error ?? "",
      autocomplete: "off"
    });
    const limit = h(
      "select",
      { id: id("limit"), name: "limit" },
      PAGE_SIZES.map((n) => h("option", { value: n, selected: (filter.limit ?? "50") === n }, n))
    );
    const field = (label, input) => h("p", { class: "field" }, h("label", { for: input.id }, label), input);
    const form = h(
      "form",
      { class: "filters", role: "search", "aria-label": `Filter ${spec.title.toLowerCase()}` },
      field("State", state),
      chat ? field("Chat", chat) : null,
      method ? field("Method", method) : null,
      field(`${spec.timeLabel} from`, since),
      field(`${spec.timeLabel} before`, until),
      field("Error contains", error),
      field("Per page", limit),
      h(
        "p",
        { class: "field buttons" },
        h("button", { type: "submit", class: "primary" }, "Apply"),
        h("button", { type: "button", onclick: () => ctx.navigate(listHash(kind)) }, "Clear")
      )
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      ctx.navigate(
        listHash(kind, {
          state: state.value || void 0,
          chat: chat?.value.trim() || void 0,
          method: method?.value || void 0,
          since: localInputToIso(since.value),
          until: localInputToIso(until.value),
          error: error.value.trim() || void 0,
          limit: limit.value === "50" ? void 0 : limit.value
        })
      );
    });
    const status = statusRegion();
    const summary = h("p", { class: "muted small", "aria-live": "off" });
    const tableBox = h("div", { class: "table-box" });
    const pager = h("nav", { class: "pager", "aria-label": "Pages" });
    const bulkButton = spec.retry ? h(
      "button",
      { type: "button", onclick: () => void bulkRetry() },
      filter.state && filter.state !== "failed" ? "Retry failed matching the other filters…" : "Retry all failed matching this filter…"
    ) : null;
    async function bulkRetry() {
      const { state: _s, limit: _l, cursor: _c, ...rest } = filter;
      let dry;
      try {
        dry = await ctx.api.post(`v1/${kind}/retry`, { ...rest, dry_run: true });
      } catch (err2) {
        setStatus(status, "error", `Could not count what would be retried: ${describeError(err2)}`);
        return;
      }
      if (dry.matched === 0) {
        await confirmDialog({
          title: "Nothing to retry",
          body: [h("p", null, `No failed ${spec.noun}s match (${describeFilter(rest)}).`)],
          confirmLabel: "OK",
          inform: true
        });
        return;
      }
      const { confirmed, reason } = await confirmDialog({
        title: `Retry ${dry.matched} failed ${spec.noun}${dry.matched === 1 ? "" : "s"}?`,
        body: [
          h(
            "p",
            { "data-dry-run-count": dry.matched },
            `Dry run: ${dry.matched} failed ${spec.noun}${dry.matched === 1 ? "" : "s"} match (${describeFilter(rest)}).`
          ),
          dry.more ? h(
            "p",
            { class: "warn" },
            `More match than one call retries: only these ${dry.matched} now; run it again for the rest.`
          ) : null,
          h("p", null, "They return to pending with a renewed attempt budget and are delivered again.")
        ],
        confirmLabel: `Retry ${dry.matched}`,
        reason: true
      });
      if (!confirmed) {
        setStatus(status, "info", "Bulk retry cancelled: nothing changed.");
        return;
      }
      try {
        const r = await ctx.api.post(`v1/${kind}/retry`, {
          ...rest,
          limit: dry.matched,
          ...reason ? { reason } : {}
        });
        setStatus(
          status,
          "ok",
          `Retried ${r.retried} ${spec.noun}${r.retried === 1 ? "" : "s"}${r.more ? " (more remain)" : ""} — audit #${r.audit_id}`
        );
        await view.refresh();
      } catch (err2) {
        setStatus(status, "error", `Bulk retry failed: ${describeError(err2)}`);
      }
    }
    const openRow = (rowId) => ctx.navigate(detailHash(kind, rowId));
    const el = h(
      "div",
      { class: "list" },
      h("div", { class: "page-head" }, h("h1", { tabindex: -1 }, spec.title), summary),
      form,
      h("div", { class: "toolbar" }, bulkButton, status),
      tableBox,
      pager
    );
    const view = {
      title: spec.title,
      el,
      async refresh() {
        let page;
        try {
          page = await ctx.api.get(`v1/${kind}`, filter);
        } catch (err2) {
          replaceKeepingFocus(tableBox, h("p", { role: "alert", class: "error" }, describeError(err2)));
          return;
        }
        summary.textContent = `${page.items.length} shown${page.next_cursor ? ", more on the next page" : ""}${filter.cursor ? " (not the first page)" : ""}, newest first`;
        const rows = page.items.map((row) => {
          const rid = row.id;
          const tr = h(
            "tr",
            { "data-id": rid, class: "clickable" },
            h(
              "td",
              { class: "num" },
              h(
                "a",
                { href: detailHash(kind, rid), "data-focus-key": `row-${rid}`, "aria-label": `Open ${spec.noun} ${rid}` },
                `#${rid}`
              )
            ),
            spec.columns.map((c) => h("td", { class: c.num ? "num" : "" }, c.cell(row)))
          );
          tr.addEventListener("click", (ev) => {
            if (ev.target.closest("a, button")) return;
            if (window.getSelection()?.toString()) return;
            openRow(rid);
          });
          return tr;
        });
        replaceKeepingFocus(
          tableBox,
          page.items.length === 0 ? h("p", { class: "empty" }, `No ${spec.noun}s match.`) : h(
            "table",
            { class: "grid", "aria-describedby": summary.id || void 0 },
            h("caption", { class: "visually-hidden" }, `${spec.title}, newest first`),
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                h("th", { scope: "col" }, "Id"),
                spec.columns.map((c) => h("th", { scope: "col", class: c.num ? "num" : "" }, c.label))
              )
            ),
            h("tbody", null, rows)
          )
        );
        const here = new URLSearchParams(filter);
        here.delete("cursor");
        const next = new URLSearchParams(here);
        if (page.next_cursor) next.set("cursor", page.next_cursor);
        replaceKeepingFocus(
          pager,
          filter.cursor ? h("a", { href: listHash(kind, here), "data-focus-key": "first" }, "« First page") : null,
          page.next_cursor ? h("a", { href: listHash(kind, next), "data-focus-key": "next" }, "Next page »") : null
        );
      }
    };
    return view;
  }

  // libs/admin/ui/src/views/login.ts
  function loginView(opts) {
    const input = h("input", {
      id: "token",
      name: "token",
      type: "password",
      required: true,
      autocomplete: "off",
      spellcheck: "false",
      size: 40
    });
    const error = h("p", { id: "login-error", role: "alert", class: "error" }, opts.message ?? "");
    if (opts.message) input.setAttribute("aria-describedby", error.id);
    const button = h("button", { type: "submit", class: "primary" }, "Sign in");
    const form = h(
      "form",
      { class: "login", "aria-labelledby": "login-title" },
      h("h1", { id: "login-title" }, "tg-relay operator dashboard"),
      h("p", { class: "field" }, h("label", { for: input.id }, "Admin token"), input),
      h(
        "p",
        { class: "muted small" },
        "ADMIN_TOKEN, or one of ADMIN_TOKENS. It is kept in this tab only (session storage) and sent as a bearer token to the admin API."
      ),
      button,
      error
    );
    const submit = async (ev) => {
      ev.preventDefault();
      button.disabled = true;
      error.textContent = "";
      const problem = await opts.onSubmit(input.value.trim());
      button.disabled = false;
      if (problem) {
        error.textContent = problem;
        input.setAttribute("aria-describedby", error.id);
        input.select();
        input.focus();
      }
    };
    form.addEventListener("submit", (ev) => void submit(ev));
    queueMicrotask(() => input.focus());
    return form;
  }

  // libs/admin/ui/src/charts.ts
  var W = 240;
  var H = 48;
  function barChart(s) {
    const values = s.points.map((p) => p.value ?? 0);
    const max = Math.max(s.max ?? 0, ...values, 1);
    const n = s.points.length;
    const slot = W / Math.max(n, 1);
    const known = s.points.filter((p) => p.value !== null);
    const latest = known.length ? known[known.length - 1].value : null;
    const peak = known.length ? Math.max(...known.map((p) => p.value)) : null;
    const summary = known.length === 0 ? `${s.label}: no attempts in the last ${n} minutes` : `${s.label}, last ${n} minutes: ${s.headline ? `${s.headline}, ` : ""}latest ${s.format(latest)}, peak ${s.format(peak)}`;
    const bars = s.points.map((p, i) => {
      const v = p.value ?? 0;
      const bh = p.value === null ? 0 : Math.max(v > 0 ? 2 : 1, Math.round(v / max * (H - 2)));
      return svg(
        "rect",
        {
          x: (i * slot + 1).toFixed(1),
          y: H - bh,
          width: Math.max(1, slot - 2).toFixed(1),
          height: bh,
          class: p.value === null ? "bar empty" : "bar"
        },
        svg("title", null, `${fmtTime(p.at)}: ${p.value === null ? "no attempts" : s.format(v)}`)
      );
    });
    return h(
      "figure",
      { class: `chart ${s.tone ?? "ok"}` },
      h("figcaption", null, s.label, " ", h("strong", null, s.headline ?? (latest === null ? "—" : s.format(latest)))),
      svg("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img", "aria-label": summary }, bars)
    );
  }

  // libs/admin/ui/src/views/overview.ts
  function workCard(stats, series, card) {
    const ks = stats.kinds[card.kind];
    const spec = KIND_VIEWS[card.kind];
    const headingId = `card-${card.kind}`;
    const rows = spec.states.map((state) => {
      const c = ks?.states[state] ?? { count: 0, approximate: false };
      return h(
        "tr",
        null,
        h("th", { scope: "row" }, stateBadge(state)),
        h(
          "td",
          { class: "num", "data-kind": card.kind, "data-state": state, "data-count": c.count },
          h(
            "a",
            {
              href: listHash(card.kind, { state }),
              "data-focus-key": `count-${card.kind}-${state}`,
              "aria-label": `${fmtCount(c.count, c.approximate)} ${state} — list them`
            },
            fmtCount(c.count, c.approximate)
          )
        )
      );
    });
    const buckets = series?.kinds[card.kind] ?? [];
    const total = buckets.reduce(
      (a, b) => ({ attempts: a.attempts + b.attempts, delivered: a.delivered + b.delivered }),
      { attempts: 0, delivered: 0 }
    );
    const charts = buckets.length ? [
      barChart({
        label: card.kind === "inbox" ? "Handled / min" : "Delivered / min",
        headline: `${total.delivered} in ${buckets.length} min`,
        points: buckets.map((b) => ({ at: b.at, value: b.delivered })),
        format: (v) => String(v)
      }),
      barChart({
        label: "Failure rate",
        headline: total.attempts ? `${Math.round((total.attempts - total.delivered) / total.attempts * 100)}%` : "—",
        tone: "bad",
        max: 100,
        points: buckets.map((b) => ({
          at: b.at,
          value: b.attempts ? Math.round((b.attempts - b.delivered) / b.attempts * 100) : null
        })),
        format: (v) => `${v}%`
      })
    ] : [h("p", { class: "muted" }, "No time series (GET /v1/stats/timeseries did not answer).")];
    return h(
      "section",
      { class: "card", "aria-labelledby": headingId },
      h(
        "h2",
        { id: headingId },
        h("a", { href: listHash(card.kind), "data-focus-key": `title-${card.kind}` }, card.title)
      ),
      h("p", { class: "muted" }, card.what),
      h(
        "table",
        { class: "counts" },
        h("caption", { class: "visually-hidden" }, `${card.title}: items per state`),
        h("tbody", null, rows)
      ),
      h(
        "dl",
        { class: "facts" },
        h("dt", null, "Oldest pending"),
        h(
          "dd",
          { "data-oldest": card.kind },
          ks?.oldest_pending_age_seconds === null || !ks ? "none" : fmtAge(ks.oldest_pending_age_seconds)
        ),
        h("dt", null, "Last minute"),
        h(
          "dd",
          null,
          ks ? `${ks.delivered_last_minute} ${card.kind === "inbox" ? "handled" : "delivered"}, ${ks.failed_last_minute} failed, ${ks.attempts_last_minute} attempts` : "—"
        )
      ),
      h("div", { class: "charts", role: "group", "aria-label": "Last 15 minutes" }, charts)
    );
  }
  function botRow(b) {
    const readiness = b.ready === null ? "unknown" : b.ready ? "ready" : "not ready";
    return h(
      "tr",
      null,
      h("th", { scope: "row" }, h("code", null, b.bot_id)),
      h("td", null, b.lease_owner ?? "—", b.lease_valid ? "" : h("span", { class: "muted" }, " (lease expired)")),
      h("td", { class: "num" }, b.lease_generation),
      h(
        "td",
        null,
        h("span", { class: `badge ${b.ready ? "state-delivered" : b.ready === false ? "state-failed" : ""}` }, readiness),
        b.reasons.length ? h("div", { class: "muted small" }, b.reasons.join("; ")) : null
      ),
      h(
        "td",
        null,
        b.progress_at ? `${fmtAge(b.progress_age_seconds)} ago (gen ${b.progress_generation ?? "—"})` : "never"
      ),
      h("td", { class: "num" }, b.next_offset),
      h("td", { class: "num" }, b.pending_update_count === null ? "—" : b.pending_update_count),
      h("td", null, b.halted_reason ? h("span", { class: "error-text" }, b.halted_reason) : "—")
    );
  }
  function overviewView(ctx) {
    const cards = h("div", { class: "cards" });
    const bots = h("div");
    const quarantine = h("div");
    const recoverStatus = statusRegion();
    const sendStatus = statusRegion();
    const olderThan = h("input", {
      id: "recover-older-than",
      name: "older_than",
      type: "text",
      placeholder: "STALE_AFTER",
      pattern: "^[0-9]+(ms|s|m|h)?$",
      size: 8,
      autocomplete: "off"
    });
    const recoverForm = h(
      "form",
      { class: "inline-form", "aria-labelledby": "recover-title" },
      h("h3", { id: "recover-title" }, "Recover stale deliveries"),
      h("p", { class: "muted small" }, "Return work whose worker stopped heartbeating to pending now."),
      h("p", { class: "field" }, h("label", { for: olderThan.id }, "No heartbeat for"), olderThan),
      h("button", { type: "submit" }, "Recover stale…"),
      recoverStatus
    );
    const recoverStale = async (ev) => {
      ev.preventDefault();
      const older = olderThan.value.trim();
      const { confirmed, reason } = await confirmDialog({
        title: "Recover stale deliveries?",
        body: [
          h(
            "p",
            null,
            `Work in delivering without a heartbeat for ${older || "STALE_AFTER"} returns to pending and is delivered again.`
          )
        ],
        confirmLabel: "Recover now",
        reason: true
      });
      if (!confirmed) return;
      try {
        const r = await ctx.api.post(
          "v1/recover-stale",
          {
            ...older ? { older_than: older } : {},
            ...reason ? { reason } : {}
          }
        );
        setStatus(
          recoverStatus,
          "ok",
          `Recovered ${r.total} (${Object.entries(r.recovered).map(([k, n]) => `${k} ${n}`).join(", ")}) — audit #${r.audit_id}`
        );
        void view.refresh();
      } catch (err2) {
        setStatus(recoverStatus, "error", `Recover failed: ${describeError(err2)}`);
      }
    };
    recoverForm.addEventListener("submit", (ev) => void recoverStale(ev));
    const chat = h("input", {
      id: "send-chat",
      name: "chat_id",
      type: "text",
      required: true,
      pattern: "^(-?[0-9]{1,20}|@[A-Za-z0-9_]{4,64})$",
      size: 14,
      autocomplete: "off"
    });
    const text2 = h("input", {
      id: "send-text",
      name: "text",
      type: "text",
      required: true,
      maxlength: 4096,
      value: "Test message from the tg-relay dashboard",
      autocomplete: "off"
    });
    const sendForm = h(
      "form",
      { class: "inline-form", "aria-labelledby": "send-title" },
      h("h3", { id: "send-title" }, "Send a test message"),
      h("p", { class: "muted small" }, "Enqueued as an outbound message (POST /v1/messages) with a fresh msg_id."),
      h("p", { class: "field" }, h("label", { for: chat.id }, "Chat id"), chat),
      h("p", { class: "field grow" }, h("label", { for: text2.id }, "Text"), text2),
      h("button", { type: "submit" }, "Send"),
      sendStatus
    );
    const sendMessage = async (ev) => {
      ev.preventDefault();
      const msgId = `dashboard-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
      const chatValue = chat.value.trim();
      try {
        const r = await ctx.api.post("v1/messages", {
          msg_id: msgId,
          chat_id: /^-?[0-9]+$/.test(chatValue) ? Number(chatValue) : chatValue,
          text: text2.value
        });
        setStatus(
          sendStatus,
          "ok",
          "Enqueued ",
          h("a", { href: detailHash("outbound", r.id) }, `outbound #${r.id}`),
          ` (${r.msg_id}), ${r.state} — audit #${r.audit_id}`
        );
      } catch (err2) {
        setStatus(sendStatus, "error", `Not sent: ${describeError(err2)}`);
      }
    };
    sendForm.addEventListener("submit", (ev) => void sendMessage(ev));
    const el = h(
      "div",
      { class: "overview" },
      h("div", { class: "page-head" }, h("h1", { tabindex: -1 }, "Overview")),
      cards,
      h("section", { "aria-labelledby": "bots-title" }, h("h2", { id: "bots-title" }, "Pollers"), bots),
      h(
        "div",
        { class: "two-col" },
        h("section", { "aria-labelledby": "q-title" }, h("h2", { id: "q-title" }, "Quarantine"), quarantine),
        h(
          "section",
          { class: "actions", "aria-labelledby": "actions-title" },
          h("h2", { id: "actions-title" }, "Actions"),
          recoverForm,
          sendForm
        )
      )
    );
    const view = {
      title: "Overview",
      el,
      async refresh() {
        const [stats, series] = await Promise.all([
          ctx.api.get("v1/stats"),
          ctx.api.get("v1/stats/timeseries", { minutes: 15 }).catch(() => null)
        ]);
        replaceKeepingFocus(
          cards,
          WORK_CARDS.map((c) => workCard(stats, series, c))
        );
        replaceKeepingFocus(
          bots,
          stats.bots.length === 0 ? h("p", { class: "muted" }, "No poller has run yet (relay.cursor is empty).") : h(
            "table",
            { class: "grid" },
            h("caption", { class: "visually-hidden" }, "Pollers per bot"),
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                [
                  "Bot",
                  "Lease owner",
                  "Generation",
                  "Readiness",
                  "Last progress",
                  "Next offset",
                  "Lag (Telegram)",
                  "Halted"
                ].map((t) => h("th", { scope: "col" }, t))
              )
            ),
            h("tbody", null, stats.bots.map(botRow))
          )
        );
        replaceKeepingFocus(
          quarantine,
          h(
            "ul",
            { class: "plain" },
            KIND_VIEWS.quarantine.states.map((s) => {
              const c = stats.quarantine.states[s] ?? { count: 0, approximate: false };
              return h(
                "li",
                null,
                stateBadge(s),
                " ",
                h(
                  "a",
                  {
                    href: listHash("quarantine", { state: s }),
                    "data-kind": "quarantine",
                    "data-state": s,
                    "data-count": c.count,
                    "data-focus-key": `q-${s}`
                  },
                  fmtCount(c.count, c.approximate)
                )
              );
            })
          )
        );
      }
    };
    return view;
  }

  // libs/admin/ui/src/views/sandbox.ts
  var sentByTab = [];
  function sandboxView(ctx) {
    const info = ctx.sandbox;
    const chat = h("input", {
      id: "sb-chat",
      name: "chat_id",
      type: "number",
      min: 1,
      value: info.chat_id,
      required: true
    });
    const text2 = h("input", {
      id: "sb-text",
      name: "text",
      type: "text",
      maxlength: 4096,
      autocomplete: "off",
      placeholder: "Write a message as the user…"
    });
    const status = statusRegion();
    const log = h("ol", { class: "chat-log", role: "log", "aria-live": "polite", "aria-label": "Conversation" });
    const form = h(
      "form",
      { class: "chat-form", "aria-label": "Send a message as a user" },
      h("p", { class: "field" }, h("label", { for: chat.id }, "From chat"), chat),
      h("p", { class: "field grow" }, h("label", { for: text2.id }, "Message"), text2),
      h("button", { type: "submit", class: "primary" }, "Send")
    );
    const send = async (ev) => {
      ev.preventDefault();
      const chatId = Number(chat.value);
      if (!text2.value.trim()) {
        setStatus(status, "error", "Write a message first.");
        text2.focus();
        return;
      }
      try {
        const r = await ctx.api.post(
          "v1/sandbox/messages",
          {
            chat_id: chatId,
            text: text2.value
          }
        );
        sentByTab.push({
          update_id: r.update_id,
          chat_id: r.chat_id,
          message_id: r.message_id,
          text: text2.value,
          at: new Date(r.date * 1e3).toISOString()
        });
        text2.value = "";
        setStatus(status, "ok", `Sent as update ${r.update_id}; the poller picks it up on its next getUpdates.`);
        await view.refresh();
      } catch (err2) {
        setStatus(status, "error", `Not sent: ${describeError(err2)}`);
      }
      text2.focus();
    };
    form.addEventListener("submit", (ev) => void send(ev));
    const flow = (m) => h(
      "p",
      { class: "flow small" },
      "inbox ",
      m.inbox ? [h("a", { href: detailHash("inbox", m.inbox.id) }, `#${m.inbox.id}`), " ", stateBadge(m.inbox.state)] : h("span", { class: "muted" }, "not polled yet"),
      " · capture ",
      m.capture ? [h("a", { href: detailHash("captures", m.capture.id) }, `#${m.capture.id}`), " ", stateBadge(m.capture.state)] : h("span", { class: "muted" }, "none (yet)")
    );
    chat.addEventListener("change", () => {
      log.replaceChildren();
      void view.refresh();
    });
    const el = h(
      "div",
      { class: "sandbox" },
      h(
        "div",
        { class: "page-head" },
        h("h1", { tabindex: -1 }, "Sandbox chat"),
        h(
          "p",
          { class: "muted small" },
          `Sandbox mode: messages go to bot ${info.bot_id} through the local Bot API sandbox, not Telegram.`
        )
      ),
      log,
      form,
      status
    );
    const view = {
      title: "Sandbox chat",
      el,
      async refresh() {
        const chatId = Number(chat.value) || info.chat_id;
        const mine = sentByTab.filter((m) => m.chat_id === chatId);
        const [bot] = await Promise.all([
          ctx.api.get("v1/sandbox/messages", { chat_id: chatId }).catch(() => ({ items: [] })),
          ...mine.filter((m) => m.inbox?.state !== "handled" || !m.capture || m.capture.state !== "delivered").map(async (m) => {
            const [inbox, capture] = await Promise.all([
              ctx.api.get("v1/inbox", { update_id: m.update_id, limit: 1 }),
              ctx.api.get("v1/captures", { update_id: m.update_id, limit: 1 })
            ]);
            m.inbox = inbox.items[0];
            m.capture = capture.items[0];
          })
        ]).catch((err2) => {
          setStatus(status, "error", describeError(err2));
          return [{ items: [] }];
        });
        const entries = [
          ...mine.map((m) => ({
            key: `u${m.update_id}`,
            at: m.at,
            make: () => h(
              "li",
              { class: "bubble user", "data-update-id": m.update_id },
              h("p", null, m.text),
              h("p", { class: "meta small" }, `you · ${fmtTime(m.at)}`),
              flow(m)
            ),
            flow: () => flow(m)
          })),
          ...bot.items.map((b) => ({
            key: `b${b.message_id}`,
            at: b.sent_at,
            make: () => h(
              "li",
              { class: "bubble bot" },
              h("p", null, b.text),
              h("p", { class: "meta small" }, `bot · ${fmtTime(b.sent_at)}`)
            ),
            flow: null
          }))
        ].sort((a, b) => a.at.localeCompare(b.at) || a.key.localeCompare(b.key));
        if (entries.length === 0) {
          replaceKeepingFocus(log, h("li", { class: "muted" }, "No message in this chat yet."));
          return;
        }
        log.querySelector("li.muted")?.remove();
        const known = new Map([...log.children].map((li) => [li.dataset.key, li]));
        let previous = null;
        for (const e of entries) {
          let li = known.get(e.key);
          if (li) {
            if (e.flow) li.querySelector(".flow")?.replaceWith(e.flow());
          } else {
            li = e.make();
            li.dataset.key = e.key;
            if (previous) previous.after(li);
            else log.prepend(li);
          }
          previous = li;
        }
      }
    };
    return view;
  }

  // libs/admin/ui/src/shell.ts
  var TOKEN_KEY = "tg-relay-admin-token";
  var LIVE_KEY = "tg-relay-admin-live";
  var REFRESH_MS_DEFAULT = 5e3;
  function refreshMs() {
    const v = Number(new URLSearchParams(location.search).get("refresh"));
    return Number.isFinite(v) && v >= 500 ? v : REFRESH_MS_DEFAULT;
  }
  function startApp(root) {
    let api = null;
    let sandbox = null;
    let view = null;
    let timer;
    let inFlight = false;
    const period = refreshMs();
    const main = h("main", { id: "main", tabindex: -1 });
    const banner = h("p", { role: "status", class: "banner", hidden: true });
    const lastRefresh = h("span", { class: "muted small" });
    const live = h("input", { id: "live", type: "checkbox", checked: sessionStorage.getItem(LIVE_KEY) !== "off" });
    live.addEventListener("change", () => sessionStorage.setItem(LIVE_KEY, live.checked ? "on" : "off"));
    const nav = h("ul", { class: "nav" });
    function signOut(message) {
      sessionStorage.removeItem(TOKEN_KEY);
      api = null;
      view?.dispose?.();
      view = null;
      if (timer) clearInterval(timer);
      timer = void 0;
      root.replaceChildren(
        h(
          "main",
          { id: "main", class: "login-page" },
          loginView({
            message,
            onSubmit: async (token) => {
              if (!token) return "Enter the admin token.";
              try {
                await signIn(token);
                return null;
              } catch (err2) {
                if (err2 instanceof ApiError && err2.status === 401)
                  return "That token was refused by the admin API (401). Check ADMIN_TOKEN.";
                return `Could not reach the admin API: ${describeError(err2)}`;
              }
            }
          })
        )
      );
      document.title = "Sign in · tg-relay";
    }
    async function signIn(token) {
      let refused = false;
      const candidate = createApi(token, () => {
        refused = true;
        if (api) signOut("The admin API refused the token (401): sign in again.");
      });
      await candidate.get("v1/stats");
      if (refused) throw new ApiError(401, "RELAY_ADMIN_UNAUTHORIZED", "refused");
      sessionStorage.setItem(TOKEN_KEY, token);
      api = candidate;
      sandbox = await candidate.get("v1/sandbox").catch(() => null);
      renderShell();
      route();
      timer = setInterval(() => void tick(), period);
    }
    function renderShell() {
      const links = [
        ["#/overview", "Overview"],
        ...LIST_KINDS.map((k) => [`#/${k}`, KIND_VIEWS[k].title]),
        ["#/broadcasts", "Broadcasts"],
        ["#/bots", "Bots"],
        ["#/audit", "Audit"]
      ];
      if (sandbox) links.push(["#/sandbox", "Sandbox chat"]);
      nav.replaceChildren(...links.map(([href, label]) => h("li", null, h("a", { href }, label))));
      root.replaceChildren(
        h(
          "a",
          { class: "skip", href: "#main", onclick: (ev) => (ev.preventDefault(), main.focus()) },
          "Skip to content"
        ),
        h(
          "header",
          { class: "top" },
          h("p", { class: "brand" }, "tg-relay", sandbox ? h("span", { class: "badge sandbox" }, "sandbox mode") : null),
          h("nav", { "aria-label": "Main" }, nav),
          h(
            "div",
            { class: "session" },
            h("label", { for: live.id, class: "check" }, live, ` Live (${period / 1e3} s)`),
            lastRefresh,
            h("button", { type: "button", onclick: () => signOut() }, "Sign out")
          )
        ),
        banner,
        main
      );
    }
    function viewFor(r, ctx) {
      switch (r.name) {
        case "list":
          return listView(ctx, r.kind, r.params);
        case "detail":
          return detailView(ctx, r.kind, r.id);
        case "audit":
          return auditView(ctx, r.params);
        case "broadcasts":
          return broadcastsView(ctx, r.params);
        case "broadcast":
          return broadcastView(ctx, r.id);
        case "bots":
          return botsView(ctx);
        case "bot":
          return botView(ctx, r.id);
        case "bot-add":
          return botAddView(ctx, r.params);
        case "sandbox":
          if (ctx.sandbox) return sandboxView(ctx);
          break;
        default:
          break;
      }
      return overviewView(ctx);
    }
    function route() {
      if (!api) return;
      const hash = location.hash;
      if (hash && !hash.startsWith("#/")) return;
      const r = parseHash(hash);
      view?.dispose?.();
      const ctx = {
        api,
        sandbox,
        navigate: (to) => location.hash === to ? void load() : void (location.hash = to)
      };
      view = viewFor(r, ctx);
      const current = `#/${hash.replace(/^#\//, "").split(/[/?]/)[0] || "overview"}`;
      for (const a of nav.querySelectorAll("a")) {
        if (a.getAttribute("href") === current) a.setAttribute("aria-current", "page");
        else a.removeAttribute("aria-current");
      }
      main.replaceChildren(view.el);
      document.title = `${view.title} · tg-relay`;
      void load().then(() => view?.el.querySelector("h1")?.focus({ preventScroll: true }));
    }
    async function load() {
      const v = view;
      if (!v) return;
      inFlight = true;
      try {
        await v.refresh();
        banner.hidden = true;
        lastRefresh.textContent = `updated ${fmtTime((/* @__PURE__ */ new Date()).toISOString())}`;
      } catch (err2) {
        if (err2 instanceof ApiError && err2.status === 401) return;
        banner.hidden = false;
        banner.textContent = `Refresh failed: ${describeError(err2)}`;
      } finally {
        inFlight = false;
      }
    }
    async function tick() {
      if (!live.checked || inFlight || document.hidden || dialogOpen() || view?.busy?.()) return;
      await load();
    }
    window.addEventListener("hashchange", route);
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) {
      signIn(saved).catch(
        (err2) => signOut(
          err2 instanceof ApiError && err2.status === 401 ? "The saved token was refused (401): sign in again." : `Could not reach the admin API: ${describeError(err2)}`
        )
      );
    } else {
      signOut();
    }
  }

  // libs/admin/ui/src/main.ts
  startApp(document.getElementById("app"));
})();
