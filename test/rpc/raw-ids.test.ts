import { describe, expect, it } from 'vitest';
import { scanBody } from '../../src/rpc/raw-ids.js';

const call = (id: string, params = '[]') => `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":${params}}`;

describe('scanBody: the one pass over a body (depth and numeric ids as written)', () => {
  it('behavior: a numeric id is kept as written, whatever JSON.parse makes of it', () => {
    for (const id of ['1', '0', '-3', '1.0', '1.50', '1e3', '-0', '12345678901234567890123', '1E+2']) {
      expect(scanBody(call(id)).numericIds).toEqual([id]);
    }
  });

  it('behavior: ids that are not numbers are left to JSON (undefined), and so is a body without one', () => {
    for (const id of ['"abc"', '"1.0"', 'null', '{"a":1}', '[1]'])
      expect(scanBody(call(id)).numericIds).toEqual([undefined]);
    expect(scanBody('{"jsonrpc":"2.0","method":"eth_chainId"}').numericIds).toEqual([]);
  });

  it('behavior: in a batch each element has its own id, by position; elements that are not objects have none', () => {
    const body = `[${call('98765432109876543210')}, 5, ${call('"x"')},\n ${call('2.50')}, [{"id":7}], {"jsonrpc":"2.0","method":"m"}]`;
    const ids = scanBody(body).numericIds;
    expect(ids[0]).toBe('98765432109876543210');
    expect(ids[2]).toBeUndefined();
    expect(ids[3]).toBe('2.50');
    expect(ids[4]).toBeUndefined();
    expect(ids[5]).toBeUndefined();
  });

  it('behavior: only the top-level "id" member counts, never one inside params or inside a string', () => {
    expect(scanBody(call('4', '[{"id":99},"\\"id\\":5"]')).numericIds).toEqual(['4']);
    expect(scanBody('{"params":[{"id":1}],"method":"x:\\"id\\":3","jsonrpc":"2.0"}').numericIds).toEqual([]);
    expect(scanBody('{"ids":1,"i":2,"id" : \t 3.0 ,"x":{"id":4}}').numericIds).toEqual(['3.0']);
  });

  it('behavior: the last "id" member wins, as in JSON.parse; an escaped key is still "id"', () => {
    expect(scanBody('{"id":1.0,"id":2.0}').numericIds).toEqual(['2.0']);
    expect(scanBody('{"id":1.0,"id":"s"}').numericIds).toEqual([undefined]);
    expect(scanBody('{"\\u0069d":1.0}').numericIds).toEqual(['1.0']);
  });

  it('behavior: depth counts [ and { outside strings', () => {
    expect(scanBody('1').depth).toBe(0);
    expect(scanBody(call('1')).depth).toBe(2);
    expect(scanBody(`[${call('1', '[[{"a":"[[[[{{{"}]]]')}]`).depth).toBe(5);
    expect(scanBody(`{"id":1,"params":${'['.repeat(100_000)}${']'.repeat(100_000)}}`).depth).toBe(100_001);
  });

  it('error: text that is not JSON is scanned without throwing (the caller answers -32700)', () => {
    for (const body of [
      '',
      '{',
      '{"id":',
      '{"id":1',
      '"unterminated',
      '[{"id":1.0},',
      '}}]]',
      '{"a":"\\',
      'not json',
    ]) {
      expect(() => scanBody(body)).not.toThrow();
    }
    expect(scanBody('{"id":1.0').numericIds).toEqual(['1.0']);
  });
});
