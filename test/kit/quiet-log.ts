import { jsonLogger, type Logger } from '../../engine/log.js';

/** A logger that writes nothing (errors included): for the tests and benches whose subject is not the log. */
export const quietLog = (now: () => number = () => 0): Logger => jsonLogger(() => {}, now, 'error');
