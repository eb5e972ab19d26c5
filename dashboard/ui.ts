import { errorText } from './api.js';
import { html, useEffect, useRef, useState, type VNode } from './preact.js';

/**
 * What the panels share: polling a read, and showing its state. Every value from the API goes into the page as a
 * text child or an attribute value (Preact sets them as text and properties), never as markup: tags, descriptions,
 * bodies and receivers' error texts are the tenant's or a receiver's own words.
 */

export interface Polled<T> {
  data: T | undefined;
  error: string | undefined;
  /** Read again now (after a change the panel made). */
  refresh: () => void;
}

/** `read` now and every `ms` while the panel is shown; a read never overlaps the one before. */
export function usePoll<T>(read: () => Promise<T>, ms: number): Polled<T> {
  const [state, setState] = useState<{ data: T | undefined; error: string | undefined }>({ data: undefined, error: undefined });
  const [tick, setTick] = useState(0);
  const latest = useRef(read);
  latest.current = read;
  useEffect(() => {
    let live = true;
    let timer: number | undefined;
    const run = async (): Promise<void> => {
      try {
        const data = await latest.current();
        if (live) setState({ data, error: undefined });
      } catch (err) {
        if (live) setState((s) => ({ data: s.data, error: errorText(err) }));
      }
      if (live) timer = window.setTimeout(run, ms);
    };
    void run();
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
  }, [ms, tick]);
  return { ...state, refresh: () => setTick((t) => t + 1) };
}

/** A failed call's text, or nothing. */
export const Problem = ({ text }: { text: string | undefined }): VNode | null =>
  text === undefined ? null : html`<p class="problem" role="alert">${text}</p>`;

/** An action's outcome shown beside its form or button. */
export interface Outcome {
  ok: boolean;
  text: string;
}

export const OutcomeLine = ({ outcome }: { outcome: Outcome | undefined }): VNode | null =>
  outcome === undefined ? null : html`<p class=${outcome.ok ? 'ok' : 'problem'} role="status">${outcome.text}</p>`;

/** Runs an action, answering its outcome (its text on success, the error's otherwise). */
export async function attempt(action: () => Promise<string>): Promise<Outcome> {
  try {
    return { ok: true, text: await action() };
  } catch (err) {
    return { ok: false, text: errorText(err) };
  }
}

/** An ISO time as the reader's local time (the ISO text when it does not parse). */
export const when = (iso: string | null | undefined): string => {
  if (iso === null || iso === undefined) return '';
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : new Date(t).toLocaleString();
};

/** A duration in seconds, short. */
export const duration = (seconds: number): string => {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
};

/** A panel: its heading, what it reads, and its body. */
export const Panel = ({ id, title, children }: { id: string; title: string; children: unknown }): VNode =>
  html`<section id=${id} class="panel"><h2>${title}</h2>${children}</section>`;
