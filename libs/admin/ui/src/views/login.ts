import { h } from '../dom';

/** The sign-in form: the token is checked against GET /v1/stats before it is kept. */
export function loginView(opts: {
  message?: string;
  onSubmit: (token: string) => Promise<string | null>;
}): HTMLElement {
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    required: true,
    autocomplete: 'off',
    spellcheck: 'false',
    size: 40,
  });
  const error = h('p', { id: 'login-error', role: 'alert', class: 'error' }, opts.message ?? '');
  if (opts.message) input.setAttribute('aria-describedby', error.id);
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h(
    'form',
    { class: 'login', 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title' }, 'tg-relay operator dashboard'),
    h('p', { class: 'field' }, h('label', { for: input.id }, 'Admin token'), input),
    h(
      'p',
      { class: 'muted small' },
      'ADMIN_TOKEN, or one of ADMIN_TOKENS. It is kept in this tab only (session storage) and sent as a bearer token to the admin API.',
    ),
    button,
    error,
  );
  const submit = async (ev: SubmitEvent): Promise<void> => {
    ev.preventDefault();
    button.disabled = true;
    error.textContent = '';
    const problem = await opts.onSubmit(input.value.trim());
    button.disabled = false;
    if (problem) {
      error.textContent = problem;
      input.setAttribute('aria-describedby', error.id);
      input.select();
      input.focus();
    }
  };
  form.addEventListener('submit', (ev) => void submit(ev));
  queueMicrotask(() => input.focus());
  return form;
}
