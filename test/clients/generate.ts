import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Clients generated from our OpenAPI documents with openapi-generator, the way integrators make theirs.
 * The only JAR reachable offline is the one shipped inside @openapitools/openapi-generator-cli; its version is
 * what the JAR reports (`generatorVersion()`), not the one in the package's name or package.json's range.
 *
 * A generation takes seconds of JVM start-up, so its output is kept in the system temp directory (never in
 * the repository) keyed on the spec's bytes, the generator, its options and the JAR: test files that need the same
 * client reuse one generation, and a changed spec gets a fresh one. Output is written beside and renamed
 * into place, so a concurrent test file sees either nothing or a complete client.
 */
export const root = fileURLToPath(new URL('../../', import.meta.url));
const jar = join(root, 'node_modules/@openapitools/openapi-generator-cli/bin/openapi-generator.jar');
// Outside node_modules: vitest loads the TypeScript clients from here and would not transform a dependency.
const cacheDir = join(tmpdir(), 'l2stack-clients');

const javaCheck = spawnSync('java', ['-version'], { encoding: 'utf8' });
/** Why Java-based generation cannot run here, or undefined when it can. */
export const javaMissing =
  javaCheck.error !== undefined || javaCheck.status !== 0
    ? 'no Java runtime on this machine (CI installs default-jre-headless)'
    : undefined;

/** The Python interpreter the Python clients run on (PYTHON overrides `python3` on PATH). */
export const python = process.env.PYTHON ?? 'python3';
const pythonCheck = spawnSync(python, ['--version'], { encoding: 'utf8' });
export const pythonMissing =
  pythonCheck.error !== undefined || pythonCheck.status !== 0
    ? `no ${python} on this machine (CI installs python3 from Debian)`
    : undefined;

let version: string | undefined;
/** The version the JAR reports (`java -jar openapi-generator.jar version`), read once; needs Java. */
export function generatorVersion(): string {
  if (version !== undefined) return version;
  const r = spawnSync('java', ['-jar', jar, 'version'], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0)
    throw new Error(`openapi-generator.jar version failed (exit ${r.status}): ${r.stdout}${r.stderr}`);
  return (version = r.stdout.trim());
}

export interface Generated {
  dir: string;
  /** The generator's own output (warnings included), for assertion messages. */
  log: string;
}

/** Generates (or reuses) the client for specs/<spec> with generator `generator` and its additional properties. */
export function generateClient(spec: string, generator: string, properties: Record<string, string> = {}): Generated {
  const specPath = join(root, 'specs', spec);
  const props = Object.entries(properties)
    .map(([k, v]) => `${k}=${v}`)
    .sort();
  const key = createHash('sha256')
    .update(readFileSync(specPath))
    .update(`\0${generator}\0${props.join(',')}\0${statSync(jar).size}`)
    .digest('hex')
    .slice(0, 16);
  const dir = join(cacheDir, `${spec.replace(/\.openapi\.yaml$/, '')}-${generator}-${key}`);
  const logFile = join(dir, '.generator.log');
  if (existsSync(logFile)) return { dir, log: readFileSync(logFile, 'utf8') };

  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  const args = ['-jar', jar, 'generate', '-i', specPath, '-g', generator, '-o', tmp];
  if (props.length > 0) args.push(`--additional-properties=${props.join(',')}`);
  const gen = spawnSync('java', args, { encoding: 'utf8', timeout: 180_000 });
  const log = `${gen.stdout ?? ''}${gen.stderr ?? ''}`;
  if (gen.status !== 0)
    throw new Error(`openapi-generator ${generator} failed on ${spec} (exit ${gen.status}):\n${log}`);
  if (/\[main\] ERROR/.test(log)) throw new Error(`openapi-generator ${generator} reported errors on ${spec}:\n${log}`);
  writeFileSync(join(tmp, '.generator.log'), log);
  try {
    renameSync(tmp, dir);
  } catch {
    // Another test file finished the same generation first: use its copy.
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir, log: readFileSync(logFile, 'utf8') };
}

/**
 * Runs a Python driver script and returns the JSON it prints. Asynchronous on purpose: the server under
 * test runs in this process, and a blocking spawn would leave the client's requests unanswered.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON printed by the driver
export function runPython(script: string, args: string[]): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    execFile(
      python,
      [script, ...args],
      { encoding: 'utf8', timeout: 60_000, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`${script} failed: ${error.message}\n${stderr}`));
        try {
          resolve(JSON.parse(stdout) as Record<string, any>); // eslint-disable-line @typescript-eslint/no-explicit-any
        } catch {
          reject(new Error(`${script} printed no JSON:\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}
