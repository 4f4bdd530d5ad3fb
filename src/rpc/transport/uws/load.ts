import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ConfigError } from '../../../common/config/env.js';
import { canRecount } from './connections.js';

export type Uws = typeof import('uwebsockets');

/**
 * The npm package the uWebSockets.js builds come from (docs/rpc-speed.md, "Transport"): a copy of upstream's release
 * binaries, one `uws_<platform>_<arch>_<abi>.node` per Node ABI at the package's root.
 */
export const UWS_PACKAGE = 'uwebsockets';

/** Node's ABI numbers (process.versions.modules) and the release line each belongs to. */
const NODE_LINE_OF_ABI: Record<string, string> = {
  '83': '14',
  '88': '15',
  '93': '16',
  '102': '17',
  '108': '18',
  '111': '19',
  '115': '20',
  '120': '21',
  '127': '22',
  '131': '23',
  '137': '24',
  '141': '25',
};

export type UwsProbe =
  { readonly ok: true; readonly uws: Uws; readonly build: string } | { readonly ok: false; readonly why: string };

/** The C library's version this process runs on ('' where it is not glibc, e.g. musl). */
const glibcVersion = (): string => {
  const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
  return header?.glibcVersionRuntime ?? '';
};

/** What a build that did not load asks of the machine, from the dynamic loader's message. */
function loadFailure(build: string, err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const glibc = /GLIBC_(\d+(?:\.\d+)+)/.exec(message)?.[1];
  if (glibc !== undefined) {
    const have = glibcVersion();
    return `its build ${build} needs glibc >= ${glibc}, this machine has ${have === '' ? 'no glibc' : `glibc ${have}`}`;
  }
  return `its build ${build} does not load: ${message.split('\n')[0]}`;
}

/** The ABIs the package has builds for on this platform and architecture, each with its Node line. */
function buildsHere(dir: string): string {
  const prefix = `uws_${process.platform}_${process.arch}_`;
  const abis = readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && f.endsWith('.node'))
    .map((f) => f.slice(prefix.length, -'.node'.length))
    .sort((a, b) => Number(a) - Number(b));
  if (abis.length === 0) return `no build for ${process.platform}-${process.arch} at all`;
  return `builds for Node ABI ${abis.map((a) => `${a} (Node ${NODE_LINE_OF_ABI[a] ?? '?'})`).join(', ')} only`;
}

/**
 * Whether uWebSockets.js runs here: its native build for this platform, architecture and Node ABI, required
 * directly (the package's own entry would fall back to a slow pure-JS imitation when the build is missing,
 * with a console warning nobody reads). When it does not, `why` names what it needs: a Node ABI the package
 * has a build for, or the glibc version its build was linked against. Probed once per process.
 */
export const probeUws = (() => {
  let probed: UwsProbe | undefined;
  return (): UwsProbe => (probed ??= probe());
})();

function probe(): UwsProbe {
  const require = createRequire(import.meta.url);
  const abi = process.versions.modules;
  const build = `uws_${process.platform}_${process.arch}_${abi}.node`;
  let dir: string;
  try {
    dir = dirname(require.resolve(`${UWS_PACKAGE}/package.json`));
  } catch {
    return { ok: false, why: `the package ${UWS_PACKAGE} is not installed` };
  }
  if (!existsSync(join(dir, build))) {
    return {
      ok: false,
      why: `${UWS_PACKAGE} has no build for Node ${process.version} (ABI ${abi}) on ${process.platform}-${process.arch}: it has ${buildsHere(dir)}`,
    };
  }
  try {
    return { ok: true, uws: require(join(dir, build)) as Uws, build };
  } catch (err) {
    return { ok: false, why: loadFailure(build, err) };
  }
}

export type Transport = 'node' | 'uws';

/** The stack the public port runs on and why: what RPC_TRANSPORT asked, and for `auto` what was found. */
export interface TransportChoice {
  readonly transport: Transport;
  readonly why: string;
}

/**
 * RPC_TRANSPORT resolved at start (and by `l2stack rpc` with the config, before anything opens). `node` and
 * `uws` force one (`uws` where it cannot run is a ConfigError naming what it needs); `auto` takes uWebSockets.js
 * wherever its build loads on this Node and C library and holds the connection caps, node:http otherwise, and node:http
 * under RPC_WORKERS > 1 (workers share the port through node:cluster, which uWS's sockets do not use).
 */
export function chooseTransport(requested: 'auto' | Transport, workers: number): TransportChoice {
  if (requested === 'node') return { transport: 'node', why: 'RPC_TRANSPORT=node' };
  const found = probeUws();
  if (requested === 'uws') {
    if (!found.ok)
      throw new ConfigError([`RPC_TRANSPORT=uws cannot run here: ${found.why}; use RPC_TRANSPORT=auto or node`]);
    return { transport: 'uws', why: `RPC_TRANSPORT=uws (${found.build})` };
  }
  if (workers > 1)
    return {
      transport: 'node',
      why: `RPC_TRANSPORT=auto with RPC_WORKERS=${workers}: the workers share the port through node:cluster, which uWebSockets.js does not use`,
    };
  if (!found.ok) return { transport: 'node', why: `RPC_TRANSPORT=auto: uWebSockets.js cannot run here (${found.why})` };
  // App.filter counts connections everywhere, but a close names no client: the per-client counts are read again
  // from the kernel's TCP table (uws/connections.ts), which only Linux has. The default never trades a limit for speed.
  if (!canRecount()) {
    return {
      transport: 'node',
      why: `RPC_TRANSPORT=auto: uWebSockets.js's build ${found.build} loads, but this system has no /proc/self/net/tcp to recount each client's connections, so HTTP_MAX_CONNECTIONS_PER_CLIENT would not hold on it; RPC_TRANSPORT=uws forces it`,
    };
  }
  return {
    transport: 'uws',
    why: `RPC_TRANSPORT=auto: uWebSockets.js's build ${found.build} loads on Node ${process.version} and holds the connection caps`,
  };
}

/** uWebSockets.js for RPC_TRANSPORT=uws: the loaded build, or an error naming what it needs. */
export function loadUws(): Uws {
  const found = probeUws();
  if (!found.ok) throw new Error(`RPC_TRANSPORT=uws cannot run here: ${found.why}; use RPC_TRANSPORT=auto or node`);
  return found.uws;
}
