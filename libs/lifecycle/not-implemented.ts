export class NotImplementedError extends Error {
  readonly code = 'RELAY_NOT_IMPLEMENTED';
  constructor(command: string, issue: string) {
    super(`"${command}" is not implemented yet (${issue}); see README "Status"`);
    this.name = 'NotImplementedError';
  }
}
