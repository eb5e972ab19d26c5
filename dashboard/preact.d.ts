/**
 * The types of what the page uses of htm's standalone Preact (node_modules/htm/preact/standalone.module.js, served as
 * /dashboard/preact.js): Preact's own types are not installed, and the page needs only these.
 */
export type VNode = { readonly type: unknown; readonly props: unknown };
export type Child = VNode | string | number | boolean | null | undefined | readonly Child[];
export declare const html: (strings: TemplateStringsArray, ...values: unknown[]) => VNode;
export declare function render(tree: VNode, parent: Element): void;
export declare function useState<T>(initial: T | (() => T)): [T, (next: T | ((prev: T) => T)) => void];
export declare function useEffect(effect: () => void | (() => void), deps?: readonly unknown[]): void;
export declare function useRef<T>(initial: T): { current: T };
export declare function useCallback<F extends (...args: never[]) => unknown>(fn: F, deps: readonly unknown[]): F;
