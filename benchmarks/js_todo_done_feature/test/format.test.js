'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { formatList, formatTodo } = require('../src/format.js');

test('an open todo', () => {
  assert.equal(formatTodo({ id: 3, title: 'write docs', done: false }), '3. [ ] write docs');
});

test('a done todo', () => {
  assert.equal(formatTodo({ id: 4, title: 'ship it', done: true }), '4. [x] ship it');
});

test('an empty list', () => {
  assert.equal(formatList([]), 'nothing to do');
});
