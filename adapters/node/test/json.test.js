'use strict';
// The kit's exact JSON: integers as BigInt up to 2^63 − 1 and beyond, 1 told
// from 1.0 and 1e3, strict RFC 8259, and BigInts written as JSON integers.
const test = require('node:test');
const assert = require('node:assert/strict');
const kit = require('..');

const { parseJson, stringifyJson, JsonFloat, JsonSyntaxError, DUPLICATE_KEYS } = kit;

test('integers stay exact BigInts, beyond 2^53 and at the i64 edges', () => {
  assert.equal(parseJson('9223372036854775807'), 9223372036854775807n);
  assert.equal(parseJson('-9223372036854775808'), -9223372036854775808n);
  assert.equal(parseJson('9007199254740993'), 9007199254740993n); // JSON.parse reads ...992
  assert.equal(parseJson('99999999999999999999999'), 99999999999999999999999n);
  assert.equal(parseJson('0'), 0n);
  assert.equal(parseJson('-0'), 0n);
  const req = parseJson('{"id":7,"args":{"epoch":9223372036854775807}}');
  assert.equal(req.args.epoch, 9223372036854775807n);
});

test('a fraction or an exponent is a JsonFloat, never an integer', () => {
  for (const text of ['1.0', '1.5', '1e3', '1E3', '1e-3', '-2.5e+10', '0.0']) {
    const v = parseJson(text);
    assert.ok(v instanceof JsonFloat, text);
    assert.equal(v.text, text);
    assert.equal(v.value, Number(text));
  }
});

test('strings: escapes, surrogate pairs, unicode as is', () => {
  assert.equal(parseJson('"a\\"b\\\\c\\/d\\b\\f\\n\\r\\t"'), 'a"b\\c/d\b\f\n\r\t');
  assert.equal(parseJson('"\\u00fc\\u6f22"'), 'ü漢');
  assert.equal(parseJson('"\\ud83d\\ude00"'), '😀');
  assert.equal(parseJson('"ü→漢😀"'), 'ü→漢😀');
  assert.equal(parseJson('""'), '');
});

test('objects have no prototype and note duplicate keys', () => {
  const o = parseJson('{"__proto__":{"x":1},"a":1,"a":2}');
  assert.equal(Object.getPrototypeOf(o), null);
  assert.deepEqual(Object.keys(o), ['__proto__', 'a']);
  assert.equal(o.a, 2n);
  assert.deepEqual(o[DUPLICATE_KEYS], ['a']);
  assert.equal(parseJson('{"a":1}')[DUPLICATE_KEYS], undefined);
});

test('arrays, literals and whitespace', () => {
  assert.deepEqual(parseJson(' [ 1 , "x" , true , false , null , [ ] , { } ] \r\n'), [1n, 'x', true, false, null, [], Object.create(null)]);
});

test('anything RFC 8259 does not allow is a syntax error', () => {
  const bad = [
    '', ' ', '01', '-', '1.', '.5', '+1', '1e', '0x10', 'NaN', 'Infinity', '1 2', '{', '[1,]', '{"a":1,}',
    "{'a':1}", '{a:1}', '"abc', '"\\x"', '"\\u12"', '"\u0001"', '"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"',
    'tru', 'nul', '[1 2]', '{"a" 1}', '{"a":1 "b":2}', '"\ud800"',
  ];
  for (const text of bad) assert.throws(() => parseJson(text), JsonSyntaxError, JSON.stringify(text));
  assert.throws(() => parseJson('['.repeat(200) + ']'.repeat(200)), JsonSyntaxError);
});

test('BigInts are written as JSON integers, exactly', () => {
  assert.equal(stringifyJson({ id: 7n, ok: { granted: { epoch: 9223372036854775807n, expires_at_ms: 2000000001000n } } }),
    '{"id":7,"ok":{"granted":{"epoch":9223372036854775807,"expires_at_ms":2000000001000}}}');
  assert.equal(stringifyJson({ a: null, b: [], c: {}, d: 'ü"\n', e: true, f: 5 }), '{"a":null,"b":[],"c":{},"d":"ü\\"\\n","e":true,"f":5}');
  assert.equal(stringifyJson({ skipped: undefined, kept: 1n }), '{"kept":1}');
});

test('a fraction, an unsafe number or a function is never written', () => {
  for (const v of [1.5, 2 ** 53, NaN, Infinity, () => 1, Symbol('x')]) assert.throws(() => stringifyJson({ v }), TypeError);
});

test('parse then write is the identity on protocol lines', () => {
  for (const line of [
    '{"id":0,"op":"hello","args":{"instance":"a","redis_url":"redis://127.0.0.1:1/","prefix":"sp:","opt_out":null},"clock_ms":2000000000000}',
    '{"id":18446744073709551615,"args":{"until_ms":9223372036854775807,"x":[1.5,1e3,-0.25]}}',
  ]) {
    assert.equal(stringifyJson(parseJson(line)), line);
  }
});
