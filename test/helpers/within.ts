/**
 * `promise`, or a rejection naming `what` once `ms` pass without it settling. For the awaits of a test that
 * have no bound of their own (a transaction's receipt, a process's exit, a service's stop), so a hang fails
 * with the step it hung in instead of running into the test's timeout, which names nothing. The timer does not
 * hold the process open, and `promise` keeps running: a late rejection of it is swallowed, the step already failed.
 */
export function within<T>(what: string, ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${ms} ms`)), ms);
    timer.unref();
  });
  promise.catch(() => {});
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
