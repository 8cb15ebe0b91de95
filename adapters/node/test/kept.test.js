'use strict';
// Kept executions in the kit's side file: each id once, in first-kept order,
// per prefix and tree, shared by processes, a torn last record ignored.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const kit = require('..');

const { KeptExecutions, keptExecutionsPath } = kit;
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'kit-kept-'));

test('ids once each, in first-kept order, per tree and per prefix', () => {
  const dir = tmp();
  const a = new KeptExecutions(keptExecutionsPath('sp:1:', dir), 'sp:1:');
  const b = new KeptExecutions(keptExecutionsPath('sp:1:', dir), 'sp:1:'); // another process of the same check
  const other = new KeptExecutions(keptExecutionsPath('sp:2:', dir), 'sp:2:');
  assert.deepEqual(a.list('t'), []);
  a.keep('t', 'e2');
  b.keep('t', 'e1');
  a.keep('t', 'e2');
  b.keep('u', 'e9');
  other.keep('t', 'x');
  a.keep('t', 'ü→漢 "quoted"\nline');
  assert.deepEqual(b.list('t'), ['e2', 'e1', 'ü→漢 "quoted"\nline']);
  assert.deepEqual(a.list('u'), ['e9']);
  assert.deepEqual(other.list('t'), ['x']);
  assert.deepEqual(other.list('u'), []);
  for (const k of [a, b, other]) k.close();
  // Durable: a new handle reads the same.
  assert.deepEqual(new KeptExecutions(keptExecutionsPath('sp:1:', dir), 'sp:1:').list('t'), ['e2', 'e1', 'ü→漢 "quoted"\nline']);
  fs.rmSync(dir, { recursive: true });
});

test('the file lives under $STOREPROOF_WORKDIR, one per prefix, named by its hash', () => {
  const saved = process.env.STOREPROOF_WORKDIR;
  process.env.STOREPROOF_WORKDIR = '/some/run';
  try {
    const p = keptExecutionsPath('sp:../..:');
    assert.match(p, /^\/some\/run\/node-kept-executions\/[0-9a-f]{32}\.jsonl$/);
    assert.notEqual(keptExecutionsPath('sp:a:'), keptExecutionsPath('sp:b:'));
  } finally {
    if (saved === undefined) delete process.env.STOREPROOF_WORKDIR;
    else process.env.STOREPROOF_WORKDIR = saved;
  }
});

test('a record cut short is skipped, and never glued to the next one', () => {
  const dir = tmp();
  const file = keptExecutionsPath('p', dir);
  const k = new KeptExecutions(file, 'p');
  k.keep('t', 'e1');
  fs.appendFileSync(file, '\n["p","t","torn'); // a SIGKILL in the middle of a write
  assert.deepEqual(k.list('t'), ['e1'], 'the last line without its newline is ignored');
  k.keep('t', 'e2');
  assert.deepEqual(k.list('t'), ['e1', 'e2']);
  fs.appendFileSync(file, '\nnot json\n[1,2]\n["p","t",3]\n');
  k.keep('t', 'e3');
  assert.deepEqual(k.list('t'), ['e1', 'e2', 'e3']);
  k.close();
  fs.rmSync(dir, { recursive: true });
});

test('concurrent keeps from many processes: none lost, none torn', async () => {
  const dir = tmp();
  const file = keptExecutionsPath('p', dir);
  const worker = `
    const kit = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    const k = new kit.KeptExecutions(${JSON.stringify(file)}, 'p');
    const w = process.argv[1];
    for (let i = 0; i < 100; i++) k.keep('t', w + ':' + i + ':' + 'x'.repeat(i * 40));
  `;
  const run = (w) =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['-e', worker, w], { stdio: 'inherit' });
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker ${w} exited ${code}`))));
    });
  await Promise.all(['a', 'b', 'c', 'd'].map(run));
  const ids = new KeptExecutions(file, 'p').list('t');
  assert.equal(ids.length, 400);
  for (const w of ['a', 'b', 'c', 'd']) {
    const mine = ids.filter((id) => id.startsWith(`${w}:`)).map((id) => Number(id.split(':')[1]));
    assert.deepEqual(mine, [...Array(100).keys()], `worker ${w} in its own order`);
  }
  fs.rmSync(dir, { recursive: true });
});

test('a folder that cannot be made is unavailable, not a crash', () => {
  const dir = tmp();
  fs.writeFileSync(path.join(dir, 'file'), '');
  for (const where of [path.join(dir, 'missing', 'sub'), path.join(dir, 'file')]) {
    assert.throws(
      () => new KeptExecutions(path.join(where, 'kept.jsonl'), 'p'),
      (e) => e instanceof kit.StoreError && e.kind === 'unavailable' && /kept executions/.test(e.message),
    );
  }
  fs.rmSync(dir, { recursive: true });
});
