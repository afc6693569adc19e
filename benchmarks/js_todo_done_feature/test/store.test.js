'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { TodoStore } = require('../src/store.js');

test('add assigns increasing ids and starts not done', () => {
  const store = new TodoStore();
  assert.deepEqual(store.add('a'), { id: 1, title: 'a', done: false });
  assert.equal(store.add('b').id, 2);
});

test('add refuses an empty title', () => {
  assert.throws(() => new TodoStore().add('  '), Error);
});

test('complete marks a todo done', () => {
  const store = new TodoStore();
  store.add('a');
  assert.equal(store.complete(1).done, true);
  assert.equal(store.list()[0].done, true);
});

test('complete throws for an unknown id', () => {
  assert.throws(() => new TodoStore().complete(7), /no todo with id 7/);
});

test('list can leave done todos out', () => {
  const store = new TodoStore();
  store.add('a');
  store.add('b');
  store.complete(1);
  assert.deepEqual(store.list({ pending: true }).map((item) => item.title), ['b']);
  assert.equal(store.list().length, 2);
});
