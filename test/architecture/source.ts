import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * What the architecture tests read of src/: every file's relative imports (static, re-exports and dynamic
 * `import()` with a literal path, type-only ones included: a type import couples two files as much as a value
 * import does) and every function's length. Parsed with TypeScript's own parser, so an import spread over
 * several lines or inside a comment is read as the compiler reads it.
 */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface SourceFile {
  /** Path from the repository root, e.g. `src/rpc/types.ts`. */
  path: string;
  lines: number;
  /** Files of src/ it imports (paths from the root); imports of generated/ and packages are left out. */
  imports: string[];
  /** Packages it imports, as written (`ws`, `node:http`). */
  packages: string[];
  functions: { name: string; line: number; lines: number }[];
}

function listTs(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listTs(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
  );
}

/** `./x.js` from src/a/b.ts → src/a/x.ts (sources import their siblings by the compiled name). */
function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const target = relative(root, resolve(root, dirname(from), specifier)).replace(/\.js$/, '.ts');
  return target.startsWith('src/') ? target : undefined;
}

/** A function's name as a reader finds it: its own, its variable's, its property's, or its method's. */
function nameOf(node: ts.SignatureDeclaration, sf: ts.SourceFile): string {
  if (node.name) return node.name.getText(sf);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText(sf);
  return '(anonymous)';
}

function readSource(path: string): SourceFile {
  const text = readFileSync(join(root, path), 'utf8');
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const imports = new Set<string>();
  const packages = new Set<string>();
  const functions: SourceFile['functions'] = [];
  const lineOf = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const target = resolveImport(path, node.moduleSpecifier.text);
      if (target) imports.add(target);
      else if (!node.moduleSpecifier.text.startsWith('.')) packages.add(node.moduleSpecifier.text);
    }
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      const target = resolveImport(path, node.arguments[0].text);
      if (target) imports.add(target);
    }
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const line = lineOf(node.getStart(sf));
      functions.push({ name: nameOf(node, sf), line, lines: lineOf(node.getEnd()) - line + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  return { path, lines, imports: [...imports], packages: [...packages], functions };
}

/** The paths of src/'s TypeScript files from the repository root, sorted. */
export function sourcePaths(): string[] {
  return listTs('src').sort();
}

export function readSources(): SourceFile[] {
  return sourcePaths().map(readSource);
}

/** Every import cycle: the strongly connected components of more than one file (Tarjan), each sorted. */
export function cyclesOf(files: readonly SourceFile[]): string[][] {
  const edges = new Map(files.map((f) => [f.path, f.imports]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!edges.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const f of edges.keys()) if (!index.has(f)) connect(f);
  return cycles;
}
