/**
 * The interface's success-rate rule, per webhook URL (and tenant): start at
 * 100%, −1 per failed webhook, +1 per successful one, at most 100. Below 70 the
 * streams using that URL go to error. So 30 failures in a row leave 70 (still
 * active); the 31st makes 69.
 */
export const START_RATE = 100;
export const ERROR_BELOW = 70;

export const afterSuccess = (rate: number): number => Math.min(START_RATE, rate + 1);
export const afterFailure = (rate: number): number => rate - 1;
export const inError = (rate: number): boolean => rate < ERROR_BELOW;
