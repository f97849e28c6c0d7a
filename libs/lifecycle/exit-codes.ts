/** Exit codes of the long-running commands (sysexits.h names), so a supervisor can tell why. */

/** EX_SOFTWARE: a component died (a claim loop, the admin server, the poller loop, a sandbox peer). */
export const EXIT_COMPONENT_DIED = 70;
/** EX_TEMPFAIL: the watchdog found the poller stalled; a restart is the cure (libs/ingress/poller.ts). */
export const EXIT_STALLED = 75;
/** EX_CONFIG: the configuration (or the bot token) is wrong: restarting will not help. */
export const EXIT_CONFIG = 78;
