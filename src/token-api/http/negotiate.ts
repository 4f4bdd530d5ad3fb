/**
 * The supply representation when the request has no `format`: the `Accept` header decides
 * (specs/token-api.openapi.yaml, getTotalSupply). Generated clients send `Accept: application/json` and
 * expect the JSON body they are typed for; curl (`*\/*`) and browsers keep getting the bare number, as
 * before. `format` always wins: this is only the fallback.
 */
export type SupplyFormat = 'raw' | 'json';

/** Longest Accept header read; a longer one is cut there (its remaining ranges are ignored, not refused). */
const MAX_ACCEPT = 1024;

/** The q value of each listed media range (wildcards are skipped: they express no preference here). */
function qualities(accept: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const part of accept.slice(0, MAX_ACCEPT).split(',')) {
    const [range, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (!range || range.includes('*')) continue;
    let q = 1;
    for (const p of params) {
      const m = /^q=([01](?:\.\d{0,3})?)$/.exec(p);
      if (m) q = Number(m[1]);
    }
    out.set(range, Math.max(q, out.get(range) ?? 0));
  }
  return out;
}

/** JSON when `Accept` ranks application/json above text/plain (an unlisted type counts as q=0). */
export function negotiateSupplyFormat(accept: string | undefined): SupplyFormat {
  if (!accept) return 'raw';
  const q = qualities(accept);
  const json = q.get('application/json') ?? 0;
  return json > 0 && json > (q.get('text/plain') ?? 0) ? 'json' : 'raw';
}
