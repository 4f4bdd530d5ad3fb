import { describe, expect, it } from 'vitest';
import {
  ALLOWED_LONG_FUNCTIONS,
  EXCEPTIONS,
  LAYERS,
  MAX_ADAPTER_LINES,
  MAX_FILE_LINES,
  MAX_FUNCTION_LINES,
  RPC_LAYERS,
  TRANSPORT_ADAPTERS,
  areaOf,
} from './layers.js';
import { cyclesOf, readSources } from './source.js';

/**
 * The shape of src/ held by a test: no import cycle, no import up the layers of test/architecture/layers.ts
 * (between areas, and inside src/rpc), no function over 80 lines and no file over 400. Known offenders are
 * listed there by owner; this fails on a new one and on a listed one that is gone (so the list shrinks).
 */
const sources = readSources();

const layerOfArea = (area: string): number => LAYERS.findIndex((layer) => layer.includes(area));

/** The rpc layer of a file of src/rpc (the longest listed path that matches), or -1 when none does. */
function rpcLayerOf(path: string): number {
  const inRpc = path.slice('src/rpc/'.length);
  let best = { layer: -1, length: -1 };
  RPC_LAYERS.forEach(({ paths }, layer) => {
    for (const p of paths) {
      const matches = p.endsWith('/') ? inRpc.startsWith(p) : inRpc === p;
      if (matches && p.length > best.length) best = { layer, length: p.length };
    }
  });
  return best.layer;
}

/** Imports that break the layers, as 'from -> to (why)'. */
function layerViolations(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of sources) {
    const from = areaOf(file.path);
    for (const target of file.imports) {
      const to = areaOf(target);
      if (from === to) {
        if (from === 'rpc' && rpcLayerOf(target) > rpcLayerOf(file.path))
          found.set(
            `${file.path} -> ${target}`,
            `rpc layer '${RPC_LAYERS[rpcLayerOf(file.path)]!.name}' imports '${RPC_LAYERS[rpcLayerOf(target)]!.name}' above it`,
          );
        continue;
      }
      const [a, b] = [layerOfArea(from), layerOfArea(to)];
      if (b > a) found.set(`${file.path} -> ${target}`, `${from} imports ${to}, a higher layer`);
      else if (b === a) found.set(`${file.path} -> ${target}`, `${from} imports ${to}, a peer of its layer`);
    }
  }
  return found;
}

/** Offenders found, against the listed ones: new offenders and listed ones that are gone. */
function compare(found: Map<string, string>, listed: Record<string, string>) {
  return {
    unlisted: [...found].filter(([key]) => !(key in listed)).map(([key, why]) => `${key}: ${why}`),
    gone: Object.keys(listed).filter((key) => !found.has(key)),
  };
}

describe('architecture of src/', () => {
  it('behavior: reads the sources (a parser that found nothing would pass everything)', () => {
    expect(sources.length).toBeGreaterThan(200);
    expect(sources.find((f) => f.path === 'src/rpc/index.ts')?.imports).toContain('src/rpc/dispatcher.ts');
  });

  it('behavior: every area and every file of src/rpc has a layer', () => {
    const areas = new Set(sources.map((f) => areaOf(f.path)));
    expect([...areas].filter((a) => layerOfArea(a) < 0)).toEqual([]);
    const unplaced = sources.filter((f) => f.path.startsWith('src/rpc/') && rpcLayerOf(f.path) < 0).map((f) => f.path);
    expect(unplaced, 'place these in RPC_LAYERS of test/architecture/layers.ts').toEqual([]);
  });

  it('behavior: no import cycle', () => {
    const found = new Map(cyclesOf(sources).map((c) => [c.join(' '), `a cycle of ${c.length} files`]));
    expect(compare(found, EXCEPTIONS.cycles)).toEqual({ unlisted: [], gone: [] });
  });

  it('behavior: no import runs up the layers or across peers', () => {
    expect(compare(layerViolations(), EXCEPTIONS.upward)).toEqual({ unlisted: [], gone: [] });
  });

  it(`behavior: no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const found = new Map(
      sources.flatMap((f) =>
        f.functions
          .filter((fn) => fn.lines > MAX_FUNCTION_LINES && !(`${f.path}#${fn.name}` in ALLOWED_LONG_FUNCTIONS))
          .map((fn) => [`${f.path}#${fn.name}`, `${fn.lines} lines at line ${fn.line}`] as const),
      ),
    );
    expect(compare(found, EXCEPTIONS.longFunctions)).toEqual({ unlisted: [], gone: [] });
  });

  it(`behavior: no file over ${MAX_FILE_LINES} lines`, () => {
    const found = new Map(
      sources.filter((f) => f.lines > MAX_FILE_LINES).map((f) => [f.path, `${f.lines} lines`] as const),
    );
    expect(compare(found, EXCEPTIONS.longFiles)).toEqual({ unlisted: [], gone: [] });
  });
});

describe('transport layer of src/rpc', () => {
  const inTransport = sources.filter((f) => f.path.startsWith('src/rpc/transport/'));
  const isAdapter = (path: string) => TRANSPORT_ADAPTERS.dirs.some((d) => path.startsWith(d));
  const core = inTransport.filter((f) => !isAdapter(f.path));

  it('behavior: reads the core and an adapter of each stack (a move that emptied them would pass everything)', () => {
    expect(core.map((f) => f.path)).toContain('src/rpc/transport/core.ts');
    for (const dir of TRANSPORT_ADAPTERS.dirs)
      expect(
        inTransport.some((f) => f.path.startsWith(dir)),
        dir,
      ).toBe(true);
    expect(inTransport.find((f) => f.path === 'src/rpc/transport/node/ws.ts')?.packages).toContain('ws');
  });

  it("behavior: the neutral core imports no adapter, neither its files nor its stack's packages", () => {
    const found = core.flatMap((f) => [
      ...f.imports.filter(isAdapter).map((t) => `${f.path} -> ${t}`),
      ...f.packages.filter((p) => TRANSPORT_ADAPTERS.packages.includes(p)).map((p) => `${f.path} -> ${p}`),
    ]);
    expect(found).toEqual([]);
  });

  it(`behavior: no adapter file over ${MAX_ADAPTER_LINES} lines`, () => {
    const found = inTransport
      .filter((f) => isAdapter(f.path) && f.lines > MAX_ADAPTER_LINES)
      .map((f) => `${f.path}: ${f.lines} lines`);
    expect(found).toEqual([]);
  });
});
