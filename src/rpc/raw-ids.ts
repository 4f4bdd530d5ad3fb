/**
 * JSON.parse turns the id 12345678901234567890 into 12345678901234567000 and 1.0 into 1; JSON-RPC says the
 * response carries the same id. When a body has such an id (rare: `needsRawIds`), this scanner returns
 * the exact source text of the "id" member of the top-level object, or of each element of a top-level
 * array, so the response can echo it byte for byte. It assumes the body already parsed as JSON.
 */
export function needsRawIds(ids: readonly unknown[]): boolean {
  return ids.some((id) => typeof id === 'number' && (!Number.isSafeInteger(id) || Object.is(id, -0)));
}

/** True when the source text of a number id may differ from JSON.stringify of its value ("1.0", "1e2"). */
export function mayHaveNonCanonicalIds(body: string): boolean {
  return /"id"\s*:\s*-?\d*[.eE]|"id"\s*:\s*-?0\d|"id"\s*:\s*-0/.test(body);
}

export function rawIds(body: string): (string | undefined)[] {
  let i = 0;
  const ws = () => {
    while (i < body.length && (body[i] === ' ' || body[i] === '\n' || body[i] === '\r' || body[i] === '\t')) i++;
  };
  const skipString = () => {
    i++; // opening quote
    while (i < body.length && body[i] !== '"') i += body[i] === '\\' ? 2 : 1;
    i++;
  };
  // Iterative on purpose: a value nested thousands deep must not cost a stack frame per level. The body
  // parsed as JSON, so counting brackets outside strings finds the end of a container.
  const skipValue = (): void => {
    ws();
    const c = body[i];
    if (c === '"') return skipString();
    if (c === '{' || c === '[') {
      let depth = 0;
      while (i < body.length) {
        const ch = body[i];
        if (ch === '"') {
          skipString();
          continue;
        }
        if (ch === '{' || ch === '[') depth++;
        else if (ch === '}' || ch === ']') depth--;
        i++;
        if (depth === 0) return;
      }
      return;
    }
    while (i < body.length && !',}] \n\r\t'.includes(body[i]!)) i++;
  };
  /** Reads one object, returning the raw text of its "id" member. */
  const objectId = (): string | undefined => {
    ws();
    if (body[i] !== '{') {
      skipValue();
      return undefined;
    }
    i++;
    let id: string | undefined;
    ws();
    if (body[i] === '}') {
      i++;
      return undefined;
    }
    for (;;) {
      ws();
      const keyStart = i;
      skipString();
      const key = JSON.parse(body.slice(keyStart, i)) as string;
      ws();
      i++; // colon
      ws();
      const valueStart = i;
      skipValue();
      if (key === 'id') id = body.slice(valueStart, i).trim();
      ws();
      if (body[i] === ',') {
        i++;
        continue;
      }
      i++;
      return id;
    }
  };
  ws();
  if (body[i] !== '[') return [objectId()];
  i++;
  const ids: (string | undefined)[] = [];
  ws();
  if (body[i] === ']') return ids;
  for (;;) {
    ids.push(objectId());
    ws();
    if (body[i] === ',') {
      i++;
      continue;
    }
    return ids;
  }
}
