/** Freezes a value and everything it holds (iteratively: no depth limit, no recursion) and returns it. */
export function deepFreeze<T>(v: T): T {
  const stack: unknown[] = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    if (x !== null && typeof x === "object" && !Object.isFrozen(x)) {
      Object.freeze(x);
      for (const y of Object.values(x as object)) stack.push(y);
    }
  }
  return v;
}
