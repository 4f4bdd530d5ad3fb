/** Types of db-record-core.mjs (plain JavaScript, since child processes load it through NODE_OPTIONS). */
export interface Recorder {
  file: string;
  touched: Set<string>;
  onTouch?: (what: string) => void;
}
export function installRecorder(): Recorder;
export function flush(rec: Recorder, target: string): void;
export function current(rec: Recorder, file: string): void;
