/** The interface's stream limits. */

/** A stream whose undelivered queue reaches this goes to error. */
export const QUEUE_CAP = 10_000;

/** A stream this long in error becomes terminated. */
export const ERROR_TO_TERMINATED_MS = 24 * 3_600_000;

/** A delivery with no answer within this long is a failure. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/**
 * A failed delivery's error keeps this many characters at most of the receiver's answer (its own words for why: an
 * operator reads them in history and the dashboard, as text).
 */
export const RECEIVER_TEXT_MAX = 200;

/** What a failed delivery's error adds of the receiver's answer: `: <its start>` on one line (each run of spaces and controls one space), or nothing. */
export function receiverWords(text: string | undefined): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it replaces
  const words = (text ?? '')
    .slice(0, RECEIVER_TEXT_MAX)
    .replace(/[\s\u0000-\u001f\u007f]+/g, ' ')
    .trim();
  return words === '' ? '' : `: ${words}`;
}

/** Failed-delivery history is kept this long by default (the interface: up to one week). */
export const HISTORY_RETENTION_MS = 7 * 24 * 3_600_000;
