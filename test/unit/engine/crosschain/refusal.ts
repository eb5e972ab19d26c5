import { ApiError } from '../../../../engine/errors.js';

/** The ApiError `f` throws (its status, message and details); fails when it throws none. */
export function refusal(f: () => unknown): { status: number; message: string; details: unknown } {
  try {
    f();
  } catch (e) {
    if (e instanceof ApiError) return { status: e.status, message: e.message, details: e.details };
    throw e;
  }
  throw new Error('not refused');
}
