import { createHash } from 'node:crypto';

/**
 * A deterministic identicon for tokens without a listed logo: a 5×5 mirrored grid whose cells and colours come from the
 * address hash, so the same token always gets the same picture and different tokens rarely look alike.
 */
export function generatedLogoSvg(address: string): string {
  const h = createHash('sha256').update(address.toLowerCase()).digest();
  const hue = ((h[0]! << 8) | h[1]!) % 360;
  const fg = `hsl(${hue} 65% 45%)`;
  const bg = `hsl(${(hue + 180) % 360} 40% 92%)`;
  const cells: string[] = [];
  for (let row = 0; row < 5; row++) {
    for (let col = 0; col < 3; col++) {
      if ((h[2 + row * 3 + col]! & 1) === 0) continue;
      for (const x of col === 2 ? [2] : [col, 4 - col])
        cells.push(`<rect x="${x + 1}" y="${row + 1}" width="1" height="1"/>`);
    }
  }
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 7 7" width="64" height="64" shape-rendering="crispEdges">` +
    `<rect width="7" height="7" rx="3.5" fill="${bg}"/><g fill="${fg}">${cells.join('')}</g></svg>`
  );
}
