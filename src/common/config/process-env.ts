/**
 * The only reader of process.env: config modules receive the returned snapshot, so every other module
 * stays testable with a plain object.
 */
export function readProcessEnv(): Record<string, string | undefined> {
  return { ...process.env };
}
