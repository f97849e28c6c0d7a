import type { Api } from './api';
import type { SandboxInfo } from '../api-types';

export interface ViewContext {
  api: Api;
  navigate(hash: string): void;
  /** Set when the admin API runs in sandbox mode (GET /v1/sandbox answered). */
  sandbox: SandboxInfo | null;
}

/** One page of the dashboard. The shell calls `refresh()` on mount and then live, every few seconds. */
export interface View {
  title: string;
  el: HTMLElement;
  refresh(): Promise<void>;
  /** While true, live refresh skips this view (a form is being filled in, a reveal is open…). */
  busy?(): boolean;
  dispose?(): void;
}
