/**
 * The few React types page.ts uses, for a checkout without `@types/react`.
 * In your own project install `@types/react` and `@types/react-dom` and delete
 * this file.
 */
declare module "react" {
  export interface ReactElement {
    readonly type: unknown;
    readonly props: unknown;
    readonly key: string | null;
  }
  export type ReactNode = ReactElement | string | number | boolean | null | undefined | readonly ReactNode[];
  export type FC<P> = (props: P) => ReactNode;
  export function createElement(type: string, props?: Record<string, unknown> | null, ...children: ReactNode[]): ReactElement;
  export function createElement<P extends object>(type: FC<P>, props: P & { key?: string | number }, ...children: ReactNode[]): ReactElement;
  export function useState<S>(initial: S | (() => S)): [S, (next: S | ((prev: S) => S)) => void];
  export function useEffect(effect: () => void | (() => void), deps?: readonly unknown[]): void;
}

declare module "react-dom/client" {
  export function createRoot(container: Element): { render(node: import("react").ReactNode): void; unmount(): void };
}
