'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { run } = require('../src/cli.js');
const { TodoStore } = require('../src/store.js');

test('add then list', () => {
  const store = new TodoStore();
  assert.equal(run(['add', 'buy', 'milk'], store), 'added 1');
  assert.equal(run(['list'], store), '1. [ ] buy milk');
});

test('done then list --pending', () => {
  const store = new TodoStore();
  run(['add', 'buy milk'], store);
  run(['add', 'call mum'], store);
  assert.equal(run(['done', '1'], store), 'completed 1');
  assert.equal(run(['list'], store), '1. [x] buy milk\n2. [ ] call mum');
  assert.equal(run(['list', '--pending'], store), '2. [ ] call mum');
});

test('unknown commands throw', () => {
  assert.throws(() => run(['frobnicate'], new TodoStore()), /unknown command/);
});
