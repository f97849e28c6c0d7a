import { Child, h } from './dom';

let open = 0;
/** True while a confirmation is on screen: live refresh waits, so nothing moves under it. */
export const dialogOpen = () => open > 0;

export interface ConfirmOptions {
  title: string;
  body: Child[];
  confirmLabel: string;
  /** Ask for an optional reason (kept in the audit trail). */
  reason?: boolean;
  danger?: boolean;
  /** Only a Close button (nothing to confirm). */
  inform?: boolean;
}

/**
 * A modal confirmation (native `<dialog>`: focus is trapped, Escape cancels, focus returns to the
 * button that opened it).
 */
export function confirmDialog(opts: ConfirmOptions): Promise<{ confirmed: boolean; reason?: string }> {
  const opener = document.activeElement as HTMLElement | null;
  const titleId = `dlg-title-${Date.now()}`;
  const reason = opts.reason
    ? h('input', { id: `${titleId}-reason`, name: 'reason', type: 'text', maxlength: 500, autocomplete: 'off' })
    : null;
  const confirm = h(
    'button',
    { type: 'submit', value: 'confirm', class: opts.danger ? 'danger' : 'primary' },
    opts.confirmLabel,
  );
  const cancel = h(
    'button',
    { type: 'submit', value: 'cancel', formnovalidate: true },
    opts.inform ? 'Close' : 'Cancel',
  );
  const form = h(
    'form',
    { method: 'dialog' },
    h('h2', { id: titleId }, opts.title),
    h('div', { class: 'dialog-body' }, opts.body),
    reason
      ? h('p', { class: 'field' }, h('label', { for: reason.id }, 'Reason (optional, kept in the audit trail)'), reason)
      : null,
    h('div', { class: 'dialog-buttons' }, opts.inform ? null : confirm, cancel),
  );
  const dialog = h('dialog', { 'aria-labelledby': titleId }, form);
  document.body.append(dialog);
  open++;
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      open--;
      const confirmed = dialog.returnValue === 'confirm';
      dialog.remove();
      opener?.focus();
      resolve({ confirmed, reason: reason?.value.trim() || undefined });
    });
    dialog.showModal();
    (opts.inform ? cancel : (reason ?? cancel)).focus();
  });
}
