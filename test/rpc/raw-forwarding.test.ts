import { describe, expect, it } from 'vitest';
import { readResponse } from '../../src/rpc/upstream/client.js';
import {
  arrayElements,
  arrayLength,
  arrayLongerThan,
  fastResultOfAscii,
  RawJson,
  splitResponse,
} from '../../src/rpc/upstream/raw-json.js';

/**
 * Pass-through answers are cut out of the node's text by structure, never parsed (raw-json.ts): these
 * check that the cut is exact for every shape a node writes and that broken text is refused, not passed on.
 */
describe('raw JSON forwarding', () => {
  it("behavior: the result member is the node's exact text, whatever the member order and spacing", () => {
    const logs = JSON.stringify([
      { data: '0x"}]', topics: ['0xab'] },
      { data: 'a\\"b', topics: [] },
    ]);
    for (const text of [
      `{"jsonrpc":"2.0","id":7,"result":${logs}}`,
      `{ "result" : ${logs} , "id" : 7 , "jsonrpc" : "2.0" }`,
      `\n{"id":7,"jsonrpc":"2.0","result":${logs}}\n`,
    ]) {
      const r = readResponse(text)!;
      expect(r.id).toBe('7');
      expect(r.raw!.text).toBe(logs);
      expect(r.raw!.value).toEqual(JSON.parse(logs));
    }
  });

  it('behavior: strings with escaped quotes and brackets do not end a value early', () => {
    const text = '{"id":1,"result":{"a":"x\\\\","b":"}\\"]","c":[1,{"d":"\\\\\\""}]}}';
    expect(JSON.parse(splitResponse(text)!.result!)).toEqual((JSON.parse(text) as { result: unknown }).result);
  });

  it('behavior: errors are parsed (their code drives failover), results are not', () => {
    const r = readResponse('{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"header not found"}}')!;
    expect(r.error).toEqual({ code: -32000, message: 'header not found' });
    expect(r.raw).toBeUndefined();
    expect(readResponse('{"jsonrpc":"2.0","id":1,"result":"0x1","error":null}')!.raw!.text).toBe('"0x1"');
  });

  it("behavior: a long answer in the node's own framing is cut in constant time, and one that also carries an error is still read as the error", () => {
    const logs = JSON.stringify(
      Array.from({ length: 50 }, (_, i) => ({
        logIndex: `0x${i.toString(16)}`,
        data: `0x${'ab'.repeat(32)}`,
        removed: false,
      })),
    );
    const block = JSON.stringify({ number: '0x2', extraData: `0x${'cd'.repeat(200)}`, transactions: [] });
    for (const result of [logs, block]) {
      expect(readResponse(`{"jsonrpc":"2.0","id":7,"result":${result}}`)!.raw!.text).toBe(result);
      const both = readResponse(
        `{"jsonrpc":"2.0","id":7,"result":${result},"error":{"code":-32000,"message":"header not found"}}`,
      )!;
      expect(both.error).toEqual({ code: -32000, message: 'header not found' });
      expect(both.raw).toBeUndefined();
    }
  });

  it('behavior: a long ASCII answer is cut on its bytes as the text path cuts it: the result a view of them, decoded only when read', () => {
    const logs = JSON.stringify(
      Array.from({ length: 50 }, (_, i) => ({ logIndex: `0x${i.toString(16)}`, data: `0x${'ab'.repeat(32)}` })),
    );
    const object = JSON.stringify({ number: '0x2', extraData: `0x${'cd'.repeat(200)}`, transactions: [] });
    for (const result of [logs, object]) {
      const text = `{"jsonrpc":"2.0","id":7,"result":${result}}\n`;
      const body = Buffer.from(text, 'latin1');
      const cut = fastResultOfAscii(body)!;
      expect(cut.id).toBe('7');
      expect(cut.result.buffer).toBe(body.buffer);
      const raw = RawJson.ofAscii(cut.result);
      expect(raw.decodedText).toBeUndefined();
      expect(raw.length).toBe(result.length);
      expect(raw.head(10)).toBe(result.slice(0, 10));
      expect(raw.text).toBe(readResponse(text)!.raw!.text);
      expect(raw.value).toEqual(JSON.parse(result));
    }
    // What the text path refuses or sends to the full check, the byte path does not cut either.
    for (const text of [
      `{"jsonrpc":"2.0","id":7,"result":${object.slice(0, -1)},"error":{"code":1,"message":"x"}}}`,
      `{"jsonrpc":"2.0","id":7,"result":${logs}`,
      `{"id":7,"jsonrpc":"2.0","result":${logs}}`,
    ]) {
      expect(fastResultOfAscii(Buffer.from(text, 'latin1')), text.slice(0, 40)).toBeUndefined();
    }
  });

  it('behavior: the result cap counts an undecoded answer on its bytes, and decodes only to count past the bound', () => {
    const logs = JSON.stringify(Array.from({ length: 30 }, (_, i) => ({ logIndex: `0x${i.toString(16)}` })));
    const raw = RawJson.ofAscii(Buffer.from(logs, 'latin1'));
    expect(arrayLongerThan(raw, 30)).toEqual({ over: false, count: undefined });
    expect(raw.decodedText).toBeUndefined();
    expect(arrayLongerThan(raw, 29)).toEqual({ over: true, count: 30 });
    expect(arrayLongerThan(new RawJson(logs), 29)).toEqual({ over: true, count: 30 });
  });

  it('error: text that is not one well-formed response is refused rather than forwarded', () => {
    for (const bad of [
      '',
      'nope',
      '{"id":1,"result":[1,2}',
      '{"id":1,"result":"0x1"',
      '{"id":1,"result":"0x1"} trailing',
      '{"id":1,"result":"unterminated}',
      '{"id":1}',
      '[{"id":1,"result":1}]',
      '{"id":1,"error":"not an object"}',
    ]) {
      expect(readResponse(bad), bad).toBeUndefined();
    }
  });

  it('behavior: batch answers are cut into their elements; arrays are counted without parsing', () => {
    const text = '[{"id":2,"result":[1,[2]]} , {"id":1,"result":"x,]"}]';
    const parts = arrayElements(text)!.map(([a, b]) => readResponse(text, a, b)!);
    expect(parts.map((p) => [p.id, p.raw!.text])).toEqual([
      ['2', '[1,[2]]'],
      ['1', '"x,]"'],
    ]);
    expect(arrayLength('[]')).toBe(0);
    expect(arrayLength(' [ {"a":[1,2]}, "b,c", 3 ] ')).toBe(3);
    expect(arrayLength('{"a":1}')).toBeUndefined();
  });

  it('behavior: a RawJson serializes as its value wherever JSON.stringify meets it', () => {
    expect(JSON.stringify({ result: new RawJson('{"a":[1]}') })).toBe('{"result":{"a":[1]}}');
  });
});
